// anvil-run's command line (distributed/launcher/arguments.h) and the
// torchrun-style environment a rank reads (launch_env_from): accepted forms,
// and every refusal naming what was wrong. The same parsers are fuzzed by
// fuzz/fuzz_launcher.cpp.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "distributed/launcher/arguments.h"
#include "distributed/process_group/init.h"

namespace anvil::distributed::launcher {
namespace {

std::string refusal(const std::vector<std::string>& args) {
  try {
    parse_command_line(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(LauncherArguments, TorchrunSpellingsAndTheProgramsOwnOptions) {
  const CommandLine a = parse_command_line({"--nproc_per_node=4", "--nnodes", "2", "--node-rank=1", "--master_addr",
                                            "10.0.0.7", "--master-port=29400", "--kill-grace", "0.25", "--no-prefix",
                                            "--keep-going", "--max-restarts=3", "train", "--epochs", "2", "--", "x"});
  EXPECT_FALSE(a.help);
  EXPECT_EQ(a.config.nproc_per_node, 4);
  EXPECT_EQ(a.config.nnodes, 2);
  EXPECT_EQ(a.config.node_rank, 1);
  EXPECT_EQ(a.config.master_addr, "10.0.0.7");
  EXPECT_EQ(a.config.master_port, 29400);
  EXPECT_DOUBLE_EQ(a.config.kill_grace_s, 0.25);
  EXPECT_FALSE(a.config.prefix_output);
  EXPECT_TRUE(a.config.keep_going);
  EXPECT_EQ(a.config.max_restarts, 3);
  // Everything from the program on is the program's, "--" included.
  EXPECT_EQ(a.config.command, (std::vector<std::string>{"train", "--epochs", "2", "--", "x"}));

  const CommandLine b = parse_command_line({"--nproc-per-node", "2", "--", "--looks-like-ours"});
  EXPECT_EQ(b.config.command, std::vector<std::string>{"--looks-like-ours"});
  EXPECT_EQ(b.config.nnodes, 1);
  EXPECT_EQ(b.config.master_port, 0);  // picked at run time on one node
  EXPECT_TRUE(parse_command_line({"--nproc-per-node", "2", "-h"}).help);
}

TEST(LauncherArguments, ParameterServerJobs) {
  const CommandLine a = parse_command_line({"--nproc-per-node", "4", "--ps", "1", "--max-restarts=2", "w"});
  EXPECT_EQ(a.config.num_ps, 1);
  EXPECT_EQ(a.config.max_restarts, 2);
  EXPECT_EQ(parse_command_line({"--nproc-per-node=2", "--nnodes=2", "--node-rank=0", "--master-addr=h",
                                "--master-port=9", "--ps=3", "w"})
                .config.num_ps,
            3);  // PS ranks span nodes
  EXPECT_EQ(parse_command_line({"--nproc-per-node", "2", "w"}).config.num_ps, 0);  // not a PS job
  EXPECT_NE(refusal({"--nproc-per-node", "2", "--ps", "2", "w"}).find("at least one worker"), std::string::npos);
  EXPECT_NE(refusal({"--nproc-per-node", "2", "--ps", "0", "w"}).find("--ps must be at least 1, got 0"),
            std::string::npos);
  EXPECT_NE(refusal({"--nproc-per-node", "2", "--ps", "-3", "w"}).find("--ps must be at least 1"), std::string::npos);
  EXPECT_NE(refusal({"--nproc-per-node", "2", "--ps", "one", "w"}).find("--ps expects an integer"), std::string::npos);
}

TEST(LauncherArguments, RefusalsSayWhatIsWrong) {
  EXPECT_NE(refusal({}).find("no program given"), std::string::npos);
  EXPECT_NE(refusal({"--nproc-per-node"}).find("--nproc-per-node needs a value"), std::string::npos);
  EXPECT_NE(refusal({"--nproc-per-node", "two", "p"}).find("expects an integer, got 'two'"), std::string::npos);
  EXPECT_NE(refusal({"--nproc-per-node", "99999999999", "p"}).find("expects an integer"), std::string::npos);
  EXPECT_NE(refusal({"--nproc-per-node", "0", "p"}).find("at least 1"), std::string::npos);
  EXPECT_NE(refusal({"--bogus", "p"}).find("unknown option --bogus"), std::string::npos);
  EXPECT_NE(refusal({"--nnodes", "2", "--node-rank", "2", "--master-addr", "h", "--master-port", "5", "p"})
                .find("--node-rank must be in 0..1"),
            std::string::npos);
  EXPECT_NE(refusal({"--node-rank", "-1", "p"}).find("--node-rank"), std::string::npos);
  EXPECT_NE(refusal({"--nnodes", "2", "p"}).find("give --master-addr and --master-port"), std::string::npos);
  EXPECT_NE(refusal({"--master-port", "70000", "p"}).find("1..65535"), std::string::npos);
  for (const char* grace : {"-1", "nan", "inf", "1e9", "1s"})
    EXPECT_NE(refusal({"--kill-grace", grace, "p"}).find("seconds from 0 to 3600"), std::string::npos) << grace;
  EXPECT_NE(refusal({"--no-prefix=1", "p"}).find("takes no value"), std::string::npos);
  EXPECT_NE(refusal({"--max-restarts", "-2", "p"}).find("at least 0"), std::string::npos);
  EXPECT_NE(refusal({"--nnodes", "1000", "--nproc-per-node", "1001", "--master-addr", "h", "--master-port", "5", "p"})
                .find("at most 1000000"),
            std::string::npos);
}

LaunchEnv env_of(const std::map<std::string, std::string>& vars) {
  return launch_env_from([&](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

TEST(LaunchEnvironment, ReadsTorchrunVariablesAndDefaultsTheLocalOnes) {
  const LaunchEnv e = env_of({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 3);  // LOCAL_* default to the global ones (one node)
  EXPECT_EQ(e.local_world_size, 4);
  EXPECT_EQ(e.master_addr, "h");
  EXPECT_EQ(e.master_port, 29500);
}

TEST(LaunchEnvironment, RefusalsNameTheVariable) {
  const std::map<std::string, std::string> ok = {
      {"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}};
  auto refusal_with = [&](const std::string& name, const std::string& value) -> std::string {
    auto vars = ok;
    vars[name] = value;
    try {
      env_of(vars);
    } catch (const Error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_NE(refusal_with("RANK", "2").find("RANK=2 is not below WORLD_SIZE=2"), std::string::npos);
  EXPECT_NE(refusal_with("RANK", "-1").find("RANK='-1' is not a non-negative integer"), std::string::npos);
  EXPECT_NE(refusal_with("WORLD_SIZE", "0").find("WORLD_SIZE must be at least 1"), std::string::npos);
  EXPECT_NE(refusal_with("MASTER_PORT", "0").find("MASTER_PORT=0 is not a TCP port"), std::string::npos);
  EXPECT_NE(refusal_with("LOCAL_RANK", "5").find("LOCAL_RANK=5 is not below LOCAL_WORLD_SIZE=2"), std::string::npos);
  EXPECT_NE(refusal_with("MASTER_ADDR", "").find("MASTER_ADDR is not set"), std::string::npos);  // empty = unset
  EXPECT_NE(refusal_with("WORLD_SIZE", "4x").find("WORLD_SIZE='4x'"), std::string::npos);
}

}  // namespace
}  // namespace anvil::distributed::launcher
