#pragma once
// The CUDA Backend. One object serves every GPU; each method makes the views'
// device current (DeviceGuard), opens an NVTX range named after the op and
// queues its work on that device's current stream. Nothing here blocks the
// host except synchronize(), copies to pageable host memory, and the
// non-GPU-side work of the library paths.
//
// The methods are defined in one file per concern:
//   memory.cpp                   allocator, host<->device copies, streams
//   events.cpp                   events (record, wait, query, elapsed time)
//   copy.cu                      copy (strided, casting), fill
//   elementwise.cu               unary, binary, where
//   reduce.cu                    reduce
//   softmax.cu                   softmax, softmax_backward
//   layer_norm.cu                layer_norm, layer_norm_backward
//   rms_norm.cu                  rms_norm, rms_norm_backward
//   cross_entropy.cu             cross_entropy, cross_entropy_backward
//   attention.cu                 attention_forward, attention_backward (flash-style tiles;
//                                or ../cudnn/sdpa.cpp, as attention_choice.h picks)
//   random.cu                    random, dropout (Philox, same numbers as the CPU)
//   indexing.cu                  index_select, index_add, gather, scatter_add
//   scatter.cu                   scatter (overwrite, multiply)
//   nonzero.cu                   nonzero (count per tile, scan, fill)
//   optim.cu                     adamw, sgd (multi-tensor)
//   ../cublas/matmul.cpp         matmul (cuBLASLt; or our own GEMM, see gemm/)
//   ../cudnn/convolution.cpp     conv2d and its backward passes
//   ../cudnn/pooling.cpp         pool2d, pool2d_backward
//   ../cudnn/batch_norm.cpp      batch_norm, batch_norm_backward
//   ../cusolver/lu.cpp           lu_factor, lu_solve (cuSOLVER getrf/getrs)
//   ../cusolver/svd.cpp          svd (cuSOLVER gesvdj)
#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "kernels/backend.h"

namespace anvil::cuda {

class CudaBackend final : public Backend {
 public:
  CudaBackend();
  ~CudaBackend() override;

  DeviceType type() const override { return DeviceType::CUDA; }
  int device_count() const override;

  // The stream ops on `device` are queued on now (set_current_stream changes it).
  cudaStream_t stream(int device);
  // A CUDA stream for a Stream handle of this backend.
  cudaStream_t stream(const Stream& s);

  // --- memory.cpp ---
  Allocator& allocator(int device_index) override;
  Allocator* pinned_host_allocator() override;
  void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index, bool non_blocking) override;
  void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool non_blocking) override;
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

  // --- copy.cu ---
  void copy(const View& dst, const View& src) override;
  void fill(const View& out, const Scalar& value) override;

  // --- elementwise.cu ---
  void unary(UnaryOp op, const View& out, const View& in, const UnaryParams& p) override;
  void binary(BinaryOp op, const View& out, const View& a, const View& b) override;
  void where(const View& out, const View& cond, const View& a, const View& b) override;

  // --- reduce.cu, softmax.cu ---
  void reduce(ReduceOp op, const View& out, const View& in, const ReduceParams& p) override;
  // scan.cu, sort.cu
  void scan(ScanOp op, const View& out, const View& in, int64_t dim) override;
  void sort(const View& values, const View& indices, const View& in, int64_t dim, const SortParams& p) override;
  void softmax(const View& out, const View& in, int64_t dim, bool log) override;
  void softmax_backward(const View& grad_in, const View& grad_out, const View& out, int64_t dim, bool log) override;

  // --- ../cublas/matmul.cpp ---
  void matmul(const View& out, const View& a, const View& b, const MatmulParams& p) override;
  void linear(const View& out, const View& in, const View& weight, const View* bias) override;

  // --- ../cusolver/lu.cpp (cuSOLVER; on the emulated GPU the hand-written
  //     kernels of ../cusolver/lu_kernels.cu) ---
  void lu_factor(const View& a, const View& pivots, const View& info) override;
  void lu_solve(const View& lu, const View& pivots, const View& b) override;
  void svd(const View& a, const View& s, const View* u, const View* v, const View& info) override;

  // --- ../cudnn/ ---
  void conv2d(const View& out, const View& in, const View& weight, const View* bias, const Conv2dParams& p) override;
  void conv2d_backward_input(const View& grad_in, const View& grad_out, const View& weight,
                             const Conv2dParams& p) override;
  void conv2d_backward_weight(const View& grad_weight, const View& grad_out, const View& in,
                              const Conv2dParams& p) override;
  void pool2d(PoolKind kind, const View& out, const View& in, const Pool2dParams& p) override;
  void pool2d_backward(PoolKind kind, const View& grad_in, const View& grad_out, const View& in, const View& out,
                       const Pool2dParams& p) override;
  void batch_norm(const View& out, const View& save_mean, const View& save_invstd, const View& in, const View* weight,
                  const View* bias, const View* running_mean, const View* running_var,
                  const BatchNormParams& p) override;
  void batch_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias, const View& grad_out,
                           const View& in, const View* weight, const View& save_mean, const View& save_invstd,
                           const BatchNormParams& p) override;

  // --- layer_norm.cu, cross_entropy.cu, random.cu ---
  void layer_norm(const View& out, const View& mean, const View& rstd, const View& in, const View* weight,
                  const View* bias, double eps) override;
  void layer_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias, const View& grad_out,
                           const View& in, const View& mean, const View& rstd, const View* weight) override;
  void add_layer_norm(const View& out, const View& sum_out, const View& mean, const View& rstd, const View& x,
                      const View& residual, const View* weight, const View* bias, double eps) override;
  // rms_norm.cu
  void rms_norm(const View& out, const View& rstd, const View& in, const View* weight, double eps) override;
  void rms_norm_backward(const View& grad_in, const View* grad_weight, const View& grad_out, const View& in,
                         const View* weight, double eps) override;
  // attention.cu
  void attention_forward(const View& out, const View& lse, const View& q, const View& k, const View& v,
                         const View* mask, const AttentionParams& p) override;
  void attention_backward(const View& grad_q, const View& grad_k, const View& grad_v, const View& grad_out,
                          const View& q, const View& k, const View& v, const View& out, const View& lse,
                          const View* mask, const AttentionParams& p) override;
  void cross_entropy(const View& losses, const View& logsumexp, const View& logits, const View& targets,
                     const CrossEntropyParams& p) override;
  void cross_entropy_backward(const View& grad_logits, const View& grad_losses, const View& logits, const View& targets,
                              const View& logsumexp, const CrossEntropyParams& p) override;
  void dropout(const View& out, const View& mask, const View& in, double p, uint64_t seed, uint64_t offset) override;
  void random(const View& out, const RandomParams& p) override;

  // --- indexing.cu ---
  void index_select(const View& out, const View& in, int64_t dim, const View& index) override;
  void index_add(const View& out, int64_t dim, const View& index, const View& src) override;
  void gather(const View& out, const View& in, int64_t dim, const View& index) override;
  void scatter_add(const View& out, int64_t dim, const View& index, const View& src) override;
  void scatter(const View& out, int64_t dim, const View& index, const View& src, ScatterReduce reduce) override;
  void nonzero(const View& out, const View& in) override;

  // --- optim.cu ---
  void adamw(std::span<const View> params, std::span<const View> grads, std::span<const View> exp_avg,
             std::span<const View> exp_avg_sq, const AdamWParams& p) override;
  void sgd(std::span<const View> params, std::span<const View> grads, std::span<const View> momentum,
           const SGDParams& p) override;

 private:
  struct DeviceState;  // memory.cpp: allocator, streams, events of one GPU
  DeviceState& state(int device);
  std::vector<std::unique_ptr<DeviceState>> devices_;
};

}  // namespace anvil::cuda
