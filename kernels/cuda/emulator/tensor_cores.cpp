// The emulated GPU's tensor-core instructions (tensor_cores.h): the last lane
// of the warp to arrive gathers every lane's fragment registers, rebuilds the
// matrices by the PTX ISA's layouts (kernels/cuda/device/tensor_core.cuh),
// computes, and hands each lane its registers of the result in the same
// layouts. The shared-memory reads of ldmatrix are the lanes' own (each read
// its row through the checkers before arriving), so racecheck and initcheck
// name the lane that supplied the row.
#include "kernels/cuda/emulator/tensor_cores.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <string>

#include "kernels/cuda/emulator/device_memory.h"
#include "kernels/cuda/emulator/execution.h"
#include "kernels/cuda/emulator/findings.h"
#include "kernels/cuda/emulator/profiler.h"

namespace anvil::emulator {
std::string running_thread_text();  // scheduler.cpp

namespace {

// Synccheck tells these apart from device_builtins.h's WarpOp values.
enum CollectiveOp : int { kMmaOp = 16, kLdmatrixOp = 17 };

float bf16_to_float(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }

float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16, exponent = h >> 10 & 0x1f, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | mantissa << 13);  // inf, NaN
  if (exponent == 0) {  // zero and subnormals: mantissa * 2^-24, exact in float
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | (exponent + 112) << 23 | mantissa << 13);
}

// Element i (0: low half, 1: high half) of a register holding two 16-bit values.
uint16_t element(uint32_t reg, int i) { return static_cast<uint16_t>(reg >> (16 * i)); }

// --- mma.sync.m16n8k16 ---

struct MmaLane {
  uint32_t a[4], b[2];
  float c[4], d[4];
};

void compute_mma(void* const* lanes, int inputs) {
  float (*to_float)(uint16_t) = inputs == static_cast<int>(MmaInputs::BFloat16) ? bf16_to_float : f16_to_float;
  float A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < 32; ++l) {
    const MmaLane& m = *static_cast<const MmaLane*>(lanes[l]);
    const int g = l / 4, q = l % 4;
    for (int e = 0; e < 2; ++e) {
      A[g][2 * q + e] = to_float(element(m.a[0], e));
      A[g + 8][2 * q + e] = to_float(element(m.a[1], e));
      A[g][2 * q + 8 + e] = to_float(element(m.a[2], e));
      A[g + 8][2 * q + 8 + e] = to_float(element(m.a[3], e));
      B[2 * q + e][g] = to_float(element(m.b[0], e));
      B[2 * q + 8 + e][g] = to_float(element(m.b[1], e));
      C[g][2 * q + e] = m.c[e];
      C[g + 8][2 * q + e] = m.c[2 + e];
    }
  }
  for (int l = 0; l < 32; ++l) {
    MmaLane& m = *static_cast<MmaLane*>(lanes[l]);
    const int g = l / 4, q = l % 4;
    for (int e = 0; e < 4; ++e) {
      const int i = g + (e / 2) * 8, j = 2 * q + e % 2;
      float acc = C[i][j];
      // Each product is exact in float (8- or 11-bit significands), so a
      // fused multiply-add, should the compiler emit one, rounds the same.
      for (int k = 0; k < 16; ++k) acc += A[i][k] * B[k][j];
      m.d[e] = acc;
    }
  }
}

// --- ldmatrix.m8n8.b16 ---

struct LdmatrixLane {
  uint32_t row[4];
  uint32_t r[4];
};

void compute_ldmatrix(void* const* lanes, int arg) {
  const int matrices = arg & 7;
  const bool trans = (arg & 8) != 0;
  uint16_t M[4][8][8];  // matrix, row, column
  for (int l = 0; l < 8 * matrices; ++l) {
    const LdmatrixLane& m = *static_cast<const LdmatrixLane*>(lanes[l]);
    for (int c = 0; c < 8; ++c) M[l / 8][l % 8][c] = element(m.row[c / 2], c % 2);
  }
  for (int l = 0; l < 32; ++l) {
    LdmatrixLane& m = *static_cast<LdmatrixLane*>(lanes[l]);
    const int g = l / 4, q = l % 4;
    for (int i = 0; i < matrices; ++i) {
      uint32_t reg = 0;
      for (int e = 0; e < 2; ++e) reg |= uint32_t{trans ? M[i][2 * q + e][g] : M[i][g][2 * q + e]} << (16 * e);
      m.r[i] = reg;
    }
  }
}

enum TensorCoreMemcheckKind : int { kNotShared = 6, kBadOperand = 7 };

void operand_finding(int kind, const void* pc, const std::string& what) {
  if (!enabled(Checker::Memcheck)) return;
  record_once(Checker::Memcheck, kind, pc, nullptr, [&] { return what + ": " + running_thread_text(); });
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

void mma_m16n8k16(MmaInputs inputs, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4],
                  Site s) {
  MmaLane mine{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}, {c[0], c[1], c[2], c[3]}, {}};
  warp_collective(&mine, compute_mma, kMmaOp, static_cast<int>(inputs), s);
  for (int e = 0; e < 4; ++e) d[e] = mine.d[e];
}

void ldmatrix_m8n8(int matrices, bool trans, const void* address, const uint32_t (&row)[4], uint32_t* r, Site s) {
  if (address && !in_shared_memory(address))
    operand_finding(kNotShared, __builtin_return_address(0),
                    "ldmatrix row at " + describe_address(address) + ": not shared memory");
  LdmatrixLane mine{{row[0], row[1], row[2], row[3]}, {}};
  warp_collective(&mine, compute_ldmatrix, kLdmatrixOp, matrices | (trans ? 8 : 0), s);
  for (int i = 0; i < matrices; ++i) r[i] = mine.r[i];
}

void check_cp_async_16(const void* dst, const void* src, int src_bytes) {
  const void* pc = __builtin_return_address(0);
  if (!in_shared_memory(dst))
    operand_finding(kNotShared, pc, "cp.async destination " + describe_address(dst) + " is not shared memory");
  if (!aligned16(dst) || !aligned16(src))
    operand_finding(kMisaligned, pc,
                    "cp.async of 16 bytes from " + describe_address(src) + " to " + describe_address(dst) +
                        ": both must be 16-byte aligned (a GPU faults: misaligned address)");
  if (src_bytes < 0 || src_bytes > 16)
    operand_finding(kBadOperand, pc, "cp.async src-size " + std::to_string(src_bytes) + " is outside [0, 16]");
}

}  // namespace anvil::emulator
