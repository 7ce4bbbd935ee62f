#include "distributed/pipeline/executor.h"

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops.h"
#include "nn/train/output_file.h"

namespace anvil::distributed::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch()).count();
}

}  // namespace

std::vector<Tensor> split_micro_batches(const Tensor& batch, int m) {
  ANVIL_CHECK(batch.dim() >= 1, "pipeline: a batch needs a batch dimension, got shape ", batch.shape_str());
  const int64_t n = batch.size(0);
  ANVIL_CHECK(m >= 1 && n >= m, "pipeline: cannot split a batch of ", n, " samples into ", m, " micro-batches");
  std::vector<Tensor> chunks;
  int64_t start = 0;
  for (int i = 0; i < m; ++i) {
    int64_t len = n / m + (i < n % m ? 1 : 0);
    chunks.push_back(batch.narrow(0, start, len));
    start += len;
  }
  return chunks;
}

PipelineExecutor::PipelineExecutor(std::shared_ptr<nn::Module> stage_module, std::shared_ptr<ProcessGroup> group,
                                   LossFn loss, PipelineOptions options)
    : stage_(std::move(stage_module), std::move(group), {.device = options.device}),
      loss_(std::move(loss)),
      options_(options),
      schedule_(make_schedule(options.schedule, stage_.num_stages(), options.micro_batches)),
      time_steps_(time_steps(schedule_.stages[static_cast<size_t>(stage_.stage())])) {
  ANVIL_CHECK(!stage_.is_last() || loss_ != nullptr, "PipelineExecutor: the last stage needs a loss function");
}

std::vector<Tensor> PipelineExecutor::split(const Tensor& batch) const {
  return split_micro_batches(batch, options_.micro_batches);
}

PipelineStepResult PipelineExecutor::train_step(const Tensor& input, const Tensor& target) {
  const int m = options_.micro_batches;
  std::vector<Tensor> inputs, targets;
  if (is_first()) inputs = split(input);
  int64_t total = 0;
  if (is_last()) {
    targets = split(target);
    total = target.size(0);
  }
  PipelineStepResult result;
  result.theoretical_bubble_fraction = theoretical_bubble_fraction(num_stages(), m);
  timeline_.clear();
  stage_.clear();
  stage_.reset_peak();
  Tensor loss_sum;  // detached sum of the weighted micro-batch losses

  const int64_t step_start = now_us();
  for (const std::vector<Step>& now : time_steps_) {
    const int64_t start = now_us();
    if (is_communication(now.front().kind)) {
      // Every send and receive of this time step in one batch (stage.h, "Transport").
      result.wait_seconds += stage_.exchange(now);
      if (options_.record_timeline)
        for (const Step& step : now) timeline_.push_back({step.kind, step.micro_batch, start, now_us()});
      continue;
    }
    const Step& step = now.front();
    const int mb = step.micro_batch;
    if (step.kind == StepKind::Forward) {
      Tensor out = stage_.forward_micro_batch(mb, is_first() ? inputs[static_cast<size_t>(mb)] : Tensor());
      if (is_last()) {
        // Kept until this micro-batch's backward; weighted so the sum over
        // micro-batches is the loss of the whole batch.
        const Tensor& t = targets[static_cast<size_t>(mb)];
        double weight = static_cast<double>(t.size(0)) / static_cast<double>(total);
        Tensor loss = loss_(out, t.to(options_.device)) * weight;
        loss_sum = loss_sum.defined() ? loss_sum + loss.detach() : loss.detach();
        pending_losses_[mb] = loss;
      }
    } else {
      Tensor loss;
      if (is_last()) {
        loss = pending_losses_.at(mb);
        pending_losses_.erase(mb);
      }
      stage_.backward_micro_batch(mb, loss);
    }
    if (options_.record_timeline) timeline_.push_back({step.kind, mb, start, now_us()});
  }
  // Sends still in flight count as idle: the stage cannot start its next step's work.
  result.wait_seconds += stage_.wait_for_sends();
  result.seconds = static_cast<double>(now_us() - step_start) * 1e-6;
  result.bubble_fraction = result.seconds > 0 ? result.wait_seconds / result.seconds : 0;
  result.max_live_activations = stage_.peak_live_activations();
  if (is_last()) result.loss = loss_sum.to(kFloat64).item<double>();
  return result;
}

double PipelineExecutor::evaluate(const Tensor& input, const Tensor& target) {
  NoGradGuard no_grad;
  const int m = options_.micro_batches;
  std::vector<Tensor> inputs, targets;
  if (is_first()) inputs = split(input);
  if (is_last()) targets = split(target);
  stage_.clear();
  double loss = 0;
  // Forwards in order: every schedule's forward part is the same without backward.
  for (int mb = 0; mb < m; ++mb) {
    if (!is_first()) stage_.recv_activation(mb);
    Tensor out = stage_.forward_micro_batch(mb, is_first() ? inputs[static_cast<size_t>(mb)] : Tensor());
    if (!is_last()) {
      stage_.send_activation(mb);
    } else {
      const Tensor& t = targets[static_cast<size_t>(mb)];
      double weight = static_cast<double>(t.size(0)) / static_cast<double>(target.size(0));
      loss += loss_(out, t.to(options_.device)).to(kFloat64).item<double>() * weight;
    }
  }
  stage_.wait_for_sends();
  stage_.clear();
  return is_last() ? loss : std::numeric_limits<double>::quiet_NaN();
}

std::string chrome_trace_json(const std::vector<std::vector<TimelineEvent>>& events) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const auto& stage : events)
    for (const TimelineEvent& e : stage) origin = std::min(origin, e.start_us);
  nlohmann::json trace = nlohmann::json::array();
  for (size_t s = 0; s < events.size(); ++s) {
    trace.push_back({{"name", "thread_name"},
                     {"ph", "M"},
                     {"pid", 0},
                     {"tid", s},
                     {"args", {{"name", "stage " + std::to_string(s)}}}});
    for (const TimelineEvent& e : events[s]) {
      // Sends only post work; a zero-length box would only clutter the track.
      if (e.kind == StepKind::SendActivation || e.kind == StepKind::SendGrad) continue;
      bool recv = e.kind == StepKind::RecvActivation || e.kind == StepKind::RecvGrad;
      std::string category = recv ? "wait" : (e.kind == StepKind::Forward ? "forward" : "backward");
      trace.push_back({{"name", to_string(Step{e.kind, e.micro_batch})},
                       {"cat", category},
                       {"ph", "X"},
                       {"ts", e.start_us - origin},
                       {"dur", std::max<int64_t>(e.end_us - e.start_us, 1)},
                       {"pid", 0},
                       {"tid", s},
                       {"args", {{"micro_batch", e.micro_batch}, {"step", to_string(e.kind)}}}});
    }
  }
  return nlohmann::json{{"traceEvents", trace}, {"displayTimeUnit", "ms"}}.dump();
}

void PipelineExecutor::write_chrome_trace(const std::string& path) {
  ProcessGroup& group = stage_.group();
  const int p = group.size();
  // Counts first, so every rank sends the same number of elements.
  Tensor count = full({1}, static_cast<int64_t>(timeline_.size()), kInt64);
  Tensor counts = zeros({p}, kInt64);
  group.all_gather(counts, count)->wait();
  int64_t most = 1;
  for (int64_t c : counts.to_vector<int64_t>()) most = std::max(most, c);
  // Each event as 4 float64 (kind, micro-batch, start, end): exact for
  // microsecond times below 2^53.
  Tensor mine = zeros({most * 4}, kFloat64);
  double* d = mine.data<double>();
  for (size_t i = 0; i < timeline_.size(); ++i) {
    d[4 * i] = static_cast<double>(timeline_[i].kind);
    d[4 * i + 1] = timeline_[i].micro_batch;
    d[4 * i + 2] = static_cast<double>(timeline_[i].start_us);
    d[4 * i + 3] = static_cast<double>(timeline_[i].end_us);
  }
  Tensor all = zeros({p * most * 4}, kFloat64);
  group.all_gather(all, mine)->wait();
  if (group.rank() != 0) return;
  std::vector<std::vector<TimelineEvent>> events(static_cast<size_t>(p));
  const double* a = all.data<double>();
  auto n_of = counts.to_vector<int64_t>();
  for (int s = 0; s < p; ++s)
    for (int64_t i = 0; i < n_of[static_cast<size_t>(s)]; ++i) {
      const double* e = a + (s * most + i) * 4;
      events[static_cast<size_t>(s)].push_back({static_cast<StepKind>(static_cast<int>(e[0])), static_cast<int>(e[1]),
                                                static_cast<int64_t>(e[2]), static_cast<int64_t>(e[3])});
    }
  nn::train::write_text_file_atomically(path, chrome_trace_json(events));
}

}  // namespace anvil::distributed::pipeline
