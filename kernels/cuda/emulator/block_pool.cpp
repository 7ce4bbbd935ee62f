// The block pool (block_pool.h): config().block_threads - 1 threads, started
// on first use, each waiting for a grid to help with. A grid is a job in a
// queue while its owner (the stream worker) runs blocks; pool threads join
// the job at the front. The owner takes the job out of the queue once its own
// share is done, so no thread joins afterwards, and waits for those that did.
#include "kernels/cuda/emulator/block_pool.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

#include "kernels/cuda/emulator/findings.h"

namespace anvil::emulator {
namespace {

struct Job {
  const std::function<void()>* work;
  uint64_t serial;  // jobs live on their owner's stack: addresses repeat, serials do not
  int active = 0;  // pool threads inside work(), guarded by Pool::mutex
};

struct Pool {
  std::mutex mutex;
  std::condition_variable job_posted, job_left;
  std::deque<Job*> jobs;
  uint64_t next_serial = 0;

  explicit Pool(int threads) {
    for (int i = 0; i < threads; ++i) std::thread([this] { serve(); }).detach();  // live as long as the process
  }

  void serve() {
    std::unique_lock<std::mutex> lock(mutex);
    uint64_t done = UINT64_MAX;  // the job this thread last finished; it may still be queued
    for (;;) {
      Job* job = nullptr;
      job_posted.wait(lock, [&] {
        for (Job* j : jobs)
          if (j->serial != done) {
            job = j;
            return true;
          }
        return false;
      });
      ++job->active;
      lock.unlock();
      (*job->work)();
      lock.lock();
      --job->active;
      done = job->serial;
      job_left.notify_all();
    }
  }
};

Pool& pool() {
  static Pool* p = new Pool(config().block_threads - 1);  // never destroyed: its threads outlive main
  return *p;
}

}  // namespace

void run_on_block_pool(const std::function<void()>& work) {
  if (config().block_threads <= 1) {
    work();
    return;
  }
  Pool& p = pool();
  Job job{&work, 0};
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    job.serial = p.next_serial++;
    p.jobs.push_back(&job);
  }
  p.job_posted.notify_all();
  work();
  std::unique_lock<std::mutex> lock(p.mutex);
  for (auto it = p.jobs.begin(); it != p.jobs.end(); ++it)
    if (*it == &job) {
      p.jobs.erase(it);
      break;
    }
  p.job_left.wait(lock, [&] { return job.active == 0; });
}

}  // namespace anvil::emulator
