#pragma once
// A small tmpfs for tests that need a really full file system (ENOSPC from
// the kernel, not a simulated error). It is mounted by a helper child in its
// own mount namespace, so no mount outlives the test, even a killed one (the
// child dies with the test and its namespace with it), and nothing shows on
// the machine's mount table. The test reaches it through
// /proc/<child>/root/<folder>: the child's view of the file system.
//
// The child tries a mount namespace (root, or CAP_SYS_ADMIN), then a user
// namespace with a mount namespace (an unprivileged user, where the kernel
// allows them). ok() is false where both are refused, and why_not() then says
// what each step answered, for GTEST_SKIP.
//
//   PrivateTmpfs disk(256 * 1024);
//   if (!disk.ok()) GTEST_SKIP() << disk.why_not();
//   save_checkpoint(disk.path() / "run.ckpt", ...);
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

namespace anvil::testing {

class PrivateTmpfs {
 public:
  explicit PrivateTmpfs(size_t bytes) {
    namespace fs = std::filesystem;
    static int count = 0;
    mountpoint_ =
        fs::temp_directory_path() / ("anvil_tmpfs_" + std::to_string(::getpid()) + "_" + std::to_string(count++));
    fs::create_directories(mountpoint_);
    // Everything the child needs is made here: after fork in a threaded
    // process it may only make system calls.
    const std::string options = "size=" + std::to_string(bytes) + ",mode=0777";
    const std::string uid_map = "0 " + std::to_string(::getuid()) + " 1";
    const std::string gid_map = "0 " + std::to_string(::getgid()) + " 1";
    const std::string where = mountpoint_.string();
    int report[2], hold[2];
    if (::pipe2(report, O_CLOEXEC) != 0 || ::pipe2(hold, O_CLOEXEC) != 0) {
      why_not_ = std::string("pipe: ") + std::strerror(errno);
      return;
    }
    const pid_t parent = ::getpid();
    child_ = ::fork();
    if (child_ < 0) {
      why_not_ = std::string("fork: ") + std::strerror(errno);
      return;
    }
    if (child_ == 0) {
      ::close(report[0]);
      ::close(hold[1]);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      char line[512];
      const int step = enter_namespace(uid_map, gid_map, line, sizeof line);
      if (step == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        say(line, sizeof line, "making / private in the new mount namespace", errno);
      else if (step == 0 && ::mount("tmpfs", where.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0)
        say(line, sizeof line, "mount -t tmpfs", errno);
      else if (step == 0)
        std::snprintf(line, sizeof line, "ok");
      write_all(report[1], line);
      ::close(report[1]);
      char byte;
      while (::read(hold[0], &byte, 1) != 0) {  // until the test closes its end (or dies)
      }
      ::_exit(0);
    }
    ::close(report[1]);
    ::close(hold[0]);
    hold_ = hold[1];
    std::string answer;
    char buf[512];
    for (ssize_t got; (got = ::read(report[0], buf, sizeof buf)) != 0;) {
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) break;
      answer.append(buf, static_cast<size_t>(got));
    }
    ::close(report[0]);
    if (answer != "ok") {
      why_not_ = "cannot mount a private tmpfs: " + (answer.empty() ? std::string("the helper died") : answer);
      return;
    }
    path_ = fs::path("/proc/" + std::to_string(child_) + "/root") / mountpoint_.relative_path();
    // The file system the test will fill must really be the new tmpfs.
    struct statfs info {};
    if (::statfs(path_.c_str(), &info) != 0) {
      why_not_ = "the tmpfs is not reachable at " + path_.string() + ": " + std::strerror(errno);
      return;
    }
    if (info.f_type != TMPFS_MAGIC) {
      why_not_ = path_.string() + " is not the tmpfs mounted there";
      return;
    }
    capacity_ = static_cast<size_t>(info.f_blocks) * static_cast<size_t>(info.f_bsize);
    ok_ = true;
  }

  ~PrivateTmpfs() {
    if (hold_ >= 0) ::close(hold_);  // the child exits; its namespace, and the tmpfs, go with it
    if (child_ > 0) {
      int status = 0;
      while (::waitpid(child_, &status, 0) < 0 && errno == EINTR) {
      }
    }
    std::error_code ec;
    std::filesystem::remove(mountpoint_, ec);  // the empty folder in the test's own namespace
  }
  PrivateTmpfs(const PrivateTmpfs&) = delete;
  PrivateTmpfs& operator=(const PrivateTmpfs&) = delete;

  bool ok() const { return ok_; }
  const std::string& why_not() const { return why_not_; }
  const std::filesystem::path& path() const { return path_; }
  size_t capacity() const { return capacity_; }  // as statfs reports it

 private:
  static void say(char* line, size_t n, const char* step, int err) {
    std::snprintf(line, n, "%s failed: %s", step, std::strerror(err));
  }
  static void write_all(int fd, const char* text) {
    for (size_t left = std::strlen(text); left > 0;) {
      const ssize_t w = ::write(fd, text, left);
      if (w <= 0) return;
      text += w;
      left -= static_cast<size_t>(w);
    }
  }
  static bool write_file(const char* path, const std::string& text) {
    const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return ok;
  }
  // 0 once in a private mount namespace; otherwise the reason is in `line`.
  static int enter_namespace(const std::string& uid_map, const std::string& gid_map, char* line, size_t n) {
    if (::unshare(CLONE_NEWNS) == 0) return 0;
    const int as_is = errno;
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      std::snprintf(line, n, "unshare(CLONE_NEWNS) failed: %s; unshare(CLONE_NEWUSER | CLONE_NEWNS) failed: %s",
                    std::strerror(as_is), std::strerror(errno));
      return 1;
    }
    if (!write_file("/proc/self/setgroups", "deny") || !write_file("/proc/self/uid_map", uid_map) ||
        !write_file("/proc/self/gid_map", gid_map)) {
      std::snprintf(line, n, "unshare(CLONE_NEWNS) failed: %s; in a new user namespace, writing its id maps failed: %s",
                    std::strerror(as_is), std::strerror(errno));
      return 1;
    }
    return 0;
  }

  std::filesystem::path mountpoint_;  // in the test's namespace: an empty folder
  std::filesystem::path path_;  // the tmpfs, through the child's root
  std::string why_not_;
  pid_t child_ = -1;
  int hold_ = -1;
  size_t capacity_ = 0;
  bool ok_ = false;
};

}  // namespace anvil::testing
