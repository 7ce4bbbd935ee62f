#pragma once
// float32 linear layers, out = in @ weight^T + bias, on oneDNN's matmul
// primitive with the bias added in the kernel's epilogue: out is written
// once. Without it (the GEMM helper, gemm.h) the bias costs a pass of its
// own over out (a broadcast add after the GEMM, or a fill before a beta = 1
// GEMM), which showed in a MiniLM encode's profile (kernels/cpu/README.md).
#include <cstdint>

namespace anvil::cpu::onednn {

// Row-major operands with their leading dimensions (elements between rows):
// in [rows, in_features], weight [out_features, in_features], out
// [rows, out_features]; bias [out_features] contiguous, or null.
struct LinearShape {
  int64_t rows, in_features, out_features;
  int64_t ld_in, ld_weight, ld_out;
};

// Whether float32 linear layers go to oneDNN: built with it and float32 GEMMs
// on it (not ANVIL_CPU_GEMM=openblas), and a shape the primitive takes
// (rows and in_features positive).
bool linear_runs_on_onednn(const LinearShape& s);

void linear_forward(float* out, const float* in, const float* weight, const float* bias, const LinearShape& s);

}  // namespace anvil::cpu::onednn
