#pragma once
// Internal to kernels/cuda: the elementwise family split over several .cu
// files so they compile in parallel (unary_floating.cu, unary_integral.cu,
// binary.cu, compare.cu, binary_backward.cu); kernel::Unary/binary/where (elementwise.cu)
// validate and route here.
#include <cuda_runtime_api.h>

#include "kernels/ops/table_kernels.h"
#include "kernels/shapes/elementwise_checks.h"

namespace anvil::cuda {

using shapes::op_name;  // the names both backends use in errors

struct LaunchTarget {
  cudaStream_t stream;
  int device;
};

// Floating inputs (float, double, half, bfloat16) and the others.
void launch_unary_floating(UnaryOp op, const View& out, const View& in, const UnaryParams& p, LaunchTarget t);
void launch_unary_integral(UnaryOp op, const View& out, const View& in, const UnaryParams& p, LaunchTarget t);
// Add, Sub, Mul, Div, Pow, Maximum, Minimum.
void launch_binary_arithmetic(BinaryOp op, const View& out, const View& a, const View& b, LaunchTarget t);
// Eq ... LogicalOr (bool results).
void launch_binary_compare(BinaryOp op, const View& out, const View& a, const View& b, LaunchTarget t);
// The ActivationBackward family (ReluBackward ... Log1pBackward).
void launch_binary_backward(BinaryOp op, const View& out, const View& a, const View& b, LaunchTarget t);

}  // namespace anvil::cuda
