#pragma once
// The whole nn layer: modules, layers, init, functional, and (where built)
// optimizers, data loading, training and serialization.
//
//   #include "nn/nn.h"
//   namespace nn = anvil::nn;
//   namespace F = anvil::nn::functional;
#include "core/ops.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "nn/layers/layers.h"
#include "nn/module.h"

// Parts written alongside; included when present.
#if __has_include("nn/optim/optim.h")
#include "nn/optim/optim.h"
#endif
#if __has_include("nn/data/data.h")
#include "nn/data/data.h"
#endif
#if __has_include("nn/train/train.h")
#include "nn/train/train.h"
#endif
#if __has_include("nn/serialize/safetensors.h")
#include "nn/serialize/serialize.h"
#endif
