#include "core/dispatch.h"

#include <sstream>

namespace anvil::detail {

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream os;
  os << t.shape_str() << ' ' << t.dtype() << ' ' << t.device();
  return os.str();
}

void check_same_device(const char* op, std::initializer_list<Tensor> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (!first) { first = &t; continue; }
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
