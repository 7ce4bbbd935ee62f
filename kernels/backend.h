#pragma once
// The Backend interface: everything device-specific, one implementation per
// device type (kernels/cpu, kernels/cuda). Ops in core/ validate arguments,
// allocate outputs and call these methods; methods may assume valid input
// (shapes agree, dtypes supported, all views on this backend's device) but
// still throw anvil::Error for a dtype they do not implement.
//
// Op families keep the interface small: a new elementwise op is a row and a
// functor in an op table (kernels/ops/), which every backend compiles, not a
// new method.
#include <cstdint>
#include <span>

#include "core/base/allocator.h"
#include "core/base/device.h"
#include "core/base/scalar.h"
#include "kernels/ops/binary_ops.h"
#include "kernels/ops/reduce_ops.h"
#include "kernels/ops/scan_ops.h"
#include "kernels/ops/sort_ops.h"
#include "kernels/ops/unary_ops.h"
#include "kernels/view.h"

namespace anvil {

// UnaryOp and UnaryParams: kernels/ops/unary_ops.h; BinaryOp:
// kernels/ops/binary_ops.h; ReduceOp and ReduceParams: kernels/ops/reduce_ops.h
// (the op tables).

struct MatmulParams {
  float alpha = 1.0f;
  float beta = 0.0f;
};  // out = alpha*a@b + beta*out

struct Conv2dParams {
  int64_t stride[2] = {1, 1}, padding[2] = {0, 0}, dilation[2] = {1, 1};
  int64_t groups = 1;
};

enum class PoolKind : uint8_t { Max, Avg };
struct Pool2dParams {
  int64_t kernel[2] = {2, 2}, stride[2] = {2, 2}, padding[2] = {0, 0};
  bool count_include_pad = true;  // Avg only
};

struct BatchNormParams {
  bool training = true;
  double momentum = 0.1;
  double eps = 1e-5;
};
struct CrossEntropyParams {
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
};
// Fused attention (attention_forward/backward): the scores' scale, and
// whether key j > query i is masked (PyTorch's top-left causal alignment).
// dropout_p > 0: the probabilities are dropped as dropout(softmax(scores))
// would drop them with the generator at (seed, offset): element (n, i, j) of
// the [B * H, L, S] weights is Philox draw (n * L + i) * S + j
// (philox::keep_at), kept ones scaled by 1 / (1 - p). The backward passes the
// same three values, so the mask is recomputed, never stored.
struct AttentionParams {
  double scale = 1.0;
  bool is_causal = false;
  double dropout_p = 0.0;
  uint64_t seed = 0, offset = 0;
};

enum class RandomKind : uint8_t { Uniform, Normal };  // Uniform in [a, b); Normal(mean a, std b)
struct RandomParams {
  RandomKind kind = RandomKind::Uniform;
  double a = 0, b = 1;
  uint64_t seed = 0, offset = 0;
};

// scatter's `reduce`: overwrite (None), sum (Add) or product (Multiply).
enum class ScatterReduce : uint8_t { None, Add, Multiply };

struct AdamWParams {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  int64_t step = 1;  // 1-based, after increment
  bool decoupled = true;  // AdamW (true) or Adam's L2-in-gradient (false)
};
struct SGDParams {
  double lr = 1e-2, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false;
  bool first_step = false;  // momentum buffer is initialised to the gradient
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceType type() const = 0;
  virtual int device_count() const = 0;

  // --- memory, copies and streams ---
  virtual Allocator& allocator(int device_index) = 0;
  // Page-locked host memory for fast, asynchronous host<->device copies (the
  // data loader's pin_memory). Null when the backend has none (the CPU).
  virtual Allocator* pinned_host_allocator() { return nullptr; }
  virtual void copy(const View& dst, const View& src) = 0;  // same device, strided, casts dtype
  virtual void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index, bool non_blocking) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool non_blocking) = 0;
  virtual void fill(const View& out, const Scalar& value) = 0;
  virtual Stream current_stream(int device_index) = 0;
  virtual void set_current_stream(const Stream& stream) = 0;
  virtual Stream new_stream(int device_index) = 0;
  virtual void synchronize(int device_index) = 0;
  // Makes `waiter` wait for all work queued so far on `producer`.
  virtual void stream_wait(const Stream& waiter, const Stream& producer) = 0;
  // The backend's own handle of a stream (a cudaStream_t on CUDA, null on the
  // CPU), for libraries that queue work themselves (NCCL).
  virtual void* native_stream(const Stream& stream) = 0;

  // --- events: markers in a stream's work (core/stream.h's Event) ---
  // Handles are the backend's own; 0 is never one. `timing` events can be
  // asked for the time between two of them.
  virtual uint64_t new_event(int device_index, bool timing) = 0;
  virtual void destroy_event(int device_index, uint64_t event) = 0;
  virtual void record_event(uint64_t event, const Stream& stream) = 0;
  // `stream` waits, on the device, for the work recorded before the event.
  virtual void wait_event(const Stream& stream, uint64_t event) = 0;
  virtual bool event_done(int device_index, uint64_t event) = 0;  // that work has finished
  virtual void synchronize_event(int device_index, uint64_t event) = 0;
  virtual double event_elapsed_ms(int device_index, uint64_t start, uint64_t end) = 0;

  // --- elementwise (inputs are already broadcast to out's shape; strides may be 0) ---
  virtual void unary(UnaryOp op, const View& out, const View& in, const UnaryParams& p) = 0;
  virtual void binary(BinaryOp op, const View& out, const View& a, const View& b) = 0;
  virtual void where(const View& out, const View& cond, const View& a, const View& b) = 0;

  // --- reductions: out has in's rank; dims where out.shape[d] == 1 are reduced.
  //     ArgMax/ArgMin reduce exactly one dim and write int64. ---
  virtual void reduce(ReduceOp op, const View& out, const View& in, const ReduceParams& p) = 0;
  virtual void softmax(const View& out, const View& in, int64_t dim, bool log) = 0;
  // grad_in = softmax'(out) applied to grad_out (log selects log_softmax).
  virtual void softmax_backward(const View& grad_in, const View& grad_out, const View& out, int64_t dim, bool log) = 0;

  // --- scans along one dim (kernels/ops/scan_ops.h): out[.., i, ..] is the
  //     combine of in[.., 0, ..] to in[.., i, ..]. out and in share a shape
  //     and a dtype (core converts integer inputs to int64); any strides. ---
  virtual void scan(ScanOp op, const View& out, const View& in, int64_t dim) = 0;
  // --- sort along one dim (kernels/ops/sort_ops.h's order, stable): values in
  //     in's dtype and int64 indices into dim, both of in's shape. ---
  virtual void sort(const View& values, const View& indices, const View& in, int64_t dim, const SortParams& p) = 0;

  // --- linear algebra: a [B, M, K], b [B, K, N], out [B, M, N]; any strides,
  //     batch strides of a or b may be 0 (broadcast). ---
  virtual void matmul(const View& out, const View& a, const View& b, const MatmulParams& p) = 0;
  // The linear layer: out [rows, out_f] = in [rows, in_f] @ weight^T + bias,
  // weight [out_f, in_f], bias [out_f] or null. This default is matmul plus a
  // broadcast add; the CUDA backend fuses the bias into the GEMM's epilogue.
  virtual void linear(const View& out, const View& in, const View& weight, const View* bias) {
    View weight_t = weight;
    weight_t.shape = {weight.shape[1], weight.shape[0]};
    weight_t.strides = {weight.strides[1], weight.strides[0]};
    matmul(out, in, weight_t, MatmulParams{});
    if (bias) {
      View row = *bias;
      row.shape = out.shape;
      row.strides = {0, bias->strides[0]};
      binary(BinaryOp::Add, out, out, row);
    }
  }

  // --- dense factorizations (LAPACK on the CPU, cuSOLVER on CUDA): float32 or
  //     float64 matrices [B, n, n] stored as LAPACK stores them, column-major:
  //     strides {n*n, 1, n} (kernels/shapes/linalg_checks.h checks them). ---
  // LU with partial pivoting (getrf), in place: a becomes L (unit diagonal,
  // not stored) below the diagonal and U on and above it. pivots [B, n] int32
  // are LAPACK's 1-based row swaps; info [B] int32 is 0, or k > 0 when
  // U[k-1][k-1] is exactly zero (a singular matrix; the factors are still
  // written). On a GPU, info stays on the device: reading it synchronizes.
  virtual void lu_factor(const View& a, const View& pivots, const View& info) = 0;
  // Solves A x = b from lu_factor's factors (getrs): b [B, n, k], column-major
  // {n*k, 1, n}, is overwritten with x. lu and pivots as lu_factor wrote them.
  virtual void lu_solve(const View& lu, const View& pivots, const View& b) = 0;
  // Reduced singular value decomposition A = U diag(S) V^T (gesdd on the CPU,
  // gesvdj on CUDA) of a [B, m, n], whose contents it destroys; k = min(m, n).
  // s [B, k] contiguous gets the singular values, descending. u [B, m, k] and
  // v [B, n, k], column-major, get the singular vectors, or are both null for
  // the values alone. V rather than V^T: cuSOLVER's gesvdj and a one-sided
  // Jacobi produce it, and V column-major is V^T row-major, what the op returns.
  // info [B] int32 is 0, or > 0 where the iteration did not converge.
  virtual void svd(const View& a, const View& s, const View* u, const View* v, const View& info) = 0;

  // --- nn ops (NCHW; weight [Cout, Cin/groups, kH, kW]) ---
  virtual void conv2d(const View& out, const View& in, const View& weight, const View* bias, const Conv2dParams& p) = 0;
  virtual void conv2d_backward_input(const View& grad_in, const View& grad_out, const View& weight,
                                     const Conv2dParams& p) = 0;
  virtual void conv2d_backward_weight(const View& grad_weight, const View& grad_out, const View& in,
                                      const Conv2dParams& p) = 0;
  virtual void pool2d(PoolKind kind, const View& out, const View& in, const Pool2dParams& p) = 0;
  virtual void pool2d_backward(PoolKind kind, const View& grad_in, const View& grad_out, const View& in,
                               const View& out, const Pool2dParams& p) = 0;
  // in [N, C, *]; mean/invstd [C] float32 are written in training and read in eval.
  // running_mean/var (may be null) are updated in training.
  virtual void batch_norm(const View& out, const View& save_mean, const View& save_invstd, const View& in,
                          const View* weight, const View* bias, const View* running_mean, const View* running_var,
                          const BatchNormParams& p) = 0;
  virtual void batch_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias,
                                   const View& grad_out, const View& in, const View* weight, const View& save_mean,
                                   const View& save_invstd, const BatchNormParams& p) = 0;
  // in [rows, cols] normalised over cols; mean/rstd [rows] float32.
  virtual void layer_norm(const View& out, const View& mean, const View& rstd, const View& in, const View* weight,
                          const View* bias, double eps) = 0;
  virtual void layer_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias,
                                   const View& grad_out, const View& in, const View& mean, const View& rstd,
                                   const View* weight) = 0;
  // Residual add fused with the layer norm that follows it (a transformer
  // block's h = x + attn(...); ln2(h)): sum_out = x + residual (rounded to the
  // dtype), out = layer_norm(sum_out) exactly as layer_norm would compute it.
  // x, residual, sum_out, out [rows, cols] of one dtype; mean/rstd as layer_norm.
  virtual void add_layer_norm(const View& out, const View& sum_out, const View& mean, const View& rstd, const View& x,
                              const View& residual, const View* weight, const View* bias, double eps) = 0;
  // RMS norm over the cols of in [rows, cols]: out = in * rstd * weight with
  // rstd [rows] float32 = 1 / sqrt(mean(in^2) + eps); weight [cols] or null.
  virtual void rms_norm(const View& out, const View& rstd, const View& in, const View* weight, double eps) = 0;
  // Its gradient in one pass over each row: with r recomputed from the row
  // in the accumulation precision (not the forward's float32 rstd, so float64
  // stays exact), grad_in = r * (g w - in * r^2 * mean(g w in)) [rows, cols]
  // (null data: not wanted) and grad_weight [cols] = sum over rows of
  // g * in * r (null: not wanted). grad_out, in, grad_in: one dtype.
  virtual void rms_norm_backward(const View& grad_in, const View* grad_weight, const View& grad_out, const View& in,
                                 const View* weight, double eps) = 0;
  // logits [N, C], targets int64 [N]; writes per-row loss [N] (0 for ignored
  // rows) and logsumexp [N] float32 for the backward pass.
  virtual void cross_entropy(const View& losses, const View& logsumexp, const View& logits, const View& targets,
                             const CrossEntropyParams& p) = 0;
  // grad_logits [N, C] from per-row upstream gradient grad_losses [N].
  virtual void cross_entropy_backward(const View& grad_logits, const View& grad_losses, const View& logits,
                                      const View& targets, const View& logsumexp, const CrossEntropyParams& p) = 0;
  // Fused attention, never materialising the [L, S] scores (kernels/*/attention*):
  // out = softmax(q @ k^T * scale + mask) @ v for q [B, H, L, E], k [B, H, S, E],
  // v [B, H, S, Ev] (one dtype, any strides), out [B, H, L, Ev]. lse [B, H, L]
  // float32 gets each row's log-sum-exp of its scaled, masked scores, +inf for
  // a row with no allowed key (whose output is 0). mask: null or [B, H, L, S]
  // with any strides (0 where broadcast), bool (true = may attend) or q's
  // dtype (added to the scores).
  virtual void attention_forward(const View& out, const View& lse, const View& q, const View& k, const View& v,
                                 const View* mask, const AttentionParams& p) = 0;
  // grad_q, grad_k, grad_v (shapes of q, k, v, dense or not) from grad_out and
  // the forward's out and lse, recomputing the probabilities blockwise.
  // A row with no allowed key contributes no gradient.
  virtual void attention_backward(const View& grad_q, const View& grad_k, const View& grad_v, const View& grad_out,
                                  const View& q, const View& k, const View& v, const View& out, const View& lse,
                                  const View* mask, const AttentionParams& p) = 0;
  // out = in * keep / (1 - p) with keep = uniform >= p; mask (uint8) records keep.
  virtual void dropout(const View& out, const View& mask, const View& in, double p, uint64_t seed, uint64_t offset) = 0;

  // --- indexing (index is int64; out-of-range indices throw on CPU) ---
  virtual void index_select(const View& out, const View& in, int64_t dim, const View& index) = 0;
  virtual void index_add(const View& out, int64_t dim, const View& index, const View& src) = 0;
  virtual void gather(const View& out, const View& in, int64_t dim, const View& index) = 0;
  virtual void scatter_add(const View& out, int64_t dim, const View& index, const View& src) = 0;
  // out[..index[i][j]..][j] = src[i][j] along dim (or += / *=), as scatter_add's
  // shapes. With repeated indices and reduce None the last write in index order
  // wins on the CPU; on CUDA any one of them (as PyTorch).
  virtual void scatter(const View& out, int64_t dim, const View& index, const View& src, ScatterReduce reduce) = 0;
  // out int64 [n, in.dim()]: the coordinates of in's n nonzero elements in
  // row-major order. The caller counts them first (it sizes out).
  virtual void nonzero(const View& out, const View& in) = 0;

  // --- random (Philox; see core/base/philox.h for the counter convention) ---
  virtual void random(const View& out, const RandomParams& p) = 0;

  // --- optimizer updates over lists of same-length tensors (multi-tensor) ---
  virtual void adamw(std::span<const View> params, std::span<const View> grads, std::span<const View> exp_avg,
                     std::span<const View> exp_avg_sq, const AdamWParams& p) = 0;
  virtual void sgd(std::span<const View> params, std::span<const View> grads, std::span<const View> momentum,
                   const SGDParams& p) = 0;
};

// The device registry: the backend for a device type. The CPU backend always
// exists; the CUDA one is registered on first use when a GPU is present.
Backend& backend_for(DeviceType type);
inline Backend& backend_for(const Device& d) { return backend_for(d.type); }
bool has_backend(DeviceType type);

}  // namespace anvil
