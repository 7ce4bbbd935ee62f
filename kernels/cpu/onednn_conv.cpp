// conv2d on oneDNN's primitives (onednn_conv.h says when and why).
//
// Each distinct geometry gets its primitive descriptors and primitives once
// (kept in a map, as cuDNN plans are kept); every call then reorders the
// user's NCHW arrays into the layouts the primitive chose (blocked, e.g.
// nChw16c on AVX-512), executes, and reorders the result back. Scratchpads
// are ours, per call, so concurrent calls from several threads are safe.
#include "kernels/cpu/onednn_conv.h"

#include <cstdlib>
#include <string_view>

#include "core/base/error.h"

#if ANVIL_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/onednn_engine.h"
#endif

namespace anvil::cpu::onednn {

namespace {
bool im2col_forced() {
  static const bool forced = [] {
    const char* v = std::getenv("ANVIL_CPU_CONV");
    if (v == nullptr || *v == '\0' || std::string_view(v) == "onednn") return false;
    ANVIL_CHECK(std::string_view(v) == "im2col", "ANVIL_CPU_CONV=", v, ": expected onednn or im2col");
    return true;
  }();
  return forced;
}
}  // namespace

#if !ANVIL_HAVE_ONEDNN

bool conv2d_runs_on_onednn(const shapes::ConvGeometry&) {
  (void)im2col_forced();  // still rejects a bad ANVIL_CPU_CONV
  return false;
}
std::string conv2d_implementation() { return "im2col + GEMM"; }
void conv2d_forward(float*, const float*, const float*, const float*, const shapes::ConvGeometry&) {
  ::anvil::fail("conv2d: anvil was built without oneDNN");
}
void conv2d_backward_input(float*, const float*, const float*, const shapes::ConvGeometry&) {
  ::anvil::fail("conv2d_backward_input: anvil was built without oneDNN");
}
void conv2d_backward_weight(float*, const float*, const float*, const shapes::ConvGeometry&) {
  ::anvil::fail("conv2d_backward_weight: anvil was built without oneDNN");
}

#else

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type kF32 = memory::data_type::f32;

// The descriptors of one geometry in the user's plain layouts, and in `any`
// for the primitive to choose.
struct ConvShapes {
  memory::dims src, weights, bias, dst, strides, dilates, pad_l, pad_r;

  explicit ConvShapes(const shapes::ConvGeometry& g) {
    src = {g.n, g.c, g.h, g.w};
    dst = {g.n, g.cout, g.ho, g.wo};
    weights = g.groups == 1 ? memory::dims{g.cout, g.c, g.kh, g.kw}
                            : memory::dims{g.groups, g.cout_per_group(), g.cin_per_group(), g.kh, g.kw};
    bias = {g.cout};
    strides = {g.sh, g.sw};
    dilates = {g.dh - 1, g.dw - 1};  // oneDNN counts the gaps: 0 is a dense kernel
    pad_l = {g.ph, g.pw};
    // Right padding that makes oneDNN's output size the one conv_geometry computed.
    pad_r = {(g.ho - 1) * g.sh + (g.kh - 1) * g.dh + 1 - g.h - g.ph,
             (g.wo - 1) * g.sw + (g.kw - 1) * g.dw + 1 - g.w - g.pw};
  }
  Tag weights_tag() const { return weights.size() == 4 ? Tag::oihw : Tag::goihw; }
  // The primitive chooses its layouts (blocked): forced to plain NCHW,
  // oneDNN falls back to its own im2col + GEMM, which is slower.
  memory::desc any(const memory::dims& d) const { return memory::desc(d, kF32, Tag::any); }
};

// Everything oneDNN needs for one geometry, built on first use.
struct ConvPlan {
  std::once_flag forward_once, backward_input_once, backward_weight_once;
  std::unique_ptr<dnnl::convolution_forward::primitive_desc> forward;  // also the hint of both backwards
  std::unique_ptr<dnnl::convolution_backward_data::primitive_desc> backward_input;
  std::unique_ptr<dnnl::convolution_backward_weights::primitive_desc> backward_weight;
  // Built once with their descriptors; executing one needs no lock (our scratchpads).
  dnnl::primitive forward_primitive, backward_input_primitive, backward_weight_primitive;
};

void make_forward(ConvPlan& plan, const ConvShapes& s) {
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                             s.any(s.src), s.any(s.weights), s.any(s.bias), s.any(s.dst), s.strides,
                                             s.dilates, s.pad_l, s.pad_r);
  plan.forward = std::make_unique<dnnl::convolution_forward::primitive_desc>(desc, user_scratchpad(), cpu_engine());
  plan.forward_primitive = dnnl::convolution_forward(*plan.forward);
}

ConvPlan& plan_for(const shapes::ConvGeometry& g) {
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<ConvPlan>> plans;
  const Key key{g.n, g.c, g.h, g.w, g.cout, g.ho, g.wo, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.groups};
  std::lock_guard lock(mutex);
  std::unique_ptr<ConvPlan>& plan = plans[key];
  if (!plan) plan = std::make_unique<ConvPlan>();
  const ConvShapes s(g);
  std::call_once(plan->forward_once, [&] { make_forward(*plan, s); });
  return *plan;
}

// A user array in its plain layout, and the memory the primitive reads or
// writes: the same one when the layouts agree, else a reordered copy.
class Operand {
 public:
  Operand(const memory::dims& dims, Tag tag, const float* data, const memory::desc& wanted)
      : user_(memory::desc(dims, kF32, tag), cpu_engine(), const_cast<float*>(data)),
        primitive_(user_.get_desc() == wanted ? user_ : memory(wanted, cpu_engine())) {}

  memory& get() { return primitive_; }
  // Input side: copy the user's array into the primitive's layout.
  void load(dnnl::stream& stream) {
    if (primitive_ != user_) dnnl::reorder(user_, primitive_).execute(stream, user_, primitive_);
  }
  // Output side: copy the result back into the user's array.
  void store(dnnl::stream& stream) {
    if (primitive_ != user_) dnnl::reorder(primitive_, user_).execute(stream, primitive_, user_);
  }

 private:
  memory user_, primitive_;
};

template <typename PrimitiveDesc> memory scratchpad_for(const PrimitiveDesc& pd, std::vector<uint8_t>& storage) {
  storage.resize(pd.scratchpad_desc().get_size());
  return memory(pd.scratchpad_desc(), cpu_engine(), storage.data());
}

// Runs `primitive` on `args` between loading `inputs` and storing `outputs`.
template <typename PrimitiveDesc>
void run(const PrimitiveDesc& pd, const dnnl::primitive& primitive,
         std::initializer_list<std::pair<int, Operand*>> inputs,
         std::initializer_list<std::pair<int, Operand*>> outputs) {
  dnnl::stream stream(cpu_engine());
  std::unordered_map<int, memory> args;
  for (auto& [arg, operand] : inputs) {
    operand->load(stream);
    args.emplace(arg, operand->get());
  }
  for (auto& [arg, operand] : outputs) args.emplace(arg, operand->get());
  std::vector<uint8_t> scratch;
  args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad_for(pd, scratch));
  primitive.execute(stream, args);
  for (auto& [arg, operand] : outputs) operand->store(stream);
  stream.wait();
}

}  // namespace

bool conv2d_runs_on_onednn(const shapes::ConvGeometry& g) {
  // A single-channel input (an image layer) gains nothing on oneDNN: the
  // reorders of its large output to and from blocked layouts cost what the
  // kernel saves (kernels/cpu/README.md, Convolution).
  return !im2col_forced() && !(g.c == 1 && g.groups == 1);
}

std::string conv2d_implementation() {
  if (im2col_forced()) return "im2col + GEMM";
  // What oneDNN picks for a typical 3x3 layer (the samples' second conv).
  const shapes::ConvGeometry g{64, 32, 14, 14, 64, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  return std::string("oneDNN convolution (") + plan_for(g).forward->impl_info_str() +
         "; im2col + GEMM for single-channel inputs)";
}

void conv2d_forward(float* out, const float* in, const float* weight, const float* bias,
                    const shapes::ConvGeometry& g) {
  const ConvShapes s(g);
  const ConvPlan& plan = plan_for(g);
  const auto& pd = *plan.forward;
  Operand src(s.src, Tag::nchw, in, pd.src_desc()), w(s.weights, s.weights_tag(), weight, pd.weights_desc());
  Operand dst(s.dst, Tag::nchw, out, pd.dst_desc());
  std::vector<float> zeros;
  if (bias == nullptr) zeros.assign(g.cout, 0.0f);
  Operand b(s.bias, Tag::x, bias ? bias : zeros.data(), pd.bias_desc());
  run(pd, plan.forward_primitive, {{DNNL_ARG_SRC, &src}, {DNNL_ARG_WEIGHTS, &w}, {DNNL_ARG_BIAS, &b}},
      {{DNNL_ARG_DST, &dst}});
}

void conv2d_backward_input(float* grad_in, const float* grad_out, const float* weight, const shapes::ConvGeometry& g) {
  const ConvShapes s(g);
  ConvPlan& plan = plan_for(g);
  std::call_once(plan.backward_input_once, [&] {
    const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, s.any(s.src),
                                                     s.any(s.weights), s.any(s.dst), s.strides, s.dilates, s.pad_l,
                                                     s.pad_r);
    plan.backward_input = std::make_unique<dnnl::convolution_backward_data::primitive_desc>(
        desc, user_scratchpad(), cpu_engine(), *plan.forward);
    plan.backward_input_primitive = dnnl::convolution_backward_data(*plan.backward_input);
  });
  const auto& pd = *plan.backward_input;
  Operand dy(s.dst, Tag::nchw, grad_out, pd.diff_dst_desc()), w(s.weights, s.weights_tag(), weight, pd.weights_desc());
  Operand dx(s.src, Tag::nchw, grad_in, pd.diff_src_desc());
  run(pd, plan.backward_input_primitive, {{DNNL_ARG_DIFF_DST, &dy}, {DNNL_ARG_WEIGHTS, &w}},
      {{DNNL_ARG_DIFF_SRC, &dx}});
}

void conv2d_backward_weight(float* grad_weight, const float* grad_out, const float* in, const shapes::ConvGeometry& g) {
  const ConvShapes s(g);
  ConvPlan& plan = plan_for(g);
  std::call_once(plan.backward_weight_once, [&] {
    // Without a bias gradient: anvil sums the bias gradient itself (a reduction of grad_out).
    const dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, s.any(s.src),
                                                        s.any(s.weights), s.any(s.dst), s.strides, s.dilates, s.pad_l,
                                                        s.pad_r);
    plan.backward_weight = std::make_unique<dnnl::convolution_backward_weights::primitive_desc>(
        desc, user_scratchpad(), cpu_engine(), *plan.forward);
    plan.backward_weight_primitive = dnnl::convolution_backward_weights(*plan.backward_weight);
  });
  const auto& pd = *plan.backward_weight;
  Operand dy(s.dst, Tag::nchw, grad_out, pd.diff_dst_desc()), x(s.src, Tag::nchw, in, pd.src_desc());
  Operand dw(s.weights, s.weights_tag(), grad_weight, pd.diff_weights_desc());
  run(pd, plan.backward_weight_primitive, {{DNNL_ARG_DIFF_DST, &dy}, {DNNL_ARG_SRC, &x}},
      {{DNNL_ARG_DIFF_WEIGHTS, &dw}});
}

#endif

}  // namespace anvil::cpu::onednn
