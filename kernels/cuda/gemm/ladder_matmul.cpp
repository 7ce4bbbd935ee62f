// kernel::Matmul views -> GemmArgs for the ladder (see ladder_matmul.h).
#include "kernels/cuda/gemm/ladder_matmul.h"

#include <optional>

#include "kernels/cuda/gemm/gemm.h"
#include "kernels/ops/linalg_kernels.h"

namespace anvil::cuda::gemm {
namespace {

std::optional<GemmDType> gemm_dtype(DType t) {
  switch (t) {
    case DType::Float32:
      return GemmDType::Float32;
    case DType::BFloat16:
      return GemmDType::BFloat16;
    case DType::Float16:
      return GemmDType::Float16;
    default:
      return std::nullopt;
  }
}

// One matrix of a (possibly batched) view: row-major with a leading
// dimension, or nothing if its last dimension is strided.
struct Matrix {
  int64_t rows, cols, ld, batch_stride;
};
std::optional<Matrix> as_matrix(const View& v) {
  const int64_t d = v.dim();
  if (d != 2 && d != 3) return std::nullopt;
  Matrix m{v.shape[d - 2], v.shape[d - 1], v.strides[d - 2], d == 3 ? v.strides[0] : 0};
  if (m.cols > 1 && v.strides[d - 1] != 1) return std::nullopt;
  // With one row the leading dimension is never used to step; pick one every
  // rung accepts (>= cols, a multiple of 8).
  if (m.rows <= 1) m.ld = (m.cols + 7) / 8 * 8;
  if (m.ld < m.cols) return std::nullopt;
  return m;
}

}  // namespace

bool ladder_matmul(const View& out, const View& a, const View& b, const MatmulParams& p, cudaStream_t stream) {
  if (a.dtype != out.dtype || b.dtype != out.dtype || a.dim() != out.dim() || b.dim() != out.dim()) return false;
  const std::optional<GemmDType> dtype = gemm_dtype(out.dtype);
  const std::optional<Matrix> ma = as_matrix(a), mb = as_matrix(b), mc = as_matrix(out);
  if (!dtype || !ma || !mb || !mc) return false;
  const int64_t batches = out.dim() == 3 ? out.shape[0] : 1;
  if (out.dim() == 3 && (a.shape[0] != batches || b.shape[0] != batches)) return false;
  if (ma->rows != mc->rows || mb->cols != mc->cols || ma->cols != mb->rows) return false;

  GemmArgs args;
  args.dtype = *dtype;
  args.M = mc->rows, args.N = mc->cols, args.K = ma->cols;
  args.lda = ma->ld, args.ldb = mb->ld, args.ldc = mc->ld;
  args.alpha = p.alpha, args.beta = p.beta;
  args.A = a.data, args.B = b.data, args.C = out.data;
  // Every batch's matrices must pass the same checks (alignment of each
  // batch's base pointer included), so check them all before launching any.
  const size_t elem = *dtype == GemmDType::Float32 ? 4 : 2;
  auto batch_args = [&](int64_t i) {
    GemmArgs g = args;
    g.A = static_cast<const char*>(a.data) + i * ma->batch_stride * static_cast<int64_t>(elem);
    g.B = static_cast<const char*>(b.data) + i * mb->batch_stride * static_cast<int64_t>(elem);
    g.C = static_cast<char*>(out.data) + i * mc->batch_stride * static_cast<int64_t>(elem);
    return g;
  };
  const GemmRung rung = best_rung(args);
  if (rung == GemmRung{0}) return false;
  for (int64_t i = 1; i < batches; ++i)
    if (!gemm_unsupported_reason(rung, batch_args(i)).empty()) return false;
  // One launch per batch: the rungs have no batch dimension in their grids
  // (a known gap; fine for the large single GEMMs the ladder is tuned for).
  for (int64_t i = 0; i < batches; ++i) launch_gemm(rung, batch_args(i), stream);
  return true;
}

}  // namespace anvil::cuda::gemm
