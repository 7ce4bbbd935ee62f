// DeviceMesh on 4 ranks (threads, real Gloo): a 2x2 ("dp", "tp") mesh whose
// all_reduce along "tp" gives row sums and along "dp" column sums, a 3-D
// mesh with a dimension of one, the 1-D sub-mesh, bad arguments; and the
// same through init_process_group / init_device_mesh in 4 processes.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <vector>

#include <unistd.h>

#include "core/factory.h"
#include "core/ops.h"
#include "distributed/process_group/device_mesh.h"
#include "distributed/store/file_store.h"
#include "harness.h"
#include "tests/distributed/rank_threads.h"

namespace anvil::distributed {
namespace {

using anvil::test::contains;
using anvil::test::error_of;
using testing::random_rank_inputs;
using testing::run_world_ranks;
using namespace std::chrono_literals;

TEST(DeviceMesh, TwoByTwoReducesRowsAlongTpAndColumnsAlongDp) {
  std::vector<Tensor> x = random_rank_inputs(4, 29);
  run_world_ranks(
      4,
      [&](World& world, std::shared_ptr<ProcessGroup>) {
        const int me = world.rank(), row = me / 2, col = me % 2;
        DeviceMesh mesh(world, "cpu", {2, 2}, {"dp", "tp"});
        EXPECT_EQ(mesh.str(), "DeviceMesh('cpu', [[0, 1], [2, 3]], mesh_dim_names=('dp', 'tp'))");
        EXPECT_EQ(mesh.ndim(), 2);
        EXPECT_EQ(mesh.size(), 4);
        EXPECT_EQ(mesh.size("tp"), 2);
        EXPECT_EQ(mesh.coordinate(), (std::vector<int>{row, col}));
        EXPECT_EQ(mesh.get_local_rank("dp"), row);
        EXPECT_EQ(mesh.get_local_rank("tp"), col);
        auto tp = mesh.get_group("tp");
        auto dp = mesh.get_group(0);
        EXPECT_EQ(tp->ranks(), (std::vector<int>{2 * row, 2 * row + 1}));
        EXPECT_EQ(dp->ranks(), (std::vector<int>{col, col + 2}));
        EXPECT_EQ(tp->rank(), col);
        EXPECT_EQ(dp->rank(), row);

        Tensor along_tp = x[me].clone();
        tp->all_reduce(along_tp)->wait();
        Tensor along_dp = x[me].clone();
        dp->all_reduce(along_dp)->wait();
        // Two addends: exact in either order.
        EXPECT_EQ(along_tp.to_vector<double>(), x[2 * row].add(x[2 * row + 1]).to_vector<double>()) << "row sum";
        EXPECT_EQ(along_dp.to_vector<double>(), x[col].add(x[col + 2]).to_vector<double>()) << "column sum";

        // The 1-D mesh along "tp" shares the group.
        DeviceMesh tp_mesh = mesh["tp"];
        EXPECT_EQ(tp_mesh.str(), "DeviceMesh('cpu', [" + std::to_string(2 * row) + ", " + std::to_string(2 * row + 1) +
                                     "], mesh_dim_names=('tp',))");
        EXPECT_EQ(tp_mesh.get_group(), tp);
        EXPECT_EQ(tp_mesh.get_local_rank(0), col);
        EXPECT_EQ(tp_mesh.mesh(), tp->ranks());

        // all_to_all_single along "dp", uneven: rank (0, c) keeps 7 rows and
        // sends its last 8 to (1, c), which sends its first 8 and keeps its last 7.
        auto rows_of = [&](int k) { return cat({x[k], x[k].narrow(0, 0, 1)}).view({15, 2}); };
        const int partner = me ^ 2;
        const std::vector<int64_t> splits = row == 0 ? std::vector<int64_t>{7, 8} : std::vector<int64_t>{8, 7};
        Tensor out = zeros({15, 2}, kFloat64);
        dp->all_to_all_single(out, rows_of(me), splits, splits)->wait();
        Tensor want = row == 0 ? cat({rows_of(me).narrow(0, 0, 7), rows_of(partner).narrow(0, 0, 8)})
                               : cat({rows_of(partner).narrow(0, 7, 8), rows_of(me).narrow(0, 8, 7)});
        EXPECT_EQ(out.to_vector<double>(), want.contiguous().to_vector<double>()) << "all_to_all along dp";

        std::string e = error_of([&] { mesh.get_group("pp"); });
        EXPECT_TRUE(contains(e, "no dimension 'pp' (the dimensions are 'dp', 'tp')")) << e;
        e = error_of([&] { mesh.get_group(); });
        EXPECT_TRUE(contains(e, "needs a 1-D mesh; this one has 2 dimensions")) << e;
        e = error_of([&] { mesh.get_local_rank(2); });
        EXPECT_TRUE(contains(e, "dimension 2 is not in [0, 2)")) << e;
        tp->barrier()->wait();
        dp->barrier()->wait();
      },
      20s);
}

TEST(DeviceMesh, ThreeDimensionsWithASizeOneDimension) {
  std::vector<Tensor> x = random_rank_inputs(4, 8);
  run_world_ranks(
      4,
      [&](World& world, std::shared_ptr<ProcessGroup>) {
        const int me = world.rank();
        DeviceMesh mesh(world, "cpu", {2, 1, 2}, {"dp", "pp", "tp"});
        EXPECT_EQ(mesh.str(), "DeviceMesh('cpu', [[[0, 1]], [[2, 3]]], mesh_dim_names=('dp', 'pp', 'tp'))");
        EXPECT_EQ(mesh.coordinate(), (std::vector<int>{me / 2, 0, me % 2}));
        EXPECT_EQ(mesh.get_group("pp")->ranks(), (std::vector<int>{me}));
        EXPECT_EQ(mesh.get_group("dp")->ranks(), (std::vector<int>{me % 2, me % 2 + 2}));
        EXPECT_EQ(mesh.get_group("tp")->ranks(), (std::vector<int>{me - me % 2, me - me % 2 + 1}));
        Tensor t = x[me].clone();
        mesh.get_group("pp")->all_reduce(t)->wait();
        EXPECT_EQ(t.to_vector<double>(), x[me].to_vector<double>());
        mesh.get_group("dp")->all_reduce(t, ReduceOp::Max)->wait();
        EXPECT_EQ(t.to_vector<double>(), maximum(x[me % 2], x[me % 2 + 2]).to_vector<double>());
        mesh.get_group("dp")->barrier()->wait();
      },
      20s);
}

TEST(DeviceMesh, BadArgumentsAreClearErrors) {
  std::string path = ::testing::TempDir() + "anvil_mesh_bad_" + std::to_string(::getpid());
  std::remove(path.c_str());
  auto store = std::make_shared<FileStore>(path, 5s);
  MakeProcessGroupOptions gloo;
  gloo.backend = "gloo";
  gloo.group.timeout = 5s;
  World four(store, 0, 4, gloo);  // checks that fail before any group is made
  std::string e = error_of([&] { DeviceMesh(four, "cpu", {2, 3}); });
  EXPECT_TRUE(contains(e, "the mesh holds 6 ranks but the world has 4")) << e;
  e = error_of([&] { DeviceMesh(four, "cpu", {2, 2}, {"dp"}); });
  EXPECT_TRUE(contains(e, "1 dimension names ('dp') for 2 dimensions")) << e;
  e = error_of([&] { DeviceMesh(four, "cpu", {2, 2}, {"dp", "dp"}); });
  EXPECT_TRUE(contains(e, "the dimension name 'dp' is used twice")) << e;
  e = error_of([&] { DeviceMesh(four, "cpu", {2, 2}, {"dp", ""}); });
  EXPECT_TRUE(contains(e, "dimension 1 has an empty name")) << e;
  e = error_of([&] { DeviceMesh(four, "tpu", {4}); });
  EXPECT_TRUE(contains(e, "device type 'tpu' is neither 'cpu' nor 'cuda'")) << e;
  e = error_of([&] { DeviceMesh(four, "cpu", {4, 0}); });
  EXPECT_TRUE(contains(e, "every dimension needs at least one rank")) << e;
  e = error_of([&] { DeviceMesh(four, "cpu", {}); });
  EXPECT_TRUE(contains(e, "at least one dimension")) << e;

  World one(store, 0, 1, gloo);
  DeviceMesh unnamed(one, "cpu", {1});
  e = error_of([&] { unnamed["dp"]; });
  EXPECT_TRUE(contains(e, "the mesh has no dimension names, so there is no dimension 'dp'")) << e;
  EXPECT_EQ(unnamed.get_group()->ranks(), (std::vector<int>{0}));
  std::remove(path.c_str());
}

TEST(DeviceMesh, FourProcessesThroughInitDeviceMesh) {
  std::string seed = std::to_string(std::random_device{}() % 100000);
  auto r = anvil::test::run_ranks(4, "device_mesh", {"--seed", seed}, {.timeout = 60s});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << "seed " << seed << "\n" << r.output;
  for (int rank = 0; rank < 4; ++rank) {
    bool ok = false;
    for (const auto& line : r.lines_of(rank)) ok = ok || contains(line, "OK device_mesh");
    EXPECT_TRUE(ok) << "rank " << rank << "\n" << r.output;
  }
}

}  // namespace
}  // namespace anvil::distributed
