#pragma once
/// @file
/// The whole nn layer: modules, layers, init, functional, optimizers, data
/// loading, training, serialization, text tokenizers and pretrained models (BERT).
///
///     #include "nn/nn.h"
///     namespace nn = anvil::nn;
///     namespace F = anvil::nn::functional;
#include "core/ops.h"
#include "nn/data/data.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "nn/layers/layers.h"
#include "nn/models/bert.h"
#include "nn/models/sentence_embedder.h"
#include "nn/module.h"
#include "nn/optim/optim.h"
#include "nn/serialize/serialize.h"
#include "nn/text/bert_tokenizer.h"
#include "nn/train/train.h"
