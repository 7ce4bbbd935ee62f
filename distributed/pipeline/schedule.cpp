#include "distributed/pipeline/schedule.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "core/base/error.h"

namespace anvil::distributed::pipeline {

const char* to_string(StepKind kind) {
  switch (kind) {
    case StepKind::Forward:
      return "Forward";
    case StepKind::Backward:
      return "Backward";
    case StepKind::SendActivation:
      return "SendActivation";
    case StepKind::RecvActivation:
      return "RecvActivation";
    case StepKind::SendGrad:
      return "SendGrad";
    case StepKind::RecvGrad:
      return "RecvGrad";
  }
  return "?";
}

const char* short_name(StepKind kind) {
  switch (kind) {
    case StepKind::Forward:
      return "F";
    case StepKind::Backward:
      return "B";
    case StepKind::SendActivation:
      return "SA";
    case StepKind::RecvActivation:
      return "RA";
    case StepKind::SendGrad:
      return "SG";
    case StepKind::RecvGrad:
      return "RG";
  }
  return "?";
}

std::string to_string(const Step& step) { return short_name(step.kind) + std::to_string(step.micro_batch); }

const char* to_string(ScheduleKind kind) { return kind == ScheduleKind::GPipe ? "gpipe" : "1f1b"; }

ScheduleKind schedule_kind_from_string(const std::string& name) {
  if (name == "gpipe") return ScheduleKind::GPipe;
  if (name == "1f1b") return ScheduleKind::OneFOneB;
  fail("pipeline: unknown schedule '", name, "'; expected gpipe or 1f1b");
}

std::string Schedule::str() const {
  std::ostringstream out;
  out << to_string(kind) << " schedule, " << num_stages << " stages, " << num_micro_batches << " micro-batches\n";
  for (size_t s = 0; s < stages.size(); ++s) {
    out << "stage " << s << ":";
    for (const Step& step : stages[s]) out << ' ' << to_string(step);
    out << '\n';
  }
  return out.str();
}

std::string Schedule::to_json() const {
  std::ostringstream out;
  out << "{\"schedule\": \"" << to_string(kind) << "\", \"stages\": " << num_stages
      << ", \"micro_batches\": " << num_micro_batches << ", \"steps\": [";
  for (size_t s = 0; s < stages.size(); ++s) {
    out << (s ? ", [" : "[");
    for (size_t i = 0; i < stages[s].size(); ++i) out << (i ? ", \"" : "\"") << to_string(stages[s][i]) << '"';
    out << ']';
  }
  out << "]}";
  return out.str();
}

namespace {

void check_sizes(const char* who, int num_stages, int num_micro_batches) {
  ANVIL_CHECK(num_stages >= 1, who, ": need at least one stage, got ", num_stages);
  ANVIL_CHECK(num_micro_batches >= 1, who, ": need at least one micro-batch, got ", num_micro_batches);
}

// A forward with its communication: receive the input (all but the first
// stage), compute, send the output (all but the last stage).
void add_forward(std::vector<Step>& steps, int stage, int num_stages, int mb) {
  if (stage > 0) steps.push_back({StepKind::RecvActivation, mb});
  steps.push_back({StepKind::Forward, mb});
  if (stage < num_stages - 1) steps.push_back({StepKind::SendActivation, mb});
}

// A backward with its communication: receive the output's gradient (all but
// the last stage), compute, send the input's gradient (all but the first).
void add_backward(std::vector<Step>& steps, int stage, int num_stages, int mb) {
  if (stage < num_stages - 1) steps.push_back({StepKind::RecvGrad, mb});
  steps.push_back({StepKind::Backward, mb});
  if (stage > 0) steps.push_back({StepKind::SendGrad, mb});
}

}  // namespace

Schedule gpipe_schedule(int num_stages, int num_micro_batches) {
  check_sizes("gpipe_schedule", num_stages, num_micro_batches);
  Schedule s{ScheduleKind::GPipe, num_stages, num_micro_batches, {}};
  s.stages.resize(static_cast<size_t>(num_stages));
  for (int stage = 0; stage < num_stages; ++stage) {
    auto& steps = s.stages[static_cast<size_t>(stage)];
    for (int mb = 0; mb < num_micro_batches; ++mb) add_forward(steps, stage, num_stages, mb);
    for (int mb = 0; mb < num_micro_batches; ++mb) add_backward(steps, stage, num_stages, mb);
  }
  return s;
}

Schedule one_f_one_b_schedule(int num_stages, int num_micro_batches) {
  check_sizes("one_f_one_b_schedule", num_stages, num_micro_batches);
  Schedule s{ScheduleKind::OneFOneB, num_stages, num_micro_batches, {}};
  s.stages.resize(static_cast<size_t>(num_stages));
  for (int stage = 0; stage < num_stages; ++stage) {
    auto& steps = s.stages[static_cast<size_t>(stage)];
    // Warm-up: enough forwards that the last stage has work by the time this
    // stage's first backward can arrive.
    const int warmup = std::min(num_stages - stage - 1, num_micro_batches);
    int next_forward = 0, next_backward = 0;
    for (; next_forward < warmup; ++next_forward) add_forward(steps, stage, num_stages, next_forward);
    // Steady state: one forward, one backward.
    for (; next_forward < num_micro_batches; ++next_forward, ++next_backward) {
      add_forward(steps, stage, num_stages, next_forward);
      add_backward(steps, stage, num_stages, next_backward);
    }
    // Cool-down: the backwards of the warm-up forwards.
    for (; next_backward < num_micro_batches; ++next_backward) add_backward(steps, stage, num_stages, next_backward);
  }
  return s;
}

Schedule make_schedule(ScheduleKind kind, int num_stages, int num_micro_batches) {
  return kind == ScheduleKind::GPipe ? gpipe_schedule(num_stages, num_micro_batches)
                                     : one_f_one_b_schedule(num_stages, num_micro_batches);
}

int max_live_activations(const std::vector<Step>& steps) {
  int live = 0, peak = 0;
  for (const Step& step : steps) {
    if (step.kind == StepKind::Forward) peak = std::max(peak, ++live);
    if (step.kind == StepKind::Backward) --live;
  }
  return peak;
}

namespace {

// Per stage and micro-batch: the position of each step kind (-1 = absent).
struct Positions {
  std::map<std::pair<int, StepKind>, int> at;
  int of(int mb, StepKind k) const {
    auto it = at.find({mb, k});
    return it == at.end() ? -1 : it->second;
  }
};

}  // namespace

void validate_schedule(const Schedule& schedule) {
  const int p = schedule.num_stages, m = schedule.num_micro_batches;
  ANVIL_CHECK(static_cast<int>(schedule.stages.size()) == p, "pipeline schedule: has ", schedule.stages.size(),
              " step lists for ", p, " stages");
  for (int s = 0; s < p; ++s) {
    const auto& steps = schedule.stages[static_cast<size_t>(s)];
    Positions pos;
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step& step = steps[i];
      ANVIL_CHECK(step.micro_batch >= 0 && step.micro_batch < m, "pipeline schedule: stage ", s, " step ", i, " (",
                  to_string(step), ") names micro-batch ", step.micro_batch, " outside [0, ", m, ")");
      auto [it, fresh] = pos.at.insert({{step.micro_batch, step.kind}, static_cast<int>(i)});
      ANVIL_CHECK(fresh, "pipeline schedule: stage ", s, " runs ", to_string(step), " twice (steps ", it->second,
                  " and ", i, ")");
    }
    for (int mb = 0; mb < m; ++mb) {
      int f = pos.of(mb, StepKind::Forward), b = pos.of(mb, StepKind::Backward);
      ANVIL_CHECK(f >= 0, "pipeline schedule: stage ", s, " never forwards micro-batch ", mb);
      ANVIL_CHECK(b >= 0, "pipeline schedule: stage ", s, " never backwards micro-batch ", mb);
      ANVIL_CHECK(f < b, "pipeline schedule: stage ", s, " backwards micro-batch ", mb, " before forwarding it");
      int ra = pos.of(mb, StepKind::RecvActivation), sg = pos.of(mb, StepKind::SendGrad);
      int sa = pos.of(mb, StepKind::SendActivation), rg = pos.of(mb, StepKind::RecvGrad);
      if (s == 0) {
        ANVIL_CHECK(ra < 0 && sg < 0,
                    "pipeline schedule: stage 0 has no previous stage to receive from or send to "
                    "(micro-batch ",
                    mb, ")");
      } else {
        ANVIL_CHECK(ra >= 0 && ra < f, "pipeline schedule: stage ", s, " must receive micro-batch ", mb,
                    "'s activation before its forward");
        ANVIL_CHECK(sg > b, "pipeline schedule: stage ", s, " must send micro-batch ", mb,
                    "'s input gradient after its backward");
      }
      if (s == p - 1) {
        ANVIL_CHECK(sa < 0 && rg < 0, "pipeline schedule: the last stage has no next stage (micro-batch ", mb, ")");
      } else {
        ANVIL_CHECK(sa > f, "pipeline schedule: stage ", s, " must send micro-batch ", mb,
                    "'s activation after its forward");
        ANVIL_CHECK(rg >= 0 && rg < b, "pipeline schedule: stage ", s, " must receive micro-batch ", mb,
                    "'s output gradient before its backward");
      }
    }
  }
  // Every send above is matched by its neighbour's recv; the simulation
  // proves the order lets every recv find its send, and the unbuffered check
  // that it also does so on NCCL, one group per time step.
  simulate_schedule(schedule);
  check_unbuffered_p2p(schedule);
}

double SimulatedRun::bubble_fraction() const {
  if (busy.empty() || makespan <= 0) return 0;
  double total_busy = 0;
  for (double b : busy) total_busy += b;
  return 1.0 - total_busy / (static_cast<double>(busy.size()) * makespan);
}

SimulatedRun simulate_schedule(const Schedule& schedule, const SimulationCosts& costs) {
  const int p = schedule.num_stages;
  std::vector<size_t> next(static_cast<size_t>(p), 0);
  std::vector<double> clock(static_cast<size_t>(p), 0.0);
  SimulatedRun run;
  run.busy.assign(static_cast<size_t>(p), 0.0);
  // (kind of send, micro-batch, sending stage) -> the time it was sent.
  std::map<std::tuple<StepKind, int, int>, double> sent;
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      const auto& steps = schedule.stages[static_cast<size_t>(s)];
      auto& i = next[static_cast<size_t>(s)];
      auto& t = clock[static_cast<size_t>(s)];
      while (i < steps.size()) {
        const Step& step = steps[i];
        if (step.kind == StepKind::RecvActivation || step.kind == StepKind::RecvGrad) {
          bool act = step.kind == StepKind::RecvActivation;
          auto it =
              sent.find({act ? StepKind::SendActivation : StepKind::SendGrad, step.micro_batch, act ? s - 1 : s + 1});
          if (it == sent.end()) break;  // blocked until the neighbour sends
          t = std::max(t, it->second);
          sent.erase(it);
        } else if (step.kind == StepKind::SendActivation || step.kind == StepKind::SendGrad) {
          sent[{step.kind, step.micro_batch, s}] = t;
        } else {
          double c = step.kind == StepKind::Forward ? costs.forward_cost : costs.backward_cost;
          t += c;
          run.busy[static_cast<size_t>(s)] += c;
        }
        ++i;
        progress = true;
      }
    }
  }
  for (int s = 0; s < p; ++s) {
    const auto& steps = schedule.stages[static_cast<size_t>(s)];
    size_t i = next[static_cast<size_t>(s)];
    ANVIL_CHECK(i == steps.size(), "pipeline schedule: deadlock: stage ", s, " waits forever at step ", i, " (",
                to_string(steps[i]), ") for a send its neighbour never makes before waiting itself");
    run.makespan = std::max(run.makespan, clock[static_cast<size_t>(s)]);
  }
  ANVIL_CHECK(sent.empty(), "pipeline schedule: ", sent.size(),
              " sends are never received (first: ", short_name(std::get<0>(sent.begin()->first)),
              std::get<1>(sent.begin()->first), " from stage ", std::get<2>(sent.begin()->first), ")");
  return run;
}

double theoretical_bubble_fraction(int num_stages, int num_micro_batches) {
  return static_cast<double>(num_stages - 1) / static_cast<double>(num_micro_batches + num_stages - 1);
}

}  // namespace anvil::distributed::pipeline
