// The sweeps over the op tables (kernels/ops/unary_ops.h, binary_ops.h): every
// row, in every dtype, through the CPU backend, with the special values of
// op_sweep_inputs.h on strided views (binary rows: special values against
// special values and random ones). Where the row's domain accepts the
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
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/ops/binary_ops.h"
#include "kernels/ops/unary_ops.h"
#include "tests/kernels/ops/op_sweep_inputs.h"

namespace anvil {
namespace {

const DType kAllDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};
constexpr UnaryParams kClampBounds{-0.5, 1.25};

// Relative and absolute tolerance of a float result against the double
// reference. The absolute part covers cancellation (1 - y * y near |y| = 1):
// the kernel's error there is a few ulp of the O(1) inputs, not of the result.
struct Tolerance {
  double rel, abs;
};
Tolerance tolerance_for(DType dtype) {
  if (dtype == kFloat64) return {1e-13, 1e-14};
  if (dtype == kFloat32) return {4e-6, 1e-6};  // libm's float and double functions, a few ulp apart
  if (dtype == kFloat16) return {2e-3, 2e-3};
  return {1.6e-2, 1.6e-2};  // bfloat16
}

bool close(double got, double want, Tolerance tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= tol.abs + tol.rel * std::abs(want);
}

template <typename T> using reference_t = std::conditional_t<std::is_integral_v<T>, T, double>;

// Runs `run(out)` (the backend call) on inputs `in` and checks the result
// against f applied to each element (f: the row's functor in reference_t<T>),
// or the refusal where the row's domain does not take T.
template <typename T, ops::Domain D, ops::Result R, typename Functor, typename Run>
void sweep(const ops::OpInfo& info, DType dtype, const std::vector<Tensor>& in, const Functor& f, Run run) {
  const std::string what = std::string(info.name) + " in " + dtype_name(dtype);
  const DType out_dtype = R == ops::Result::Bool ? kBool : dtype;
  Tensor out = empty(in[0].shape(), TensorOptions(out_dtype));
  if constexpr (!ops::accepts<T>(D)) {
    try {
      run(out);
      ADD_FAILURE() << what << ": ran, but the table's domain refuses " << dtype_name(dtype);
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(info.name), std::string::npos) << what << ": " << message;
      EXPECT_NE(message.find(dtype_name(dtype)), std::string::npos) << what << ": " << message;
    }
  } else {
    run(out);
    using Ref = reference_t<T>;
    const size_t n = static_cast<size_t>(out.numel());
    // Each input's values in logical order: int64 for integers (exact), double otherwise.
    std::vector<std::vector<Ref>> values;
    for (const Tensor& t : in) {
      const Tensor c = t.contiguous();
      std::vector<Ref> v(n);
      if constexpr (std::is_integral_v<T>) {
        const std::vector<int64_t> raw = c.to_vector<int64_t>();
        for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(raw[i]);
      } else {
        v = c.to_vector<double>();
      }
      values.push_back(std::move(v));
    }
    auto describe = [&](size_t i) {
      std::string s = "(";
      for (size_t k = 0; k < values.size(); ++k) s += (k ? ", " : "") + std::to_string(double(values[k][i]));
      return s + ") at element " + std::to_string(i);
    };
    auto want_at = [&](size_t i) {
      if constexpr (std::is_invocable_v<const Functor&, Ref>)
        return f(values[0][i]);
      else
        return f(values[0][i], values[1][i]);
    };
    if constexpr (std::is_integral_v<T>) {  // integers and bool: exact
      const std::vector<int64_t> got = out.contiguous().to_vector<int64_t>();
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(got[i], static_cast<int64_t>(want_at(i))) << what << " of " << describe(i);
    } else {
      std::vector<double> want(n);
      for (size_t i = 0; i < n; ++i) want[i] = static_cast<double>(want_at(i));
      // The reference rounded to the result dtype, as the kernel's result is.
      const std::vector<double> want_rounded = from_vector(want, {int64_t(n)}, out_dtype).to_vector<double>();
      const std::vector<double> got = out.contiguous().to_vector<double>();
      const Tolerance tol = tolerance_for(dtype);
      for (size_t i = 0; i < n; ++i)
        ASSERT_TRUE(close(got[i], want_rounded[i], tol))
            << what << " of " << describe(i) << ": got " << got[i] << ", want " << want_rounded[i];
    }
  }
}

template <ops::Domain D, ops::Result R, template <class> class F> void sweep_unary_row(UnaryOp op) {
  for (DType dtype : kAllDtypes) {
    visit_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      // A transposed (strided) view of [33, 7]: 231 values, the specials first.
      const Tensor x = test::sweep_input(dtype, 33, 7, 17 + static_cast<int>(op)).transpose(0, 1);
      sweep<T, D, R>(ops::unary_info(op), dtype, {x}, ops::make_unary<F, reference_t<T>>(kClampBounds),
                     [&](Tensor& out) {
                       kernel_for<kernel::Unary>(DeviceType::CPU)(op, out.view_of(), x.view_of(), kClampBounds);
                     });
    });
  }
}

template <ops::Domain D, ops::Result R, template <class> class F> void sweep_binary_row(BinaryOp op) {
  for (DType dtype : kAllDtypes) {
    visit_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      // a's specials run down its first column, b's along its first row: they
      // meet each other and random values.
      const Tensor a = test::sweep_input(dtype, 33, 7, 41 + static_cast<int>(op)).transpose(0, 1);
      const Tensor b = test::sweep_input(dtype, 7, 33, 71 + static_cast<int>(op));
      sweep<T, D, R>(ops::binary_info(op), dtype, {a, b}, F<reference_t<T>>{}, [&](Tensor& out) {
        kernel_for<kernel::Binary>(DeviceType::CPU)(op, out.view_of(), a.view_of(), b.view_of());
      });
    });
  }
}

TEST(UnaryOpTable, EveryOpInEveryDtypeMatchesItsFunctorOrIsRefused) {
  int swept = 0;
#define ANVIL_SWEEP_ROW(Enum, function, domain, result, api) \
  sweep_unary_row<ops::Domain::domain, ops::Result::result, ops::Enum>(UnaryOp::Enum); \
  ++swept;
  ANVIL_UNARY_OPS(ANVIL_SWEEP_ROW)
#undef ANVIL_SWEEP_ROW
  EXPECT_EQ(swept, ops::kUnaryOpCount);
}

TEST(BinaryOpTable, EveryOpInEveryDtypeMatchesItsFunctorOrIsRefused) {
  int swept = 0;
#define ANVIL_SWEEP_ROW(Enum, name, domain, result, family) \
  sweep_binary_row<ops::Domain::domain, ops::Result::result, ops::Enum>(BinaryOp::Enum); \
  ++swept;
  ANVIL_BINARY_OPS(ANVIL_SWEEP_ROW)
#undef ANVIL_SWEEP_ROW
  EXPECT_EQ(swept, ops::kBinaryOpCount);
}

TEST(OpTables, NamesAreUniqueAndTheEnumsFollowTheTables) {
  for (int i = 0; i < ops::kUnaryOpCount; ++i) {
    EXPECT_EQ(&ops::unary_info(static_cast<UnaryOp>(i)), &ops::kUnaryOps[i]);
    for (int j = 0; j < i; ++j)
      EXPECT_STRNE(ops::kUnaryOps[i].name, ops::kUnaryOps[j].name) << "unary rows " << j << " and " << i;
  }
  for (int i = 0; i < ops::kBinaryOpCount; ++i) {
    EXPECT_EQ(&ops::binary_info(static_cast<BinaryOp>(i)), &ops::kBinaryOps[i]);
    for (int j = 0; j < i; ++j)
      EXPECT_STRNE(ops::kBinaryOps[i].name, ops::kBinaryOps[j].name) << "binary rows " << j << " and " << i;
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
  EXPECT_EQ(floor(from_vector<float>({-1.5f, 1.5f, -0.0f})).to_vector<float>(),
            (std::vector<float>{-2.0f, 1.0f, 0.0f}));
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
