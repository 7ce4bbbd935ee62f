#pragma once
// The one header a user includes: #include <anvil/anvil.h>
// Tensors, every op family, factories, random numbers and autograd, what the
// machine offers (anvil::cpu_capability(), anvil::cuda::is_available()), the
// nn layer and the distributed layer.
#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/ops.h"
#include "distributed/distributed.h"
#include "kernels/cpu_info.h"
#include "kernels/cuda_info.h"
#include "nn/nn.h"
