// Matrix products. Every form goes to the backend's one batched matmul
// ([B, M, K] x [B, K, N] -> [B, M, N]) through views, copying an operand only
// when its broadcast batch dims cannot be described by a single stride.
#include "core/autocast.h"
#include "core/ops/linalg.h"

#include <optional>

#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/shape.h"

namespace anvil {

using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

// A [*batch, rows, cols] tensor as a [B, rows, cols] view, when the batch
// dims collapse to one stride (contiguous batches, or all broadcast).
std::optional<View> as_batched_view(const Tensor& t) {
  View v = t.view_of();
  const int64_t batch_dims = v.dim() - 2;
  int64_t count = 1, stride = 0;
  bool have_stride = false;
  for (int64_t d = batch_dims - 1; d >= 0; --d) {
    const int64_t size = v.shape[d];
    if (size == 0) {
      count = 0;
      break;
    }
    if (size == 1) continue;
    if (!have_stride) {
      stride = v.strides[d];
      have_stride = true;
    } else if (v.strides[d] != stride * count) {
      return std::nullopt;
    }
    count *= size;
  }
  const int64_t rows = v.shape[batch_dims], cols = v.shape[batch_dims + 1];
  const int64_t row_stride = v.strides[batch_dims], col_stride = v.strides[batch_dims + 1];
  return View{v.data, v.dtype, {count, rows, cols}, {stride, row_stride, col_stride}, v.device_index};
}

View batched_view_or_copy(Tensor& t) {
  if (auto v = as_batched_view(t)) return *v;
  t = t.contiguous();  // batch dims that mix broadcast and real strides
  return *as_batched_view(t);
}

Shape concat(Shape a, std::initializer_list<int64_t> tail) {
  a.insert(a.end(), tail);
  return a;
}

Tensor matmul_impl(const char* op, const Tensor& a, const Tensor& b) {
  if (auto cast = autocast::lower_precision_inputs(a, b)) return matmul_impl(op, cast[0], cast[1]);
  detail::check_defined(op, a, "first operand");
  detail::check_defined(op, b, "second operand");
  detail::check_same_device(op, {a, b});
  ANVIL_CHECK(a.dim() >= 1 && b.dim() >= 1, op, ": both operands need at least 1 dim, got ", detail::describe(a),
              " and ", detail::describe(b));
  ANVIL_CHECK(a.dtype() == b.dtype(), op, ": expected both operands to have the same dtype, got ", a.dtype(), " and ",
              b.dtype(), " (", detail::describe(a), " and ", detail::describe(b), "); cast one with .to()");
  ANVIL_CHECK(is_floating(a.dtype()), op, ": expected floating operands, got ", detail::describe(a), " and ",
              detail::describe(b));
  // 1-D operands become matrices: a row vector on the left, a column on the right.
  Tensor a2 = a.dim() == 1 ? a.detach().unsqueeze(0) : a.detach();
  Tensor b2 = b.dim() == 1 ? b.detach().unsqueeze(1) : b.detach();
  const int64_t m = a2.size(-2), k = a2.size(-1), kb = b2.size(-2), n = b2.size(-1);
  ANVIL_CHECK(k == kb, op, ": shapes ", a.shape(), " and ", b.shape(), " cannot be multiplied (inner dims ", k, " and ",
              kb, " differ)");
  Shape batch = broadcast_shapes(Shape(a2.shape().begin(), a2.shape().end() - 2),
                                 Shape(b2.shape().begin(), b2.shape().end() - 2), op);
  Tensor ae = a2.expand(concat(batch, {m, k})), be = b2.expand(concat(batch, {k, n}));
  View a_view = batched_view_or_copy(ae), b_view = batched_view_or_copy(be);
  Shape out_full = concat(batch, {m, n});
  Tensor out = empty(out_full, a.options());
  if (out.numel() > 0) detail::kernel_of<kernel::Matmul>(a)(*as_batched_view(out), a_view, b_view, MatmulParams{});

  Shape result_shape = batch;
  if (a.dim() > 1) result_shape.push_back(m);
  if (b.dim() > 1) result_shape.push_back(n);
  Tensor result = alias_with(out, result_shape, contiguous_strides(result_shape), 0);

  if (autograd::needs_grad({a, b}))
    autograd::record(op, {a, b}, result,
                     [sa = SavedTensor(a, op), sb = SavedTensor(b, op), a_vec = a.dim() == 1, b_vec = b.dim() == 1,
                      a_shape = a.shape(), b_shape = b.shape(), a2_shape = a2.shape(), b2_shape = b2.shape(), out_full,
                      need_a = a.requires_grad(), need_b = b.requires_grad()](const Tensor& g) {
                       Tensor av = sa.get(), bv = sb.get();
                       if (a_vec) av = av.unsqueeze(0);
                       if (b_vec) bv = bv.unsqueeze(1);
                       Tensor gf = g.reshape(out_full);
                       Grads r(2);
                       if (need_a) r[0] = sum_to(matmul(gf, bv.transpose(-1, -2)), a2_shape).reshape(a_shape);
                       if (need_b) r[1] = sum_to(matmul(av.transpose(-1, -2), gf), b2_shape).reshape(b_shape);
                       return r;
                     });
  return result;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) { return matmul_impl("matmul", a, b); }

Tensor mm(const Tensor& a, const Tensor& b) {
  detail::check_dim("mm", a, 2, "first operand");
  detail::check_dim("mm", b, 2, "second operand");
  return matmul_impl("mm", a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  detail::check_dim("bmm", a, 3, "first operand");
  detail::check_dim("bmm", b, 3, "second operand");
  ANVIL_CHECK(a.size(0) == b.size(0), "bmm: batch sizes differ: ", detail::describe(a), " and ", detail::describe(b),
              " (bmm does not broadcast; use matmul)");
  return matmul_impl("bmm", a, b);
}

Tensor dot(const Tensor& a, const Tensor& b) {
  detail::check_dim("dot", a, 1, "first operand");
  detail::check_dim("dot", b, 1, "second operand");
  ANVIL_CHECK(a.size(0) == b.size(0), "dot: expected 1-D tensors of the same size, got ", detail::describe(a), " and ",
              detail::describe(b));
  return matmul_impl("dot", a, b);
}

}  // namespace anvil
