// linear and dropout: the two nn ops built from other op families (matmul,
// elementwise) plus one random kernel.
#include <cmath>

#include "core/autocast.h"
#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/linalg.h"
#include "core/ops/nn/nn_common.h"
#include "core/ops/nn_ops.h"
#include "core/ops/reduce.h"
#include "core/random.h"

namespace anvil {

// The kernel ops this file calls, listed in the coverage table whatever this
// build registers for them (a CPU-only build has no add_layer_norm kernel).
ANVIL_DECLARE_KERNEL_OP(kernel::Linear);

using nn_detail::Grads;

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (auto cast = autocast::lower_precision_inputs(x, weight, bias)) return linear(cast[0], cast[1], cast[2]);
  detail::check_floating("linear", x, "input");
  detail::check_floating("linear", weight, "weight");
  detail::check_same_device("linear", {x, weight, bias});
  ANVIL_CHECK(weight.dim() == 2, "linear: expected weight [out_features, in_features], got ", detail::describe(weight));
  ANVIL_CHECK(x.dim() >= 1, "linear: expected input [*, in_features], got a 0-d tensor");
  const int64_t in_features = weight.size(1), out_features = weight.size(0);
  ANVIL_CHECK(x.size(-1) == in_features, "linear: input ", detail::describe(x), " has ", x.size(-1),
              " features in its last dim but weight ", detail::describe(weight), " expects ", in_features,
              " (weight is [out_features, in_features])");
  ANVIL_CHECK(x.dtype() == weight.dtype(), "linear: input ", detail::describe(x), " and weight ",
              detail::describe(weight), " must have the same dtype");
  if (bias.defined()) {
    ANVIL_CHECK(bias.dim() == 1 && bias.size(0) == out_features, "linear: expected bias [", out_features, "], got ",
                detail::describe(bias));
    ANVIL_CHECK(bias.dtype() == x.dtype(), "linear: bias ", detail::describe(bias), " and input ", detail::describe(x),
                " must have the same dtype");
  }
  // All leading dims fold into the rows of one GEMM, which a linear kernel
  // fuses with the bias add (without one: matmul, then a broadcast add). The backward is written with
  // mm and sum, so it supports create_graph too.
  Shape out_shape = x.shape();
  out_shape.back() = out_features;
  const Tensor x2 = x.reshape({-1, in_features});
  Tensor y = empty({x2.size(0), out_features}, x.options());
  if (y.numel() > 0) {
    const View bias_view = bias.defined() ? bias.view_of() : View{};
    const View* b = bias.defined() ? &bias_view : nullptr;
    if (auto* fused = find_kernel<kernel::Linear>(x.device().type))
      fused(y.view_of(), x2.view_of(), weight.view_of(), b);
    else
      linear_as_matmul(x.device().type, y.view_of(), x2.view_of(), weight.view_of(), b);
  }
  if (autograd::needs_grad({x2, weight, bias})) {
    autograd::record("linear", {x2, weight, bias}, y,
                     [sx = weight.requires_grad() ? autograd::SavedTensor(x2, "linear") : autograd::SavedTensor(),
                      sw = x2.requires_grad() ? autograd::SavedTensor(weight, "linear") : autograd::SavedTensor(),
                      need_x = x2.requires_grad(), need_w = weight.requires_grad(),
                      need_b = bias.defined() && bias.requires_grad()](const Tensor& g) {
                       Grads r(3);
                       if (need_x) r[0] = mm(g, sw.get());
                       if (need_w) r[1] = mm(g.t(), sx.get());
                       if (need_b) r[2] = sum(g, {0});
                       return r;
                     });
  }
  return y.reshape(out_shape);
}

Tensor dropout(const Tensor& x, double p, bool training) {
  detail::check_floating("dropout", x, "input");
  ANVIL_CHECK(p >= 0.0 && p < 1.0, "dropout: probability p must be in [0, 1), got ", p);
  if (!training || p == 0.0) return x;
  Tensor out = empty(x.shape(), x.options());
  Tensor keep = empty(x.shape(), x.options().dtype(kUInt8));
  if (x.numel() > 0) {
    GeneratorState gen = reserve_random(static_cast<uint64_t>(x.numel()));
    detail::kernel_of<kernel::Dropout>(x)(out.view_of(), keep.view_of(), x.view_of(), p, gen.seed, gen.offset);
  }
  if (autograd::needs_grad({x})) {
    const double scale = 1.0 / (1.0 - p);
    // The mask is internal and never changes, so it needs no SavedTensor.
    autograd::record("dropout", {x}, out,
                     [keep, scale](const Tensor& g) { return Grads{g * keep.to(g.dtype()) * scale}; });
  }
  return out;
}

}  // namespace anvil
