#pragma once
// The pieces the CPU attention kernels share (attention.cpp forward,
// attention_backward.cpp): tile sizes, and one tile of masked scores
// s = q @ k^T * scale (+ mask) through the GEMM helper. Operands are dense
// [B * H, rows, cols] arrays in the compute type C (float, or double for
// float64); the mask stays a strided [B, H, L, S] view read row by row.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/base/philox.h"
#include "kernels/cpu/dense_buffer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/vector_math.h"
#include "kernels/shapes/attention_checks.h"

namespace anvil::cpu::attention {

// A tile of 64 queries x 128 keys is 32 KiB of float scores: with the q rows
// and a k/v tile it stays in L2, and its GEMMs are big enough for the library.
inline constexpr int64_t kBlockQ = 64;
inline constexpr int64_t kBlockK = 128;

// Where one (batch, head) problem's operands start, and how to read its mask.
struct Problem {
  const shapes::AttentionShape* shape = nullptr;
  const View* mask = nullptr;  // [B, H, L, S], any strides, or null
  const AttentionParams* params = nullptr;  // scale, causal, dropout
  int64_t n = 0;  // b * H + h
  double scale() const { return params->scale; }
  bool is_causal() const { return params->is_causal; }
  int64_t mask_base() const { return (n / shape->heads) * mask->strides[0] + (n % shape->heads) * mask->strides[1]; }
  // Keys [0, key_end) can matter to queries [i0, i0 + rows): the causal limit.
  int64_t key_end(int64_t i0, int64_t rows) const {
    return is_causal() ? std::min(shape->len_k, i0 + rows) : shape->len_k;
  }
};

// s[r * lds + c] (query i0 + r, key j0 + c) gets -inf where the causal rule or
// a bool mask forbids the pair, and the additive mask's value added otherwise.
template <typename C>
void apply_masks(C* s, int64_t lds, int64_t rows, int64_t cols, int64_t i0, int64_t j0, const Problem& p) {
  constexpr C kNegInf = -std::numeric_limits<C>::infinity();
  if (p.is_causal()) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = std::max<int64_t>(0, i0 + r + 1 - j0); c < cols; ++c) s[r * lds + c] = kNegInf;
  }
  if (!p.mask) return;
  const View& m = *p.mask;
  const int64_t base = p.mask_base() + i0 * m.strides[2] + j0 * m.strides[3], sc = m.strides[3];
  visit_dtype(m.dtype, [&](auto tag) {
    using M = decltype(tag);
    // Called with the key stride as a constant 1 for contiguous mask rows (the
    // usual [B, 1, 1, S] key-padding mask): the compiler then vectorises the
    // additive loop, and a bool row over float scores is one vector select.
    auto mask_rows = [&](auto key_stride) {
      for (int64_t r = 0; r < rows; ++r) {
        const M* src = m.ptr<M>() + base + r * m.strides[2];
        C* row = s + r * lds;
        if constexpr (std::is_same_v<M, bool>) {
          // Two ifs, not one &&: clang checks a discarded branch whose
          // condition still depends on the lambda's parameter, and row is a
          // double* in the float64 instantiation.
          if constexpr (std::is_same_v<C, float>) {
            if constexpr (std::is_same_v<decltype(key_stride), std::integral_constant<int64_t, 1>>) {
              if (vec::enabled()) {
                vec::select_row(row, reinterpret_cast<const uint8_t*>(src), cols, kNegInf);
                continue;
              }
            }
          }
          for (int64_t c = 0; c < cols; ++c)
            if (!src[c * key_stride]) row[c] = kNegInf;
        } else {
          for (int64_t c = 0; c < cols; ++c) row[c] += convert_value<C>(src[c * key_stride]);
        }
      }
    };
    if (sc == 1)
      mask_rows(std::integral_constant<int64_t, 1>{});
    else
      mask_rows(sc);
  });
}

// The largest of n scores, NaN if any is NaN. float rows on the vector
// kernels: a scalar max is a chain of dependent instructions, and was most of
// the forward kernel's own time on MiniLM's short rows.
template <typename C> C max_of(const C* row, int64_t n) {
  if constexpr (std::is_same_v<C, float>) {
    if (vec::enabled()) return vec::max(row, n);
  }
  C m = -std::numeric_limits<C>::infinity();
  for (int64_t c = 0; c < n; ++c) {
    if (std::isnan(row[c])) return row[c];
    m = std::max(m, row[c]);
  }
  return m;
}

// row[c] = exp(row[c] - shift); returns their sum. float rows on the vector
// kernels (Highway), double (float64 inputs) and the scalar build as is.
template <typename C> C exp_shifted(C* row, int64_t n, C shift) {
  if constexpr (std::is_same_v<C, float>) {
    if (vec::enabled()) return static_cast<float>(vec::exp_shifted_row(row, row, n, shift));
  }
  C sum = 0;
  for (int64_t c = 0; c < n; ++c) sum += (row[c] = std::exp(row[c] - shift));
  return sum;
}

// s = q[i0 : i0 + rows] @ k[j0 : j0 + cols]^T * scale, masked. q, k point at
// this problem's [L, E] and [S, E] rows.
template <typename C>
void score_tile(C* s, int64_t lds, const C* q, const C* k, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
                const Problem& p) {
  const int64_t e = p.shape->dim_qk;
  if (e == 0) {
    for (int64_t r = 0; r < rows; ++r) std::fill(s + r * lds, s + r * lds + cols, C(0));
  } else {
    gemm(false, true, rows, cols, e, static_cast<C>(p.scale()), q + i0 * e, e, k + j0 * e, e, C(0), s, lds);
  }
  apply_masks(s, lds, rows, cols, i0, j0, p);
}

// Dropout on a tile of probabilities (query i0 + r, key j0 + c): each is
// multiplied by the factor dropout(softmax(scores)) would apply with the same
// generator state (AttentionParams): 1 / (1 - p) when kept, 0 when dropped.
// With `also`, also[r * lds + c] is multiplied by the same factor (the
// backward's dP). No-op without dropout.
template <typename C>
void drop_tile(C* s, int64_t lds, int64_t rows, int64_t cols, int64_t i0, int64_t j0, const Problem& p,
               C* also = nullptr) {
  const double drop = p.params->dropout_p;
  if (drop <= 0) return;
  const C keep_scale = static_cast<C>(1.0 / (1.0 - drop));
  const auto& sh = *p.shape;
  for (int64_t r = 0; r < rows; ++r) {
    // Draws are made four per Philox call (core/base/philox.h): walk the row's
    // indices and call once per group of four.
    const uint64_t first = static_cast<uint64_t>((p.n * sh.len_q + i0 + r) * sh.len_k + j0);
    uint64_t block = ~uint64_t{0};
    philox::Uint4 draws{};
    for (int64_t c = 0; c < cols; ++c) {
      const uint64_t i = first + static_cast<uint64_t>(c);
      if (i / 4 != block) {
        block = i / 4;
        draws = philox::philox4x32(p.params->seed, p.params->offset + block);
      }
      const bool keep = static_cast<double>(philox::to_uniform(philox::lane(draws, static_cast<int>(i % 4)))) >= drop;
      const C factor = keep ? keep_scale : C(0);
      s[r * lds + c] *= factor;
      if (also) also[r * lds + c] *= factor;
    }
  }
}

}  // namespace anvil::cpu::attention
