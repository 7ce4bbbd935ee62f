#pragma once
// The emulated GPU's tensor-core instructions, which kernels/cuda/device/
// tensor_core.cuh calls in the emulated build where nvcc emits inline PTX.
// mma and ldmatrix are warp collectives (warp_collective, execution.h): all
// 32 lanes of the warp at one call site, as `.sync.aligned` demands, checked
// by synccheck like a shuffle. The fragment layouts they implement are
// documented in tensor_core.cuh (from the PTX ISA).
#include <cstdint>

#include "kernels/cuda/emulator/device_builtins.h"  // Site

namespace anvil::emulator {

enum class MmaInputs : int { BFloat16, Float16 };

// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32:
// d = a * b + c over the warp's fragments. Each product of two 16-bit inputs
// is exact in float; the sum is c[i][j] + a[i][0] b[0][j] + ... + a[i][15] b[15][j]
// in float, in that order. (A GPU's tensor core adds the 16 products in its
// own order and rounding, so results may differ from it in the last bits.)
void mma_m16n8k16(MmaInputs inputs, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4],
                  Site s);

// ldmatrix.sync.aligned.m8n8.x{matrices}{.trans}.shared.b16. `address` is
// the row address this lane supplies and `row` the 16 bytes the lane read
// there (through the checkers); lanes >= 8 * matrices supply none (null,
// ignored). Writes r[0 .. matrices). Memcheck: every supplied address must be
// shared memory.
void ldmatrix_m8n8(int matrices, bool trans, const void* address, const uint32_t (&row)[4], uint32_t* r, Site s);

// cp.async.cg.shared.global 16 with src-size `src_bytes`: memcheck's checks
// of the operands PTX requires (dst in shared memory, both 16-byte aligned,
// src_bytes in [0, 16]). The copy itself is the caller's, through the checkers.
void check_cp_async_16(const void* dst, const void* src, int src_bytes);

}  // namespace anvil::emulator
