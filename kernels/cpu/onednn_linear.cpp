// float32 linear layers on oneDNN's matmul primitive (onednn_linear.h says
// why). Each distinct shape gets its primitive once (kept in a map, as the
// convolutions' are); the user's row-major arrays are passed as they are
// (the weight as its transposed view), so no reorder runs around the call.
// Scratchpads come from the CPU caching allocator, per call, so concurrent
// calls from several threads are safe.
#include "kernels/cpu/onednn_linear.h"

#include "core/base/error.h"
#include "kernels/cpu/gemm.h"

#if ANVIL_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "kernels/runtime.h"
#include "kernels/cpu/onednn_engine.h"
#include "kernels/cpu/scratch.h"
#endif

namespace anvil::cpu::onednn {

#if !ANVIL_HAVE_ONEDNN

bool linear_runs_on_onednn(const LinearShape&) { return false; }
void linear_forward(float*, const float*, const float*, const float*, const LinearShape&) {
  ::anvil::fail("linear: anvil was built without oneDNN");
}

#else

namespace {

using dnnl::memory;
constexpr memory::data_type kF32 = memory::data_type::f32;

struct LinearPlan {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
};

// Plans by shape: building a primitive is a noticeable part of a product's
// time, so each shape's is kept. Rows change with every padded batch
// length, so the map is capped: when full it starts over.
// Callers hold a plan by shared_ptr, so a clear never frees one in use.
constexpr size_t kMaxPlans = 256;

std::shared_ptr<const LinearPlan> plan_for(const LinearShape& s, bool with_bias) {
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const LinearPlan>> plans;
  const Key key{s.rows, s.in_features, s.out_features, s.ld_in, s.ld_weight, s.ld_out, with_bias};
  std::lock_guard lock(mutex);
  if (auto it = plans.find(key); it != plans.end()) return it->second;
  const memory::desc src({s.rows, s.in_features}, kF32, {s.ld_in, 1});
  // weight [out, in] row-major read as the [in, out] matrix the product needs.
  const memory::desc weights({s.in_features, s.out_features}, kF32, {1, s.ld_weight});
  const memory::desc dst({s.rows, s.out_features}, kF32, {s.ld_out, 1});
  const dnnl::matmul::desc desc =
      with_bias ? dnnl::matmul::desc(src, weights, memory::desc({1, s.out_features}, kF32, {s.out_features, 1}), dst)
                : dnnl::matmul::desc(src, weights, dst);
  dnnl::matmul::primitive_desc pd(desc, user_scratchpad(), cpu_engine());
  if (plans.size() >= kMaxPlans) plans.clear();
  auto plan = std::make_shared<const LinearPlan>(LinearPlan{pd, dnnl::matmul(pd)});
  plans.emplace(key, plan);
  return plan;
}

}  // namespace

bool linear_runs_on_onednn(const LinearShape& s) {
  return float32_gemm_on_onednn() && s.rows > 0 && s.in_features > 0 && s.out_features > 0;
}

void linear_forward(float* out, const float* in, const float* weight, const float* bias, const LinearShape& s) {
  const std::shared_ptr<const LinearPlan> held = plan_for(s, bias != nullptr);
  const LinearPlan& plan = *held;
  const dnnl::engine& engine = cpu_engine();
  dnnl::stream stream(engine);
  auto wrap = [&](const memory::desc& d, const float* p) { return memory(d, engine, const_cast<float*>(p)); };
  const Scratch<uint8_t> scratch(runtime_for(DeviceType::CPU).allocator(0),
                                 static_cast<int64_t>(plan.pd.scratchpad_desc().get_size()));
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(plan.pd.src_desc(), in)},
                                       {DNNL_ARG_WEIGHTS, wrap(plan.pd.weights_desc(), weight)},
                                       {DNNL_ARG_DST, wrap(plan.pd.dst_desc(), out)},
                                       {DNNL_ARG_SCRATCHPAD, memory(plan.pd.scratchpad_desc(), engine, scratch.get())}};
  if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, wrap(plan.pd.bias_desc(), bias));
  plan.primitive.execute(stream, args);
  stream.wait();
}

#endif

}  // namespace anvil::cpu::onednn
