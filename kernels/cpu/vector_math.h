#pragma once
// float32 kernels on contiguous arrays, vectorised with Google Highway and
// dispatched at run time to the best instruction set the CPU has (AVX-512,
// AVX2, SSE4 on x86; the portable EMU128 target elsewhere), from one
// portable binary. The README of this folder says why Highway and how
// accurate each function is.
//
// Built without Highway (libhwy-dev absent, or -DANVIL_WITH_HIGHWAY=OFF)
// enabled() is false, and the callers
// run their scalar loops: the op tables' functors, double accumulators.
#include <cstdint>
#include <string>

#include "kernels/ops/binary_ops.h"
#include "kernels/ops/unary_ops.h"

namespace anvil::cpu::vec {

// The instruction set the kernels below run on here ("AVX3", "AVX2", "SSE4",
// "EMU128"), with the library's version; says so when they are off.
std::string target();
// Whether the callers use these kernels: built with Highway and not switched
// off with ANVIL_CPU_VECTOR=off (the scalar loops, for measuring against).
bool enabled();

// Whether a kernel writes its output with streaming (non-temporal) stores,
// which go to memory without first reading each line into the cache (the
// read a plain store's write-allocate costs: a third of the traffic of a map
// that reads one array and writes one; memcpy's rep movsb skips it too). Only
// past what the caches hold, where the next op reads the output from memory
// either way, and in runs (a contiguous piece, a row) long enough to carry a
// store fence each. Callers do not stream in place: the read has already
// brought each line into the cache, so a plain store costs no extra
// traffic and a streamed one would only send the line away early.
// kernels/cpu/README.md ("Large outputs bypass the cache") has the figures.
inline constexpr int64_t kStreamingMinFloats = int64_t{1} << 23;  // 32 MiB in all
inline constexpr int64_t kStreamingMinRun = 1024;  // floats per run
inline bool stream_output(int64_t total_floats, int64_t run_floats) {
  return total_floats >= kStreamingMinFloats && run_floats >= kStreamingMinRun;
}
// The row kernels fence once per call, not per row: their rows stream when
// they are whole cache lines (n a multiple of 16 floats; each row then starts
// on a line when the first does) or long.
inline bool stream_rows(int64_t total_floats, int64_t n) {
  return total_floats >= kStreamingMinFloats && (n % 16 == 0 || n >= kStreamingMinRun);
}

// out[i] = op(in[i]) over n contiguous floats for exp, expm1, log, log1p,
// tanh, sigmoid, erf, gelu (both forms), silu, softplus and relu. false for
// other ops (the caller runs the op table's functor). out may equal in.
// stream: write out with streaming stores (stream_output).
bool unary(UnaryOp op, const UnaryParams& p, float* out, const float* in, int64_t n, bool stream = false);
bool has_unary(UnaryOp op);

// out[i] = op(g[i], x[i]) for gelu_tanh_backward, gelu_erf_backward,
// silu_backward, softplus_backward, relu_backward, tanh_backward,
// sigmoid_backward, erf_backward, expm1_backward, log1p_backward, add, sub,
// mul and div; false for other ops.
bool binary(BinaryOp op, float* out, const float* g, const float* x, int64_t n, bool stream = false);
bool has_binary(BinaryOp op);

// Rows of n floats (n >= 1), `rows` of them: row r of x at x + r * x_stride
// (the norms: contiguous rows, stride n); a caller passes each thread's
// share of rows in one call. Float accumulators in several independent
// vector lanes; results combined in double. A row's result does not depend
// on the other rows of the call. stream: write the output rows (y, gi) with
// streaming stores (stream_rows), fenced once at the end of the call.
void softmax_rows(float* y, int64_t y_stride, const float* x, int64_t x_stride, int64_t rows, int64_t n, bool log,
                  bool stream = false);
// softmax: gi = y * (g - sum(g * y)); log_softmax: gi = g - exp(y) * sum(g).
void softmax_backward_rows(float* gi, int64_t gi_stride, const float* g, int64_t g_stride, const float* y,
                           int64_t y_stride, int64_t rows, int64_t n, bool log, bool stream = false);
// y = exp(x - shift), returning sum(y) (y may equal x): softmax's numerator,
// and the online softmax of the attention kernels.
double exp_shifted_row(float* y, const float* x, int64_t n, float shift);
// row[i] = keep[i] ? row[i] : fill for a row of bools (bytes 0 or 1): a
// boolean attention mask on a row of scores.
void select_row(float* row, const uint8_t* keep, int64_t n, float fill);

// y = (x - mean) * rstd * w + b (w, b may be null: 1 and 0); mean[r] and rstd[r] for each row.
void layer_norm_rows(float* y, const float* x, int64_t rows, int64_t n, const float* w, const float* b, double eps,
                     double* mean, double* rstd, bool stream = false);
// gi = rstd * (g w - mean(g w) - xhat * mean(g w xhat)), xhat = (x - mean) * rstd,
// mean and rstd taken in float.
void layer_norm_backward_rows(float* gi, const float* g, const float* x, int64_t rows, int64_t n, const float* w,
                              const double* mean, const double* rstd, bool stream = false);
// y = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps), rstd[r] for each row.
void rms_norm_rows(float* y, const float* x, int64_t rows, int64_t n, const float* w, double eps, float* rstd,
                   bool stream = false);
// rms_norm's gradient: rstd[r] (recomputed as rms_norm_rows does) and, when
// gi is not null, gi = rstd * (g w - x rstd^2 mean(g w x)).
void rms_norm_backward_rows(float* gi, const float* g, const float* x, int64_t rows, int64_t n, const float* w,
                            double eps, double* rstd, bool stream = false);

// Reductions of n contiguous floats (n >= 1): the sum, in float lanes over
// blocks and in double across blocks; the max or min (NaN if any is NaN);
// the mean and the sum of squared deviations from it (two passes).
double sum(const float* x, int64_t n);
float max(const float* x, int64_t n);
float min(const float* x, int64_t n);
struct Moments {
  double mean, m2;
};
Moments moments(const float* x, int64_t n);

// A run of `rows` rows of a column reduction (over the first dim), row r at
// x + r * row_stride: acc[j] += the rows' x[j], or acc[j] = max/min(acc[j],
// the rows' x[j]) with NaN sticking, for j < n. Sums add up to 16 rows in
// float before each double accumulator; max and min are exact.
void add_rows_into(double* acc, const float* x, int64_t rows, int64_t row_stride, int64_t n);
void max_rows_into(double* acc, const float* x, int64_t rows, int64_t row_stride, int64_t n);
void min_rows_into(double* acc, const float* x, int64_t rows, int64_t row_stride, int64_t n);
// Column moments of a run of rows: mean[j] and m2[j] (the sum of squared
// deviations from it) of x[r * row_stride + j] over r < rows, for j < n,
// summed in float lanes: callers keep runs short (var over the first dim:
// 256 rows) and merge them. center[j], when given, is the mean of the rows
// the caller merged before (the run is read once, its differences from
// it summed); without it (a first run) two passes, the second from the cache.
void column_moments(double* mean, double* m2, const float* x, int64_t rows, int64_t row_stride, int64_t n,
                    const double* center);

}  // namespace anvil::cpu::vec
