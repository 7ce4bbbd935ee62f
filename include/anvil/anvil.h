#pragma once
/// @file
/// The one header a user includes: `#include <anvil/anvil.h>`.
/// Tensors, every op family, factories, random numbers and autograd (with
/// gradient checkpointing and custom `Function<T>`s), the deterministic-algorithms switch, what the
/// machine offers (anvil::cpu_capability(), anvil::cuda::is_available()), the
/// nn layer and the distributed layer. Like torch/torch.h it brings
/// `<iostream>`, so `std::cout << x` and `std::cout << *model` need nothing else.
///
/// It is also the definition of the public API: the headers it reaches are
/// the ones `cmake --install` installs (cmake/public_headers.cmake), and any
/// of them may be included on its own ("nn/module.h", "distributed/ddp/ddp.h").
#include <iostream>

#include "core/autograd/anomaly_mode.h"
#include "core/autograd/checkpoint.h"
#include "core/autograd/custom_function.h"
#include "core/autograd/engine.h"
#include "core/autograd/grad_mode.h"
#include "core/base/determinism.h"
#include "core/cpu_info.h"
#include "core/cuda.h"
#include "core/ops.h"
#include "distributed/distributed.h"
#include "nn/nn.h"
