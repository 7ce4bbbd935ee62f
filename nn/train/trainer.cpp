#include "nn/train/trainer.h"

#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>

#include "core/autograd/anomaly_mode.h"
#include "core/cuda.h"
#include "core/ops.h"
#include "nn/optim/clip_grad.h"
#include "nn/optim/lbfgs.h"
#include "nn/serialize/checkpoint.h"
#include "nn/train/metrics_log.h"
#include "nn/train/output_file.h"
#include "nn/train/plot.h"
#include "nn/train/tensorboard.h"

namespace anvil::nn::train {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int64_t batch_size_of(const data::Example& b) { return b.batch_size(); }

// Opens the autocast scope of a training or evaluation step, when precision asks for one.
void open_autocast(std::optional<AutocastGuard>& scope, const TrainerOptions& o) {
  if (o.precision != Precision::FP32 && o.amp_mode == AmpMode::Autocast) scope.emplace(compute_dtype(o.precision));
}

void add_into(Metrics& sums, const Metrics& m, double weight) {
  for (const auto& [k, v] : m) sums[k] += v * weight;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// Restores the master weights if a step throws, so the model is never left
// holding its low-precision copy.
struct RestoreMasters {
  MasterWeights* masters;
  ~RestoreMasters() {
    if (masters && masters->is_down()) masters->restore();
  }
};
}  // namespace

Device best_device() {
  if (cuda::is_available()) return Device::cuda(0);
  return Device::cpu();
}

// The objects that live for one fit() call.
struct Trainer::Run {
  Run(Task& t, data::DataLoader& tr, data::DataLoader* v, optim::Optimizer& o, optim::LRScheduler* s)
      : task(t), model(t.model()), train(tr), val(v), optimizer(o), scheduler(s) {}
  Task& task;
  std::shared_ptr<Module> model;
  data::DataLoader& train;
  data::DataLoader* val;
  optim::Optimizer& optimizer;
  optim::LRScheduler* scheduler;
  std::unique_ptr<MetricsLog> log;
  std::unique_ptr<TensorBoardWriter> tensorboard;
  std::unique_ptr<ProgressReporter> progress;
  std::unique_ptr<Monitor> monitor;
  Clock::time_point fit_start = Clock::now();

  // The optimizer step being accumulated.
  StepTimes step_times;
  Tensor loss_sum;  // detached, on the device: read once per step
  Metrics step_metric_sums;
  int64_t micro_batches = 0;
  Clock::time_point step_start = Clock::now();

  // The epoch so far.
  int64_t batch_in_epoch = 0, num_batches = 0;
  double epoch_loss_sum = 0;
  int64_t epoch_steps = 0, epoch_micro_batches = 0, epoch_samples = 0;
  Metrics epoch_metric_sums;
  Clock::time_point epoch_start = Clock::now();

  // Since the last metrics row, for samples/s.
  int64_t window_samples = 0;
  Clock::time_point window_start = Clock::now();
  int64_t last_checkpoint_epoch = -1;
  data::Example batch;  // the latest batch: LBFGS's closure runs it again
};

Trainer::Trainer(TrainerOptions options) : options_(std::move(options)) {
  const TrainerOptions& o = options_;
  ANVIL_CHECK(!o.max_epochs || *o.max_epochs >= 0, "Trainer: max_epochs must be >= 0, got ", o.max_epochs.value_or(0));
  ANVIL_CHECK(o.max_steps >= -1, "Trainer: max_steps must be >= 0, or -1 for no limit, got ", o.max_steps);
  ANVIL_CHECK(o.grad_accumulation_steps >= 1, "Trainer: grad_accumulation_steps must be >= 1, got ",
              o.grad_accumulation_steps);
  ANVIL_CHECK(o.clip_grad_norm >= 0, "Trainer: clip_grad_norm must be >= 0 (0 = off), got ", o.clip_grad_norm);
  ANVIL_CHECK(o.clip_grad_value >= 0, "Trainer: clip_grad_value must be >= 0 (0 = off), got ", o.clip_grad_value);
  ANVIL_CHECK(o.checkpoint_every_n_epochs >= 1, "Trainer: checkpoint_every_n_epochs must be >= 1, got ",
              o.checkpoint_every_n_epochs);
  ANVIL_CHECK(o.log_every_n_steps >= 1, "Trainer: log_every_n_steps must be >= 1, got ", o.log_every_n_steps);
  ANVIL_CHECK(o.profile_path.empty() || !o.profile_steps.empty(), "Trainer: profile_path is set but profile_steps [",
              o.profile_steps.first, ", ", o.profile_steps.last, ") is empty");
  device_ = o.device.value_or(best_device());
}

Trainer::~Trainer() = default;

void Trainer::add_callback(std::shared_ptr<Callback> callback) {
  ANVIL_CHECK(callback != nullptr, "Trainer::add_callback: callback is null");
  for (const auto& c : callbacks_)
    ANVIL_CHECK(c->name() != callback->name(), "Trainer::add_callback: two callbacks named '", c->name(),
                "' (their checkpoint state would collide); override name()");
  callbacks_.push_back(std::move(callback));
}

void Trainer::prepare(Task& task) {
  auto model = task.model();
  ANVIL_CHECK(model != nullptr, "Trainer: task.model() returned null");
  ANVIL_CHECK(device_.is_cpu() || cuda::is_available(), "Trainer: no backend for device ", device_.str());
  model->to(device_);
}

data::Example Trainer::to_device(const data::Example& batch) const {
  data::Example b = batch;
  // A pinned batch (DataLoaderOptions::pin_memory) is copied asynchronously:
  // the host goes on queuing the step while the copy engine moves the bytes.
  b.transform([&](const Tensor& t) { return t.device() != device_ ? t.to(device_, t.is_pinned()) : t; });
  // Whole-model mixed precision: float inputs (data, tuple and map tensors;
  // not target) meet the low-precision weights.
  if (options_.precision != Precision::FP32 && options_.amp_mode == AmpMode::WholeModel) {
    const Tensor target = b.target;
    const DType low = compute_dtype(options_.precision);
    b.transform([&](const Tensor& t) { return t.dtype() == kFloat32 ? t.to(low) : t; });
    b.target = target;
  }
  return b;
}

int64_t Trainer::max_epochs() const {
  if (options_.max_epochs) return *options_.max_epochs;
  return options_.max_steps >= 0 ? std::numeric_limits<int64_t>::max() : 1;
}

int64_t Trainer::displayed_max_epochs(const Run& r) const {
  if (options_.max_epochs || options_.max_steps < 0) return max_epochs();
  const int64_t k = options_.grad_accumulation_steps;
  const int64_t steps_per_epoch = std::max<int64_t>(1, (r.num_batches + k - 1) / k);
  return std::max<int64_t>(1, (options_.max_steps + steps_per_epoch - 1) / steps_per_epoch);
}

const optim::Optimizer* Trainer::optimizer() const { return run_ ? &run_->optimizer : nullptr; }

void Trainer::check_output_paths() const {
  const TrainerOptions& o = options_;
  if (!o.checkpoint_path.empty()) ensure_parent_directory(o.checkpoint_path, "checkpoint directory");
  if (!o.metrics_path.empty()) ensure_parent_directory(o.metrics_path, "metrics log directory");
  if (!o.plot_path.empty()) ensure_parent_directory(o.plot_path, "plot directory");
  if (!o.profile_path.empty()) ensure_parent_directory(o.profile_path, "profile trace directory");
  if (!o.tensorboard_dir.empty()) ensure_writable_directory(o.tensorboard_dir, "TensorBoard log directory");
}

void Trainer::write_row(Run& r, MetricsRow row) {
  for (const auto& [k, v] : pending_log_) row.emplace(k, v);
  pending_log_.clear();
  if (r.tensorboard) {
    const auto step = static_cast<int64_t>(row.count("step") ? row.at("step") : static_cast<double>(global_step_));
    for (const auto& [k, v] : row)
      if (k != "step" && k != "time") r.tensorboard->add_scalar(k, v, step);
  }
  if (r.log) r.log->append(row);
}

FitResult Trainer::fit(Task& task, data::DataLoader& train, optim::Optimizer& optimizer) {
  return fit(task, train, nullptr, optimizer, nullptr);
}

FitResult Trainer::fit(Task& task, data::DataLoader& train, data::DataLoader* val, optim::Optimizer& optimizer,
                       optim::LRScheduler* scheduler) {
  check_output_paths();  // before anything trains: a bad folder fails now, not after an epoch
  ANVIL_CHECK(dynamic_cast<optim::LBFGS*>(&optimizer) == nullptr ||
                  (options_.grad_accumulation_steps == 1 && options_.precision == Precision::FP32),
              "Trainer: LBFGS re-runs training_step on each step's batch, which needs grad_accumulation_steps = 1 "
              "and precision FP32 (got ",
              options_.grad_accumulation_steps, " and ", precision_name(options_.precision), ")");
  prepare(task);
  // Restores the previous mode however fit ends.
  std::optional<autograd::DetectAnomalyGuard> anomaly;
  if (options_.detect_anomaly) anomaly.emplace(true);
  result_ = FitResult{};
  should_stop_ = false;
  trace_written_ = false;
  profiler_.clear();
  plot_steps_.clear(), plot_losses_.clear(), plot_epoch_steps_.clear(), plot_epoch_metrics_.clear();
  if (options_.seed) manual_seed(*options_.seed);
  scaler_ = options_.precision == Precision::FP16 ? std::make_unique<GradScaler>() : nullptr;
  masters_ = options_.precision != Precision::FP32 && options_.amp_mode == AmpMode::WholeModel
                 ? std::make_unique<MasterWeights>(task.model()->parameters(), compute_dtype(options_.precision))
                 : nullptr;
  RestoreMasters restore_on_exit{masters_.get()};

  Run run(task, train, val, optimizer, scheduler);
  struct RunScope {
    Run*& slot;
    ~RunScope() { slot = nullptr; }
  } run_scope{run_ = &run};
  pending_log_.clear();
  current_epoch_ = 0;
  global_step_ = 0;
  if (!options_.resume_from.empty()) load_checkpoint(run, options_.resume_from);
  const int64_t start_epoch = current_epoch_;
  result_.epochs_completed = start_epoch;
  result_.global_step = global_step_;
  last_lr_ = optimizer.lr(0);
  last_lrs_.clear();
  for (size_t g = 0; g < optimizer.num_param_groups(); ++g) last_lrs_.push_back(optimizer.lr(g));

  if (!options_.metrics_path.empty()) {
    // A resumed run continues the file, minus rows logged after the checkpoint.
    const bool resuming = !options_.resume_from.empty();
    run.log = std::make_unique<MetricsLog>(options_.metrics_path,
                                           resuming ? MetricsLog::OpenMode::Append : MetricsLog::OpenMode::Truncate);
    if (resuming) run.log->drop_rows_after_step(static_cast<double>(global_step_));
  }
  if (!options_.tensorboard_dir.empty())
    run.tensorboard = std::make_unique<TensorBoardWriter>(options_.tensorboard_dir);
  run.progress = std::make_unique<ProgressReporter>(options_.progress, options_.log_every_n_steps, options_.out);
  const data::DataLoaderOptions& lo = train.options();
  run.monitor = std::make_unique<Monitor>(MonitorContext{
      device_, lo.num_workers, lo.pin_memory, lo.batch_size * options_.grad_accumulation_steps, options_.precision});
  run.monitor->start();
  run.fit_start = run.window_start = Clock::now();
  for (auto& c : callbacks_) c->on_fit_start(*this, task);
  update_profiling();

  const int64_t epoch_limit = max_epochs();
  for (int64_t epoch = start_epoch; epoch < epoch_limit && !should_stop_ && !reached_max_steps(); ++epoch) {
    current_epoch_ = epoch;
    for (auto& c : callbacks_) c->on_train_epoch_start(*this, task);
    train_epoch(run);

    Metrics epoch_metrics;
    epoch_metrics["train_loss_epoch"] =
        run.epoch_steps ? run.epoch_loss_sum / static_cast<double>(run.epoch_steps) : std::nan("");
    for (const auto& [k, v] : run.epoch_metric_sums)
      epoch_metrics["train_" + k + "_epoch"] = v / static_cast<double>(std::max<int64_t>(1, run.epoch_micro_batches));
    if (val) {
      const auto t = Clock::now();
      Metrics vm = evaluate(task, *val, "val_", false);
      run.monitor->add_validation(seconds_since(t));
      for (auto& c : callbacks_) c->on_validation_end(*this, task, vm);
      epoch_metrics.insert(vm.begin(), vm.end());
    }
    result_.epochs_completed = epoch + 1;  // a checkpoint a callback saves now resumes after this epoch
    for (auto& c : callbacks_) c->on_train_epoch_end(*this, task, epoch_metrics);
    if (run.log || run.tensorboard) {
      MetricsRow row = epoch_metrics;
      row["epoch"] = static_cast<double>(epoch);
      row["step"] = static_cast<double>(global_step_);
      row["time"] = seconds_since(run.fit_start);
      row["epoch_time"] = seconds_since(run.epoch_start);
      write_row(run, std::move(row));
    }
    pending_log_.clear();
    run.progress->end_epoch(epoch, epoch_metrics);
    result_.epoch_metrics.push_back(epoch_metrics);
    plot_epoch_steps_.push_back(static_cast<double>(global_step_));
    plot_epoch_metrics_.push_back(epoch_metrics);
    write_plot();

    if (!options_.checkpoint_path.empty() && (epoch + 1) % options_.checkpoint_every_n_epochs == 0)
      save_checkpoint(run, epoch + 1);
  }
  result_.stopped_early = should_stop_;
  // Always leave a checkpoint of the final state to resume from.
  if (!options_.checkpoint_path.empty() && run.last_checkpoint_epoch != result_.epochs_completed &&
      result_.epochs_completed > start_epoch)
    save_checkpoint(run, result_.epochs_completed);

  run.monitor->stop();
  result_.report = run.monitor->report();
  result_.global_step = global_step_;
  if (options_.print_report && options_.progress != ProgressMode::Off)
    (options_.out ? *options_.out : std::cout) << result_.report << std::flush;
  write_plot();
  finish_profiling();
  for (auto& c : callbacks_) c->on_fit_end(*this, task);
  return result_;
}

void Trainer::train_epoch(Run& r) {
  r.train.set_epoch(current_epoch_);  // the shuffle order depends only on (seed, epoch)
  r.model->train();
  r.num_batches = r.train.num_batches();
  ANVIL_CHECK(r.num_batches > 0, "Trainer::fit: the train loader has no batches (dataset of ", r.train.dataset().size(),
              " examples, batch_size ", r.train.options().batch_size, r.train.options().drop_last ? ", drop_last" : "",
              ")");
  r.batch_in_epoch = 0;
  r.epoch_loss_sum = 0;
  r.epoch_steps = r.epoch_micro_batches = r.epoch_samples = 0;
  r.epoch_metric_sums.clear();
  r.epoch_start = r.step_start = Clock::now();
  r.progress->start_epoch(current_epoch_, displayed_max_epochs(r), r.num_batches);

  const int64_t k = options_.grad_accumulation_steps;
  auto wait_start = Clock::now();
  data::DataLoader::Iterator it = [&] {
    ProfileRange range(profiler_, "data_wait", "data");
    return r.train.begin();
  }();
  r.step_times.data_wait_s += seconds_since(wait_start);
  const data::DataLoader::Iterator end = r.train.end();
  while (it != end) {
    const auto host_start = Clock::now();
    data::Example batch = to_device(*it);
    r.batch = batch;
    if (masters_) masters_->cast_down();
    StepOutput out;
    {
      ProfileRange range(profiler_, "training_step");
      std::optional<AutocastGuard> amp_scope;
      open_autocast(amp_scope, options_);
      out = r.task.training_step(batch);
    }
    ANVIL_CHECK(out.loss.defined() && out.loss.numel() == 1, "Trainer: training_step must return a scalar loss, got ",
                out.loss.defined() ? out.loss.shape_str() : std::string("an undefined tensor"));
    {
      ProfileRange range(profiler_, "backward");
      Tensor l = k > 1 ? div(out.loss, Scalar(static_cast<double>(k))) : out.loss;
      if (scaler_) l = scaler_->scale(l.to(kFloat32));
      l.backward();
    }
    if (masters_) masters_->accumulate_grads();
    {
      NoGradGuard no_grad;
      Tensor detached = out.loss.detach().to(kFloat32).reshape({});
      r.loss_sum = r.loss_sum.defined() ? add(r.loss_sum, detached) : detached;
    }
    add_into(r.step_metric_sums, out.metrics, 1.0);
    add_into(r.epoch_metric_sums, out.metrics, 1.0);
    ++r.micro_batches;
    ++r.epoch_micro_batches;
    ++r.batch_in_epoch;
    const int64_t samples = batch_size_of(batch);
    r.step_times.samples += samples;
    r.epoch_samples += samples;
    r.window_samples += samples;
    r.step_times.host_s += seconds_since(host_start);

    if (r.micro_batches == k || r.batch_in_epoch == r.num_batches) {
      optimizer_step(r);
      if (reached_max_steps()) break;  // the epoch ends here (validation, logs and callbacks still run)
    }

    wait_start = Clock::now();
    {
      ProfileRange range(profiler_, "data_wait", "data");
      ++it;
    }
    r.step_times.data_wait_s += seconds_since(wait_start);
  }
}

void Trainer::optimizer_step(Run& r) {
  const auto host_start = Clock::now();
  const double lr = r.optimizer.lr(0);
  std::vector<double> lrs;
  for (size_t g = 0; g < r.optimizer.num_param_groups(); ++g) lrs.push_back(r.optimizer.lr(g));
  bool stepped = true;
  bool nonfinite = false;
  if (options_.on_nonfinite_loss != NonFiniteLoss::Ignore) {
    // Reads the loss before stepping (a device sync only with this option on).
    const double l = r.loss_sum.item<double>();
    nonfinite = !std::isfinite(l);
    ANVIL_CHECK(!nonfinite || options_.on_nonfinite_loss != NonFiniteLoss::Stop, "Trainer: the training loss is ", l,
                " at epoch ", current_epoch_, ", step ", global_step_ + 1,
                " (on_nonfinite_loss = Stop; set detect_anomaly to name the op whose gradient went bad, or "
                "NonFiniteLoss::Skip to skip such steps)");
  }
  if (nonfinite) {
    // Skip: the weights and the optimizer state stay as they were.
    ProfileRange range(profiler_, "optimizer_step");
    if (masters_) masters_->restore();
    stepped = false;
    if (r.scheduler) r.scheduler->step();  // the schedule follows the step count, as for fp16 skips
    r.optimizer.zero_grad();
  } else if (auto* lbfgs = dynamic_cast<optim::LBFGS*>(&r.optimizer)) {
    // As Lightning: L-BFGS re-evaluates the step's batch through a closure
    // (fit checked: FP32, no accumulation). Clipping does not apply.
    ProfileRange range(profiler_, "optimizer_step");
    lbfgs->step([&] {
      r.optimizer.zero_grad();
      Tensor loss = r.task.training_step(r.batch).loss;
      loss.backward();
      return loss;
    });
    if (r.scheduler) r.scheduler->step();
    r.optimizer.zero_grad();
  } else {
    ProfileRange range(profiler_, "optimizer_step");
    if (masters_) masters_->restore();  // float32 weights and gradients again
    if (scaler_) scaler_->unscale_(r.optimizer);  // before clipping: clip the true gradients
    if (options_.clip_grad_value > 0) optim::clip_grad_value_(r.optimizer.parameters(), options_.clip_grad_value);
    if (options_.clip_grad_norm > 0) optim::clip_grad_norm_(r.optimizer.parameters(), options_.clip_grad_norm);
    if (scaler_) {
      stepped = scaler_->step(r.optimizer);
      scaler_->update();
    } else {
      r.optimizer.step();
    }
    // The schedule follows the step count even when fp16 skips a step (as Lightning).
    if (r.scheduler) r.scheduler->step();
    r.optimizer.zero_grad();
  }
  r.step_times.host_s += seconds_since(host_start);

  // Reading the loss waits for the device: on a GPU this is the time it was
  // still busy after the host queued the step.
  const auto wait_start = Clock::now();
  const double loss = r.loss_sum.item<double>() / static_cast<double>(r.micro_batches);
  r.step_times.device_wait_s += seconds_since(wait_start);

  ++global_step_;
  last_lr_ = lr;
  last_lrs_ = std::move(lrs);
  if (!stepped) ++result_.skipped_steps;
  result_.step_losses.push_back(loss);
  result_.step_lrs.push_back(lr);
  result_.global_step = global_step_;
  r.epoch_loss_sum += loss;
  ++r.epoch_steps;
  r.monitor->add_step(r.step_times);
  plot_steps_.push_back(static_cast<double>(global_step_));
  plot_losses_.push_back(loss);

  for (auto& c : callbacks_) c->on_train_batch_end(*this, r.task, loss);

  if ((r.log || r.tensorboard) && global_step_ % options_.log_every_n_steps == 0) {
    MetricsRow row{{"epoch", static_cast<double>(current_epoch_)},
                   {"step", static_cast<double>(global_step_)},
                   {"train_loss", loss},
                   {"lr", lr},
                   {"time", seconds_since(r.fit_start)}};
    const double window = seconds_since(r.window_start);
    if (window > 0) row["samples_per_s"] = static_cast<double>(r.window_samples) / window;
    for (const auto& [k, v] : r.step_metric_sums) row["train_" + k] = v / static_cast<double>(r.micro_batches);
    write_row(r, std::move(row));
    r.window_samples = 0;
    r.window_start = Clock::now();
  }
  pending_log_.clear();  // values logged at a step without a row are dropped

  ProgressUpdate u;
  u.epoch = current_epoch_;
  u.max_epochs = displayed_max_epochs(r);
  u.batch = r.batch_in_epoch;
  u.num_batches = r.num_batches;
  u.global_step = global_step_;
  u.loss = loss;
  u.lr = lr;
  const double epoch_time = seconds_since(r.epoch_start);
  u.samples_per_s = epoch_time > 0 ? static_cast<double>(r.epoch_samples) / epoch_time : 0;
  if (auto m = r.monitor->memory_stats()) {
    u.device_info = (device_.is_cuda() ? "gpu " : "mem ") + format_bytes(static_cast<double>(m->allocated_bytes));
    if (auto g = r.monitor->latest_gpu()) u.device_info += " " + std::to_string(static_cast<int>(g->utilization)) + "%";
  }
  r.progress->update(u);

  if (profiler_.enabled()) profiler_.record("step", "step", r.step_start, Clock::now());
  r.step_times = StepTimes{};
  r.loss_sum = Tensor();
  r.step_metric_sums.clear();
  r.micro_batches = 0;
  r.step_start = Clock::now();
  update_profiling();
}

Metrics Trainer::evaluate(Task& task, data::DataLoader& loader, const std::string& prefix, bool test) {
  auto model = task.model();
  ANVIL_CHECK(model != nullptr, "Trainer: task.model() returned null");
  struct TrainModeGuard {
    Module& m;
    bool was;
    ~TrainModeGuard() { m.train(was); }
  } mode_guard{*model, model->is_training()};
  model->eval();
  NoGradGuard no_grad;
  std::unique_ptr<MasterWeights> own;
  MasterWeights* masters = masters_.get();
  if (!masters && options_.precision != Precision::FP32 && options_.amp_mode == AmpMode::WholeModel) {
    own = std::make_unique<MasterWeights>(model->parameters(), compute_dtype(options_.precision));
    masters = own.get();
  }
  LowPrecisionScope low_precision(masters);
  ProfileRange range(profiler_, test ? "test" : "validation");

  Metrics sums;
  double total = 0;
  for (const data::Example& raw : loader) {
    data::Example batch = to_device(raw);
    std::optional<AutocastGuard> amp_scope;
    open_autocast(amp_scope, options_);
    const Metrics m = test ? task.test_step(batch) : task.validation_step(batch);
    const double w = static_cast<double>(batch_size_of(batch));
    add_into(sums, m, w);
    total += w;
  }
  Metrics out;
  for (const auto& [k, v] : sums) out[prefix + k] = total > 0 ? v / total : std::nan("");
  return out;
}

Metrics Trainer::validate(Task& task, data::DataLoader& loader) {
  prepare(task);
  return evaluate(task, loader, "val_", false);
}

Metrics Trainer::test(Task& task, data::DataLoader& loader) {
  prepare(task);
  return evaluate(task, loader, "test_", true);
}

// ---------------------------------------------------------------- checkpoints

namespace {
constexpr const char* kScalerScale = "grad_scaler.scale";
constexpr const char* kScalerTracker = "grad_scaler.growth_tracker";
const std::string kCallbackPrefix = "callbacks.";

const Tensor* find_tensor(const StateDict& d, const std::string& name) {
  for (const auto& [n, t] : d)
    if (n == name) return &t;
  return nullptr;
}
}  // namespace

void Trainer::save_checkpoint(const std::string& path) {
  ANVIL_CHECK(run_ != nullptr, "Trainer::save_checkpoint('", path, "'): only during fit (from a callback)");
  serialize::save_checkpoint(path, make_checkpoint(*run_, result_.epochs_completed));
}

void Trainer::save_checkpoint(Run& r, int64_t epochs_completed) {
  const std::string path = replace_all(options_.checkpoint_path, "{epoch}", std::to_string(epochs_completed));
  serialize::save_checkpoint(path, make_checkpoint(r, epochs_completed));
  r.last_checkpoint_epoch = epochs_completed;
}

serialize::Checkpoint Trainer::make_checkpoint(Run& r, int64_t epochs_completed) const {
  serialize::Checkpoint c;
  c.model = r.model->state_dict();
  c.optimizer = r.optimizer.state_dict();
  if (r.scheduler) c.scheduler = r.scheduler->state_dict();
  c.rng = generator_state();
  c.step = global_step_;
  c.epoch = epochs_completed;
  if (scaler_) {
    const GradScalerState s = scaler_->state_dict();
    c.extra.emplace_back(kScalerScale, scalar_tensor(s.scale, kFloat64));
    c.extra.emplace_back(kScalerTracker, scalar_tensor(s.growth_tracker, kInt64));
  }
  for (const auto& cb : callbacks_)
    for (const auto& [k, v] : cb->state_dict())
      c.extra.emplace_back(kCallbackPrefix + cb->name() + "." + k, scalar_tensor(v, kFloat64));
  for (const auto& cb : callbacks_)
    for (const auto& [k, v] : cb->text_state()) c.metadata[kCallbackPrefix + cb->name() + "." + k] = v;
  c.metadata["precision"] = precision_name(options_.precision);
  c.metadata["grad_accumulation_steps"] = std::to_string(options_.grad_accumulation_steps);
  return c;
}

void Trainer::load_checkpoint(Run& r, const std::string& path) {
  serialize::Checkpoint c = serialize::load_checkpoint(path);
  r.model->load_state_dict(c.model);
  ANVIL_CHECK(c.optimizer.has_value(), "Trainer: checkpoint '", path, "' holds no optimizer state to resume from");
  r.optimizer.load_state_dict(*c.optimizer);
  if (r.scheduler) {
    ANVIL_CHECK(c.scheduler.has_value(), "Trainer: resuming with an LR scheduler but checkpoint '", path,
                "' holds no scheduler state");
    r.scheduler->load_state_dict(*c.scheduler);
  }
  if (c.rng) set_generator_state(*c.rng);
  if (scaler_) {
    const Tensor* scale = find_tensor(c.extra, kScalerScale);
    const Tensor* tracker = find_tensor(c.extra, kScalerTracker);
    if (scale && tracker) scaler_->load_state_dict({scale->item<double>(), tracker->item<int64_t>()});
  }
  for (const auto& cb : callbacks_) {
    const std::string prefix = kCallbackPrefix + cb->name() + ".";
    Metrics state;
    for (const auto& [n, t] : c.extra)
      if (n.rfind(prefix, 0) == 0) state[n.substr(prefix.size())] = t.item<double>();
    if (!state.empty()) cb->load_state_dict(state);
    std::map<std::string, std::string> text;
    for (const auto& [n, v] : c.metadata)
      if (n.rfind(prefix, 0) == 0) text[n.substr(prefix.size())] = v;
    if (!text.empty()) cb->load_text_state(text);
  }
  current_epoch_ = c.epoch;
  global_step_ = c.step;
}

// ---------------------------------------------------------------- plot, profiler

void Trainer::write_plot() const {
  if (options_.plot_path.empty() || plot_steps_.empty()) return;
  std::vector<Chart> charts;
  Chart loss{"loss", "step", "loss", {{"train_loss", plot_steps_, plot_losses_}}};
  std::map<std::string, Series> others;  // validation metrics other than the loss
  for (size_t e = 0; e < plot_epoch_metrics_.size(); ++e)
    for (const auto& [k, v] : plot_epoch_metrics_[e]) {
      if (k.rfind("val_", 0) != 0) continue;
      Series& s = others[k];
      s.name = k;
      s.x.push_back(plot_epoch_steps_[e]);
      s.y.push_back(v);
    }
  if (auto it = others.find("val_loss"); it != others.end()) {
    loss.series.push_back(it->second);  // same scale as the train loss
    others.erase(it);
  }
  charts.push_back(std::move(loss));
  for (auto& [k, s] : others) charts.push_back(Chart{k, "step", k, {s}});
  train::write_plot(options_.plot_path, charts);
}

void Trainer::update_profiling() {
  if (options_.profile_path.empty()) return;
  const bool on = options_.profile_steps.contains(global_step_);
  profiler_.enable(on);
  if (!on && global_step_ >= options_.profile_steps.last) finish_profiling();
}

void Trainer::finish_profiling() {
  profiler_.disable();
  if (options_.profile_path.empty() || trace_written_ || profiler_.events().empty()) return;
  profiler_.write_chrome_trace(options_.profile_path);
  trace_written_ = true;
}

}  // namespace anvil::nn::train
