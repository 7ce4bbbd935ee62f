// lu_factor and lu_solve through LAPACK's getrf/getrs, which the OpenBLAS the
// build links already carries (Debian's libopenblas exports the Fortran
// symbols). Views arrive in LAPACK's column-major layout, so each matrix is
// handed over in place.
#include <cstddef>

#include "core/base/error.h"
#include "kernels/cpu/cpu_backend.h"
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

// LAPACK's interface counts in int: a matrix dim past that cannot be passed.
int lapack_int(const char* op, int64_t v) {
  ANVIL_CHECK(v <= (int64_t{1} << 31) - 1, op, ": a dim of ", v, " exceeds LAPACK's 32-bit int");
  return static_cast<int>(v);
}

template <typename T>
void factor_batch(const View& a, const View& pivots, const View& info, const shapes::LuShape& s) {
  const int n = lapack_int("lu_factor", s.n);
  for (int64_t i = 0; i < s.batch; ++i) {
    int status = 0;
    getrf(a.ptr<T>() + i * s.n * s.n, n, pivots.ptr<int>() + i * s.n, &status);
    ANVIL_CHECK(status >= 0, "lu_factor: LAPACK getrf rejected argument ", -status);
    info.ptr<int>()[i] = status;
  }
}

template <typename T>
void solve_batch(const View& lu, const View& pivots, const View& b, const shapes::LuShape& s) {
  const int n = lapack_int("lu_solve", s.n), nrhs = lapack_int("lu_solve", s.rhs);
  for (int64_t i = 0; i < s.batch; ++i) {
    int status = 0;
    getrs(lu.ptr<const T>() + i * s.n * s.n, n, nrhs, pivots.ptr<const int>() + i * s.n,
          b.ptr<T>() + i * s.n * s.rhs, &status);
    ANVIL_CHECK(status == 0, "lu_solve: LAPACK getrs rejected argument ", -status);
  }
}

}  // namespace

void CpuBackend::lu_factor(const View& a, const View& pivots, const View& info) {
  const shapes::LuShape s = shapes::check_lu_factor(a, pivots, info);
  if (s.batch == 0 || s.n == 0) {
    for (int64_t i = 0; i < s.batch; ++i) info.ptr<int>()[i] = 0;
    return;
  }
  if (a.dtype == kFloat32) factor_batch<float>(a, pivots, info, s);
  else factor_batch<double>(a, pivots, info, s);
}

void CpuBackend::lu_solve(const View& lu, const View& pivots, const View& b) {
  const shapes::LuShape s = shapes::check_lu_solve(lu, pivots, b);
  if (s.batch == 0 || s.n == 0 || s.rhs == 0) return;
  if (b.dtype == kFloat32) solve_batch<float>(lu, pivots, b, s);
  else solve_batch<double>(lu, pivots, b, s);
}

}  // namespace anvil::cpu
