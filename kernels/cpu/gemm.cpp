// GEMM for the CPU kernels: oneDNN for float32 when built with it, OpenBLAS
// otherwise (see gemm.h for why), and the names of what was picked.
#include "kernels/cpu/gemm.h"

#include <cblas.h>

#if ANVIL_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

// Weak, so that a BLAS other than OpenBLAS still links (the address is null then).
#pragma weak openblas_get_parallel
#pragma weak openblas_get_num_threads
#pragma weak openblas_get_corename
#pragma weak openblas_get_config

// OpenBLAS's DYNAMIC_ARCH entry points (driver/others/dynamic.c): quit forgets
// the chosen core, init chooses again (honouring OPENBLAS_CORETYPE).
extern "C" {
void gotoblas_dynamic_init(void);
void gotoblas_dynamic_quit(void);
}
#pragma weak gotoblas_dynamic_init
#pragma weak gotoblas_dynamic_quit

#include <cstdlib>
#include <sstream>
#include <string_view>

#include "core/base/error.h"
#include "kernels/cpu/blas_threads.h"

namespace anvil::cpu {

bool use_openmp_beside_blas() {
  static const bool use = [] {
    if (&openblas_get_parallel == nullptr || &openblas_get_num_threads == nullptr) return true;
    const bool own_pthread_pool = openblas_get_parallel() == 1 && openblas_get_num_threads() > 1;
    return !own_pthread_pool;
  }();
  return use;
}

bool float32_gemm_on_onednn() {
#if ANVIL_HAVE_ONEDNN
  static const bool use = [] {
    const char* forced = std::getenv("ANVIL_CPU_GEMM");
    if (forced == nullptr || *forced == '\0' || std::string_view(forced) == "onednn") return true;
    ANVIL_CHECK(std::string_view(forced) == "openblas", "ANVIL_CPU_GEMM=", forced, ": expected onednn or openblas");
    return false;
  }();
  return use;
#else
  return false;
#endif
}

namespace {

// OpenBLAS's x86-64 cores by the widest ISA their kernels use.
std::string openblas_core_isa(std::string_view core) {
  for (std::string_view c : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (core == c) return "avx512_core";
  for (std::string_view c : {"Haswell", "Zen", "Excavator", "Steamroller"})
    if (core == c) return "avx2";
  for (std::string_view c : {"Sandybridge", "Bulldozer", "Piledriver"})
    if (core == c) return "avx";
  for (std::string_view c : {"Nehalem", "Penryn", "Dunnington", "Barcelona", "Bobcat"})
    if (core == c) return "sse4.1";
  return "sse3";  // Prescott, Core2, Atom, Opteron...: OpenBLAS's generic x86-64 kernels
}

// The guard this file exists for: OpenBLAS picks its core from a table of CPU
// models and, on one it does not know, runs generic SSE3 kernels, several
// times slower. When the core it picked uses a narrower ISA than the CPU offers,
// pick again by the CPU's features: SkylakeX for AVX-512, Haswell for AVX2.
// Runs once, before anvil's first OpenBLAS call. ANVIL_OPENBLAS_GUARD=off
// leaves OpenBLAS's own choice (to measure it).
void guard_openblas_core() {
  static const bool done = [] {
    if (&openblas_get_corename == nullptr || &gotoblas_dynamic_init == nullptr || &gotoblas_dynamic_quit == nullptr)
      return true;
    const char* guard = std::getenv("ANVIL_OPENBLAS_GUARD");
    if (guard != nullptr && std::string_view(guard) == "off") return true;
    const std::string isa = cpu_isa();
    const char* core = isa_rank(isa) >= isa_rank("avx512_core") ? "SkylakeX"
                       : isa_rank(isa) >= isa_rank("avx2")      ? "Haswell"
                                                                : nullptr;
    if (core == nullptr || isa_rank(openblas_core_isa(openblas_get_corename())) >= isa_rank(isa)) return true;
    const char* user_choice = std::getenv("OPENBLAS_CORETYPE");
    const std::string saved = user_choice ? user_choice : "";
    setenv("OPENBLAS_CORETYPE", core, 1);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    if (user_choice)
      setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
    else
      unsetenv("OPENBLAS_CORETYPE");
    return true;
  }();
  (void)done;
}

CBLAS_TRANSPOSE cblas_trans(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

// OpenBLAS takes 32-bit sizes (Debian's LP64 build).
blasint blas_int(int64_t v, const char* what) {
  ANVIL_CHECK(v <= INT32_MAX, "gemm: ", what, " = ", v, " exceeds OpenBLAS's 32-bit sizes");
  return static_cast<blasint>(v);
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
#if ANVIL_HAVE_ONEDNN
  if (float32_gemm_on_onednn()) {
    const dnnl_status_t status =
        dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    ANVIL_CHECK(status == dnnl_success, "gemm: oneDNN sgemm failed with status ", static_cast<int>(status),
                " for m=", m, " n=", n, " k=", k);
    return;
  }
#endif
  guard_openblas_core();
  cblas_sgemm(CblasRowMajor, cblas_trans(trans_a), cblas_trans(trans_b), blas_int(m, "m"), blas_int(n, "n"),
              blas_int(k, "k"), alpha, a, blas_int(lda, "lda"), b, blas_int(ldb, "ldb"), beta, c, blas_int(ldc, "ldc"));
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  guard_openblas_core();
  cblas_dgemm(CblasRowMajor, cblas_trans(trans_a), cblas_trans(trans_b), blas_int(m, "m"), blas_int(n, "n"),
              blas_int(k, "k"), alpha, a, blas_int(lda, "lda"), b, blas_int(ldb, "ldb"), beta, c, blas_int(ldc, "ldc"));
}

std::string cpu_isa() {
  __builtin_cpu_init();
  // avx512_core as oneDNN means it: F, BW, VL and DQ together (Skylake-SP on).
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    return "avx512_core";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2";
  if (__builtin_cpu_supports("avx")) return "avx";
  if (__builtin_cpu_supports("sse4.1")) return "sse4.1";
  return "sse2";
}

int isa_rank(const std::string& isa) {
  const std::string_view s(isa);
  if (s.starts_with("avx512")) return 4;
  if (s.starts_with("avx2")) return 3;
  if (s == "avx") return 2;
  if (s == "sse4.1" || s == "sse41") return 1;
  if (s == "sse2" || s == "sse3") return 0;
  return -1;
}

namespace {

GemmKernel openblas_kernel() {
  if (&openblas_get_corename == nullptr || &openblas_get_config == nullptr)
    return {"CBLAS (not OpenBLAS)", "unknown", "unknown"};
  // openblas_get_config(): "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64"
  guard_openblas_core();
  std::istringstream config(openblas_get_config());
  std::string name, version;
  config >> name >> version;
  const std::string core = openblas_get_corename();
  return {name + " " + version, core, openblas_core_isa(core)};
}

#if ANVIL_HAVE_ONEDNN
std::string onednn_isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41:
      return "sse4.1";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "isa " + std::to_string(static_cast<int>(isa));
  }
}

GemmKernel onednn_kernel() {
  const dnnl_version_t* v = dnnl_version();
  const std::string isa = onednn_isa_name(dnnl_get_effective_cpu_isa());
  return {"oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch), isa,
          isa};
}
#endif

}  // namespace

GemmKernel float32_gemm_kernel() {
#if ANVIL_HAVE_ONEDNN
  if (float32_gemm_on_onednn()) return onednn_kernel();
#endif
  return openblas_kernel();
}

GemmKernel float64_gemm_kernel() { return openblas_kernel(); }

}  // namespace anvil::cpu
