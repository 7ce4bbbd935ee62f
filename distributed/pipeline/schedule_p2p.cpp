// A schedule's communication as NCCL sees it: time steps (runs of sends and
// receives posted as one group) and a check that issuing them unbuffered, in
// order and without tags, cannot deadlock. Declared in schedule.h.
#include <map>
#include <sstream>
#include <utility>

#include "core/base/error.h"
#include "distributed/pipeline/schedule.h"

namespace anvil::distributed::pipeline {

bool is_communication(StepKind kind) { return kind != StepKind::Forward && kind != StepKind::Backward; }

std::vector<std::vector<Step>> time_steps(const std::vector<Step>& steps) {
  std::vector<std::vector<Step>> out;
  for (const Step& step : steps) {
    const bool joins = is_communication(step.kind) && !out.empty() && is_communication(out.back().front().kind);
    if (joins)
      out.back().push_back(step);
    else
      out.push_back({step});
  }
  return out;
}

namespace {

// One send or receive of a stage, placed in its batch.
struct Call {
  Step step;
  int batch;  // index into the stage's batches
  int peer;  // the neighbour it talks to
  int partner = 0;  // batch of the matching call on the peer
};

bool is_send(StepKind k) { return k == StepKind::SendActivation || k == StepKind::SendGrad; }

int peer_of(int stage, StepKind k) {
  return k == StepKind::SendActivation || k == StepKind::RecvGrad ? stage + 1 : stage - 1;
}

std::string describe_batch(const std::vector<Call>& calls, int batch) {
  std::ostringstream out;
  out << '[';
  bool first = true;
  for (const Call& c : calls) {
    if (c.batch != batch) continue;
    out << (first ? "" : " ") << to_string(c.step);
    first = false;
  }
  out << ']';
  return out.str();
}

}  // namespace

void check_unbuffered_p2p(const Schedule& schedule, P2PIssue issue) {
  const int p = schedule.num_stages;
  std::vector<std::vector<Call>> calls(static_cast<size_t>(p));
  std::vector<int> batches(static_cast<size_t>(p), 0);
  // A channel is (from, to); each side's calls on it, in issue order.
  std::map<std::pair<int, int>, std::vector<Call*>> sends, recvs;
  for (int s = 0; s < p; ++s) {
    auto& mine = calls[static_cast<size_t>(s)];
    for (const auto& ts : time_steps(schedule.stages[static_cast<size_t>(s)])) {
      if (!is_communication(ts.front().kind)) continue;
      for (const Step& step : ts) {
        mine.push_back({step, batches[static_cast<size_t>(s)], peer_of(s, step.kind)});
        if (issue == P2PIssue::PerStep) ++batches[static_cast<size_t>(s)];
      }
      if (issue == P2PIssue::PerTimeStep) ++batches[static_cast<size_t>(s)];
    }
  }
  for (int s = 0; s < p; ++s)
    for (Call& c : calls[static_cast<size_t>(s)]) {
      if (is_send(c.step.kind))
        sends[{s, c.peer}].push_back(&c);
      else
        recvs[{c.peer, s}].push_back(&c);
    }
  // Without tags the k-th send on a channel meets the k-th receive.
  for (auto& [channel, out] : sends) {
    auto& in = recvs[channel];
    ANVIL_CHECK(out.size() == in.size(), "pipeline schedule: stage ", channel.first, " sends ", out.size(),
                " messages to stage ", channel.second, ", which receives ", in.size());
    for (size_t k = 0; k < out.size(); ++k) {
      ANVIL_CHECK(out[k]->step.micro_batch == in[k]->step.micro_batch, "pipeline schedule: message ", k, " from stage ",
                  channel.first, " to stage ", channel.second, " is ", to_string(out[k]->step), " on the sender but ",
                  to_string(in[k]->step),
                  " on the receiver; NCCL has no tags, so both must name micro-batches in the same order");
      out[k]->partner = in[k]->batch;
      in[k]->partner = out[k]->batch;
    }
  }
  for (auto& [channel, in] : recvs)
    ANVIL_CHECK(sends.count(channel) || in.empty(), "pipeline schedule: stage ", channel.second, " receives ",
                in.size(), " messages from stage ", channel.first, ", which sends none");

  // A call completes once the peer reached the batch holding its partner; a
  // batch completes when all its calls have, and only then the next starts.
  std::vector<int> at(static_cast<size_t>(p), 0);
  auto batch_done = [&](int s) {
    for (const Call& c : calls[static_cast<size_t>(s)])
      if (c.batch == at[static_cast<size_t>(s)] && at[static_cast<size_t>(c.peer)] < c.partner) return false;
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < p; ++s)
      while (at[static_cast<size_t>(s)] < batches[static_cast<size_t>(s)] && batch_done(s)) {
        ++at[static_cast<size_t>(s)];
        progress = true;
      }
  }
  for (int s = 0; s < p; ++s) {
    const int b = at[static_cast<size_t>(s)];
    if (b == batches[static_cast<size_t>(s)]) continue;
    const Call* waiting = nullptr;
    for (const Call& c : calls[static_cast<size_t>(s)])
      if (c.batch == b && at[static_cast<size_t>(c.peer)] < c.partner) waiting = &c;
    fail("pipeline schedule: deadlock with unbuffered point-to-point calls (NCCL): stage ", s, " issued ",
         describe_batch(calls[static_cast<size_t>(s)], b), ", whose ", to_string(waiting->step), " needs stage ",
         waiting->peer, " to issue its matching call, but stage ", waiting->peer, " is stuck before it at ",
         describe_batch(calls[static_cast<size_t>(waiting->peer)], at[static_cast<size_t>(waiting->peer)]),
         issue == P2PIssue::PerStep ? " (issue each time step's sends and receives as one group)" : "");
  }
}

}  // namespace anvil::distributed::pipeline
