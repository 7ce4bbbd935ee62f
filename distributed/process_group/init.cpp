#include "distributed/process_group/init.h"

#include <cstdlib>
#include <mutex>

#include "core/base/error.h"
#include "distributed/process_group/cluster_env.h"
#include "distributed/process_group/collectives.h"
#include "distributed/process_group/process_group_factory.h"
#include "distributed/process_group/subgroup.h"
#include "distributed/store/file_store.h"
#include "distributed/store/tcp_store.h"

namespace anvil::distributed {

namespace {

constexpr const char* kLauncherHint =
    " (start the program with build/bin/anvil-run --nproc-per-node N program ..., which sets RANK, "
    "WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT; under srun or mpirun they come "
    "from SLURM's or Open MPI's variables)";

// An unset and an empty variable are the same: neither names anything.
std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

int parse_int(const char* name, const std::string& text) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  ANVIL_CHECK(used == text.size() && v >= 0 && v <= 1000000000, "init_process_group: ", name, "='", text,
              "' is not a non-negative integer");
  return static_cast<int>(v);
}

// The default group: process-wide by design (see init.h).
struct DefaultState {
  std::mutex mu;
  std::shared_ptr<Store> store;
  std::shared_ptr<ProcessGroup> group;
  std::shared_ptr<World> world;
};
DefaultState& state() {
  static DefaultState s;
  return s;
}

}  // namespace

LaunchEnv launch_env_from_environment() {
  return launch_env_from([](const char* name) { return env(name); });
}

LaunchEnv launch_env_from(const EnvLookup& lookup) {
  auto get = [&](const char* name) {
    std::optional<std::string> v = lookup(name);
    return v && !v->empty() ? v : std::nullopt;
  };
  // Each value: its torchrun variable when set, else the scheduler's
  // (cluster_env.h); errors name the variable the value came from.
  const SchedulerEnv sched = scheduler_env_from(lookup);
  auto value = [&](const char* name, const std::optional<EnvValue>& from_scheduler) -> std::optional<EnvValue> {
    if (auto v = get(name)) return EnvValue{name, *v};
    return from_scheduler;
  };
  auto required = [&](const char* name, const std::optional<EnvValue>& from_scheduler) {
    auto v = value(name, from_scheduler);
    if (!v.has_value()) {
      if (sched.scheduler.empty())
        fail("init_process_group: the environment variable ", name, " is not set", kLauncherHint);
      fail("init_process_group: the environment variable ", name, " is not set and ", sched.scheduler,
           "'s variables do not give it (set it, e.g. mpirun -x ", name, "=...)");
    }
    return *v;
  };
  auto as_int = [](const EnvValue& v) { return parse_int(v.name.c_str(), v.text); };
  LaunchEnv e;
  const EnvValue world = required("WORLD_SIZE", sched.world_size);
  const EnvValue rank = required("RANK", sched.rank);
  e.world_size = as_int(world);
  e.rank = as_int(rank);
  ANVIL_CHECK(e.world_size >= 1, "init_process_group: ", world.name, " must be at least 1, got ", e.world_size);
  ANVIL_CHECK(e.rank < e.world_size, "init_process_group: ", rank.name, "=", e.rank, " is not below ", world.name, "=",
              e.world_size);
  const auto lr = value("LOCAL_RANK", sched.local_rank);
  const auto lws = value("LOCAL_WORLD_SIZE", sched.local_world_size);
  e.local_rank = lr ? as_int(*lr) : e.rank;
  e.local_world_size = lws ? as_int(*lws) : e.world_size;
  ANVIL_CHECK(e.local_rank < e.local_world_size, "init_process_group: ", lr ? lr->name : "LOCAL_RANK", "=",
              e.local_rank, " is not below ", lws ? lws->name : "LOCAL_WORLD_SIZE", "=", e.local_world_size);
  e.master_addr = required("MASTER_ADDR", sched.master_addr).text;
  const EnvValue port = required("MASTER_PORT", sched.master_port);
  e.master_port = as_int(port);
  ANVIL_CHECK(e.master_port >= 1 && e.master_port <= 65535, "init_process_group: ", port.name, "=", e.master_port,
              " is not a TCP port (1..65535)");
  e.source = sched.scheduler.empty() ? "torchrun" : sched.scheduler;
  return e;
}

std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& options) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ANVIL_CHECK(s.group == nullptr,
              "init_process_group: the default group exists already; "
              "call destroy_process_group() first");
  int rank = 0, world = 1;
  std::shared_ptr<Store> store = options.store;
  bool need_env =
      !(options.rank && options.world_size) || (store == nullptr && options.init_method.rfind("env://", 0) == 0);
  LaunchEnv le;
  if (need_env) le = launch_env_from_environment();
  rank = options.rank.value_or(le.rank);
  world = options.world_size.value_or(le.world_size);
  ANVIL_CHECK(world >= 1 && rank >= 0 && rank < world, "init_process_group: rank ", rank, " is not in [0, ", world,
              ")");
  if (store == nullptr) {
    const std::string& m = options.init_method;
    if (m.rfind("env://", 0) == 0) {
      TCPStoreOptions so;
      so.host = le.master_addr;
      so.port = le.master_port;
      so.is_server = rank == 0;
      so.timeout = options.group.timeout;
      store = std::make_shared<TCPStore>(so);
    } else if (m.rfind("file://", 0) == 0) {
      store = std::make_shared<FileStore>(m.substr(7), options.group.timeout);
    } else {
      fail("init_process_group: init_method '", m, "' is neither env:// nor file:///path");
    }
  }
  MakeProcessGroupOptions mo;
  mo.backend = options.backend;
  mo.group = options.group;
  mo.store_prefix = "default/";
  s.group = make_process_group(store, rank, world, mo);
  s.store = store;
  s.world = std::make_shared<World>(store, rank, world, mo);
  return s.group;
}

void destroy_process_group() {
  std::shared_ptr<ProcessGroup> group;
  std::shared_ptr<Store> store;
  std::shared_ptr<World> world;
  {
    auto& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    group = std::move(s.group);
    store = std::move(s.store);
    world = std::move(s.world);
  }
  // Destroyed outside the lock: the Gloo worker may still be finishing.
  group.reset();
  store.reset();
}

bool is_initialized() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.group != nullptr;
}

std::shared_ptr<ProcessGroup> default_group_ptr() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ANVIL_CHECK(s.group != nullptr, "distributed: no default process group; call init_process_group() first");
  return s.group;
}

ProcessGroup& default_group() { return *default_group_ptr(); }

std::shared_ptr<Store> default_store() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ANVIL_CHECK(s.store != nullptr, "distributed: no default process group; call init_process_group() first");
  return s.store;
}

World& default_world() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  ANVIL_CHECK(s.world != nullptr, "distributed: no default process group; call init_process_group() first");
  return *s.world;
}

int get_rank() { return default_group().rank(); }
int get_world_size() { return default_group().size(); }
int get_local_rank() {
  auto v = env("LOCAL_RANK");
  return v ? parse_int("LOCAL_RANK", *v) : 0;
}
int get_local_world_size() {
  auto v = env("LOCAL_WORLD_SIZE");
  return v ? parse_int("LOCAL_WORLD_SIZE", *v) : 1;
}

// ---- free functions on a group ----

namespace {
ProcessGroup& group_of(const CallOptions& call) { return call.group ? *call.group : default_group(); }
WorkHandle finish(WorkHandle w, const CallOptions& call) {
  if (!call.async_op) w->wait();
  return w;
}
}  // namespace

WorkHandle all_reduce(const Tensor& tensor, ReduceOp op, const CallOptions& call) {
  Tensor t = tensor;
  return finish(group_of(call).all_reduce(t, op), call);
}
WorkHandle broadcast(const Tensor& tensor, int root, const CallOptions& call) {
  Tensor t = tensor;
  return finish(group_of(call).broadcast(t, root), call);
}
WorkHandle all_gather(const Tensor& output, const Tensor& input, const CallOptions& call) {
  Tensor out = output;
  return finish(group_of(call).all_gather(out, input), call);
}
WorkHandle reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op, const CallOptions& call) {
  Tensor out = output;
  return finish(group_of(call).reduce_scatter(out, input, op), call);
}
WorkHandle send(const Tensor& tensor, int dst, int tag, const CallOptions& call) {
  return finish(group_of(call).send(tensor, dst, tag), call);
}
WorkHandle recv(const Tensor& tensor, int src, int tag, const CallOptions& call) {
  Tensor t = tensor;
  return finish(group_of(call).recv(t, src, tag), call);
}
WorkHandle barrier(const CallOptions& call) { return finish(group_of(call).barrier(), call); }
std::vector<WorkHandle> batch_isend_irecv(const std::vector<P2POp>& ops, const CallOptions& call) {
  std::vector<WorkHandle> works = group_of(call).batch_isend_irecv(ops);
  for (WorkHandle& w : works) w = finish(w, call);
  return works;
}
WorkHandle all_to_all_single(const Tensor& output, const Tensor& input, const std::vector<int64_t>& output_split_sizes,
                             const std::vector<int64_t>& input_split_sizes, const CallOptions& call) {
  Tensor out = output;
  return finish(group_of(call).all_to_all_single(out, input, output_split_sizes, input_split_sizes), call);
}
WorkHandle all_to_all(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs, const CallOptions& call) {
  std::vector<Tensor> outs = outputs;
  return finish(group_of(call).all_to_all(outs, inputs), call);
}

}  // namespace anvil::distributed
