// Built against an installed anvil, the way a user project is: a public
// header included on its own (before anvil.h, so it must bring what it
// needs), then the umbrella header. Runs a matmul with its backward pass and
// an all_reduce over a one-process Gloo group (a FileStore under argv[1]).
// Exits non-zero on a wrong value.
#include <distributed/process_group/collectives.h>

#include <anvil/anvil.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

namespace dist = anvil::distributed;

static bool autograd_works() {
  auto a = anvil::tensor({1, 2, 3, 4}).view({2, 2}).detach().requires_grad_();
  auto b = anvil::tensor({5, 6, 7, 8}).view({2, 2});
  auto c = anvil::matmul(a, b);
  c.sum().backward();

  // c[0][0] = 1*5 + 2*7; d(sum c)/da[i][k] = sum_j b[k][j] = {11, 15} per row.
  const float c00 = c[0][0].item<float>();
  const auto grad = a.grad().to_vector<float>();
  const float expected_grad[] = {11, 15, 11, 15};
  bool ok = std::fabs(c00 - 19.0f) < 1e-5f;
  for (int i = 0; i < 4; ++i) ok = ok && std::fabs(grad[i] - expected_grad[i]) < 1e-5f;
  std::printf("consumer: c[0][0] = %g, a.grad = [%g, %g, %g, %g]: %s\n", c00, grad[0], grad[1], grad[2], grad[3],
              ok ? "ok" : "WRONG");
  return ok;
}

static bool all_reduce_works(const std::string& scratch) {
  dist::InitOptions init;
  init.init_method = "file://" + scratch + "/store";
  init.rank = 0;
  init.world_size = 1;
  init.group.gloo_hostname = "127.0.0.1";
  init.group.timeout = std::chrono::seconds(60);
  dist::init_process_group(init);
  auto t = anvil::tensor({1, 2, 3});
  dist::all_reduce(t, dist::ReduceOp::Sum);  // one rank: the sum is the tensor itself
  const auto v = t.to_vector<float>();
  const bool ok = dist::get_world_size() == 1 && v[0] == 1 && v[1] == 2 && v[2] == 3;
  std::printf("consumer: all_reduce over %s, world size %d: [%g, %g, %g]: %s\n",
              dist::default_group().backend_name().c_str(), dist::get_world_size(), v[0], v[1], v[2],
              ok ? "ok" : "WRONG");
  dist::destroy_process_group();
  return ok;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer SCRATCH_DIR\n");
    return 2;
  }
  const bool ok = autograd_works();
  return ok && all_reduce_works(argv[1]) ? 0 : 1;
}
