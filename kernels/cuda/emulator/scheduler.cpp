// The block scheduler: runs a grid on the calling stream worker, one fiber
// per CUDA thread, and checks every barrier and warp operation (synccheck).
//
//   * A fiber runs until __syncthreads, a warp operation or its end.
//   * __syncthreads releases when every thread of the block waits at a
//     barrier; they must all wait at the same call site, and none may have
//     exited (both are undefined behaviour in CUDA that a GPU often
//     tolerates and the emulator reports).
//   * A warp operation completes when every lane its mask names has arrived
//     at the same call site with the same mask; the last lane to arrive
//     computes every lane's result. A mask naming an exited lane, or a lane
//     the mask does not name, is reported.
//   * The order ready fibers run in is configurable (ANVIL_EMU_SCHEDULE), so
//     a test can run a kernel under several orders.
//   * Blocks run one after another on the stream's worker, in block order;
//     with ANVIL_EMU_BLOCK_THREADS=N, N threads take them (the worker and the
//     block pool's), as a GPU's SMs do: faster on a many-core machine, and
//     blocks that really overlap, at the price of a run-to-run order (float
//     atomics then sum in varying order, as on a GPU).
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda/emulator/block_pool.h"
#include "kernels/cuda/emulator/execution.h"
#include "kernels/cuda/emulator/findings.h"
#include "kernels/cuda/emulator/profiler.h"
#include "kernels/cuda/emulator/shared_racecheck.h"

namespace anvil::emulator {
namespace {

struct WarpState {
  unsigned arrived = 0, mask = 0, exited = 0, exists = 0;
  int op = 0, width = 32;
  Site site{};
};

// Everything one stream worker needs to run blocks; thread_local because
// each worker runs its own grid independently of the others.
struct Worker {
  std::vector<Fiber> fibers;
  std::vector<WarpState> warps;
  std::vector<int> ready;
  size_t ready_head = 0;
  std::vector<char*> free_stacks;
  void* scheduler_sp = nullptr;
  Fiber* current = nullptr;
  const Launch* launch = nullptr;
  BlockGeometry geometry{};
  uint64_t block_linear = 0;
  bool aborted = false;  // a synccheck finding: stop this grid
  std::mt19937_64 rng{1};
};

thread_local Worker* t_worker = nullptr;

Worker& worker() {
  if (!t_worker) {
    t_worker = new Worker();  // one per stream worker thread, for the life of the process
    t_worker->rng.seed(config().seed);
  }
  return *t_worker;
}

std::string where(const Site& s) { return std::string(s.file) + ":" + std::to_string(s.line); }

std::string block_text(const Worker& w) {
  const uint3 b = w.geometry.block_idx;
  char buf[64];
  std::snprintf(buf, sizeof buf, "block (%u,%u,%u)", b.x, b.y, b.z);
  return buf;
}

std::string thread_text(const Fiber& f) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "thread (%u,%u,%u)", f.tid.x, f.tid.y, f.tid.z);
  return buf;
}

// A synccheck finding: recorded, and the grid stops (its threads can no
// longer make progress as the kernel meant).
void sync_failure(Worker& w, const Site& site, const std::string& what) {
  if (!already_recorded(Checker::Synccheck, 0, nullptr, nullptr))
    record(
        Checker::Synccheck, 0, nullptr, nullptr,
        "kernel " + kernel_name(w.launch->kernel) + ", " + block_text(w) + ": " + what + " (at " + where(site) + ")");
  w.aborted = true;
}

// --- stacks ---
char* acquire_stack(Worker& w) {
  if (!w.free_stacks.empty()) {
    char* s = w.free_stacks.back();
    w.free_stacks.pop_back();
    return s;
  }
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t total = config().stack_bytes + page;
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("anvil emulator: mmap of a fiber stack");
    std::abort();
  }
  mprotect(p, page, PROT_NONE);  // guard page: an overflow faults instead of corrupting a neighbour
  return static_cast<char*>(p) + page;
}

// --- scheduling ---
void push_ready(Worker& w, int i) {
  w.fibers[i].state = FiberState::Ready;
  w.ready.push_back(i);
}

int pop_ready(Worker& w) {
  const Order order = config().order;
  if (order == Order::Lifo) {
    const int i = w.ready.back();
    w.ready.pop_back();
    return i;
  }
  if (order == Order::Random) {
    const size_t n = w.ready.size() - w.ready_head;
    std::swap(w.ready[w.ready_head], w.ready[w.ready_head + w.rng() % n]);
  }
  return w.ready[w.ready_head++];
}

void yield_to_scheduler(Worker& w) { switch_stack(&w.current->sp, w.scheduler_sp); }

void fiber_main(void* arg) {
  auto* f = static_cast<Fiber*>(arg);
  Worker& w = *t_worker;
  w.launch->body->run_one_thread();
  f->state = FiberState::Exited;
  void* dead_sp;
  switch_stack(&dead_sp, w.scheduler_sp);
  __builtin_unreachable();
}

void resume(Worker& w, Fiber& f) {
  if (f.stack == nullptr) {  // first resume in this block
    f.stack = acquire_stack(w);
    f.sp = prepare_fiber_stack(f.stack, config().stack_bytes, &fiber_main, &f);
  }
  f.state = FiberState::Running;
  w.current = t_running_fiber = &f;
  switch_stack(&w.scheduler_sp, f.sp);
  w.current = t_running_fiber = nullptr;
}

void enqueue_all(Worker& w, int total) {
  if (config().order == Order::Reverse) {
    for (int i = total - 1; i >= 0; --i) push_ready(w, i);
  } else {
    for (int i = 0; i < total; ++i) push_ready(w, i);
  }
}

// Nothing is ready: release a barrier, or report why the block is stuck.
bool settle_block(Worker& w, int live, int total) {
  const Fiber* first = nullptr;
  for (const Fiber& f : w.fibers) {
    if (&f - w.fibers.data() >= total) break;
    if (f.state == FiberState::AtWarp) {
      const WarpState& ws = w.warps[f.warp];
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "warp %u, lane %u waits at a warp operation for lanes 0x%08x; arrived 0x%08x, exited 0x%08x "
                    "(the others are at a __syncthreads or elsewhere): warp deadlock",
                    f.warp, f.lane, ws.mask, ws.arrived, ws.exited);
      sync_failure(w, f.site, buf);
      return false;
    }
    if (f.state != FiberState::AtBarrier) continue;
    if (!first) {
      first = &f;
    } else if (f.site.line != first->site.line || std::strcmp(f.site.file, first->site.file) != 0) {
      sync_failure(w, f.site,
                   "barrier divergence: " + thread_text(*first) + " waits at __syncthreads() " + where(first->site) +
                       ", " + thread_text(f) + " at another __syncthreads()");
      return false;
    }
  }
  if (!first) return false;
  if (live < total) {
    sync_failure(w, first->site,
                 "barrier divergence: " + std::to_string(total - live) + " of " + std::to_string(total) +
                     " threads exited while the others wait at __syncthreads()");
    return false;
  }
  enqueue_all(w, total);
  profile_barrier(static_cast<unsigned>(total + 31) / 32);
  return true;
}

void run_block(Worker& w, int total) {
  w.ready.clear();
  w.ready_head = 0;
  for (int i = 0; i < total; ++i) {
    w.fibers[i].state = FiberState::NotStarted;
    w.fibers[i].stack = nullptr;
  }
  for (WarpState& ws : w.warps) ws.arrived = ws.exited = 0;
  enqueue_all(w, total);
  racecheck_block_begin();
  profile_block_begin(*w.launch, static_cast<unsigned>(total));
  int live = total;
  while (!w.aborted) {
    while (w.ready_head < w.ready.size() && !w.aborted) {
      Fiber& f = w.fibers[pop_ready(w)];
      resume(w, f);
      if (f.state != FiberState::Exited) continue;
      w.free_stacks.push_back(f.stack);
      f.stack = nullptr;
      --live;
      WarpState& ws = w.warps[f.warp];
      ws.exited |= 1u << f.lane;
      if (ws.arrived && (ws.mask & ws.exited)) {
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      "lane %u of warp %u exited while lanes 0x%08x wait at a warp operation whose mask 0x%08x "
                      "names it",
                      f.lane, f.warp, ws.arrived, ws.mask);
        sync_failure(w, ws.site, buf);
      }
    }
    if (w.aborted || live == 0) break;
    if (config().order != Order::Lifo && w.ready_head > 4096) {
      w.ready.erase(w.ready.begin(), w.ready.begin() + static_cast<long>(w.ready_head));
      w.ready_head = 0;
    }
    if (!settle_block(w, live, total)) break;
    racecheck_barrier();
  }
  profile_block_end();
  // An aborted block's fibers are never resumed: reclaim their stacks.
  for (int i = 0; i < total; ++i)
    if (w.fibers[i].stack) {
      w.free_stacks.push_back(w.fibers[i].stack);
      w.fibers[i].stack = nullptr;
    }
}

}  // namespace

__thread Fiber* t_running_fiber = nullptr;

alignas(1024) __thread unsigned char t_dynamic_shared[kDynamicSharedCapacity];
unsigned char* dynamic_shared_memory() { return t_dynamic_shared; }
const Launch* running_launch() { return t_worker && t_worker->current ? t_worker->launch : nullptr; }
uint64_t running_global_thread() {
  const Worker& w = *t_worker;
  return w.block_linear * (uint64_t(w.geometry.block_dim.x) * w.geometry.block_dim.y * w.geometry.block_dim.z) +
         w.current->linear;
}
const uint3* current_thread_idx() { return &t_worker->current->tid; }
const BlockGeometry* current_block() { return &t_worker->geometry; }
std::string running_thread_text() {
  const Worker& w = *t_worker;
  return "kernel " + kernel_name(w.launch->kernel) + ", " + block_text(w) + " " + thread_text(*w.current);
}

namespace {

// One grid being run, possibly by several threads (the stream worker and the
// block pool's): each takes the next block number until none is left.
struct GridRun {
  const Launch& launch;
  uint64_t blocks;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> aborted{false};  // a synccheck finding stops the whole grid
  std::mutex mutex;
  std::vector<PendingFindings*> pool_findings;
};

void prepare(Worker& w, const Launch& launch) {
  const dim3 block = launch.block;
  const int total = static_cast<int>(block.x * block.y * block.z);
  if (w.fibers.size() < static_cast<size_t>(total)) w.fibers.resize(static_cast<size_t>(total));
  w.warps.assign(static_cast<size_t>((total + 31) / 32), WarpState{});
  for (int i = 0; i < total; ++i) {
    Fiber& f = w.fibers[i];
    f.tid = uint3{static_cast<unsigned>(i) % block.x, static_cast<unsigned>(i) / block.x % block.y,
                  static_cast<unsigned>(i) / (block.x * block.y)};
    f.linear = static_cast<unsigned>(i);
    f.lane = f.linear % 32;
    f.warp = f.linear / 32;
    w.warps[f.warp].exists |= 1u << f.lane;
  }
  w.launch = &launch;
  w.aborted = false;
  w.geometry.block_dim = block;
  w.geometry.grid_dim = launch.grid;
}

// Runs blocks of `run` in block-number order (x fastest) until none is left.
void run_blocks(GridRun& run, bool owner) {
  Worker& w = worker();
  prepare(w, run.launch);
  const dim3 grid = run.launch.grid, block = run.launch.block;
  const int total = static_cast<int>(block.x * block.y * block.z);
  racecheck_launch_begin();
  while (!run.aborted.load(std::memory_order_relaxed)) {
    const uint64_t b = run.next.fetch_add(1, std::memory_order_relaxed);
    if (b >= run.blocks) break;
    w.geometry.block_idx = uint3{static_cast<unsigned>(b % grid.x), static_cast<unsigned>(b / grid.x % grid.y),
                                 static_cast<unsigned>(b / (uint64_t(grid.x) * grid.y))};
    w.block_linear = b;
    run_block(w, total);
    if (w.aborted) run.aborted.store(true, std::memory_order_relaxed);
  }
  racecheck_launch_end();
  w.launch = nullptr;
  if (!owner) {
    if (PendingFindings* p = take_pending()) {
      std::lock_guard<std::mutex> lock(run.mutex);
      run.pool_findings.push_back(p);
    }
  }
}

}  // namespace

void run_grid(const Launch& launch) {
  GridRun run{launch, uint64_t(launch.grid.x) * launch.grid.y * launch.grid.z};
  const std::thread::id owner = std::this_thread::get_id();
  profile_launch_begin(launch);
  run_on_block_pool([&] { run_blocks(run, std::this_thread::get_id() == owner); });
  for (PendingFindings* p : run.pool_findings) merge_pending(p);  // flush_launch, on this thread, reports them
  profile_launch_end(launch);
}

// --- the device-side entry points ---

void syncthreads(Site s) {
  Worker& w = *t_worker;
  w.current->state = FiberState::AtBarrier;
  w.current->site = s;
  yield_to_scheduler(w);
}

int syncthreads_reduce(int predicate, int kind, Site s) {
  Worker& w = *t_worker;
  Fiber* self = w.current;
  self->value = predicate != 0;
  syncthreads(s);
  const int total = static_cast<int>(w.geometry.block_dim.x * w.geometry.block_dim.y * w.geometry.block_dim.z);
  int count = 0;
  for (int i = 0; i < total; ++i) count += static_cast<int>(w.fibers[i].value);
  syncthreads(s);  // every thread has read the predicates before they change
  return kind == 0 ? count : kind == 1 ? count == total : count > 0;
}

namespace {

// A lane arriving at a warp operation: synccheck's checks, then its operand
// is deposited. Returns true when the caller is the last lane of `mask` to
// arrive: it then computes every lane's result and calls release_lanes.
// Otherwise the lane has waited and been resumed with its result in
// f->result (or, on a finding, is never resumed: the grid is aborted).
bool last_to_arrive(Worker& w, unsigned mask, uint64_t value, int op, int arg, int width, Site s) {
  Fiber* f = w.current;
  WarpState& ws = w.warps[f->warp];
  const unsigned bit = 1u << f->lane;
  char buf[256];
  auto fail = [&](const char* fmt, auto... xs) {
    std::snprintf(buf, sizeof buf, fmt, xs...);
    sync_failure(w, s, buf);
    yield_to_scheduler(w);  // never resumed: the grid is aborted
    return false;
  };
  if (!(mask & bit))
    return fail("lane %u of warp %u calls a warp operation with mask 0x%08x that does not name it", f->lane, f->warp,
                mask);
  if (mask & ~ws.exists)
    return fail("warp operation with mask 0x%08x names lanes that do not exist (warp %u has 0x%08x)", mask, f->warp,
                ws.exists);
  if (mask & ws.exited)
    return fail("warp operation with mask 0x%08x names lanes 0x%08x that have exited", mask, mask & ws.exited);
  if (width <= 0 || width > 32 || (width & (width - 1)))
    return fail("shuffle width %d is not a power of two in [1, 32]", width);
  if (ws.arrived == 0) {
    ws.mask = mask;
    ws.op = op;
    ws.width = width;
    ws.site = s;
  } else if (ws.mask != mask || ws.op != op || ws.site.line != s.line || std::strcmp(ws.site.file, s.file) != 0) {
    return fail(
        "warp divergence in warp %u: lane %u is at this warp operation (mask 0x%08x) while lanes 0x%08x wait "
        "at %s:%u (mask 0x%08x)",
        f->warp, f->lane, mask, ws.arrived, ws.site.file, ws.site.line, ws.mask);
  }
  f->value = value;
  f->arg = arg;
  ws.arrived |= bit;
  if ((ws.arrived & mask) != mask) {
    f->state = FiberState::AtWarp;
    f->site = s;
    yield_to_scheduler(w);
    return false;
  }
  profile_warp_op();
  return true;
}

// The last lane has completed the operation: the others run on.
void release_lanes(Worker& w, unsigned mask) {
  Fiber* f = w.current;
  Fiber* lanes = &w.fibers[f->warp * 32];
  for (int l = 0; l < 32; ++l)
    if ((mask >> l & 1) && &lanes[l] != f) push_ready(w, static_cast<int>(&lanes[l] - w.fibers.data()));
  w.warps[f->warp].arrived = 0;
  if (w.aborted) yield_to_scheduler(w);
}

}  // namespace

uint64_t warp_op(unsigned mask, uint64_t value, WarpOp op, int arg, int width, Site s) {
  Worker& w = *t_worker;
  Fiber* f = w.current;
  if (!last_to_arrive(w, mask, value, op, arg, width, s)) return f->result;
  // The last lane to arrive computes every lane's result.
  Fiber* lanes = &w.fibers[f->warp * 32];
  unsigned ballot = 0;
  if (op == kBallot)
    for (int l = 0; l < 32; ++l)
      if ((mask >> l & 1) && lanes[l].value) ballot |= 1u << l;
  for (int l = 0; l < 32; ++l) {
    if (!(mask >> l & 1)) continue;
    Fiber& me = lanes[l];
    const int segment = l & ~(width - 1);
    int src = l;
    switch (op) {
      case kShflIdx:
        src = segment + (me.arg & (width - 1));
        break;
      case kShflUp:
        src = l - me.arg >= segment ? l - me.arg : l;
        break;
      case kShflDown:
        src = l + me.arg < segment + width ? l + me.arg : l;
        break;
      case kShflXor:
        src = (l ^ me.arg) < segment + width ? (l ^ me.arg) : l;
        break;
      default:
        break;
    }
    if (op <= kShflXor && !(mask >> src & 1)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "shuffle: lane %d reads lane %d, which is not in the mask 0x%08x", l, src, mask);
      sync_failure(w, s, buf);
    }
    me.result = op == kBallot ? ballot : op == kSyncwarp ? 0 : lanes[src].value;
  }
  release_lanes(w, mask);
  return f->result;
}

void warp_collective(void* lane_data, WarpCompute compute, int op, int arg, Site s) {
  Worker& w = *t_worker;
  if (!last_to_arrive(w, 0xffffffffu, reinterpret_cast<uintptr_t>(lane_data), op, arg, 32, s)) return;
  Fiber* lanes = &w.fibers[w.current->warp * 32];
  void* data[32];
  for (int l = 0; l < 32; ++l) data[l] = reinterpret_cast<void*>(lanes[l].value);
  compute(data, arg);
  release_lanes(w, 0xffffffffu);
}

}  // namespace anvil::emulator
