// conv2d and 2-D pooling. The backward passes are small differentiable ops
// of their own (conv's input and weight gradients, avg pooling's gradient),
// each the adjoint of another, so second-order gradients work for conv2d and
// avg_pool2d. Max pooling's gradient is a scatter to argmax positions with no
// kernel for its adjoint: it refuses create_graph.
#include <cmath>

#include "core/autocast.h"
#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/nn/nn_common.h"
#include "core/ops/nn_functional.h"
#include "core/ops/nn_ops.h"
#include "core/ops/reduce.h"

namespace anvil {

using autograd::SavedTensor;
using nn_detail::Grads;

namespace {

int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d) {
  return (in + 2 * pad - d * (k - 1) - 1) / s + 1;
}

Tensor conv_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p);
Tensor conv_input_grad(const Tensor& g, const Tensor& weight, const Shape& in_shape, const Conv2dParams& p);
Tensor conv_weight_grad(const Tensor& g, const Tensor& x, const Shape& weight_shape, const Conv2dParams& p);

// The three functions below are the forward and the two gradients of a
// convolution. Each is bilinear, and the derivatives of each are the other
// two, so they record each other as backward.
Tensor conv_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& p) {
  const Shape& xs = x.shape();
  const Shape& ws = weight.shape();
  Shape out_shape{xs[0], ws[0], conv_out_size(xs[2], ws[2], p.stride[0], p.padding[0], p.dilation[0]),
                  conv_out_size(xs[3], ws[3], p.stride[1], p.padding[1], p.dilation[1])};
  Tensor out = empty(out_shape, x.options());
  if (out.numel() > 0) {
    View bias_slot;
    detail::kernel_of<kernel::Conv2d>(x)(out.view_of(), x.view_of(), weight.view_of(),
                                         nn_detail::optional_view(bias, bias_slot), p);
  }
  if (autograd::needs_grad({x, weight, bias})) {
    const bool need_x = x.requires_grad(), need_w = weight.requires_grad(),
               need_b = bias.defined() && bias.requires_grad();
    // Each gradient needs only the other operand.
    autograd::record("conv2d", {x, weight, bias}, out,
                     [sx = need_w ? SavedTensor(x, "conv2d") : SavedTensor(),
                      sw = need_x ? SavedTensor(weight, "conv2d") : SavedTensor(), xs, ws, p, need_x, need_w,
                      need_b](const Tensor& g) {
                       Grads r(3);
                       if (need_x) r[0] = conv_input_grad(g, sw.get(), xs, p);
                       if (need_w) r[1] = conv_weight_grad(g, sx.get(), ws, p);
                       if (need_b) r[2] = sum(g, {0, 2, 3});
                       return r;
                     });
  }
  return out;
}

Tensor conv_input_grad(const Tensor& g, const Tensor& weight, const Shape& in_shape, const Conv2dParams& p) {
  Tensor grad_in = empty(in_shape, g.options().dtype(weight.dtype()));
  if (grad_in.numel() > 0) {
    if (g.numel() == 0) {
      grad_in.zero_();
    } else {
      detail::kernel_of<kernel::Conv2dBackwardInput>(g)(grad_in.view_of(), g.view_of(), weight.view_of(), p);
    }
  }
  if (autograd::needs_grad({g, weight})) {
    const bool need_g = g.requires_grad(), need_w = weight.requires_grad();
    autograd::record("conv2d_backward_input", {g, weight}, grad_in,
                     [sg = need_w ? SavedTensor(g, "conv2d_backward_input") : SavedTensor(),
                      sw = need_g ? SavedTensor(weight, "conv2d_backward_input") : SavedTensor(), ws = weight.shape(),
                      p, need_g, need_w](const Tensor& u) {
                       Grads r(2);
                       if (need_g) r[0] = conv_forward(u, sw.get(), {}, p);
                       if (need_w) r[1] = conv_weight_grad(sg.get(), u, ws, p);
                       return r;
                     });
  }
  return grad_in;
}

Tensor conv_weight_grad(const Tensor& g, const Tensor& x, const Shape& weight_shape, const Conv2dParams& p) {
  Tensor grad_w = empty(weight_shape, g.options().dtype(x.dtype()));
  if (grad_w.numel() > 0) {
    if (g.numel() == 0) {
      grad_w.zero_();
    } else {
      detail::kernel_of<kernel::Conv2dBackwardWeight>(g)(grad_w.view_of(), g.view_of(), x.view_of(), p);
    }
  }
  if (autograd::needs_grad({g, x})) {
    const bool need_g = g.requires_grad(), need_x = x.requires_grad();
    autograd::record("conv2d_backward_weight", {g, x}, grad_w,
                     [sg = need_x ? SavedTensor(g, "conv2d_backward_weight") : SavedTensor(),
                      sx = need_g ? SavedTensor(x, "conv2d_backward_weight") : SavedTensor(), xs = x.shape(), p, need_g,
                      need_x](const Tensor& u) {
                       Grads r(2);
                       if (need_g) r[0] = conv_forward(sx.get(), u, {}, p);
                       if (need_x) r[1] = conv_input_grad(sg.get(), u, xs, p);
                       return r;
                     });
  }
  return grad_w;
}

void check_conv_args(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) {
  detail::check_floating("conv2d", weight, "weight");
  detail::check_same_device("conv2d", {x, weight, bias});
  ANVIL_CHECK(x.dim() == 4, "conv2d: expected input [N, C, H, W] (or unbatched [C, H, W]), got ", detail::describe(x));
  ANVIL_CHECK(weight.dim() == 4, "conv2d: expected weight [Cout, Cin/groups, kH, kW], got ", detail::describe(weight));
  ANVIL_CHECK(x.dtype() == weight.dtype(), "conv2d: input ", detail::describe(x), " and weight ",
              detail::describe(weight), " must have the same dtype");
  ANVIL_CHECK(o.stride[0] > 0 && o.stride[1] > 0 && o.dilation[0] > 0 && o.dilation[1] > 0 && o.padding[0] >= 0 &&
                  o.padding[1] >= 0 && o.groups > 0,
              "conv2d: stride, dilation and groups must be positive and padding non-negative, got stride ",
              std::vector<int64_t>(o.stride.begin(), o.stride.end()), ", padding ",
              std::vector<int64_t>(o.padding.begin(), o.padding.end()), ", dilation ",
              std::vector<int64_t>(o.dilation.begin(), o.dilation.end()), ", groups ", o.groups);
  const int64_t cin = x.size(1), cout = weight.size(0);
  ANVIL_CHECK(weight.size(1) * o.groups == cin, "conv2d: input ", detail::describe(x), " has ", cin,
              " channels but weight ", detail::describe(weight), " with groups=", o.groups, " expects ",
              weight.size(1) * o.groups, " (weight is [Cout, Cin/groups, kH, kW])");
  ANVIL_CHECK(cout % o.groups == 0, "conv2d: output channels ", cout, " of weight ", detail::describe(weight),
              " are not divisible by groups=", o.groups);
  if (bias.defined()) {
    ANVIL_CHECK(bias.dim() == 1 && bias.size(0) == cout, "conv2d: expected bias [", cout, "], got ",
                detail::describe(bias));
    ANVIL_CHECK(bias.dtype() == x.dtype(), "conv2d: bias ", detail::describe(bias), " and input ", detail::describe(x),
                " must have the same dtype");
  }
  for (int d = 0; d < 2; ++d) {
    const int64_t padded = x.size(2 + d) + 2 * o.padding[d], extent = o.dilation[d] * (weight.size(2 + d) - 1) + 1;
    ANVIL_CHECK(padded >= extent, "conv2d: input ", detail::describe(x), " with padding ",
                std::vector<int64_t>(o.padding.begin(), o.padding.end()), " is smaller than the dilated kernel (",
                extent, " in spatial dim ", d, " from weight ", detail::describe(weight),
                "); the output would be empty");
  }
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) {
  if (auto cast = autocast::lower_precision_inputs(x, weight, bias)) return conv2d(cast[0], cast[1], cast[2], o);
  detail::check_floating("conv2d", x, "input");
  if (x.dim() == 3) return conv2d(x.unsqueeze(0), weight, bias, o).squeeze(0);
  check_conv_args(x, weight, bias, o);
  Conv2dParams p;
  for (int d = 0; d < 2; ++d) {
    p.stride[d] = o.stride[d];
    p.padding[d] = o.padding[d];
    p.dilation[d] = o.dilation[d];
  }
  p.groups = o.groups;
  return conv_forward(x, weight, bias, p);
}

// conv2d's input gradient is the transposed convolution: weight
// [Cin, Cout/groups, kH, kW] read as conv2d's [Cout', Cin'/groups, kH, kW]
// with Cout' = this op's input channels. Its gradients are conv2d (for x) and
// conv2d's weight gradient, recorded by conv_input_grad.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvTranspose2dOptions& o) {
  if (auto cast = autocast::lower_precision_inputs(x, weight, bias))
    return conv_transpose2d(cast[0], cast[1], cast[2], o);
  detail::check_floating("conv_transpose2d", x, "input");
  if (x.dim() == 3) return conv_transpose2d(x.unsqueeze(0), weight, bias, o).squeeze(0);
  detail::check_floating("conv_transpose2d", weight, "weight");
  detail::check_same_device("conv_transpose2d", {x, weight, bias});
  ANVIL_CHECK(x.dim() == 4 && weight.dim() == 4, "conv_transpose2d: expected input [N, Cin, H, W] (or [Cin, H, W]) ",
              "and weight [Cin, Cout/groups, kH, kW], got input ", detail::describe(x), " and weight ",
              detail::describe(weight));
  ANVIL_CHECK(x.dtype() == weight.dtype(), "conv_transpose2d: input ", detail::describe(x), " and weight ",
              detail::describe(weight), " must have the same dtype");
  ANVIL_CHECK(o.groups > 0 && x.size(1) == weight.size(0) && weight.size(0) % o.groups == 0, "conv_transpose2d: input ",
              detail::describe(x), " has ", x.size(1), " channels; weight ", detail::describe(weight),
              " expects weight.size(0) == input channels, divisible by groups=", o.groups);
  Conv2dParams p;
  Shape out_shape{x.size(0), weight.size(1) * o.groups, 0, 0};
  // output_padding beyond stride - 1 (allowed when dilation > stride) makes
  // an output no convolution's input gradient has: then the full scatter
  // (padding 0) is computed and cropped to rows [padding, padding + out).
  bool beyond_stride = false;
  for (int d = 0; d < 2; ++d) {
    ANVIL_CHECK(o.stride[d] > 0 && o.dilation[d] > 0 && o.padding[d] >= 0 && o.output_padding[d] >= 0 &&
                    o.output_padding[d] < std::max(o.stride[d], o.dilation[d]),
                "conv_transpose2d: stride and dilation must be positive, padding non-negative and output_padding ",
                "smaller than stride or dilation, got stride ", std::vector<int64_t>(o.stride.begin(), o.stride.end()),
                ", padding ", std::vector<int64_t>(o.padding.begin(), o.padding.end()), ", output_padding ",
                std::vector<int64_t>(o.output_padding.begin(), o.output_padding.end()), ", dilation ",
                std::vector<int64_t>(o.dilation.begin(), o.dilation.end()));
    p.stride[d] = o.stride[d];
    p.padding[d] = o.padding[d];
    p.dilation[d] = o.dilation[d];
    out_shape[2 + d] = (x.size(2 + d) - 1) * o.stride[d] - 2 * o.padding[d] + o.dilation[d] * (weight.size(2 + d) - 1) +
                       o.output_padding[d] + 1;
    ANVIL_CHECK(out_shape[2 + d] > 0, "conv_transpose2d: input ", detail::describe(x), " with weight ",
                detail::describe(weight), " and padding ", o.padding[d], " gives an empty output (size ",
                out_shape[2 + d], " in spatial dim ", d, ")");
    beyond_stride = beyond_stride || o.output_padding[d] >= o.stride[d];
  }
  p.groups = o.groups;
  if (bias.defined()) {
    ANVIL_CHECK(bias.dim() == 1 && bias.size(0) == out_shape[1] && bias.dtype() == x.dtype(),
                "conv_transpose2d: expected bias [", out_shape[1], "] of the input's dtype, got ",
                detail::describe(bias));
  }
  Tensor out;
  if (!beyond_stride) {
    out = conv_input_grad(x, weight, out_shape, p);
  } else {
    Shape full_shape = out_shape;
    Shape crop;  // pad() amounts, last dim first: negative crops, positive appends zeros
    for (int d = 1; d >= 0; --d) {
      full_shape[2 + d] = (x.size(2 + d) - 1) * o.stride[d] + o.dilation[d] * (weight.size(2 + d) - 1) + 1;
      crop.push_back(-o.padding[d]);
      crop.push_back(o.padding[d] + out_shape[2 + d] - full_shape[2 + d]);
      p.padding[d] = 0;
    }
    out = pad(conv_input_grad(x, weight, full_shape, p), crop);
  }
  return bias.defined() ? out + bias.view({1, out_shape[1], 1, 1}) : out;
}

// --- pooling ---

namespace {

Pool2dParams pool_params(const char* op, const Tensor& x, const Pool2dOptions& o) {
  detail::check_floating(op, x, "input");
  ANVIL_CHECK(x.dim() == 3 || x.dim() == 4, op, ": expected input [N, C, H, W] or [C, H, W], got ",
              detail::describe(x));
  Pool2dParams p;
  p.count_include_pad = o.count_include_pad;
  for (int d = 0; d < 2; ++d) {
    p.kernel[d] = o.kernel[d];
    p.stride[d] = o.stride[d] == 0 ? o.kernel[d] : o.stride[d];
    p.padding[d] = o.padding[d];
  }
  ANVIL_CHECK(p.kernel[0] > 0 && p.kernel[1] > 0 && p.stride[0] > 0 && p.stride[1] > 0, op,
              ": kernel and stride must be positive (stride 0 means the kernel size), got kernel [", o.kernel[0], ", ",
              o.kernel[1], "], stride [", o.stride[0], ", ", o.stride[1], "]");
  ANVIL_CHECK(
      p.padding[0] >= 0 && p.padding[1] >= 0 && 2 * p.padding[0] <= p.kernel[0] && 2 * p.padding[1] <= p.kernel[1], op,
      ": padding must be between 0 and half the kernel size, got padding [", p.padding[0], ", ", p.padding[1],
      "] for kernel [", p.kernel[0], ", ", p.kernel[1], "]");
  for (int d = 0; d < 2; ++d) {
    const int64_t padded = x.size(x.dim() - 2 + d) + 2 * p.padding[d];
    ANVIL_CHECK(padded >= p.kernel[d], op, ": input ", detail::describe(x), " with padding [", p.padding[0], ", ",
                p.padding[1], "] is smaller than the kernel [", p.kernel[0], ", ", p.kernel[1],
                "]; the output would be empty");
  }
  return p;
}

Shape pool_out_shape(const Tensor& x, const Pool2dParams& p) {
  Shape s = x.shape();
  const size_t h = s.size() - 2;
  for (int d = 0; d < 2; ++d) s[h + d] = (s[h + d] + 2 * p.padding[d] - p.kernel[d]) / p.stride[d] + 1;
  return s;
}

Tensor pool_forward(PoolKind kind, const Tensor& x, const Pool2dParams& p) {
  Tensor out = empty(pool_out_shape(x, p), x.options());
  if (out.numel() > 0) detail::kernel_of<kernel::Pool2d>(x)(kind, out.view_of(), x.view_of(), p);
  return out;
}

// Gradient of average pooling: linear in g, with avg pooling as its adjoint.
Tensor avg_pool_grad(const Tensor& g, const Tensor& x, const Tensor& out, const Pool2dParams& p) {
  Tensor grad_in = empty(x.shape(), x.options());
  if (grad_in.numel() > 0)
    detail::kernel_of<kernel::Pool2dBackward>(g)(PoolKind::Avg, grad_in.view_of(), g.view_of(), x.view_of(),
                                                 out.view_of(), p);
  if (autograd::needs_grad({g}))
    autograd::record("avg_pool2d_backward", {g}, grad_in,
                     [p](const Tensor& u) { return Grads{pool_forward(PoolKind::Avg, u, p)}; });
  return grad_in;
}

// ceil_mode: how far past the padded input the last window reaches in each
// spatial dim (0 where rounding up gives no extra window). PyTorch's rule:
// the last window must start inside the input or its left padding.
std::array<int64_t, 2> ceil_mode_overhang(const Tensor& x, const Pool2dParams& p) {
  std::array<int64_t, 2> overhang{0, 0};
  for (int d = 0; d < 2; ++d) {
    const int64_t in = x.size(x.dim() - 2 + d), k = p.kernel[d], s = p.stride[d], pad = p.padding[d];
    int64_t out = (in + 2 * pad - k + s - 1) / s + 1;
    if ((out - 1) * s >= in + pad) --out;
    overhang[d] = std::max<int64_t>((out - 1) * s + k - (in + 2 * pad), 0);
  }
  return overhang;
}

// The divisor of each ceil_mode average window [oh, ow], as PyTorch: the part
// of the window inside input + padding, or inside the input alone when not
// count_include_pad.
Tensor ceil_mode_divisors(const Tensor& x, const Pool2dParams& p, const Shape& out_hw) {
  std::vector<double> per_dim[2];
  for (int d = 0; d < 2; ++d) {
    const int64_t in = x.size(x.dim() - 2 + d);
    for (int64_t i = 0; i < out_hw[d]; ++i) {
      int64_t start = i * p.stride[d] - p.padding[d];
      int64_t end = std::min(start + p.kernel[d], in + p.padding[d]);
      const int64_t with_pad = end - start;
      start = std::max<int64_t>(start, 0);
      end = std::min(end, in);
      per_dim[d].push_back(static_cast<double>(p.count_include_pad ? with_pad : end - start));
    }
  }
  std::vector<double> div;
  for (double h : per_dim[0])
    for (double w : per_dim[1]) div.push_back(h * w);
  return from_vector<double>(div, {out_hw[0], out_hw[1]}).to(x.device(), x.dtype());
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& o) {
  Pool2dParams p = pool_params("max_pool2d", x, o);
  if (o.ceil_mode) {
    const auto overhang = ceil_mode_overhang(x, p);
    if (overhang[0] > 0 || overhang[1] > 0) {
      // The overhang is -inf: never a maximum, since each window holds an input element.
      Pool2dOptions floor_o = o;
      floor_o.ceil_mode = false;
      return max_pool2d(pad(x, {0, overhang[1], 0, overhang[0]}, PadMode::Constant, -INFINITY), floor_o);
    }
  }
  Tensor out = pool_forward(PoolKind::Max, x, p);
  if (autograd::needs_grad({x}))
    autograd::record(
        "max_pool2d", {x}, out,
        [sx = SavedTensor(x, "max_pool2d"), sy = SavedTensor::output(out, "max_pool2d"), p](const Tensor& g) {
          nn_detail::refuse_double_backward("max_pool2d");
          Tensor in = sx.get();
          Tensor grad_in = empty(in.shape(), in.options());
          if (grad_in.numel() > 0)
            detail::kernel_of<kernel::Pool2dBackward>(g)(PoolKind::Max, grad_in.view_of(), g.view_of(), in.view_of(),
                                                         sy.get().view_of(), p);
          return Grads{grad_in};
        });
  return out;
}

Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& o) {
  Pool2dParams p = pool_params("avg_pool2d", x, o);
  if (o.ceil_mode) {
    const auto overhang = ceil_mode_overhang(x, p);
    if (overhang[0] > 0 || overhang[1] > 0) {
      // Window sums over the zero-extended input, divided by PyTorch's per-window divisors.
      Pool2dOptions sum_o = o;
      sum_o.ceil_mode = false;
      sum_o.count_include_pad = true;
      Tensor sums =
          avg_pool2d(pad(x, {0, overhang[1], 0, overhang[0]}), sum_o) * static_cast<double>(p.kernel[0] * p.kernel[1]);
      return sums / ceil_mode_divisors(x, p, {sums.size(-2), sums.size(-1)});
    }
  }
  Tensor out = pool_forward(PoolKind::Avg, x, p);
  if (autograd::needs_grad({x}))
    // x and out are saved detached: avg pooling's gradient does not depend on
    // their values, backends only take them for their shapes (cuDNN wants both).
    autograd::record("avg_pool2d", {x}, out, [xd = x.detach(), yd = out.detach(), p](const Tensor& g) {
      return Grads{avg_pool_grad(g, xd, yd, p)};
    });
  return out;
}

}  // namespace anvil
