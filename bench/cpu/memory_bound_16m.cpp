// Issue 18's memory-bound op set at 16M float32 elements (64 MB per tensor),
// to read against BM_memcpy_all_threads/elems:16777216 from the same run:
// copy and the casts to and from the 16-bit types, add and mul, the
// activations and their backwards, the row-wise ops over rows of 64, 1024
// and 4096, and the reductions over the last dim, the first dim and all.
// Bytes are the least each op must move (each input read once, each output
// written once), whatever number of passes the kernel makes. The fwd_bwd
// rows touch four such tensors: read them against
// BM_memcpy_all_threads_rotating/elems:16777216/buffers:2 too (the same
// working set; bench/cpu/elementwise.cpp says why).
#include <chrono>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "bench/cpu/bench_util.h"

namespace anvil::bench {
namespace {

using UnaryFn = std::function<Tensor(const Tensor&)>;

struct NamedUnary {
  const char* name;
  UnaryFn fn;
  bool positive_input;  // log and log1p: draw |x|
};

std::vector<NamedUnary> unary_ops() {
  return {
      {"exp", [](const Tensor& x) { return anvil::exp(x); }, false},
      {"expm1", [](const Tensor& x) { return anvil::expm1(x); }, false},
      {"log", [](const Tensor& x) { return anvil::log(x); }, true},
      {"log1p", [](const Tensor& x) { return anvil::log1p(x); }, true},
      {"tanh", [](const Tensor& x) { return anvil::tanh(x); }, false},
      {"sigmoid", [](const Tensor& x) { return anvil::sigmoid(x); }, false},
      {"erf", [](const Tensor& x) { return anvil::erf(x); }, false},
      {"gelu_erf", [](const Tensor& x) { return anvil::gelu(x, GeluApprox::None); }, false},
      {"gelu_tanh", [](const Tensor& x) { return anvil::gelu(x, GeluApprox::Tanh); }, false},
      {"silu", [](const Tensor& x) { return anvil::silu(x); }, false},
      {"softplus", [](const Tensor& x) { return anvil::softplus(x); }, false},
      {"relu", [](const Tensor& x) { return anvil::relu(x); }, false},
  };
}

Tensor input_16m(bool positive) {
  seed_inputs();
  Tensor x = randn({kLargeElems});
  return positive ? anvil::abs(x) : x;
}

void unary_forward(benchmark::State& state, const NamedUnary& op) {
  const Tensor x = input_16m(op.positive_input);
  for (auto _ : state) benchmark::DoNotOptimize(op.fn(x));
  set_bytes_per_iteration(state, 2.0 * kLargeElems * kFloatBytes);
}

// clone, and casts between float32 and the 16-bit types: read the input,
// write the output (4 + 4, or 4 + 2 bytes an element).
void copy_16m(benchmark::State& state, DType from, DType to) {
  seed_inputs();
  const Tensor x = cast(randn({kLargeElems}), from);
  for (auto _ : state) benchmark::DoNotOptimize(from == to ? x.clone() : cast(x, to));
  set_bytes_per_iteration(state, static_cast<double>(kLargeElems) * (itemsize(from) + itemsize(to)));
}

// a op b into a new tensor, or into a (add_): two reads and a write.
void binary_16m(benchmark::State& state, const char* op) {
  seed_inputs();
  Tensor a = randn({kLargeElems});
  const Tensor b = randn({kLargeElems});
  const std::string name = op;
  for (auto _ : state) {
    if (name == "add")
      benchmark::DoNotOptimize(anvil::add(a, b));
    else if (name == "mul")
      benchmark::DoNotOptimize(anvil::mul(a, b));
    else
      benchmark::DoNotOptimize(add_(a, b));
  }
  set_bytes_per_iteration(state, 3.0 * kLargeElems * kFloatBytes);
}

// Forward and backward as a training step runs them: y = f(x), then the
// gradient of x from a given dy. Forward reads x and writes y; backward reads
// dy and x (or y) and writes dx: 5 tensors.
void unary_forward_backward(benchmark::State& state, const NamedUnary& op) {
  Tensor x = input_16m(op.positive_input);
  x.requires_grad_();
  const Tensor dy = randn({kLargeElems});
  for (auto _ : state) {
    op.fn(x).backward(dy);
    benchmark::DoNotOptimize(x.grad());
    x.set_grad({});
  }
  set_bytes_per_iteration(state, 5.0 * kLargeElems * kFloatBytes);
}

// x, weight, bias (weight and bias: [cols]).
using RowFn = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;

struct NamedRowOp {
  const char* name;
  RowFn fn;
  double param_bytes_per_col;  // weight (and bias) read once per call
};

std::vector<NamedRowOp> row_ops() {
  return {
      {"softmax", [](const Tensor& x, const Tensor&, const Tensor&) { return anvil::softmax(x, -1); }, 0},
      {"log_softmax", [](const Tensor& x, const Tensor&, const Tensor&) { return anvil::log_softmax(x, -1); }, 0},
      {"layer_norm",
       [](const Tensor& x, const Tensor& w, const Tensor& b) { return anvil::layer_norm(x, {x.size(-1)}, w, b); }, 2},
      {"rms_norm", [](const Tensor& x, const Tensor& w, const Tensor&) { return anvil::rms_norm(x, {x.size(-1)}, w); },
       1},
  };
}

void row_forward(benchmark::State& state, const NamedRowOp& op, int64_t cols) {
  seed_inputs();
  const Tensor x = randn({kLargeElems / cols, cols});
  const Tensor w = randn({cols}), b = randn({cols});
  for (auto _ : state) benchmark::DoNotOptimize(op.fn(x, w, b));
  set_bytes_per_iteration(state, (2.0 * kLargeElems + op.param_bytes_per_col * cols) * kFloatBytes);
}

// Forward then backward for x's gradient only (the parameters are constants
// here): forward reads x, writes y; backward reads dy and x or y, writes dx.
void row_forward_backward(benchmark::State& state, const NamedRowOp& op, int64_t cols) {
  seed_inputs();
  Tensor x = randn({kLargeElems / cols, cols});
  x.requires_grad_();
  const Tensor dy = randn({kLargeElems / cols, cols});
  const Tensor w = randn({cols}), b = randn({cols});
  // The backward's own rate too (3 of the 5 passes), timed by the clock
  // between the two halves: a slow fwd+bwd says which half to look at.
  double backward_seconds = 0;
  for (auto _ : state) {
    Tensor y = op.fn(x, w, b);
    const auto start = std::chrono::steady_clock::now();
    y.backward(dy);
    benchmark::DoNotOptimize(x.grad());
    backward_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    x.set_grad({});
  }
  set_bytes_per_iteration(state, 5.0 * kLargeElems * kFloatBytes);
  if (backward_seconds > 0)
    state.counters["backward_GB/s"] =
        3.0 * kLargeElems * kFloatBytes * static_cast<double>(state.iterations()) / backward_seconds / 1e9;
}

using ReduceFn = std::function<Tensor(const Tensor&, const Shape&)>;

struct NamedReduce {
  const char* name;
  ReduceFn fn;
};

std::vector<NamedReduce> reduce_ops() {
  return {
      {"sum", [](const Tensor& x, const Shape& d) { return anvil::sum(x, d); }},
      {"mean", [](const Tensor& x, const Shape& d) { return anvil::mean(x, d); }},
      {"amax", [](const Tensor& x, const Shape& d) { return anvil::amax(x, d); }},
      {"var", [](const Tensor& x, const Shape& d) { return anvil::var(x, d); }},
  };
}

// [16384, 1024] reduced over dims (empty: all).
void reduce_16m(benchmark::State& state, const NamedReduce& op, Shape dims) {
  seed_inputs();
  const Tensor x = randn({kLargeElems / kRowWidth, kRowWidth});
  for (auto _ : state) benchmark::DoNotOptimize(op.fn(x, dims));
  set_bytes_per_iteration(state, static_cast<double>(kLargeElems) * kFloatBytes);
}

void register_16m() {
  const auto fixed = [](benchmark::internal::Benchmark* b) { threaded_kernel(b); };
  const std::tuple<const char*, DType, DType> copies[] = {{"clone", kFloat32, kFloat32},
                                                          {"float32_to_bfloat16", kFloat32, kBFloat16},
                                                          {"bfloat16_to_float32", kBFloat16, kFloat32},
                                                          {"float32_to_float16", kFloat32, kFloat16},
                                                          {"float16_to_float32", kFloat16, kFloat32}};
  for (const auto& [name, from, to] : copies) {
    benchmark::RegisterBenchmark((std::string("BM16M_copy/") + name).c_str(), [from = from,
                                                                               to = to](benchmark::State& s) {
      copy_16m(s, from, to);
    })->Apply(fixed);
  }
  for (const char* op : {"add", "mul", "add_"}) {
    benchmark::RegisterBenchmark((std::string("BM16M_binary/") + op).c_str(), [op](benchmark::State& s) {
      binary_16m(s, op);
    })->Apply(fixed);
  }
  for (const NamedUnary& op : unary_ops()) {
    benchmark::RegisterBenchmark((std::string("BM16M_fwd/") + op.name).c_str(), [op](benchmark::State& s) {
      unary_forward(s, op);
    })->Apply(fixed);
    benchmark::RegisterBenchmark((std::string("BM16M_fwd_bwd/") + op.name).c_str(), [op](benchmark::State& s) {
      unary_forward_backward(s, op);
    })->Apply(fixed);
  }
  for (int64_t cols : {int64_t{64}, int64_t{1024}, int64_t{4096}}) {
    for (const NamedRowOp& op : row_ops()) {
      const std::string suffix = std::string(op.name) + "/cols:" + std::to_string(cols);
      benchmark::RegisterBenchmark(("BM16M_rows_fwd/" + suffix).c_str(), [op, cols](benchmark::State& s) {
        row_forward(s, op, cols);
      })->Apply(fixed);
      benchmark::RegisterBenchmark(("BM16M_rows_fwd_bwd/" + suffix).c_str(), [op, cols](benchmark::State& s) {
        row_forward_backward(s, op, cols);
      })->Apply(fixed);
    }
  }
  for (const NamedReduce& op : reduce_ops()) {
    const std::pair<const char*, Shape> over[] = {{"last_dim", {-1}}, {"first_dim", {0}}, {"all", {}}};
    for (const auto& [where, dims] : over) {
      benchmark::RegisterBenchmark((std::string("BM16M_reduce/") + op.name + "/" + where).c_str(),
                                   [op, dims = dims](benchmark::State& s) { reduce_16m(s, op, dims); })
          ->Apply(fixed);
    }
  }
}

const bool registered = (register_16m(), true);

}  // namespace
}  // namespace anvil::bench
