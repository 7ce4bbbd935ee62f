#pragma once
// The CPU backend: the reference every other backend is tested against.
// Plain C++ with OpenMP over large tensors; GEMM through CBLAS (OpenBLAS).
// Methods are defined across kernels/cpu/*.cpp, one file per op family.
#include <memory>

#include "kernels/backend.h"

namespace anvil::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  DeviceType type() const override { return DeviceType::CPU; }
  int device_count() const override { return 1; }

  // memory.cpp
  Allocator& allocator(int device_index) override;
  void copy(const View& dst, const View& src) override;
  void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index, bool non_blocking) override;
  void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool non_blocking) override;
  void fill(const View& out, const Scalar& value) override;
  Stream current_stream(int device_index) override;
  void set_current_stream(const Stream& stream) override;
  Stream new_stream(int device_index) override;
  void synchronize(int device_index) override;
  void stream_wait(const Stream& waiter, const Stream& producer) override;
  void* native_stream(const Stream& stream) override;
  uint64_t new_event(int device_index, bool timing) override;
  void destroy_event(int device_index, uint64_t event) override;
  void record_event(uint64_t event, const Stream& stream) override;
  void wait_event(const Stream& stream, uint64_t event) override;
  bool event_done(int device_index, uint64_t event) override;
  void synchronize_event(int device_index, uint64_t event) override;
  double event_elapsed_ms(int device_index, uint64_t start, uint64_t end) override;

  // elementwise.cpp
  void unary(UnaryOp op, const View& out, const View& in, const UnaryParams& p) override;
  void binary(BinaryOp op, const View& out, const View& a, const View& b) override;
  void where(const View& out, const View& cond, const View& a, const View& b) override;

  // reduce.cpp, softmax.cpp
  void reduce(ReduceOp op, const View& out, const View& in, const ReduceParams& p) override;
  // scan.cpp, sort.cpp
  void scan(ScanOp op, const View& out, const View& in, int64_t dim) override;
  void sort(const View& values, const View& indices, const View& in, int64_t dim, const SortParams& p) override;
  void softmax(const View& out, const View& in, int64_t dim, bool log) override;
  void softmax_backward(const View& grad_in, const View& grad_out, const View& out, int64_t dim, bool log) override;

  // matmul.cpp
  void matmul(const View& out, const View& a, const View& b, const MatmulParams& p) override;
  void linear(const View& out, const View& in, const View& weight, const View* bias) override;

  // lapack.cpp
  void lu_factor(const View& a, const View& pivots, const View& info) override;
  void lu_solve(const View& lu, const View& pivots, const View& b) override;
  void svd(const View& a, const View& s, const View* u, const View* v, const View& info) override;

  // conv.cpp, pool.cpp
  void conv2d(const View& out, const View& in, const View& weight, const View* bias, const Conv2dParams& p) override;
  void conv2d_backward_input(const View& grad_in, const View& grad_out, const View& weight,
                             const Conv2dParams& p) override;
  void conv2d_backward_weight(const View& grad_weight, const View& grad_out, const View& in,
                              const Conv2dParams& p) override;
  void pool2d(PoolKind kind, const View& out, const View& in, const Pool2dParams& p) override;
  void pool2d_backward(PoolKind kind, const View& grad_in, const View& grad_out, const View& in, const View& out,
                       const Pool2dParams& p) override;

  // norm.cpp
  void batch_norm(const View& out, const View& save_mean, const View& save_invstd, const View& in, const View* weight,
                  const View* bias, const View* running_mean, const View* running_var,
                  const BatchNormParams& p) override;
  void batch_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias, const View& grad_out,
                           const View& in, const View* weight, const View& save_mean, const View& save_invstd,
                           const BatchNormParams& p) override;
  void layer_norm(const View& out, const View& mean, const View& rstd, const View& in, const View* weight,
                  const View* bias, double eps) override;
  void layer_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias, const View& grad_out,
                           const View& in, const View& mean, const View& rstd, const View* weight) override;
  void add_layer_norm(const View& out, const View& sum_out, const View& mean, const View& rstd, const View& x,
                      const View& residual, const View* weight, const View* bias, double eps) override;
  // rms_norm.cpp
  void rms_norm(const View& out, const View& rstd, const View& in, const View* weight, double eps) override;
  void rms_norm_backward(const View& grad_in, const View* grad_weight, const View& grad_out, const View& in,
                         const View* weight, double eps) override;

  // attention.cpp, attention_backward.cpp
  void attention_forward(const View& out, const View& lse, const View& q, const View& k, const View& v,
                         const View* mask, const AttentionParams& p) override;
  void attention_backward(const View& grad_q, const View& grad_k, const View& grad_v, const View& grad_out,
                          const View& q, const View& k, const View& v, const View& out, const View& lse,
                          const View* mask, const AttentionParams& p) override;

  // loss.cpp
  void cross_entropy(const View& losses, const View& logsumexp, const View& logits, const View& targets,
                     const CrossEntropyParams& p) override;
  void cross_entropy_backward(const View& grad_logits, const View& grad_losses, const View& logits, const View& targets,
                              const View& logsumexp, const CrossEntropyParams& p) override;

  // random.cpp
  void dropout(const View& out, const View& mask, const View& in, double p, uint64_t seed, uint64_t offset) override;
  void random(const View& out, const RandomParams& p) override;

  // indexing.cpp
  void index_select(const View& out, const View& in, int64_t dim, const View& index) override;
  void index_add(const View& out, int64_t dim, const View& index, const View& src) override;
  void gather(const View& out, const View& in, int64_t dim, const View& index) override;
  void scatter_add(const View& out, int64_t dim, const View& index, const View& src) override;
  void scatter(const View& out, int64_t dim, const View& index, const View& src, ScatterReduce reduce) override;
  void nonzero(const View& out, const View& in) override;

  // optim.cpp
  void adamw(std::span<const View> params, std::span<const View> grads, std::span<const View> exp_avg,
             std::span<const View> exp_avg_sq, const AdamWParams& p) override;
  void sgd(std::span<const View> params, std::span<const View> grads, std::span<const View> momentum,
           const SGDParams& p) override;

 private:
  std::unique_ptr<Allocator> allocator_;
};

}  // namespace anvil::cpu
