// Printing like PyTorch: tensor([[ 1.0000, -2.5000], ...], dtype=..., device=...).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/autograd/node.h"
#include "core/tensor.h"

namespace anvil {

namespace {

constexpr int64_t kSummarizeAbove = 1000;  // elements; beyond this print edges only
constexpr int64_t kEdgeItems = 3;

struct Format {
  bool floating = false;
  bool boolean = false;
  bool integral_values = false;  // float tensor holding whole numbers: "1."
  bool scientific = false;
  int width = 1;

  std::string operator()(double v) const {
    char buf[64];
    if (boolean) return v != 0 ? "True" : "False";
    if (!floating)
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    else if (std::isnan(v))
      std::snprintf(buf, sizeof buf, "nan");
    else if (std::isinf(v))
      std::snprintf(buf, sizeof buf, v > 0 ? "inf" : "-inf");
    else if (scientific)
      std::snprintf(buf, sizeof buf, "%.4e", v);
    else if (integral_values)
      std::snprintf(buf, sizeof buf, "%.0f.", v);
    else
      std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
  }
};

Format choose_format(const std::vector<double>& values, bool floating) {
  Format f;
  f.floating = floating;
  if (floating) {
    double max_abs = 0, min_abs = INFINITY;
    bool all_integral = true;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      all_integral = all_integral && v == std::floor(v);
      max_abs = std::max(max_abs, std::abs(v));
      if (v != 0) min_abs = std::min(min_abs, std::abs(v));
    }
    f.integral_values = all_integral && max_abs < 1e8;
    f.scientific = !f.integral_values && (max_abs >= 1e8 || (min_abs < 1e-4 && min_abs > 0) ||
                                          (min_abs != INFINITY && max_abs / min_abs > 1000));
  }
  for (double v : values) f.width = std::max<int>(f.width, static_cast<int>(f(v).size()));
  return f;
}

void print_dims(std::ostream& os, const std::vector<double>& values, const Shape& shape, const Shape& strides,
                int64_t offset, size_t d, const Format& f, bool summarize, int indent) {
  if (shape.empty()) {
    os << f(values[offset]);
    return;
  }
  int64_t n = shape[d];
  os << '[';
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      os << "...";
      i = n - kEdgeItems - 1;
      os << (d + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' '));
      continue;
    }
    if (d + 1 == shape.size()) {
      std::string s = f(values[offset + i * strides[d]]);
      os << std::string(f.width - s.size(), ' ') << s;
    } else {
      print_dims(os, values, shape, strides, offset + i * strides[d], d + 1, f, summarize, indent + 1);
    }
    if (i + 1 < n) {
      if (d + 1 == shape.size())
        os << ", ";
      else
        os << ',' << std::string(shape.size() - d - 1, '\n') << std::string(indent + 1, ' ');
    }
  }
  os << ']';
}

// The values print_dims will show, in order: the format must fit all of them.
void collect_printed(const std::vector<double>& values, const Shape& shape, const Shape& strides, int64_t offset,
                     size_t d, bool summarize, std::vector<double>& out) {
  if (shape.empty()) {
    out.push_back(values[offset]);
    return;
  }
  const int64_t n = shape[d];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    if (d + 1 == shape.size())
      out.push_back(values[offset + i * strides[d]]);
    else
      collect_printed(values, shape, strides, offset + i * strides[d], d + 1, summarize, out);
  }
}

}  // namespace

std::string to_string(const Tensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  std::ostringstream os;
  std::vector<double> values = t.detach().to_vector<double>();
  bool summarize = t.numel() > kSummarizeAbove;
  std::vector<double> shown;  // the format is chosen from what is printed
  if (summarize)
    collect_printed(values, t.shape(), contiguous_strides(t.shape()), 0, 0, summarize, shown);
  else
    shown = values;
  Format f = choose_format(shown, t.is_floating_point());
  if (t.dtype() == kBool) f.boolean = true, f.width = 5;
  os << "tensor(";
  if (t.numel() == 0 && t.dim() > 0)
    os << "[]";
  else
    print_dims(os, values, t.shape(), contiguous_strides(t.shape()), 0, 0, f, summarize, 7);
  if (t.numel() == 0 && t.dim() > 1) os << ", size=" << t.shape_str();
  if (t.device() != Device::cpu()) os << ", device='" << t.device() << "'";
  bool default_dtype = t.dtype() == kFloat32 || t.dtype() == kInt64 || t.dtype() == kBool;
  if (!default_dtype) os << ", dtype=" << t.dtype();
  if (auto fn = t.grad_fn())
    os << ", grad_fn=<" << fn->name() << ">";
  else if (t.requires_grad())
    os << ", requires_grad=True";
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << to_string(t); }

}  // namespace anvil
