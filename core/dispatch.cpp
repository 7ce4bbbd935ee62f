#include "core/dispatch.h"

#include <sstream>
#include <utility>

namespace anvil::detail {

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream os;
  os << t.shape_str() << ' ' << t.dtype() << ' ' << t.device();
  return os.str();
}

namespace {

// [first, last] byte offsets into the storage that t's elements occupy.
std::pair<int64_t, int64_t> byte_extent(const Tensor& t) {
  int64_t last = t.offset();
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.shape()[d] - 1) * t.strides()[d];
  const auto item = static_cast<int64_t>(t.itemsize());
  return {t.offset() * item, last * item + item - 1};
}

}  // namespace

bool overlaps_unsafely(const Tensor& dst, const Tensor& src) {
  if (dst.storage() != src.storage() || dst.numel() == 0 || src.numel() == 0) return false;
  if (dst.offset() == src.offset() && dst.shape() == src.shape() && dst.strides() == src.strides() &&
      dst.dtype() == src.dtype())
    return false;  // element i reads exactly what it then overwrites
  auto [dst_first, dst_last] = byte_extent(dst);
  auto [src_first, src_last] = byte_extent(src);
  return dst_first <= src_last && src_first <= dst_last;
}

void check_same_device(const char* op, std::initializer_list<Tensor> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (!first) {
      first = &t;
      continue;
    }
    if (t.device() != first->device()) {
      std::ostringstream os;
      os << op << ": expected all tensors on the same device, got";
      for (const Tensor& u : tensors) os << ' ' << (u.defined() ? u.device().str() : "-");
      os << " (move them with .to(device))";
      throw Error(os.str());
    }
  }
}

void check_defined(const char* op, const Tensor& t, const char* what) {
  ANVIL_CHECK(t.defined(), op, ": ", what, " is an undefined tensor");
}

void check_floating(const char* op, const Tensor& t, const char* what) {
  check_defined(op, t, what);
  ANVIL_CHECK(is_floating(t.dtype()), op, ": expected ", what, " to have a floating dtype, got ", describe(t));
}

void check_dtype(const char* op, const Tensor& t, DType expected, const char* what) {
  check_defined(op, t, what);
  ANVIL_CHECK(t.dtype() == expected, op, ": expected ", what, " to be ", expected, ", got ", describe(t));
}

void check_dim(const char* op, const Tensor& t, int64_t expected, const char* what) {
  check_defined(op, t, what);
  ANVIL_CHECK(t.dim() == expected, op, ": expected ", what, " to be ", expected, "-D, got ", describe(t));
}

}  // namespace anvil::detail
