#pragma once
// float32 conv2d on oneDNN's convolution primitives (forward, backward data,
// backward weights), beside the im2col + GEMM path in conv.cpp, which stays
// the reference, the float64 path and the path of builds without oneDNN.
// Every pointer is a dense NCHW (OIHW for weights) float array. oneDNN picks
// its kernel by the CPU's feature bits and its own blocked layouts; the
// reorders to and from them are part of each call. kernels/cpu/README.md has
// the per-shape measurements that chose it.
#include <string>

#include "kernels/shapes/geometry.h"

namespace anvil::cpu::onednn {

// Whether float32 conv2d of this geometry goes to oneDNN: built with it, not
// ANVIL_CPU_CONV=im2col (set to compare the two), and a shape where it measured
// faster (kernels/cpu/README.md).
bool conv2d_runs_on_onednn(const shapes::ConvGeometry& g);
// What float32 conv2d runs on: "oneDNN convolution (<its implementation>)" or "im2col + GEMM".
std::string conv2d_implementation();

void conv2d_forward(float* out, const float* in, const float* weight, const float* bias, const shapes::ConvGeometry& g);
void conv2d_backward_input(float* grad_in, const float* grad_out, const float* weight, const shapes::ConvGeometry& g);
void conv2d_backward_weight(float* grad_weight, const float* grad_out, const float* in, const shapes::ConvGeometry& g);

}  // namespace anvil::cpu::onednn
