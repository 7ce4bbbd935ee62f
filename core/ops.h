#pragma once
// Every op family.
#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/memory.h"
#include "core/ops/elementwise.h"
#include "core/ops/indexing.h"
#include "core/ops/linalg.h"
#include "core/ops/nn_ops.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"
#include "core/random.h"
#include "core/stream.h"
#include "core/tensor.h"
