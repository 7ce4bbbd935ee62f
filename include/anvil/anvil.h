#pragma once
// The one header a user includes: #include <anvil/anvil.h>
// Tensors, every op family, factories, random numbers and autograd; nn and
// distributed once those layers exist.
#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/ops.h"

// The upper layers are optional here so that the header works at every stage
// of the tree (and in an install of a build that predates them).
#if __has_include("nn/nn.h")
#include "nn/nn.h"
#endif
#if __has_include("distributed/distributed.h")
#include "distributed/distributed.h"
#endif
