// The sweep over the unary op table (kernels/ops/unary_ops.h): every row, in
// every dtype, through the CPU backend, with the special values of
// op_sweep_inputs.h on a strided view. Where the row's domain accepts the
// dtype the result must be its functor's, computed in double for floating
// dtypes (so float32, float16 and bfloat16 are checked against a more precise
// reference) and in the dtype itself for integers and bool (wrapping, never
// undefined); elsewhere the backend must refuse with the op's and the dtype's
// names. No list of ops here: a new row is swept by being in the table. The
// CUDA sweep (tests/kernels/cuda/test_cuda_every_elementwise_op.cpp) holds the
// GPU to these CPU results, and tests/core/ops/test_unary_op_gradients.cpp
// checks every gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "core/ops.h"
#include "kernels/backend.h"
#include "kernels/ops/unary_ops.h"
#include "tests/kernels/ops/op_sweep_inputs.h"

namespace anvil {
namespace {

const DType kAllDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};
constexpr UnaryParams kClampBounds{-0.5, 1.25};

// Relative and absolute tolerance of a float result against the double reference.
struct Tolerance {
  double rel, abs;
};
Tolerance tolerance_for(DType dtype) {
  if (dtype == kFloat64) return {1e-13, 1e-300};
  if (dtype == kFloat32) return {4e-6, 1e-37};  // libm's float and double functions, a few ulp apart
  if (dtype == kFloat16) return {2e-3, 1e-7};
  return {1.6e-2, 1e-38};  // bfloat16
}

bool close(double got, double want, Tolerance tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= tol.abs + tol.rel * std::abs(want);
}

template <typename T>
using reference_t = std::conditional_t<std::is_integral_v<T>, T, double>;

template <typename T, ops::Domain D, ops::Result R, template <class> class F>
void sweep(UnaryOp op, DType dtype) {
  const ops::OpInfo& info = ops::unary_info(op);
  const std::string what = std::string(info.name) + " in " + dtype_name(dtype);
  Backend& cpu = backend_for(DeviceType::CPU);
  // A transposed (strided) view of [33, 7]: 231 values, the specials first.
  const Tensor x = test::sweep_input(dtype, 33, 7, 17 + static_cast<int>(op)).transpose(0, 1);
  const DType out_dtype = R == ops::Result::Bool ? kBool : dtype;
  Tensor out = empty(x.shape(), TensorOptions(out_dtype));
  if constexpr (!ops::accepts<T>(D)) {
    try {
      cpu.unary(op, out.view_of(), x.view_of(), kClampBounds);
      ADD_FAILURE() << what << ": ran, but the table's domain refuses " << dtype_name(dtype);
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(info.name), std::string::npos) << what << ": " << message;
      EXPECT_NE(message.find(dtype_name(dtype)), std::string::npos) << what << ": " << message;
    }
  } else {
    cpu.unary(op, out.view_of(), x.view_of(), kClampBounds);
    using Ref = reference_t<T>;
    const F<Ref> f = ops::make_unary<F, Ref>(kClampBounds);
    const Tensor xc = x.contiguous();
    if constexpr (std::is_integral_v<T>) {  // integers and bool: exact
      const std::vector<int64_t> in = xc.to_vector<int64_t>(), got = out.contiguous().to_vector<int64_t>();
      for (size_t i = 0; i < in.size(); ++i) {
        const int64_t want = static_cast<int64_t>(f(static_cast<T>(in[i])));
        ASSERT_EQ(got[i], want) << what << " of " << in[i] << " (element " << i << ")";
      }
    } else {
      const std::vector<double> in = xc.to_vector<double>();
      std::vector<double> want(in.size());
      for (size_t i = 0; i < in.size(); ++i) want[i] = static_cast<double>(f(in[i]));
      // The reference rounded to the result dtype, as the kernel's result is.
      const std::vector<double> want_rounded = from_vector(want, {int64_t(want.size())}, out_dtype).to_vector<double>();
      const std::vector<double> got = out.contiguous().to_vector<double>();
      const Tolerance tol = tolerance_for(dtype);
      for (size_t i = 0; i < in.size(); ++i)
        ASSERT_TRUE(close(got[i], want_rounded[i], tol))
            << what << " of " << in[i] << " (element " << i << "): got " << got[i] << ", want " << want_rounded[i];
    }
  }
}

template <ops::Domain D, ops::Result R, template <class> class F>
void sweep_every_dtype(UnaryOp op) {
  for (DType dtype : kAllDtypes) {
    visit_dtype(dtype, [&](auto tag) { sweep<decltype(tag), D, R, F>(op, dtype); });
  }
}

TEST(UnaryOpTable, EveryOpInEveryDtypeMatchesItsFunctorOrIsRefused) {
  int swept = 0;
#define ANVIL_SWEEP_ROW(Enum, function, domain, result, api)                                  \
  sweep_every_dtype<ops::Domain::domain, ops::Result::result, ops::Enum>(UnaryOp::Enum); \
  ++swept;
  ANVIL_UNARY_OPS(ANVIL_SWEEP_ROW)
#undef ANVIL_SWEEP_ROW
  EXPECT_EQ(swept, ops::kUnaryOpCount);
}

TEST(UnaryOpTable, NamesAreUniqueAndTheEnumFollowsTheTable) {
  for (int i = 0; i < ops::kUnaryOpCount; ++i) {
    EXPECT_EQ(&ops::unary_info(static_cast<UnaryOp>(i)), &ops::kUnaryOps[i]);
    for (int j = 0; j < i; ++j)
      EXPECT_STRNE(ops::kUnaryOps[i].name, ops::kUnaryOps[j].name) << "rows " << j << " and " << i;
  }
}

// The semantics the table promises where the functors differ from naive C++:
// PyTorch's rounding of ties, integer wrap-around, NaN through relu and clamp.
TEST(UnaryOpTable, RoundsTiesToEvenAndIntegersWrap) {
  EXPECT_EQ(round(from_vector<float>({0.5f, 1.5f, 2.5f, -2.5f, -0.4f})).to_vector<float>(),
            (std::vector<float>{0.0f, 2.0f, 2.0f, -2.0f, -0.0f}));
  EXPECT_EQ(neg(from_vector<int32_t>({INT32_MIN, 5})).to_vector<int32_t>(), (std::vector<int32_t>{INT32_MIN, -5}));
  EXPECT_EQ(abs(from_vector<int64_t>({INT64_MIN, -3})).to_vector<int64_t>(), (std::vector<int64_t>{INT64_MIN, 3}));
  EXPECT_EQ(square(from_vector<int32_t>({65536, -3})).to_vector<int32_t>(), (std::vector<int32_t>{0, 9}));
  EXPECT_EQ(floor(from_vector<float>({-1.5f, 1.5f, -0.0f})).to_vector<float>(), (std::vector<float>{-2.0f, 1.0f, 0.0f}));
  EXPECT_EQ(ceil(from_vector<float>({-1.5f, 1.5f, 2.0f})).to_vector<float>(), (std::vector<float>{-1.0f, 2.0f, 2.0f}));
  EXPECT_EQ(floor(from_vector<int64_t>({-3, 4})).to_vector<int64_t>(), (std::vector<int64_t>{-3, 4}));
  const Tensor nan_in = from_vector<float>({NAN, 1.0f});
  EXPECT_TRUE(std::isnan(relu(nan_in).to_vector<float>()[0]));
  EXPECT_TRUE(std::isnan(clamp(nan_in, 0, 0.5).to_vector<float>()[0]));
  EXPECT_EQ(isnan(nan_in).dtype(), kBool);
  EXPECT_EQ(isnan(nan_in).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(isnan(from_vector<int32_t>({1, 2})).to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
}

}  // namespace
}  // namespace anvil
