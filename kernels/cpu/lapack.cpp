// lu_factor and lu_solve through LAPACK's getrf/getrs, and svd through its
// divide-and-conquer gesdd, which the OpenBLAS the
// build links already carries (Debian's libopenblas exports the Fortran
// symbols). Views arrive in LAPACK's column-major layout, so each matrix is
// handed over in place.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/base/error.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/linalg_kernels.h"
#include "kernels/shapes/linalg_checks.h"

extern "C" {
// Fortran calling convention: every argument by pointer; a character argument
// carries a hidden length at the end.
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgetrs_(const char* trans, const int* n, const int* nrhs, const float* a, const int* lda, const int* ipiv,
             float* b, const int* ldb, int* info, size_t trans_len);
void dgetrs_(const char* trans, const int* n, const int* nrhs, const double* a, const int* lda, const int* ipiv,
             double* b, const int* ldb, int* info, size_t trans_len);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u, const int* ldu,
             float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info, size_t jobz_len);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info,
             size_t jobz_len);
}

namespace anvil::cpu {
namespace {

void getrf(float* a, int n, int* ipiv, int* info) { sgetrf_(&n, &n, a, &n, ipiv, info); }
void getrf(double* a, int n, int* ipiv, int* info) { dgetrf_(&n, &n, a, &n, ipiv, info); }
void getrs(const float* a, int n, int nrhs, const int* ipiv, float* b, int* info) {
  sgetrs_("N", &n, &nrhs, a, &n, ipiv, b, &n, info, 1);
}
void getrs(const double* a, int n, int nrhs, const int* ipiv, double* b, int* info) {
  dgetrs_("N", &n, &nrhs, a, &n, ipiv, b, &n, info, 1);
}

// jobz 'S': the reduced U [m, k] and V^T [k, n]; 'N': the values alone.
void gesdd(char jobz, int m, int n, float* a, float* s, float* u, float* vt, int ldvt, float* work, int lwork,
           int* iwork, int* info) {
  const int ldu = std::max(1, m);
  sgesdd_(&jobz, &m, &n, a, &ldu, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}
void gesdd(char jobz, int m, int n, double* a, double* s, double* u, double* vt, int ldvt, double* work, int lwork,
           int* iwork, int* info) {
  const int ldu = std::max(1, m);
  dgesdd_(&jobz, &m, &n, a, &ldu, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}

// LAPACK's interface counts in int: a matrix dim past that cannot be passed.
int lapack_int(const char* op, int64_t v) {
  ANVIL_CHECK(v <= (int64_t{1} << 31) - 1, op, ": a dim of ", v, " exceeds LAPACK's 32-bit int");
  return static_cast<int>(v);
}

template <typename T> void factor_batch(const View& a, const View& pivots, const View& info, const shapes::LuShape& s) {
  const int n = lapack_int("lu_factor", s.n);
  for (int64_t i = 0; i < s.batch; ++i) {
    int status = 0;
    getrf(a.ptr<T>() + i * s.n * s.n, n, pivots.ptr<int>() + i * s.n, &status);
    ANVIL_CHECK(status >= 0, "lu_factor: LAPACK getrf rejected argument ", -status);
    info.ptr<int>()[i] = status;
  }
}

template <typename T> void solve_batch(const View& lu, const View& pivots, const View& b, const shapes::LuShape& s) {
  const int n = lapack_int("lu_solve", s.n), nrhs = lapack_int("lu_solve", s.rhs);
  for (int64_t i = 0; i < s.batch; ++i) {
    int status = 0;
    getrs(lu.ptr<const T>() + i * s.n * s.n, n, nrhs, pivots.ptr<const int>() + i * s.n, b.ptr<T>() + i * s.n * s.rhs,
          &status);
    ANVIL_CHECK(status == 0, "lu_solve: LAPACK getrs rejected argument ", -status);
  }
}

template <typename T>
void svd_batch(const View& a, const View& s, const View* u, const View* v, const View& info,
               const shapes::SvdShape& sh) {
  const int m = lapack_int("svd", sh.m), n = lapack_int("svd", sh.n), k = std::min(m, n);
  const char jobz = sh.vectors ? 'S' : 'N';
  // gesdd writes V^T [k, n]; the contract wants V, so it lands here first.
  std::vector<T> vt(sh.vectors ? static_cast<size_t>(k) * static_cast<size_t>(n) : 1);
  std::vector<int> iwork(8 * static_cast<size_t>(k));
  const int ldvt = std::max(1, k);
  T query = 0;
  int status = 0;
  gesdd(jobz, m, n, a.ptr<T>(), s.ptr<T>(), nullptr, vt.data(), ldvt, &query, -1, iwork.data(), &status);
  ANVIL_CHECK(status == 0, "svd: LAPACK gesdd's workspace query rejected argument ", -status);
  const int lwork = static_cast<int>(query) + 1;
  std::vector<T> work(static_cast<size_t>(lwork));
  for (int64_t i = 0; i < sh.batch; ++i) {
    T* ui = sh.vectors ? u->ptr<T>() + i * sh.m * sh.k : nullptr;
    gesdd(jobz, m, n, a.ptr<T>() + i * sh.m * sh.n, s.ptr<T>() + i * sh.k, ui, vt.data(), ldvt, work.data(), lwork,
          iwork.data(), &status);
    // Newer LAPACKs answer -4 (argument a) for a NaN or inf in the input.
    ANVIL_CHECK(status >= 0, "svd: LAPACK gesdd rejected argument ", -status,
                status == -4 ? " (the matrix holds a NaN or an infinity)" : "");
    info.ptr<int>()[i] = status;
    if (!sh.vectors) continue;
    T* vi = v->ptr<T>() + i * sh.n * sh.k;
    for (int r = 0; r < k; ++r)
      for (int c = 0; c < n; ++c) vi[c + static_cast<int64_t>(r) * n] = vt[r + static_cast<size_t>(c) * k];
  }
}

}  // namespace

void svd(const View& a, const View& s, const View* u, const View* v, const View& info) {
  const shapes::SvdShape sh = shapes::check_svd(a, s, u, v, info);
  for (int64_t i = 0; i < sh.batch; ++i) info.ptr<int>()[i] = 0;
  if (sh.batch == 0 || sh.k == 0) return;
  if (a.dtype == kFloat32)
    svd_batch<float>(a, s, u, v, info, sh);
  else
    svd_batch<double>(a, s, u, v, info, sh);
}

void lu_factor(const View& a, const View& pivots, const View& info) {
  const shapes::LuShape s = shapes::check_lu_factor(a, pivots, info);
  if (s.batch == 0 || s.n == 0) {
    for (int64_t i = 0; i < s.batch; ++i) info.ptr<int>()[i] = 0;
    return;
  }
  if (a.dtype == kFloat32)
    factor_batch<float>(a, pivots, info, s);
  else
    factor_batch<double>(a, pivots, info, s);
}

void lu_solve(const View& lu, const View& pivots, const View& b) {
  const shapes::LuShape s = shapes::check_lu_solve(lu, pivots, b);
  if (s.batch == 0 || s.n == 0 || s.rhs == 0) return;
  if (b.dtype == kFloat32)
    solve_batch<float>(lu, pivots, b, s);
  else
    solve_batch<double>(lu, pivots, b, s);
}

ANVIL_REGISTER_KERNEL(kernel::LuFactor, CPU, lu_factor);
ANVIL_REGISTER_KERNEL(kernel::LuSolve, CPU, lu_solve);
ANVIL_REGISTER_KERNEL(kernel::Svd, CPU, svd);

}  // namespace anvil::cpu
