// Fused attention forward on the CPU: a blocked online softmax (one pass over
// the keys per block of queries, rescaling the running output when a row's
// maximum grows), so only a kBlockQ x kBlockK tile of scores ever exists.
// OpenMP over (batch * head, query block); each tile product is one call of
// the GEMM helper (single-threaded inside the parallel region). Math in float
// (double for float64), 16-bit inputs converted on the way in and out.
// Dropout (AttentionParams::dropout_p) drops probabilities after the row sums
// are taken, drawing the mask from Philox as the dropout op would.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/attention_tiles.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/attention_kernels.h"
#include "kernels/cpu/parallel_if.h"

namespace anvil::cpu {
namespace {

using attention::kBlockK;
using attention::kBlockQ;
using attention::Problem;

// Per-thread scratch of one query block.
template <typename C> struct ForwardScratch {
  std::vector<C> scores, acc, row_max, row_sum;
  explicit ForwardScratch(int64_t dim_v)
      : scores(kBlockQ * kBlockK), acc(kBlockQ * dim_v), row_max(kBlockQ), row_sum(kBlockQ) {}
};

// Queries [i0, i0 + rows) of problem p: out rows and their log-sum-exp.
template <typename C>
void forward_block(C* out, float* lse, const C* q, const C* k, const C* v, int64_t i0, int64_t rows, const Problem& p,
                   ForwardScratch<C>& w) {
  constexpr C kNegInf = -std::numeric_limits<C>::infinity();
  const int64_t ev = p.shape->dim_v;
  std::fill(w.acc.begin(), w.acc.begin() + rows * ev, C(0));
  std::fill(w.row_max.begin(), w.row_max.begin() + rows, kNegInf);
  std::fill(w.row_sum.begin(), w.row_sum.begin() + rows, C(0));
  const int64_t key_end = p.key_end(i0, rows);
  for (int64_t j0 = 0; j0 < key_end; j0 += kBlockK) {
    const int64_t cols = std::min(kBlockK, key_end - j0);
    C* s = w.scores.data();
    attention::score_tile(s, kBlockK, q, k, i0, rows, j0, cols, p);
    for (int64_t r = 0; r < rows; ++r) {
      C* row = s + r * kBlockK;
      // A NaN score makes the row's maximum NaN, so the whole row comes out
      // NaN (as softmax's), rather than the NaN being skipped by std::max.
      const C tile_max = attention::max_of(row, cols);
      const C new_max = std::isnan(tile_max) ? tile_max : std::max(w.row_max[r], tile_max);
      if (new_max == kNegInf) {  // nothing allowed yet: these probabilities are 0
        std::fill(row, row + cols, C(0));
        continue;
      }
      const C sum = attention::exp_shifted(row, cols, new_max);
      const C rescale = std::exp(w.row_max[r] - new_max);  // 0 while the row had no allowed key
      if (rescale != C(1))
        for (int64_t d = 0; d < ev; ++d) w.acc[r * ev + d] *= rescale;
      w.row_sum[r] = w.row_sum[r] * rescale + sum;
      w.row_max[r] = new_max;
    }
    // Dropout acts on the normalised probabilities: the row sums above keep
    // every key, the output accumulates only the kept ones (scaled).
    attention::drop_tile(s, kBlockK, rows, cols, i0, j0, p);
    if (ev > 0) gemm(false, false, rows, ev, cols, C(1), s, kBlockK, v + j0 * ev, ev, C(1), w.acc.data(), ev);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const C l = w.row_sum[r];
    // A row with no allowed key: output 0 and lse +inf, so the backward's
    // exp(s - lse) gives it zero probabilities (and zero gradients).
    const C inv = l > 0 ? C(1) / l : C(0);
    for (int64_t d = 0; d < ev; ++d) out[(i0 + r) * ev + d] = w.acc[r * ev + d] * inv;
    lse[i0 + r] = l > 0 ? static_cast<float>(w.row_max[r] + std::log(l)) : std::numeric_limits<float>::infinity();
  }
}

template <typename C>
void attention_forward_typed(const View& out_view, const View& lse_view, const View& q_view, const View& k_view,
                             const View& v_view, const View* mask, const AttentionParams& params,
                             const shapes::AttentionShape& sh) {
  const DenseIn<C> q(q_view), k(k_view), v(v_view);
  DenseOut<C> out(out_view);
  DenseOut<float> lse(lse_view);
  const int64_t q_blocks = (sh.len_q + kBlockQ - 1) / kBlockQ;
  const int64_t tasks = sh.rows() * q_blocks;
  parallel_if(tasks > 1, [&] {
    ForwardScratch<C> scratch(sh.dim_v);
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t n = t / q_blocks, i0 = (t % q_blocks) * kBlockQ;
      const Problem p{&sh, mask, &params, n};
      forward_block(out.get() + n * sh.len_q * sh.dim_v, lse.get() + n * sh.len_q, q.get() + n * sh.len_q * sh.dim_qk,
                    k.get() + n * sh.len_k * sh.dim_qk, v.get() + n * sh.len_k * sh.dim_v, i0,
                    std::min(kBlockQ, sh.len_q - i0), p, scratch);
    }
  });
  out.commit();
  lse.commit();
}

}  // namespace

void attention_forward(const View& out, const View& lse, const View& q, const View& k, const View& v, const View* mask,
                       const AttentionParams& p) {
  const shapes::AttentionShape sh = shapes::check_attention(out, lse, q, k, v, mask);
  if (sh.rows() * sh.len_q == 0) return;
  dispatch_floating("attention", q.dtype,
                    [&](auto tag) { attention_forward_typed<decltype(tag)>(out, lse, q, k, v, mask, p, sh); });
}

ANVIL_REGISTER_KERNEL(kernel::AttentionForward, CPU, attention_forward);

}  // namespace anvil::cpu
