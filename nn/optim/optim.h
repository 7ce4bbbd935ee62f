#pragma once
/// @file
/// Everything in anvil::nn::optim: optimizers, LR schedules, gradient clipping.
#include "nn/optim/adadelta.h"
#include "nn/optim/adagrad.h"
#include "nn/optim/adam.h"
#include "nn/optim/adamax.h"
#include "nn/optim/clip_grad.h"
#include "nn/optim/lbfgs.h"
#include "nn/optim/lion.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/optim/nadam.h"
#include "nn/optim/optimizer.h"
#include "nn/optim/radam.h"
#include "nn/optim/rmsprop.h"
#include "nn/optim/sgd.h"

namespace anvil {
// libtorch's spelling, torch::optim::SGD: anvil::optim::SGD is anvil::nn::optim::SGD.
namespace optim = nn::optim;
}  // namespace anvil
