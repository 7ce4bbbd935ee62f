#pragma once
// The process launcher behind build/bin/anvil-run (see anvil_run.cpp for the
// command line). Starts one process per local rank with the torchrun-style
// environment, relays their output line by line with a "[rank N] " prefix,
// and stops the job as a whole: the first rank that fails (non-zero exit or
// a signal) makes the launcher stop the others (SIGTERM, then SIGKILL after
// a grace period) and exit with that rank's status, or restarts them all
// (max_restarts).
#include <string>
#include <vector>

namespace anvil::distributed::launcher {

struct LaunchConfig {
  int nproc_per_node = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port (single node only)
  double kill_grace_s = 5.0;  // SIGTERM -> SIGKILL
  bool prefix_output = true;
  // Let the other ranks run on when one fails (tests of how survivors see a
  // dead peer); the exit status is still the first failure's.
  bool keep_going = false;
  // When a rank fails, stop the others and start every rank again, up to this
  // many times (torchrun --max-restarts). Each rank's environment carries
  // TORCHELASTIC_RESTART_COUNT (0 on the first attempt) and
  // TORCHELASTIC_MAX_RESTARTS; a job resumes from its checkpoints.
  int max_restarts = 0;
  // A parameter-server job (--ps N): global ranks 0..N-1 are PS ranks, the
  // rest workers; each rank's environment says which (ANVIL_PS_ROLE,
  // ANVIL_PS_INDEX or ANVIL_WORKER_INDEX, ANVIL_NUM_PS, ANVIL_NUM_WORKERS).
  // A failed worker does not stop the job: the others run on, and with
  // max_restarts that worker alone is started again (up to max_restarts times
  // each), to rejoin. A failed PS stops the job. 0: an ordinary job.
  int num_ps = 0;
  std::vector<std::string> command;  // program and its arguments
};

// Runs the job; returns the launcher's exit status: 0 when every rank
// succeeded, else the first failing rank's exit code, or 128 + signal
// number when it was killed by a signal (as a shell reports it).
int run(const LaunchConfig& config);

// A TCP port that was free a moment ago (bind to port 0, read it, close).
int pick_free_port();

}  // namespace anvil::distributed::launcher
