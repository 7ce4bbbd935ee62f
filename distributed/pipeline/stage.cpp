#include "distributed/pipeline/stage.h"

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "distributed/process_group/process_group_factory.h"

namespace anvil::distributed::pipeline {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMaxDims = 8;
constexpr int kTagsPerMicroBatch = 3;
constexpr int kMaxMicroBatches = (1 << 24) / kTagsPerMicroBatch;

int tag_of(int mb, int k) {
  ANVIL_CHECK(mb >= 0 && mb < kMaxMicroBatches, "pipeline: micro-batch index ", mb, " outside [0, ", kMaxMicroBatches,
              ")");
  return mb * kTagsPerMicroBatch + k;
}

// [dtype, ndim, d0, ..., d7]: what a receiver needs to allocate the tensor.
Tensor make_header(const Tensor& t) {
  ANVIL_CHECK(t.dim() <= kMaxDims, "pipeline: activations may have at most ", kMaxDims, " dims, got ", t.shape_str());
  Tensor h = zeros({2 + kMaxDims}, kInt64);
  int64_t* p = h.data<int64_t>();
  p[0] = static_cast<int64_t>(t.dtype());
  p[1] = t.dim();
  for (int64_t d = 0; d < t.dim(); ++d) p[2 + d] = t.size(d);
  return h;
}

// The stage's device when the group sends tensors of that device itself
// (NCCL for CUDA), else the CPU. The backend name is what the group says it
// carries: "nccl", "cpu:gloo,cuda:nccl" (auto), or "gloo".
Device transport_for(const ProcessGroup& group, Device device) {
  const bool carries_cuda = nccl_available() && group.backend_name().find("nccl") != std::string::npos;
  return device.is_cuda() && carries_cuda ? device : Device::cpu();
}

}  // namespace

int activation_header_tag(int mb) { return tag_of(mb, 0); }
int activation_tag(int mb) { return tag_of(mb, 1); }
int grad_tag(int mb) { return tag_of(mb, 2); }

PipelineStage::PipelineStage(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group,
                             StageOptions options)
    : module_(std::move(module)), group_(std::move(group)), options_(options) {
  ANVIL_CHECK(module_ != nullptr, "PipelineStage: null module");
  ANVIL_CHECK(group_ != nullptr, "PipelineStage: null process group");
  ANVIL_CHECK(group_->backend_name() != "nccl", "PipelineStage: the '", group_->backend_name(),
              "' process group carries CUDA tensors only, but a pipeline sends each activation's shape as a CPU "
              "tensor ahead of its data (stage.h, \"Transport\"); use backend \"auto\" (Gloo for CPU tensors, "
              "NCCL for CUDA tensors)");
  transport_ = transport_for(*group_, options_.device);
  stage_ = group_->rank();
  num_stages_ = group_->size();
  // The auto group creates its NCCL communicator at the first CUDA call, a
  // rendezvous of every rank. Stages reach their first exchange at different
  // times, some blocked on a header from a predecessor that is itself inside
  // that rendezvous (with 3 stages: stage 1 waits there for stage 2, which
  // waits for stage 1's header), so every stage joins it here, together.
  if (transport_.is_cuda()) {
    Tensor hello = zeros({1}, TensorOptions(kFloat32).device(transport_));
    group_->all_reduce(hello)->wait();
  }
}

PipelineStage::MicroBatch& PipelineStage::state(int mb) { return micro_batches_[mb]; }

double PipelineStage::wait(const WorkHandle& work) {
  auto start = Clock::now();
  work->wait();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double PipelineStage::exchange(const std::vector<Step>& steps) {
  std::vector<P2POp> ops;
  double waited = 0;
  for (const Step& step : steps) {
    switch (step.kind) {
      case StepKind::SendActivation:
        ops.push_back(post_activation(step.micro_batch));
        break;
      case StepKind::SendGrad:
        ops.push_back(post_grad(step.micro_batch));
        break;
      case StepKind::RecvActivation: {
        auto [op, header_wait] = expect_activation(step.micro_batch);
        ops.push_back(op);
        waited += header_wait;
        break;
      }
      case StepKind::RecvGrad:
        ops.push_back(expect_grad(step.micro_batch));
        break;
      default:
        fail("PipelineStage::exchange: step ", to_string(step), " of stage ", stage_,
             " is not a send or receive (Forward and Backward run on their own)");
    }
  }
  // One batch: on NCCL one group, so this step's sends and receives cannot
  // wait for each other (see "Transport" in stage.h).
  std::vector<WorkHandle> works = group_->batch_isend_irecv(ops);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == P2POp::Kind::Send) {
      pending_sends_.push_back({works[i], {ops[i].tensor}});
    } else {
      waited += wait(works[i]);
      arrived(steps[i], ops[i].tensor);
    }
  }
  return waited;
}

P2POp PipelineStage::post_activation(int mb) {
  ANVIL_CHECK(!is_last(), "PipelineStage: the last stage has no next stage to send an activation to");
  MicroBatch& s = state(mb);
  ANVIL_CHECK(s.output.defined(), "PipelineStage: sends micro-batch ", mb, " before forwarding it");
  Tensor data = s.output.detach().contiguous().to(transport_);
  // The header goes at once, on the CPU whatever the transport: the next
  // stage needs it before it can post this data's receive.
  Tensor header = make_header(data);
  pending_sends_.push_back({group_->send(header, stage_ + 1, activation_header_tag(mb)), {header}});
  // Without a graph (evaluation) nothing more is needed from this micro-batch.
  if (!s.output.requires_grad()) micro_batches_.erase(mb);
  return P2POp::isend(data, stage_ + 1, activation_tag(mb));
}

std::pair<P2POp, double> PipelineStage::expect_activation(int mb) {
  ANVIL_CHECK(!is_first(), "PipelineStage: stage 0 has no previous stage to receive an activation from");
  Tensor header = zeros({2 + kMaxDims}, kInt64);
  double waited = wait(group_->recv(header, stage_ - 1, activation_header_tag(mb)));
  const int64_t* p = header.data<int64_t>();
  Shape shape(p + 2, p + 2 + p[1]);
  Tensor wire = empty(shape, TensorOptions(static_cast<DType>(p[0])).device(transport_));
  return {P2POp::irecv(wire, stage_ - 1, activation_tag(mb)), waited};
}

P2POp PipelineStage::post_grad(int mb) {
  ANVIL_CHECK(!is_first(), "PipelineStage: stage 0 has no previous stage to send a gradient to");
  MicroBatch& s = state(mb);
  ANVIL_CHECK(s.input.defined() && s.input.requires_grad(), "PipelineStage: stage ", stage_,
              " has no input gradient for micro-batch ", mb, " (was its input floating point, and backward run?)");
  Tensor g = s.input.grad();
  // An input the module ignored gets no gradient: send zeros, the peer waits for something.
  g = g.defined() ? g.contiguous().to(transport_)
                  : zeros(s.input.shape(), TensorOptions(s.input.dtype()).device(transport_));
  micro_batches_.erase(mb);
  return P2POp::isend(g, stage_ - 1, grad_tag(mb));
}

P2POp PipelineStage::expect_grad(int mb) {
  ANVIL_CHECK(!is_last(), "PipelineStage: the last stage has no next stage to receive a gradient from");
  MicroBatch& s = state(mb);
  ANVIL_CHECK(s.output.defined(), "PipelineStage: receives micro-batch ", mb, "'s gradient before forwarding it");
  Tensor wire = empty(s.output.shape(), TensorOptions(s.output.dtype()).device(transport_));
  return P2POp::irecv(wire, stage_ + 1, grad_tag(mb));
}

void PipelineStage::arrived(const Step& step, const Tensor& wire) {
  MicroBatch& s = state(step.micro_batch);
  if (step.kind == StepKind::RecvGrad) {
    s.output_grad = wire.to(s.output.device());
    return;
  }
  Tensor input = wire.to(options_.device);
  // A leaf of this stage's graph: backward leaves the gradient to send back in .grad().
  if (input.is_floating_point() && autograd::GradMode::is_enabled()) input.requires_grad_(true);
  s.input = input;
}

double PipelineStage::recv_activation(int mb) { return exchange({{StepKind::RecvActivation, mb}}); }
void PipelineStage::send_activation(int mb) { exchange({{StepKind::SendActivation, mb}}); }
double PipelineStage::recv_grad(int mb) { return exchange({{StepKind::RecvGrad, mb}}); }
void PipelineStage::send_grad(int mb) { exchange({{StepKind::SendGrad, mb}}); }

Tensor PipelineStage::forward_micro_batch(int mb, const Tensor& input) {
  MicroBatch& s = state(mb);
  if (is_first()) {
    ANVIL_CHECK(input.defined(), "PipelineStage: stage 0 needs the micro-batch's input for forward");
    s.input = input.to(options_.device);
  } else {
    ANVIL_CHECK(s.input.defined(), "PipelineStage: stage ", stage_, " forwards micro-batch ", mb,
                " before receiving its activation");
  }
  s.output = module_->forward(s.input);
  if (s.output.requires_grad()) {
    ++live_;
    peak_live_ = std::max(peak_live_, live_);
  }
  return s.output;
}

void PipelineStage::backward_micro_batch(int mb, const Tensor& loss) {
  MicroBatch& s = state(mb);
  ANVIL_CHECK(s.output.defined(), "PipelineStage: backward of micro-batch ", mb, " before its forward");
  if (is_last()) {
    ANVIL_CHECK(loss.defined(), "PipelineStage: the last stage needs the loss for backward");
    loss.backward();
  } else {
    ANVIL_CHECK(s.output_grad.defined(), "PipelineStage: backward of micro-batch ", mb,
                " before receiving its output gradient");
    s.output.backward(s.output_grad);
  }
  s.output = Tensor();
  s.output_grad = Tensor();
  --live_;
  if (is_first()) micro_batches_.erase(mb);
}

double PipelineStage::wait_for_sends() {
  double waited = 0;
  for (auto& [work, tensors] : pending_sends_) waited += wait(work);
  pending_sends_.clear();
  return waited;
}

void PipelineStage::clear() {
  micro_batches_.clear();
  live_ = 0;
}

Tensor PipelineStage::forward(const Tensor& input) {
  if (!is_first()) recv_activation(0);
  Tensor out = forward_micro_batch(0, input);
  if (!is_last()) send_activation(0);
  return out;
}

void PipelineStage::backward(const Tensor& loss) {
  if (!is_last()) recv_grad(0);
  backward_micro_batch(0, loss);
  if (!is_first()) send_grad(0);
  wait_for_sends();
}

}  // namespace anvil::distributed::pipeline
