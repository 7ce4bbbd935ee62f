#include "nn/train/lr_callbacks.h"

#include "core/base/error.h"
#include "nn/train/trainer.h"

namespace anvil::nn::train {

double find_metric(const Metrics& metrics, const std::string& name, const std::string& who) {
  auto it = metrics.find(name);
  if (it == metrics.end()) {
    std::string names;
    for (const auto& [k, v] : metrics) names += (names.empty() ? "" : ", ") + k;
    fail(who, ": monitored metric '", name, "' is not among the epoch's metrics (", names,
         "); validation metrics need a validation loader");
  }
  return it->second;
}

void LearningRateMonitor::log(Trainer& trainer, const std::vector<double>& lrs) {
  const optim::Optimizer* opt = trainer.optimizer();
  const std::string base = "lr-" + (opt ? opt->name() : std::string("optimizer"));
  for (size_t g = 0; g < lrs.size(); ++g) {
    const std::string key = lrs.size() == 1 ? base : base + "/pg" + std::to_string(g + 1);
    trainer.log(key, lrs[g]);
    lrs_[key].push_back(lrs[g]);
  }
}

void LearningRateMonitor::on_train_epoch_start(Trainer& trainer, Task&) {
  epoch_start_lrs_.clear();
  if (const optim::Optimizer* opt = trainer.optimizer())
    for (size_t g = 0; g < opt->num_param_groups(); ++g) epoch_start_lrs_.push_back(opt->lr(g));
}

void LearningRateMonitor::on_train_batch_end(Trainer& trainer, Task&, double) {
  if (options_.logging_interval != LearningRateMonitorOptions::Interval::Step) return;
  // Lightning logs at the steps log_every_n_steps writes a row.
  if (trainer.global_step() % trainer.options().log_every_n_steps != 0) return;
  log(trainer, trainer.last_lrs());
}

void LearningRateMonitor::on_train_epoch_end(Trainer& trainer, Task&, const Metrics&) {
  if (options_.logging_interval == LearningRateMonitorOptions::Interval::Epoch) log(trainer, epoch_start_lrs_);
}

PlateauScheduler::PlateauScheduler(std::shared_ptr<optim::ReduceLROnPlateau> scheduler, std::string monitor)
    : scheduler_(std::move(scheduler)), monitor_(std::move(monitor)) {
  ANVIL_CHECK(scheduler_ != nullptr, "PlateauScheduler: the scheduler is null");
  ANVIL_CHECK(!monitor_.empty(), "PlateauScheduler: monitor names no metric");
}

void PlateauScheduler::on_train_epoch_end(Trainer&, Task&, const Metrics& metrics) {
  scheduler_->step(find_metric(metrics, monitor_, "PlateauScheduler"));
}

Metrics PlateauScheduler::state_dict() const {
  const optim::PlateauState s = scheduler_->state_dict();
  return {{"best", s.best},
          {"num_bad_epochs", static_cast<double>(s.num_bad_epochs)},
          {"cooldown_counter", static_cast<double>(s.cooldown_counter)},
          {"last_epoch", static_cast<double>(s.last_epoch)}};
}

void PlateauScheduler::load_state_dict(const Metrics& state) {
  auto get = [&](const char* key) {
    auto it = state.find(key);
    ANVIL_CHECK(it != state.end(), "PlateauScheduler::load_state_dict: missing '", key, "'");
    return it->second;
  };
  scheduler_->load_state_dict({get("best"), static_cast<int64_t>(get("num_bad_epochs")),
                               static_cast<int64_t>(get("cooldown_counter")), static_cast<int64_t>(get("last_epoch"))});
}

}  // namespace anvil::nn::train
