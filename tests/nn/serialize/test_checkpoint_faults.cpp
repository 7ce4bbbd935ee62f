// Faults while checkpointing: a writer SIGKILLed at random points, a full
// disk (a file size limit, and a really full tmpfs), a flipped byte. Each must leave a loadable checkpoint under the
// final name (the old or the new one, never a partial file) or a clear error naming the file.
#include <gtest/gtest.h>

#include <omp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "nn/serialize/checkpoint.h"
#include "private_tmpfs.h"
#include "serialize_test_util.h"

namespace anvil::nn::serialize::test {
namespace {

// A forked child of a process whose OpenMP team exists must not use that
// team (its threads are not in the child): one thread there.
void single_threaded_child() { omp_set_num_threads(1); }

// Version k of a checkpoint: every value equals k, so a load tells which
// version it got and whether that version is whole. Built from memory
// (no kernels, so no thread pool) because forked children write it.
Checkpoint version(int64_t k, int64_t n) {
  Checkpoint c;
  c.model.emplace_back("weight", from_vector(std::vector<float>(n, static_cast<float>(k)), {n}));
  c.model.emplace_back("bias", from_vector(std::vector<int64_t>(16, k), {16}));
  c.step = k;
  return c;
}

// The version a loaded checkpoint holds, checking it is consistent.
int64_t version_of(const Checkpoint& c) {
  EXPECT_EQ(c.model.size(), 2u);
  const int64_t k = c.step;
  for (const auto& [name, t] : c.model) {
    if (name == "weight") {
      for (float v : t.to_vector<float>()) EXPECT_EQ(v, static_cast<float>(k));
    } else {
      for (int64_t v : t.to_vector<int64_t>()) EXPECT_EQ(v, k);
    }
  }
  return k;
}

fs::path scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("anvil_ckpt_faults_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(CheckpointFaults, SigkillWhileWritingNeverLeavesAPartialFile) {
  const fs::path dir = scratch("kill");
  const fs::path path = dir / "run.ckpt";
  constexpr int64_t kValues = 256 * 1024;  // 1 MiB of weights: writes take a while
  save_checkpoint(path, version(0, kValues));
  std::mt19937 rng(1234);
  int64_t last_seen = 0, advanced = 0;
  constexpr int kKills = 50;
  for (int i = 0; i < kKills; ++i) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      // Writes ever newer versions until killed; never returns into gtest.
      single_threaded_child();
      for (int64_t k = last_seen + 1;; ++k) save_checkpoint(path, version(k, kValues));
      ::_exit(0);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status));
    // The final name holds a whole checkpoint, the previous or a newer one.
    Checkpoint c;
    ASSERT_NO_THROW(c = load_checkpoint(path)) << "after kill " << i;
    const int64_t k = version_of(c);
    EXPECT_GE(k, last_seen);
    if (k > last_seen) ++advanced;
    last_seen = k;
  }
  // Temporaries a killed writer left lie beside, never under, the final name.
  int leftovers = 0;
  for (const auto& e : fs::directory_iterator(dir)) leftovers += e.path() != path ? 1 : 0;
  std::printf("[ measured ] %d kills: %lld advanced the checkpoint, last version %lld, %d temporaries left\n", kKills,
              static_cast<long long>(advanced), static_cast<long long>(last_seen), leftovers);
  EXPECT_GT(advanced, 0) << "no child ever finished a write: the kills tested nothing";
  fs::remove_all(dir);
}

// A full disk, made without root: the child's RLIMIT_FSIZE caps any file it
// writes (SIGXFSZ ignored, so writes past it fail with EFBIG).
TEST(CheckpointFaults, FullDiskIsAClearErrorAndKeepsThePreviousCheckpoint) {
  const fs::path dir = scratch("full");
  const fs::path path = dir / "run.ckpt";
  save_checkpoint(path, version(1, 1024));  // ~4 KiB
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    single_threaded_child();
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{64 * 1024, 64 * 1024};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    std::string message = error_of([&] { save_checkpoint(path, version(2, 256 * 1024)); });
    ssize_t w = ::write(pipe_fds[1], message.data(), message.size());
    (void)w;
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string message;
  char buf[512];
  for (ssize_t got; (got = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) message.append(buf, got);
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_NE(message.find("is unchanged"), std::string::npos) << message;
  EXPECT_EQ(version_of(load_checkpoint(path)), 1);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1) << "the failed write left its temporary file";
  fs::remove_all(dir);
}

// A really full file system: the kernel's ENOSPC, on a 256 KiB tmpfs that a
// 1 MiB checkpoint cannot fit in.
TEST(CheckpointFaults, ATmpfsThatFillsUpIsAClearErrorAndKeepsThePreviousCheckpoint) {
  anvil::testing::PrivateTmpfs disk(256 * 1024);
  if (!disk.ok()) GTEST_SKIP() << disk.why_not();
  const fs::path path = disk.path() / "run.ckpt";
  save_checkpoint(path, version(1, 1024));  // ~4 KiB
  const std::string message = error_of([&] { save_checkpoint(path, version(2, 256 * 1024)); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
  EXPECT_NE(message.find("'" + path.string() + "' is unchanged"), std::string::npos) << message;
  EXPECT_EQ(version_of(load_checkpoint(path)), 1);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(disk.path())) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"run.ckpt"}) << "the failed write left its temporary file";
  // The temporary's blocks went back: a checkpoint that fits is saved again.
  save_checkpoint(path, version(3, 16 * 1024));  // 64 KiB
  EXPECT_EQ(version_of(load_checkpoint(path)), 3);
}

TEST(CheckpointFaults, AFlippedByteIsDetectedNamingTheFile) {
  const fs::path dir = scratch("flip");
  const fs::path path = dir / "run.ckpt";
  save_checkpoint(path, version(3, 4096));
  const std::string good = read_bytes(path);
  uint64_t header = 0;
  std::memcpy(&header, good.data(), 8);
  const size_t data_begin = 8 + header;
  ASSERT_LT(data_begin, good.size());
  std::mt19937 rng(99);
  for (int trial = 0; trial < 20; ++trial) {
    std::string bad = good;
    const size_t at = data_begin + rng() % (good.size() - data_begin);
    bad[at] = static_cast<char>(bad[at] ^ (1 << (rng() % 8)));
    write_bytes(path, bad);
    const std::string err = error_of([&] { load_checkpoint(path); });
    EXPECT_NE(err.find(path.string()), std::string::npos) << "byte " << at << ": " << err;
    EXPECT_NE(err.find("corrupt"), std::string::npos) << "byte " << at << ": " << err;
  }
  write_bytes(path, good);
  EXPECT_EQ(version_of(load_checkpoint(path)), 3);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace anvil::nn::serialize::test
