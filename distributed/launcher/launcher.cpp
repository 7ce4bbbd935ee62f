#include "distributed/launcher/launcher.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace anvil::distributed::launcher {

namespace {

using Clock = std::chrono::steady_clock;

int signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
  int saved = errno;
  unsigned char c = static_cast<unsigned char>(sig);
  ssize_t ignored = ::write(signal_pipe[1], &c, 1);
  (void)ignored;
  errno = saved;
}

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void say(const std::string& msg) {
  std::string line = "[anvil-run] " + msg + "\n";
  write_all(STDERR_FILENO, line.data(), line.size());
}

// One output stream of one rank: bytes until a newline, then a prefixed line.
struct Stream {
  int fd = -1;
  int out_fd = STDOUT_FILENO;  // where its lines go
  std::string prefix;
  std::string partial;

  void emit(const char* p, size_t n) {
    std::string line = prefix;
    line.append(p, n);
    line.push_back('\n');
    write_all(out_fd, line.data(), line.size());
  }
  // Reads what is there; false on EOF/error (then the fd is closed).
  bool pump() {
    char buf[65536];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0) {
      if (!partial.empty()) emit(partial.data(), partial.size());
      partial.clear();
      ::close(fd);
      fd = -1;
      return false;
    }
    partial.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    while (true) {
      size_t nl = partial.find('\n', start);
      if (nl == std::string::npos) break;
      emit(partial.data() + start, nl - start);
      start = nl + 1;
    }
    partial.erase(0, start);
    // A very long line without a newline is flushed in pieces.
    if (partial.size() > (1u << 20)) {
      emit(partial.data(), partial.size());
      partial.clear();
    }
    return true;
  }
};

struct Child {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;
};

int status_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string status_text(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "stopped abnormally";
}

}  // namespace

int pick_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("anvil-run: socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    throw std::runtime_error("anvil-run: cannot bind a free port");
  }
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

namespace {
int run_attempt(const LaunchConfig& cfg, int port, int restart, const std::string& omp_threads, bool* interrupted);
}  // namespace

int run(const LaunchConfig& cfg) {
  if (cfg.command.empty()) throw std::runtime_error("anvil-run: no program to run");
  if (cfg.nproc_per_node < 1) throw std::runtime_error("anvil-run: --nproc-per-node must be at least 1");
  if (cfg.nnodes < 1 || cfg.node_rank < 0 || cfg.node_rank >= cfg.nnodes)
    throw std::runtime_error("anvil-run: --node-rank must be in [0, --nnodes)");
  int port = cfg.master_port;
  if (port == 0) {
    if (cfg.nnodes > 1)
      throw std::runtime_error("anvil-run: with --nnodes > 1 every node needs the same --master-port");
    port = pick_free_port();
  }

  if (::pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("anvil-run: pipe() failed");
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGCHLD, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Each rank's OpenMP (and OpenBLAS) would start one thread per core, so N
  // ranks on one machine would run N x cores threads fighting for the cores.
  // Like torchrun, give each rank its share unless the user chose a number.
  std::string omp_threads;
  const char* omp_env = std::getenv("OMP_NUM_THREADS");
  if ((omp_env == nullptr || *omp_env == '\0') && cfg.nproc_per_node > 1) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    omp_threads = std::to_string(std::max(1u, cores / static_cast<unsigned>(cfg.nproc_per_node)));
    std::fprintf(stderr,
                 "anvil-run: OMP_NUM_THREADS is not set; each of the %d ranks on this node gets %s "
                 "(of %u cores). Set OMP_NUM_THREADS to choose.\n",
                 cfg.nproc_per_node, omp_threads.c_str(), cores);
  }

  // One attempt per loop: a failed attempt (not one stopped by a signal to
  // the launcher) restarts every rank, up to max_restarts times, as
  // torchrun --max-restarts does; ranks resume from their own checkpoints.
  for (int restart = 0;; ++restart) {
    bool interrupted = false;
    const int result = run_attempt(cfg, port, restart, omp_threads, &interrupted);
    // A PS job restarts workers one by one (run_attempt), never the whole job.
    if (result == 0 || interrupted || restart >= cfg.max_restarts || cfg.num_ps > 0) {
      if (result != 0 && cfg.max_restarts > 0 && !interrupted && cfg.num_ps == 0)
        say("giving up after " + std::to_string(restart) + " restart(s) (--max-restarts " +
            std::to_string(cfg.max_restarts) + ")");
      return result;
    }
    say("restarting all ranks (restart " + std::to_string(restart + 1) + " of " + std::to_string(cfg.max_restarts) +
        ")");
    // A fresh port: the last attempt's store may still hold the old one.
    if (cfg.master_port == 0) port = pick_free_port();
  }
}

namespace {
int run_attempt(const LaunchConfig& cfg, int port, int restart, const std::string& omp_threads, bool* interrupted) {
  const int world = cfg.nnodes * cfg.nproc_per_node;
  std::vector<Child> children(static_cast<size_t>(cfg.nproc_per_node));
  std::vector<Stream> streams;
  // Parameter-server jobs restart one worker at a time: its own count.
  std::vector<int> rank_restarts(static_cast<size_t>(cfg.nproc_per_node), 0);
  auto spawn = [&](int local, int restart_count) {
    int rank = cfg.node_rank * cfg.nproc_per_node + local;
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
      throw std::runtime_error("anvil-run: pipe() failed");
    // Signals stay blocked across fork until the child has its default
    // handlers: a SIGTERM sent to a rank that has just been forked (the job
    // stopping because another rank failed at once) must kill it, not run the
    // launcher's handler, which would tell the launcher it was signalled.
    sigset_t all, previous;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &previous);
    pid_t pid = ::fork();
    if (pid != 0) sigprocmask(SIG_SETMASK, &previous, nullptr);
    if (pid < 0) throw std::runtime_error("anvil-run: fork() failed");
    if (pid == 0) {
      // Child: default signal handling, pipes as stdout/stderr, the env.
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigaction(SIGINT, &dfl, nullptr);
      sigaction(SIGTERM, &dfl, nullptr);
      sigaction(SIGCHLD, &dfl, nullptr);
      signal(SIGPIPE, SIG_DFL);
      sigprocmask(SIG_SETMASK, &previous, nullptr);
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(cfg.nproc_per_node).c_str(), 1);
      setenv("GROUP_RANK", std::to_string(cfg.node_rank).c_str(), 1);
      setenv("MASTER_ADDR", cfg.master_addr.c_str(), 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      if (!omp_threads.empty()) setenv("OMP_NUM_THREADS", omp_threads.c_str(), 1);
      // torchrun's names, so scripts written for it work unchanged.
      setenv("TORCHELASTIC_RESTART_COUNT", std::to_string(restart_count).c_str(), 1);
      setenv("TORCHELASTIC_MAX_RESTARTS", std::to_string(cfg.max_restarts).c_str(), 1);
      if (cfg.num_ps > 0) {
        const bool is_ps = rank < cfg.num_ps;
        setenv("ANVIL_PS_ROLE", is_ps ? "ps" : "worker", 1);
        setenv(is_ps ? "ANVIL_PS_INDEX" : "ANVIL_WORKER_INDEX",
               std::to_string(is_ps ? rank : rank - cfg.num_ps).c_str(), 1);
        setenv("ANVIL_NUM_PS", std::to_string(cfg.num_ps).c_str(), 1);
        setenv("ANVIL_NUM_WORKERS", std::to_string(world - cfg.num_ps).c_str(), 1);
      }
      std::vector<char*> argv;
      for (const auto& a : cfg.command) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execvp(argv[0], argv.data());
      std::string msg = "anvil-run: cannot execute '" + cfg.command[0] + "': " + strerror(errno) + "\n";
      write_all(STDERR_FILENO, msg.data(), msg.size());
      _exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    children[static_cast<size_t>(local)] = Child{rank, pid, true, 0};
    std::string prefix = cfg.prefix_output ? "[rank " + std::to_string(rank) + "] " : "";
    streams.push_back(Stream{out[0], STDOUT_FILENO, prefix, {}});
    streams.push_back(Stream{err[0], STDERR_FILENO, prefix, {}});
  };
  for (int local = 0; local < cfg.nproc_per_node; ++local) spawn(local, restart);

  int result = 0;
  bool stopping = false;  // SIGTERM sent to the survivors
  bool killed = false;  // SIGKILL sent
  int signals_seen = 0;
  Clock::time_point kill_at{};
  Clock::time_point drain_until{};
  bool all_exited = false;

  auto signal_all = [&](int sig) {
    for (auto& c : children)
      if (c.running) ::kill(c.pid, sig);
  };
  auto begin_stop = [&] {
    if (stopping) return;
    stopping = true;
    signal_all(SIGTERM);
    kill_at = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(cfg.kill_grace_s * 1000));
  };

  while (true) {
    // Reap.
    while (true) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      for (auto& c : children) {
        if (c.pid != pid || !c.running) continue;
        c.running = false;
        c.status = status;
        bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        const bool ps_worker = cfg.num_ps > 0 && c.rank >= cfg.num_ps;
        if (failed && ps_worker && !stopping) {
          // A parameter-server job trains on without it; restarted, it rejoins.
          const size_t local = static_cast<size_t>(c.rank - cfg.node_rank * cfg.nproc_per_node);
          if (rank_restarts[local] < cfg.max_restarts) {
            ++rank_restarts[local];
            say("worker rank " + std::to_string(c.rank) + " " + status_text(status) +
                "; restarting it alone (restart " + std::to_string(rank_restarts[local]) + " of " +
                std::to_string(cfg.max_restarts) + ")");
            spawn(static_cast<int>(local), rank_restarts[local]);
            break;  // children[local] now describes the new process
          }
          say("worker rank " + std::to_string(c.rank) + " " + status_text(status) +
              "; the parameter-server job runs on without it");
          if (result == 0) result = status_code(status);
          continue;
        }
        if (failed && result == 0 && !stopping) {  // the first failure
          result = status_code(status);
          if (cfg.keep_going) {
            say("rank " + std::to_string(c.rank) + " " + status_text(status) + "; --keep-going: the others run on");
          } else {
            say("rank " + std::to_string(c.rank) + " " + status_text(status) + "; stopping the other ranks");
            begin_stop();
          }
        } else if (failed && result == 0) {
          result = status_code(status);  // stopped by a forwarded signal
        } else if (failed && !stopping) {
          // A later failure: reported too, so that no rank's end goes unseen.
          say("rank " + std::to_string(c.rank) + " " + status_text(status));
        }
      }
    }
    bool any_running = std::any_of(children.begin(), children.end(), [](const Child& c) { return c.running; });
    bool any_open = std::any_of(streams.begin(), streams.end(), [](const Stream& s) { return s.fd >= 0; });
    if (!any_running && !all_exited) {
      all_exited = true;
      // Grandchildren may keep a pipe open; do not wait for them forever.
      drain_until = Clock::now() + std::chrono::seconds(2);
    }
    if (!any_running && (!any_open || Clock::now() >= drain_until)) break;
    if (stopping && !killed && any_running && Clock::now() >= kill_at) {
      say("ranks still running " + std::to_string(cfg.kill_grace_s) + " s after SIGTERM; sending SIGKILL");
      signal_all(SIGKILL);
      killed = true;
    }

    std::vector<pollfd> fds;
    fds.push_back({signal_pipe[0], POLLIN, 0});
    for (auto& s : streams)
      if (s.fd >= 0) fds.push_back({s.fd, POLLIN, 0});
    int timeout_ms = 200;  // also catches a SIGCHLD that raced the poll
    ::poll(fds.data(), fds.size(), timeout_ms);
    if (fds[0].revents & POLLIN) {
      unsigned char sigs[64];
      ssize_t n;
      while ((n = ::read(signal_pipe[0], sigs, sizeof sigs)) > 0) {
        for (ssize_t i = 0; i < n; ++i) {
          int sig = sigs[i];
          if (sig == SIGCHLD) continue;
          ++signals_seen;
          *interrupted = true;
          if (signals_seen == 1) {
            say(std::string("got ") + strsignal(sig) + "; forwarding it to the ranks");
            signal_all(sig);
            stopping = true;
            kill_at = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(cfg.kill_grace_s * 1000));
            if (result == 0) result = 128 + sig;
          } else {
            say("second signal; killing the ranks");
            signal_all(SIGKILL);
            killed = true;
          }
        }
      }
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      for (auto& s : streams)
        if (s.fd == fds[i].fd) s.pump();
    }
  }
  for (auto& s : streams)
    if (s.fd >= 0) {
      if (!s.partial.empty()) s.emit(s.partial.data(), s.partial.size());
      ::close(s.fd);
    }
  return result;
}

}  // namespace

}  // namespace anvil::distributed::launcher
