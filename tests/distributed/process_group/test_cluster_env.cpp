// Joining a job from SLURM's and Open MPI's variables (distributed/process_group/cluster_env.h):
// hostlist and tasks-per-node expansion, what each scheduler gives, the
// precedence (torchrun variables, then Open MPI, then SLURM), and errors
// that name the variable and the malformed value.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "core/base/error.h"
#include "distributed/process_group/cluster_env.h"
#include "tests/distributed/harness.h"

namespace anvil::distributed {
namespace {

using anvil::test::contains;
using anvil::test::error_of;
using Vars = std::map<std::string, std::string>;

LaunchEnv env_of(const Vars& vars) {
  return launch_env_from([&](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

TEST(Hostlist, ExpandsSlurmsCompressedForm) {
  using V = std::vector<std::string>;
  EXPECT_EQ(expand_hostlist("node[01-04,07]"), (V{"node01", "node02", "node03", "node04", "node07"}));
  EXPECT_EQ(expand_hostlist("login1"), V{"login1"});
  EXPECT_EQ(expand_hostlist("a[8-11],b,c[3]"), (V{"a8", "a9", "a10", "a11", "b", "c3"}));
  EXPECT_EQ(expand_hostlist("gpu[098-101]"), (V{"gpu098", "gpu099", "gpu100", "gpu101"}));
  EXPECT_EQ(expand_hostlist("rack[1-2]-n[1-2].ib"), (V{"rack1-n1.ib", "rack1-n2.ib", "rack2-n1.ib", "rack2-n2.ib"}));
  EXPECT_EQ(expand_hostlist("10.0.0.[5-6]"), (V{"10.0.0.5", "10.0.0.6"}));
}

TEST(Hostlist, RandomListsRoundTrip) {
  // Random hosts with random padding and gaps, compressed the way SLURM
  // writes them (runs as lo-hi), must expand back to exactly themselves.
  std::mt19937 gen(17);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::string> want;
    std::string list;
    const int groups = std::uniform_int_distribution<int>(1, 4)(gen);
    for (int g = 0; g < groups; ++g) {
      std::string prefix = "n";  // built by append: GCC 12 warns (-Wrestrict) on "literal" + temporary
      prefix.append(std::to_string(g)).append("x");
      const int width = std::uniform_int_distribution<int>(1, 4)(gen);
      int v = std::uniform_int_distribution<int>(0, 5)(gen);
      std::string ranges;
      for (int r = std::uniform_int_distribution<int>(1, 3)(gen); r > 0; --r) {
        const int len = std::uniform_int_distribution<int>(1, 4)(gen);
        auto pad = [&](int x) {
          std::string s = std::to_string(x);
          while (s.size() < static_cast<size_t>(width)) s.insert(s.begin(), '0');
          return s;
        };
        if (!ranges.empty()) ranges += ',';
        ranges += pad(v);
        if (len > 1) {
          ranges += '-';
          ranges += pad(v + len - 1);
        }
        for (int k = 0; k < len; ++k) want.push_back(prefix + pad(v + k));
        v += len + std::uniform_int_distribution<int>(1, 3)(gen);
      }
      list += (list.empty() ? "" : ",") + prefix + "[" + ranges + "]";
    }
    EXPECT_EQ(expand_hostlist(list), want) << list;
  }
}

TEST(Hostlist, MalformedListsSayWhatIsWrong) {
  EXPECT_TRUE(contains(error_of([] { expand_hostlist("node[01-04"); }), "hostlist 'node[01-04': '[' without ']'"));
  EXPECT_TRUE(contains(error_of([] { expand_hostlist("node01-04]"); }), "']' without '['"));
  EXPECT_TRUE(contains(error_of([] { expand_hostlist("n[[1]]"); }), "nested '['"));
  EXPECT_TRUE(contains(error_of([] { expand_hostlist("node[04-01]"); }), "'04-01' runs backwards"));
  EXPECT_TRUE(contains(error_of([] { expand_hostlist("node[a-b]"); }), "'a-b' is not a number"));
  EXPECT_TRUE(contains(error_of([] { expand_hostlist("node[]"); }), "is not a number or a range"));
  EXPECT_TRUE(contains(error_of([] { expand_hostlist("node[1,,2]"); }), "is not a number or a range"));
  EXPECT_TRUE(contains(error_of([] { expand_hostlist("a,,b"); }), "an empty host name"));
  EXPECT_TRUE(contains(error_of([] { expand_hostlist(""); }), "an empty host name"));
  EXPECT_TRUE(contains(error_of([] { expand_hostlist("n[1-9999999999]"); }), "is not a number"));
  EXPECT_TRUE(contains(error_of([] { expand_hostlist("n[0-999]x[0-999]", 1000); }), "more than 1000 hosts"));
}

TEST(TasksPerNode, ExpandsRepeatCounts) {
  EXPECT_EQ(expand_tasks_per_node("2(x3),1"), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(expand_tasks_per_node("4"), std::vector<int>{4});
  for (const char* bad : {"", "2(x3", "2(3)", "(x2)", "0", "2(x0)", "a", "2,", "2(x-1)"})
    EXPECT_TRUE(contains(error_of([&] { expand_tasks_per_node(bad); }), "is not N or N(xK)")) << bad;
}

const Vars kSlurm = {{"SLURM_PROCID", "5"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_LOCALID", "1"},
                     {"SLURM_NODEID", "2"},
                     {"SLURM_NNODES", "3"},
                     {"SLURM_TASKS_PER_NODE", "2(x2),4"},
                     {"SLURM_JOB_NODELIST", "gpu[07-09]"},
                     {"SLURM_STEP_NODELIST", "gpu[08-09]"},
                     {"SLURM_JOB_ID", "4242123"}};

TEST(ClusterEnvironment, SlurmGivesEveryValue) {
  const LaunchEnv e = env_of(kSlurm);
  EXPECT_EQ(e.source, "SLURM");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world_size, 4);  // node 2's entry of 2,2,4
  EXPECT_EQ(e.master_addr, "gpu08");  // the step's first host, not the job's
  EXPECT_EQ(e.master_port, 15000 + 2123);
  Vars job_only = kSlurm;
  job_only.erase("SLURM_STEP_NODELIST");
  EXPECT_EQ(env_of(job_only).master_addr, "gpu07");
}

TEST(ClusterEnvironment, OpenMpiGivesRanksAndLoopbackOnOneNode) {
  const Vars ompi = {{"OMPI_COMM_WORLD_RANK", "2"},
                     {"OMPI_COMM_WORLD_SIZE", "4"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                     {"MASTER_PORT", "29600"}};
  const LaunchEnv e = env_of(ompi);
  EXPECT_EQ(e.source, "Open MPI");
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 2);
  EXPECT_EQ(e.local_world_size, 4);
  EXPECT_EQ(e.master_addr, "127.0.0.1");
  EXPECT_EQ(e.master_port, 29600);
  // Several nodes: Open MPI names no master; the error says how to give one.
  Vars two_nodes = ompi;
  two_nodes["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";
  two_nodes["OMPI_COMM_WORLD_LOCAL_RANK"] = "0";
  const std::string err = error_of([&] { env_of(two_nodes); });
  EXPECT_TRUE(contains(err, "MASTER_ADDR is not set and Open MPI's variables do not give it")) << err;
  EXPECT_TRUE(contains(err, "mpirun -x MASTER_ADDR=")) << err;
  two_nodes["MASTER_ADDR"] = "head";
  EXPECT_EQ(env_of(two_nodes).master_addr, "head");
  Vars no_port = ompi;
  no_port.erase("MASTER_PORT");
  EXPECT_TRUE(contains(error_of([&] { env_of(no_port); }), "MASTER_PORT is not set and Open MPI's"));
}

TEST(ClusterEnvironment, TorchrunVariablesWinThenOpenMpiThenSlurm) {
  Vars v = kSlurm;
  v["RANK"] = "3";
  v["MASTER_ADDR"] = "explicit-host";
  v["MASTER_PORT"] = "29501";
  LaunchEnv e = env_of(v);
  EXPECT_EQ(e.rank, 3);  // explicit
  EXPECT_EQ(e.world_size, 8);  // SLURM's, RANK's neighbours not given
  EXPECT_EQ(e.master_addr, "explicit-host");
  EXPECT_EQ(e.master_port, 29501);
  // mpirun inside a SLURM allocation: every process inherits SLURM_PROCID.
  v = kSlurm;
  v["OMPI_COMM_WORLD_RANK"] = "1";
  v["OMPI_COMM_WORLD_SIZE"] = "2";
  v["OMPI_COMM_WORLD_LOCAL_RANK"] = "1";
  v["OMPI_COMM_WORLD_LOCAL_SIZE"] = "2";
  v["MASTER_PORT"] = "29502";
  e = env_of(v);
  EXPECT_EQ(e.source, "Open MPI");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world_size, 2);
  EXPECT_EQ(e.master_addr, "127.0.0.1");
}

TEST(ClusterEnvironment, MalformedSchedulerValuesNameTheirVariable) {
  auto with = [&](const std::string& name, const std::string& value) {
    Vars v = kSlurm;
    v[name] = value;
    return error_of([&] { env_of(v); });
  };
  EXPECT_TRUE(contains(with("SLURM_PROCID", "x1"), "SLURM_PROCID='x1' is not a non-negative integer"));
  EXPECT_TRUE(contains(with("SLURM_PROCID", "8"), "SLURM_PROCID=8 is not below SLURM_NTASKS=8"));
  EXPECT_TRUE(contains(with("SLURM_LOCALID", "4"), "SLURM_LOCALID=4 is not below SLURM_TASKS_PER_NODE=4"));
  EXPECT_TRUE(
      contains(with("SLURM_STEP_NODELIST", "gpu[08-"), "SLURM_STEP_NODELIST: hostlist 'gpu[08-': '[' without ']'"));
  EXPECT_TRUE(contains(with("SLURM_TASKS_PER_NODE", "2(x"), "SLURM_TASKS_PER_NODE='2(x'"));
  EXPECT_TRUE(contains(with("SLURM_NODEID", "3"), "SLURM_NODEID='3' is not a node of SLURM_TASKS_PER_NODE"));
  EXPECT_TRUE(contains(with("SLURM_JOB_ID", "12ab"), "SLURM_JOB_ID='12ab' is not a number"));
  Vars no_nodes = kSlurm;
  no_nodes.erase("SLURM_STEP_NODELIST");
  no_nodes.erase("SLURM_JOB_NODELIST");
  EXPECT_TRUE(contains(error_of([&] { env_of(no_nodes); }), "MASTER_ADDR is not set and SLURM's variables"));
  // Neither scheduler nor torchrun: the original hint.
  EXPECT_TRUE(contains(error_of([] { env_of({}); }), "WORLD_SIZE is not set (start the program with"));
}

}  // namespace
}  // namespace anvil::distributed
