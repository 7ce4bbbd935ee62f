#include "harness.h"

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <csignal>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace anvil::test {

std::vector<std::string> RunResult::lines_of(int rank) const {
  std::string prefix = "[rank " + std::to_string(rank) + "] ";
  std::vector<std::string> out;
  size_t start = 0;
  while (start < output.size()) {
    size_t nl = output.find('\n', start);
    if (nl == std::string::npos) nl = output.size();
    std::string line = output.substr(start, nl - start);
    if (line.rfind(prefix, 0) == 0) out.push_back(line.substr(prefix.size()));
    start = nl + 1;
  }
  return out;
}

std::string bin_path(const std::string& name) {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("harness: cannot read /proc/self/exe");
  std::string self(buf, static_cast<size_t>(n));
  return self.substr(0, self.rfind('/') + 1) + name;
}

struct Job::Shared {
  std::mutex mu;
  std::condition_variable changed;
  std::string output;
  bool eof = false;
  std::atomic<bool> stop{false};
  std::thread reader;
};

Job::Job(const std::vector<std::string>& argv, const RunOptions& options)
    : timeout_(options.timeout), shared_(std::make_unique<Shared>()) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) throw std::runtime_error("harness: pipe failed");
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("harness: fork failed");
  if (pid == 0) {
    ::setpgid(0, 0);  // its own process group: a timeout kills the whole job
    ::dup2(pipefd[1], STDOUT_FILENO);
    ::dup2(pipefd[1], STDERR_FILENO);
    for (const auto& [k, v] : options.env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    std::string msg = "harness: cannot execute " + argv[0] + ": " + std::strerror(errno) + "\n";
    ssize_t ignored = ::write(STDERR_FILENO, msg.data(), msg.size());
    (void)ignored;
    _exit(127);
  }
  ::setpgid(pid, pid);
  ::close(pipefd[1]);
  pid_ = pid;
  out_fd_ = pipefd[0];
  deadline_ = std::chrono::steady_clock::now() + options.timeout;
  shared_->reader = std::thread([this] { read_output(); });
}

// Until every writer closed the pipe, or stop (a grandchild outside the
// group may hold it open forever).
void Job::read_output() {
  char buf[65536];
  while (!shared_->stop) {
    pollfd p{out_fd_, POLLIN, 0};
    int n = ::poll(&p, 1, 100);
    if (n <= 0) continue;
    ssize_t got = ::read(out_fd_, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (got <= 0) break;
    shared_->output.append(buf, static_cast<size_t>(got));
    shared_->changed.notify_all();
  }
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->eof = true;
  shared_->changed.notify_all();
}

bool Job::wait_for_output(const std::string& text, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(shared_->mu);
  return shared_->changed.wait_until(lock, deadline, [&] { return contains(shared_->output, text) || shared_->eof; }) &&
         contains(shared_->output, text);
}

void Job::signal_group(int sig) {
  if (!finished_) ::kill(-pid_, sig);
}

std::string Job::output_so_far() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->output;
}

RunResult Job::finish() {
  RunResult result;
  if (finished_) throw std::runtime_error("harness: Job::finish called twice");
  {
    std::unique_lock<std::mutex> lock(shared_->mu);
    result.timed_out = !shared_->changed.wait_until(lock, deadline_, [&] { return shared_->eof; });
  }
  if (result.timed_out) ::kill(-pid_, SIGKILL);
  shared_->stop = true;
  shared_->reader.join();
  ::close(out_fd_);
  // A job may close its output and live on: the deadline bounds that too.
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline_ && !result.timed_out) {
      result.timed_out = true;
      ::kill(-pid_, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  finished_ = true;
  result.output = shared_->output;
  if (result.timed_out) {
    result.output += "\n[harness] timed out after " + std::to_string(timeout_.count()) + " s; killed\n";
    result.exit_code = -1;
    return result;
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

Job::~Job() {
  if (finished_) return;
  ::kill(-pid_, SIGKILL);
  shared_->stop = true;
  shared_->reader.join();
  ::close(out_fd_);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

RunResult run_command(const std::vector<std::string>& argv, const RunOptions& options) {
  return Job(argv, options).finish();
}

RunResult run_ranks(int nproc, const std::string& worker, const std::vector<std::string>& worker_args,
                    const RunOptions& options) {
  std::vector<std::string> argv{bin_path("anvil-run"), "--nproc-per-node", std::to_string(nproc)};
  argv.insert(argv.end(), options.launcher_args.begin(), options.launcher_args.end());
  argv.push_back("--");
  argv.push_back(bin_path("dist_worker_" + worker));
  argv.insert(argv.end(), worker_args.begin(), worker_args.end());
  return run_command(argv, options);
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("harness: cannot bind a free port");
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace anvil::test
