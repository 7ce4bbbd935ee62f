#pragma once
// Runs a multi-process job for a test: build/bin/anvil-run starts `nproc`
// ranks of a worker program (tests/distributed/workers/<name>.cpp, built as
// build/bin/dist_worker_<name>) and the harness waits at most `timeout`,
// returning the launcher's exit code and everything it printed (each line
// carries the "[rank N] " prefix).
//
//   auto r = anvil::test::run_ranks(3, "collectives", {"--seed", "7"});
//   EXPECT_EQ(r.exit_code, 0) << r.output;
//
// A job that runs past the timeout is killed (its whole process group) and
// reported with timed_out = true and exit_code -1. Job (below) starts one
// and leaves it running.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/base/error.h"

namespace anvil::test {

struct RunResult {
  int exit_code = -1;  // the launcher's: 0, a rank's exit code, or 128 + signal
  bool timed_out = false;
  std::string output;  // stdout and stderr together, in arrival order
  // Lines of output that start with "[rank <rank>] ", prefix removed.
  std::vector<std::string> lines_of(int rank) const;
};

struct RunOptions {
  std::vector<std::string> launcher_args;  // e.g. {"--keep-going"}
  std::vector<std::pair<std::string, std::string>> env;  // extra environment for every rank
  std::chrono::seconds timeout{60};
};

// The path of build/bin/<name> (next to the test executable).
std::string bin_path(const std::string& name);

// anvil-run --nproc-per-node nproc [launcher_args] dist_worker_<worker> worker_args...
RunResult run_ranks(int nproc, const std::string& worker, const std::vector<std::string>& worker_args,
                    const RunOptions& options = {});

// Any command, same capture and time bound.
RunResult run_command(const std::vector<std::string>& argv, const RunOptions& options = {});

// A command started in its own process group and left running, for tests
// that act on a job while it runs (wait for a line, then kill it).
// run_command is Job(argv, options).finish().
class Job {
 public:
  Job(const std::vector<std::string>& argv, const RunOptions& options = {});
  ~Job();  // a job never finished is killed (its whole process group) and reaped
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  int pid() const { return pid_; }  // also its process group id
  // True once `text` is in the output; false when the deadline passes or the
  // job's output ended without it.
  bool wait_for_output(const std::string& text, std::chrono::steady_clock::time_point deadline);
  void signal_group(int sig);  // sig to every process of the job
  std::string output_so_far();
  // Waits for the end, at most until options.timeout after the start (then
  // the group is killed and timed_out set).
  RunResult finish();

 private:
  void read_output();

  int pid_ = -1;
  int out_fd_ = -1;
  bool finished_ = false;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::seconds timeout_;
  struct Shared;
  std::unique_ptr<Shared> shared_;
};

// A TCP port free a moment ago (bound to port 0, then released).
int free_port();

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The message of the anvil::Error that f throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const anvil::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace anvil::test
