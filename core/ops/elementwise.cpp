// Elementwise ops: validation, broadcasting, type promotion, the backend
// call, and each op's gradient written with anvil ops.
#include "core/ops/elementwise.h"

#include <cmath>
#include <numbers>

#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"

namespace anvil {

using autograd::GradMode;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    ANVIL_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", a, " and ", b, " cannot be broadcast together (size ",
                da, " vs ", db, " at dim ", i, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  size_t lead = grad.shape().size() - shape.size();
  Shape dims;
  for (size_t i = 0; i < grad.shape().size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && grad.shape()[i] != 1)) dims.push_back(static_cast<int64_t>(i));
  Tensor r = dims.empty() ? grad : sum(grad, dims, true);
  return r.reshape(shape);
}

namespace {

// The bitwise rows' bits mean nothing on a float: refuse one by name
// instead of converting it (as the Floating rows convert integers).
// `name` overrides the row's name (the in-place forms: "bitwise_and_").
void check_integral_domain(const ops::OpInfo& info, const Tensor& a, const Tensor& b = {}, const char* name = nullptr) {
  if (info.domain != ops::Domain::Integral) return;
  if (name == nullptr) name = info.name;
  if (!b.defined()) {
    ANVIL_CHECK(!is_floating(a.dtype()), name, ": expected an integer or bool tensor, got ", detail::describe(a));
    return;
  }
  ANVIL_CHECK(!is_floating(a.dtype()) && !is_floating(b.dtype()), name, ": expected integer or bool tensors, got ",
              detail::describe(a), " and ", detail::describe(b));
}

// Runs a unary kernel; integer inputs of float-only ops compute in float32.
Tensor unary_kernel(UnaryOp op, const Tensor& x, const UnaryParams& p = {}) {
  const ops::OpInfo& info = ops::unary_info(op);
  check_integral_domain(info, x);
  const bool float_only = info.domain == ops::Domain::Floating;
  Tensor in = float_only && !is_floating(x.dtype()) ? x.detach().to(kFloat32) : x;
  DType out_dtype = info.result == ops::Result::Bool ? kBool : in.dtype();
  Tensor out = empty(in.shape(), in.options().dtype(out_dtype));
  if (out.numel() > 0) detail::kernel_of<kernel::Unary>(in)(op, out.view_of(), in.view_of(), p);
  return out;
}

// PyTorch's result type: a 0-d tensor (e.g. a wrapped scalar) only changes
// the dtype when it is of a higher category (bool < int < float).
DType result_type(const Tensor& a, const Tensor& b) {
  bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 == b0) return promote(a.dtype(), b.dtype());
  const Tensor& full = a0 ? b : a;
  const Tensor& zero_d = a0 ? a : b;
  auto category = [](DType t) { return t == kBool ? 0 : is_integral(t) ? 1 : 2; };
  if (category(zero_d.dtype()) <= category(full.dtype())) return full.dtype();
  return is_floating(zero_d.dtype()) ? kFloat32 : kInt64;
}

bool is_comparison(BinaryOp op) { return ops::binary_info(op).result == ops::Result::Bool; }

// Runs a binary kernel on broadcast, promoted inputs (no autograd).
Tensor binary_kernel(const char* name, BinaryOp op, const Tensor& a, const Tensor& b) {
  detail::check_defined(name, a, "first operand");
  detail::check_defined(name, b, "second operand");
  detail::check_same_device(name, {a, b});
  check_integral_domain(ops::binary_info(op), a, b);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  DType compute = result_type(a, b);
  if (op == BinaryOp::Div && !is_floating(compute)) compute = kFloat32;  // true division
  if (op == BinaryOp::LogicalAnd || op == BinaryOp::LogicalOr) compute = kBool;
  DType out_dtype = is_comparison(op) ? kBool : compute;
  Tensor ac = a.detach().to(compute).expand(shape), bc = b.detach().to(compute).expand(shape);
  Tensor out = empty(shape, a.options().dtype(out_dtype));
  if (out.numel() > 0) detail::kernel_of<kernel::Binary>(a)(op, out.view_of(), ac.view_of(), bc.view_of());
  return out;
}

Tensor wrap(const Tensor& like, const Scalar& s) {
  DType t = s.is_floating() ? kFloat64 : s.kind() == Scalar::Kind::Bool ? kBool : kInt64;
  return scalar_tensor(s, TensorOptions().dtype(t).device(like.device()));
}

Tensor mask_of(const Tensor& cond, const Tensor& like) { return cond.to(like.dtype()); }

// Records a unary op whose gradient is g * dydx(x, y).
template <typename F>
Tensor unary_with_grad(const char* name, UnaryOp op, const Tensor& x, F grad_fn, const UnaryParams& p = {}) {
  detail::check_defined(name, x, "input");
  Tensor out = unary_kernel(op, x, p);
  if (autograd::needs_grad({x}))
    autograd::record(name, {x}, out,
                     [sx = SavedTensor(x, name), sy = SavedTensor::output(out, name), grad_fn](const Tensor& g) {
                       return Grads{grad_fn(g, sx, sy)};
                     });
  return out;
}

}  // namespace

// ---- the unary op table's Plain rows (kernels/ops/unary_ops.h) ----
namespace {

// unary_gradient<op>(g, x, y): the gradient of op's input given the incoming
// gradient g, the saved input x and the saved output y (read only what the
// formula needs: relu_ overwrites its input). One specialization per Plain
// row with a floating result; a row without one fails to link.
template <UnaryOp op> Tensor unary_gradient(const Tensor& g, const SavedTensor& x, const SavedTensor& y);

#define ANVIL_UNARY_GRADIENT(Enum) \
  template <> \
  Tensor unary_gradient<UnaryOp::Enum>(const Tensor& g, [[maybe_unused]] const SavedTensor& sx, \
                                       [[maybe_unused]] const SavedTensor& sy)

ANVIL_UNARY_GRADIENT(Neg) { return neg(g); }
ANVIL_UNARY_GRADIENT(Abs) { return g * sign(sx.get()); }
ANVIL_UNARY_GRADIENT(Exp) { return g * sy.get(); }
// expm1, log1p and erf (below) take one fused pass where no graph of the
// backward is needed; composed from ops, each op would be a pass of its own.
ANVIL_UNARY_GRADIENT(Expm1) {
  if (!GradMode::is_enabled()) return binary_kernel("expm1_backward", BinaryOp::Expm1Backward, g, sy.get());
  return g * (sy.get() + 1.0);
}
ANVIL_UNARY_GRADIENT(Log) { return g / sx.get(); }
ANVIL_UNARY_GRADIENT(Log1p) {
  if (!GradMode::is_enabled()) return binary_kernel("log1p_backward", BinaryOp::Log1pBackward, g, sx.get());
  return g / (sx.get() + 1.0);
}
ANVIL_UNARY_GRADIENT(Sqrt) { return g * 0.5 / sy.get(); }
ANVIL_UNARY_GRADIENT(Rsqrt) {
  Tensor y = sy.get();
  return g * -0.5 * y * y * y;
}
ANVIL_UNARY_GRADIENT(Sin) { return g * cos(sx.get()); }
ANVIL_UNARY_GRADIENT(Cos) { return -(g * sin(sx.get())); }
// For the activations the gradient uses a fused kernel, unless the backward
// itself is being recorded (create_graph), where the composed form is needed.
ANVIL_UNARY_GRADIENT(Tanh) {
  Tensor y = sy.get();
  if (GradMode::is_enabled()) return g * (1.0 - y * y);
  return binary_kernel("tanh_backward", BinaryOp::TanhBackward, g, y);
}
ANVIL_UNARY_GRADIENT(Sigmoid) {
  Tensor y = sy.get();
  if (GradMode::is_enabled()) return g * y * (1.0 - y);
  return binary_kernel("sigmoid_backward", BinaryOp::SigmoidBackward, g, y);
}
// relu's gradient reads the output (y > 0 exactly where x > 0), so relu_
// can overwrite its input.
ANVIL_UNARY_GRADIENT(Relu) {
  Tensor y = sy.get();
  if (GradMode::is_enabled()) return g * mask_of(gt(y, 0), g);
  return binary_kernel("relu_backward", BinaryOp::ReluBackward, g, y);
}
ANVIL_UNARY_GRADIENT(Silu) {
  Tensor in = sx.get();
  if (!GradMode::is_enabled()) return binary_kernel("silu_backward", BinaryOp::SiluBackward, g, in);
  Tensor s = sigmoid(in);
  return g * s * (1.0 + in * (1.0 - s));
}
ANVIL_UNARY_GRADIENT(Erf) {  // 2 / sqrt(pi) * exp(-x^2)
  Tensor in = sx.get();
  if (!GradMode::is_enabled()) return binary_kernel("erf_backward", BinaryOp::ErfBackward, g, in);
  return g * exp(in * in * -1.0) * (2.0 / std::sqrt(std::numbers::pi));
}
ANVIL_UNARY_GRADIENT(Reciprocal) {
  Tensor y = sy.get();
  return -(g * y * y);
}
ANVIL_UNARY_GRADIENT(Square) { return g * sx.get() * 2.0; }
// Piecewise constant: zero gradient almost everywhere, as in PyTorch.
ANVIL_UNARY_GRADIENT(Sign) { return zeros_like(g); }
ANVIL_UNARY_GRADIENT(Floor) { return zeros_like(g); }
ANVIL_UNARY_GRADIENT(Ceil) { return zeros_like(g); }
ANVIL_UNARY_GRADIENT(Round) { return zeros_like(g); }
ANVIL_UNARY_GRADIENT(Trunc) { return zeros_like(g); }
ANVIL_UNARY_GRADIENT(Erfinv) {  // sqrt(pi) / 2 * exp(y^2)
  Tensor y = sy.get();
  return g * exp(y * y) * (std::sqrt(std::numbers::pi) / 2.0);
}
// mish'(x) = tanh(sp) + x * (1 - tanh(sp)^2) * sigmoid(x), sp = softplus(x).
ANVIL_UNARY_GRADIENT(Mish) {
  Tensor in = sx.get();
  Tensor t = tanh(softplus(in));
  return g * (t + in * (1.0 - t * t) * sigmoid(in));
}
// 0 below -3, x / 3 + 1/2 on [-3, 3], 1 above (PyTorch's choice at the kinks).
ANVIL_UNARY_GRADIENT(Hardswish) {
  Tensor in = sx.get();
  Tensor middle = in / 3.0 + 0.5;
  return g * where(lt(in, -3.0), zeros_like(in), where(le(in, 3.0), middle, ones_like(in)));
}
ANVIL_UNARY_GRADIENT(Atan) { return g / (square(sx.get()) + 1.0); }  // 1 / (1 + x^2)
ANVIL_UNARY_GRADIENT(Log2) { return g / (sx.get() * std::numbers::ln2); }  // 1 / (x ln 2)

#undef ANVIL_UNARY_GRADIENT

// The entry point of a Plain row: bool results and integer-only rows carry no gradient.
template <UnaryOp op> Tensor unary_entry(const char* name, const Tensor& x) {
  if constexpr (!ops::differentiable(ops::unary_info(op))) {
    detail::check_defined(name, x, "input");
    return unary_kernel(op, x);
  } else {
    return unary_with_grad(name, op, x, [](const Tensor& g, const SavedTensor& sx, const SavedTensor& sy) {
      return unary_gradient<op>(g, sx, sy);
    });
  }
}

}  // namespace

#define ANVIL_DEFINE_UNARY(Enum, function, domain, result, api) ANVIL_DEFINE_UNARY_##api(Enum, function)
#define ANVIL_DEFINE_UNARY_Plain(Enum, function) \
  Tensor function(const Tensor& x) { return unary_entry<UnaryOp::Enum>(#function, x); }
#define ANVIL_DEFINE_UNARY_Custom(Enum, function)
ANVIL_UNARY_OPS(ANVIL_DEFINE_UNARY)
#undef ANVIL_DEFINE_UNARY
#undef ANVIL_DEFINE_UNARY_Plain
#undef ANVIL_DEFINE_UNARY_Custom

Tensor gelu(const Tensor& x, GeluApprox approx) {
  if (approx == GeluApprox::Tanh)
    return unary_with_grad("gelu", UnaryOp::GeluTanh, x, [](const Tensor& g, auto& sx, auto&) {
      Tensor in = sx.get();
      if (!GradMode::is_enabled()) return binary_kernel("gelu_backward", BinaryOp::GeluTanhBackward, g, in);
      const double k = std::sqrt(2.0 / std::numbers::pi);
      Tensor t = tanh((in + in * in * in * 0.044715) * k);
      Tensor dinner = (in * in * (3 * 0.044715) + 1.0) * k;
      return g * ((t + 1.0) * 0.5 + in * 0.5 * (1.0 - t * t) * dinner);
    });
  return unary_with_grad("gelu", UnaryOp::GeluErf, x, [](const Tensor& g, auto& sx, auto&) {
    Tensor in = sx.get();
    if (!GradMode::is_enabled()) return binary_kernel("gelu_backward", BinaryOp::GeluErfBackward, g, in);
    // gelu'(x) = Phi(x) + x * phi(x). There is no erf op, so Phi's value comes
    // from the fused kernel and its derivative (phi) is attached by a term
    // that is zero in value: exact for second-order gradients.
    Tensor pdf = exp(in * in * -0.5) * (1.0 / std::sqrt(2.0 * std::numbers::pi));
    Tensor x0 = in.detach();
    Tensor cdf_value = binary_kernel("gelu_backward", BinaryOp::GeluErfBackward, ones_like(x0), x0) - x0 * pdf.detach();
    Tensor cdf = cdf_value + (in - x0) * pdf.detach();
    return g * (cdf + in * pdf);
  });
}
UnaryParams clamp_bounds(const char* op, std::optional<double> lo, std::optional<double> hi) {
  ANVIL_CHECK(lo || hi, op, ": at least one of min and max must be given");
  const UnaryParams p{lo.value_or(-INFINITY), hi.value_or(INFINITY)};
  ANVIL_CHECK(!(p.lo > p.hi), op, ": min ", p.lo, " is greater than max ", p.hi);
  return p;
}

Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  const UnaryParams p = clamp_bounds("clamp", lo, hi);
  return unary_with_grad(
      "clamp", UnaryOp::Clamp, x,
      [p](const Tensor& g, auto& sx, auto&) {
        Tensor in = sx.get();
        return g * mask_of(logical_and(ge(in, p.lo), le(in, p.hi)), g);
      },
      p);
}
Tensor clamp_min(const Tensor& x, double lo) { return clamp(x, lo); }
Tensor clamp_max(const Tensor& x, double hi) { return clamp(x, std::nullopt, hi); }

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  UnaryParams p;
  p.negative_slope = negative_slope;
  return unary_with_grad(
      "leaky_relu", UnaryOp::LeakyRelu, x,
      [negative_slope](const Tensor& g, auto& sx, auto&) {
        Tensor in = sx.get();
        return where(gt(in, 0.0), g, g * negative_slope);
      },
      p);
}
Tensor elu(const Tensor& x, double alpha) {
  UnaryParams p;
  p.alpha = alpha;
  return unary_with_grad(
      "elu", UnaryOp::Elu, x,
      [alpha](const Tensor& g, auto& sx, auto&) {  // alpha * exp(x) below 0, from x (y may be overwritten)
        Tensor in = sx.get();
        return where(gt(in, 0.0), g, g * exp(in) * alpha);
      },
      p);
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
  ANVIL_CHECK(beta != 0.0, "softplus: beta must be nonzero, got ", beta);
  UnaryParams p;
  p.beta = beta, p.threshold = threshold;
  return unary_with_grad(
      "softplus", UnaryOp::Softplus, x,
      [beta, threshold](const Tensor& g, auto& sx, auto&) {
        // The defaults in one fused pass; a graph for double backward or other parameters.
        if (beta == 1.0 && threshold == 20.0 && !GradMode::is_enabled())
          return binary_kernel("softplus_backward", BinaryOp::SoftplusBackward, g, sx.get());
        Tensor scaled = sx.get() * beta;  // once, for both the test and the slope
        return where(gt(scaled, threshold), g, g * sigmoid(scaled));
      },
      p);
}

Tensor pow(const Tensor& x, const Scalar& e) {
  detail::check_defined("pow", x, "input");
  Tensor out = binary_kernel("pow", BinaryOp::Pow, x, wrap(x, e));
  if (autograd::needs_grad({x}))
    autograd::record("pow", {x}, out, [sx = SavedTensor(x, "pow"), e](const Tensor& g) {
      double ed = e.to_double();
      if (ed == 0.0) return Grads{zeros_like(g)};
      return Grads{g * pow(sx.get(), ed - 1.0) * ed};
    });
  return out;
}

Tensor pow(const Tensor& x, const Tensor& e) {
  Tensor out = binary_kernel("pow", BinaryOp::Pow, x, e);
  if (autograd::needs_grad({x, e})) {
    Shape xs = x.shape(), es = e.shape();
    autograd::record("pow", {x, e}, out,
                     [sx = SavedTensor(x, "pow"), se = SavedTensor(e, "pow"), sy = SavedTensor::output(out, "pow"), xs,
                      es, need_x = x.requires_grad(), need_e = e.requires_grad()](const Tensor& g) {
                       Tensor xv = sx.get(), ev = se.get();
                       Grads r(2);
                       if (need_x) r[0] = sum_to(g * ev * pow(xv, ev - 1.0), xs);
                       if (need_e) r[1] = sum_to(g * sy.get() * log(xv), es);
                       return r;
                     });
  }
  return out;
}

// --- binary arithmetic ---

namespace {

template <typename F>
Tensor binary_with_grad(const char* name, BinaryOp op, const Tensor& a, const Tensor& b, F grads) {
  Tensor out = binary_kernel(name, op, a, b);
  if (autograd::needs_grad({a, b})) {
    autograd::record(name, {a, b}, out,
                     [sa = SavedTensor(a, name), sb = SavedTensor(b, name), ashape = a.shape(), bshape = b.shape(),
                      need_a = a.requires_grad(), need_b = b.requires_grad(), adt = a.dtype(), bdt = b.dtype(),
                      grads](const Tensor& g) {
                       auto [ga, gb] = grads(g, sa, sb, need_a, need_b);
                       Grads r(2);
                       if (need_a && ga.defined()) r[0] = sum_to(ga, ashape).to(adt);
                       if (need_b && gb.defined()) r[1] = sum_to(gb, bshape).to(bdt);
                       return r;
                     });
  }
  return out;
}

using GradPair = std::pair<Tensor, Tensor>;

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return binary_with_grad("add", BinaryOp::Add, a, b, [](const Tensor& g, auto&, auto&, bool, bool) {
    return GradPair{g, g};
  });
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary_with_grad("sub", BinaryOp::Sub, a, b, [](const Tensor& g, auto&, auto&, bool, bool need_b) {
    return GradPair{g, need_b ? neg(g) : Tensor()};
  });
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary_with_grad("mul", BinaryOp::Mul, a, b,
                          [](const Tensor& g, auto& sa, auto& sb, bool need_a, bool need_b) {
                            return GradPair{need_a ? g * sb.get() : Tensor(), need_b ? g * sa.get() : Tensor()};
                          });
}
Tensor div(const Tensor& a, const Tensor& b) {
  return binary_with_grad(
      "div", BinaryOp::Div, a, b, [](const Tensor& g, auto& sa, auto& sb, bool need_a, bool need_b) {
        Tensor bv = sb.get();
        return GradPair{need_a ? g / bv : Tensor(), need_b ? -(g * sa.get() / (bv * bv)) : Tensor()};
      });
}
// Ties split the gradient evenly, as PyTorch does.
Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary_with_grad("maximum", BinaryOp::Maximum, a, b, [](const Tensor& g, auto& sa, auto& sb, bool, bool) {
    Tensor av = sa.get(), bv = sb.get();
    Tensor wa = mask_of(gt(av, bv), g) + mask_of(eq(av, bv), g) * 0.5;
    return GradPair{g * wa, g * (1.0 - wa)};
  });
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary_with_grad("minimum", BinaryOp::Minimum, a, b, [](const Tensor& g, auto& sa, auto& sb, bool, bool) {
    Tensor av = sa.get(), bv = sb.get();
    Tensor wa = mask_of(lt(av, bv), g) + mask_of(eq(av, bv), g) * 0.5;
    return GradPair{g * wa, g * (1.0 - wa)};
  });
}

Tensor add(const Tensor& a, const Scalar& b) { return add(a, wrap(a, b)); }
Tensor sub(const Tensor& a, const Scalar& b) { return sub(a, wrap(a, b)); }
Tensor mul(const Tensor& a, const Scalar& b) { return mul(a, wrap(a, b)); }
Tensor div(const Tensor& a, const Scalar& b) { return div(a, wrap(a, b)); }
Tensor maximum(const Tensor& a, const Scalar& b) { return maximum(a, wrap(a, b)); }
Tensor minimum(const Tensor& a, const Scalar& b) { return minimum(a, wrap(a, b)); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(wrap(b, a), b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(wrap(b, a), b); }

// Gradients as PyTorch's: d/da = 1, d/db = -trunc(a / b) (fmod) or
// -floor(a / b) (remainder).
Tensor fmod(const Tensor& a, const Tensor& b) {
  return binary_with_grad("fmod", BinaryOp::Fmod, a, b, [](const Tensor& g, auto& sa, auto& sb, bool, bool need_b) {
    return GradPair{g, need_b ? -(g * trunc(sa.get() / sb.get())) : Tensor()};
  });
}
Tensor remainder(const Tensor& a, const Tensor& b) {
  return binary_with_grad("remainder", BinaryOp::Remainder, a, b,
                          [](const Tensor& g, auto& sa, auto& sb, bool, bool need_b) {
                            return GradPair{g, need_b ? -(g * floor(sa.get() / sb.get())) : Tensor()};
                          });
}
Tensor fmod(const Tensor& a, const Scalar& b) { return fmod(a, wrap(a, b)); }
Tensor remainder(const Tensor& a, const Scalar& b) { return remainder(a, wrap(a, b)); }

// --- comparisons (no gradient) ---

Tensor eq(const Tensor& a, const Tensor& b) { return binary_kernel("eq", BinaryOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary_kernel("ne", BinaryOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary_kernel("lt", BinaryOp::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary_kernel("le", BinaryOp::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary_kernel("gt", BinaryOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary_kernel("ge", BinaryOp::Ge, a, b); }
Tensor eq(const Tensor& a, const Scalar& b) { return eq(a, wrap(a, b)); }
Tensor ne(const Tensor& a, const Scalar& b) { return ne(a, wrap(a, b)); }
Tensor lt(const Tensor& a, const Scalar& b) { return lt(a, wrap(a, b)); }
Tensor le(const Tensor& a, const Scalar& b) { return le(a, wrap(a, b)); }
Tensor gt(const Tensor& a, const Scalar& b) { return gt(a, wrap(a, b)); }
Tensor ge(const Tensor& a, const Scalar& b) { return ge(a, wrap(a, b)); }
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return binary_kernel("logical_and", BinaryOp::LogicalAnd, a, b);
}
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary_kernel("logical_or", BinaryOp::LogicalOr, a, b); }

// --- bitwise (integers and bool; no gradient) ---

Tensor bitwise_and(const Tensor& a, const Tensor& b) {
  return binary_kernel("bitwise_and", BinaryOp::BitwiseAnd, a, b);
}
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return binary_kernel("bitwise_or", BinaryOp::BitwiseOr, a, b); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) {
  return binary_kernel("bitwise_xor", BinaryOp::BitwiseXor, a, b);
}
Tensor bitwise_and(const Tensor& a, const Scalar& b) { return bitwise_and(a, wrap(a, b)); }
Tensor bitwise_or(const Tensor& a, const Scalar& b) { return bitwise_or(a, wrap(a, b)); }
Tensor bitwise_xor(const Tensor& a, const Scalar& b) { return bitwise_xor(a, wrap(a, b)); }

// --- selection ---

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  detail::check_dtype("where", cond, kBool, "condition");
  detail::check_defined("where", a, "first value");
  detail::check_defined("where", b, "second value");
  detail::check_same_device("where", {cond, a, b});
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  DType dt = result_type(a, b);
  Tensor out = empty(shape, a.options().dtype(dt));
  if (out.numel() > 0)
    detail::kernel_of<kernel::Where>(a)(out.view_of(), cond.expand(shape).view_of(),
                                        a.detach().to(dt).expand(shape).view_of(),
                                        b.detach().to(dt).expand(shape).view_of());
  if (autograd::needs_grad({a, b})) {
    autograd::record(
        "where", {a, b}, out,
        [c = cond.detach(), ashape = a.shape(), bshape = b.shape(), adt = a.dtype(), bdt = b.dtype()](const Tensor& g) {
          Tensor zero = scalar_tensor(0, g.options());
          return Grads{sum_to(where(c, g, zero), ashape).to(adt), sum_to(where(c, zero, g), bshape).to(bdt)};
        });
  }
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) { return where(cond, a, wrap(a, b)); }
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) { return where(cond, wrap(b, a), b); }

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  detail::check_dtype("masked_fill", mask, kBool, "mask");
  detail::check_defined("masked_fill", x, "input");
  Shape shape = broadcast_shapes(x.shape(), mask.shape(), "masked_fill");
  ANVIL_CHECK(shape == x.shape(), "masked_fill: mask of shape ", mask.shape(), " does not broadcast to input shape ",
              x.shape());
  return where(mask, scalar_tensor(value, x.options()), x);
}

Tensor cast(const Tensor& x, DType dtype) { return x.to(dtype); }

bool can_cast(DType from, DType to) {
  if (is_floating(from)) return is_floating(to);
  if (from != kBool) return to != kBool;
  return true;
}

// --- in place ---

namespace {

Tensor& inplace(const char* name, BinaryOp op, Tensor& self, const Tensor& other,
                Tensor (*outofplace)(const Tensor&, const Tensor&)) {
  detail::check_defined(name, self, "self");
  detail::check_defined(name, other, "other");
  detail::check_same_device(name, {self, other});
  check_integral_domain(ops::binary_info(op), self, other, name);
  Shape shape = broadcast_shapes(self.shape(), other.shape(), name);
  ANVIL_CHECK(shape == self.shape(), name, ": result of shape ", shape, " does not fit in self of shape ",
              self.shape());
  DType compute = result_type(self, other);
  if (op == BinaryOp::Div && !is_floating(compute)) compute = kFloat32;  // true division
  // As in PyTorch: storing the result may narrow within its kind (float64 into
  // float32) but never drop the fraction or the magnitude (float into int64).
  ANVIL_CHECK(can_cast(compute, self.dtype()), name, ": result type ", compute,
              " can't be cast to the desired output type ", self.dtype(), " (self ", detail::describe(self), ", other ",
              detail::describe(other), "); use the out-of-place op, or convert self with .to(", compute, ") first");
  if (autograd::needs_grad({self, other})) {
    autograd::rebase_history(name, self, outofplace(self, other));
    return self;
  }
  autograd::check_inplace(name, self);
  if (compute == self.dtype()) {
    Tensor oc = other.detach().to(compute).expand(shape);
    if (detail::overlaps_unsafely(self, oc)) oc = oc.clone();  // e.g. x.add_(x.t())
    if (self.numel() > 0) detail::kernel_of<kernel::Binary>(self)(op, self.view_of(), self.view_of(), oc.view_of());
    self.bump_version();
  } else {
    Tensor r = binary_kernel(name, op, self, other);
    detail::runtime_of(self).copy(self.view_of(), r.view_of());
    self.bump_version();
  }
  return self;
}

}  // namespace

Tensor& add_(Tensor& self, const Tensor& other) { return inplace("add_", BinaryOp::Add, self, other, add); }
Tensor& sub_(Tensor& self, const Tensor& other) { return inplace("sub_", BinaryOp::Sub, self, other, sub); }
Tensor& mul_(Tensor& self, const Tensor& other) { return inplace("mul_", BinaryOp::Mul, self, other, mul); }
Tensor& div_(Tensor& self, const Tensor& other) { return inplace("div_", BinaryOp::Div, self, other, div); }

Tensor& bitwise_and_(Tensor& self, const Tensor& other) {
  return inplace("bitwise_and_", BinaryOp::BitwiseAnd, self, other, bitwise_and);
}
Tensor& bitwise_or_(Tensor& self, const Tensor& other) {
  return inplace("bitwise_or_", BinaryOp::BitwiseOr, self, other, bitwise_or);
}
Tensor& bitwise_xor_(Tensor& self, const Tensor& other) {
  return inplace("bitwise_xor_", BinaryOp::BitwiseXor, self, other, bitwise_xor);
}

Tensor& add_(Tensor& self, const Scalar& other) { return add_(self, wrap(self, other)); }
Tensor& sub_(Tensor& self, const Scalar& other) { return sub_(self, wrap(self, other)); }
Tensor& mul_(Tensor& self, const Scalar& other) { return mul_(self, wrap(self, other)); }
Tensor& div_(Tensor& self, const Scalar& other) { return div_(self, wrap(self, other)); }
Tensor& bitwise_and_(Tensor& self, const Scalar& other) { return bitwise_and_(self, wrap(self, other)); }
Tensor& bitwise_or_(Tensor& self, const Scalar& other) { return bitwise_or_(self, wrap(self, other)); }
Tensor& bitwise_xor_(Tensor& self, const Scalar& other) { return bitwise_xor_(self, wrap(self, other)); }

Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Scalar& value) {
  Tensor r = masked_fill(self, mask, value);
  if (autograd::needs_grad({self})) {
    autograd::rebase_history("masked_fill_", self, r);
  } else {
    autograd::check_inplace("masked_fill_", self);
    detail::runtime_of(self).copy(self.view_of(), r.view_of());
    self.bump_version();
  }
  return self;
}

}  // namespace anvil
