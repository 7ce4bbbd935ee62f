#pragma once
/// @file
/// What the CPU backend runs on this machine: the CPU, its best vector ISA,
/// and the library and kernel each GEMM and convolution uses. Printed in the
/// Trainer's report header, and checked by tests/kernels/cpu/test_gemm.cpp: a
/// CPU with AVX2 or AVX-512 must not train on generic SSE GEMM kernels.
#include <string>

namespace anvil {

/// Which library, kernel and vector ISA a GEMM runs on.
struct GemmKernel {
  std::string library;  ///< "oneDNN 2.6.3", "OpenBLAS 0.3.21"
  std::string kernel;  ///< the library's own name: oneDNN's ISA, OpenBLAS's core ("SkylakeX")
  std::string isa;  ///< the vector ISA that kernel uses, in CpuCapability::isa's names
};

/// What the CPU backend runs on this machine (see cpu_capability()).
struct CpuCapability {
  std::string cpu_model;  ///< /proc/cpuinfo's "model name"
  std::string isa;  ///< best the CPU offers: "avx512_core", "avx2", "avx", "sse4.1" or "sse2"
  GemmKernel float32_gemm;  ///< matmul, linear, attention, conv's GEMMs in float32 (and float16/bfloat16)
  GemmKernel float64_gemm;  ///< matmul and linear in float64
  std::string conv2d;  ///< how float32 conv2d runs: "oneDNN convolution" or "im2col + GEMM"
  /// The Highway target the float32 math, softmax, norms and reductions run
  /// on: "AVX3 (Highway 1.0.3, runtime dispatch)"; or why they are scalar.
  std::string vector_math;
};

CpuCapability cpu_capability();  ///< The CPU, its best ISA and the kernels the CPU backend picked.
/// One line: "AMD EPYC (avx512_core): float32 GEMM oneDNN 2.6.3 avx512_core, ..., vector math AVX3 (...)"
std::string to_string(const CpuCapability& c);

}  // namespace anvil
