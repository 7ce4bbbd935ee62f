#pragma once
// One-warp kernels over the tensor-core building blocks of
// kernels/cuda/device/tensor_core.cuh (tensor_core_kernels.cu), for
// test_tensor_core.cpp. Each lane builds its fragment registers from global
// memory by the layouts the header documents, runs the instruction and
// writes its result registers back, so the test can judge the documented
// layouts on a real GPU and the emulator's collectives on the emulated one.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace anvil::cuda::test {

// d = a * b + c for one m16n8k16: a 16 x 16 and b 16 x 8 (K x N), both
// row-major 16-bit bits (bfloat16 when `bf16`, else float16), c and d 16 x 8
// row-major floats. One warp.
void launch_mma_tile(bool bf16, const uint16_t* a, const uint16_t* b, const float* c, float* d, cudaStream_t s);

// ldmatrix .x{matrices}{.trans} (matrices 2 or 4): `rows` holds 32 rows of
// 8 16-bit values, copied to shared memory; lane l supplies the address of
// shared row row_of_lane[l]. out[l * matrices + i] = lane l's register i.
void launch_ldmatrix(int matrices, bool trans, const uint16_t* rows, const int* row_of_lane, uint32_t* out,
                     cudaStream_t s);

}  // namespace anvil::cuda::test
