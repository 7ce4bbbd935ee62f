// Every UnaryOp (every row of the op table, kernels/ops/unary_ops.h) and every
// BinaryOp value in every dtype, through the backends directly: CUDA must give
// the CPU's result where the CPU accepts the dtype, and refuse it where the
// CPU does. Inputs have odd sizes, a broadcast operand and a strided view;
// unary inputs carry the dtype's special values (tests/kernels/ops/op_sweep_inputs.h:
// +-0, +-inf, NaN, subnormals, the extremes).
#include <gtest/gtest.h>

#include <string>

#include "core/factory.h"
#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/runtime.h"
#include "kernels/ops/binary_ops.h"
#include "kernels/ops/unary_ops.h"
#include "tests/kernels/ops/op_sweep_inputs.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

const DType kAllDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};

// Of kAllDtypes, how many a row's domain takes: each must have run and been compared.
int dtypes_accepted(ops::Domain d) {
  switch (d) {
    case ops::Domain::Any:
      return 8;
    case ops::Domain::Numeric:
      return 7;
    case ops::Domain::Floating:
      return 4;
    case ops::Domain::Integral:
      return 4;  // int32, int64, uint8 and bool
  }
  return 0;
}

// Values an op takes everywhere it is defined: logs and roots of negatives are
// NaN on both sides (compared as equal), pow of a negative base to a
// non-integer power too; integer division by zero is avoided (undefined).
Tensor input(DType dtype, const Shape& shape, uint64_t seed, bool nonzero) {
  Tensor t = test::random_tensor(shape, dtype, seed);
  if (nonzero && !is_floating(dtype) && dtype != kBool) t = where(eq(t, 0.0), full_like(t, 3), t);
  return t;
}

// Runs `run(backend, out, device)` on both backends: the same refusal, or
// results within the dtype's tolerance. True when both ran and were compared.
template <typename Run> bool expect_same(const char* what, DType dtype, DType out_dtype, const Shape& shape, Run run) {
  Runtime& cpu = runtime_for(DeviceType::CPU);
  Runtime& gpu = runtime_for(DeviceType::CUDA);
  Tensor want = empty(shape, TensorOptions(out_dtype)),
         got = empty(shape, TensorOptions(out_dtype).device(Device::cuda(0)));
  bool cpu_ok = true;
  std::string cpu_error;
  try {
    run(cpu, want, Device::cpu());
  } catch (const Error& e) {
    cpu_ok = false;
    cpu_error = e.what();
  }
  if (!cpu_ok) {
    EXPECT_THROW(run(gpu, got, Device::cuda(0)), Error)
        << what << " " << dtype << ": the CPU refuses (" << cpu_error << ") but CUDA ran";
    return false;
  }
  try {
    run(gpu, got, Device::cuda(0));
  } catch (const Error& e) {
    ADD_FAILURE() << what << " " << dtype << ": the CPU runs it but CUDA refuses: " << e.what();
    return false;
  }
  test::Tolerance tol = test::tolerance_for(out_dtype);
  if (out_dtype == kFloat32) tol = {2e-5, 2e-6};  // libm and CUDA's math functions differ by a few ulp
  EXPECT_TRUE(test::all_close(got, want, tol)) << what << " " << dtype;
  return true;
}

TEST(CudaEveryElementwiseOp, UnaryOpsInEveryDtype) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Shape shape{7, 33};
  for (int i = 0; i < ops::kUnaryOpCount; ++i) {
    const auto op = static_cast<UnaryOp>(i);
    const ops::OpInfo& info = ops::unary_info(op);
    const std::string what = std::string("unary op ") + info.name;
    int compared = 0;
    for (DType dtype : kAllDtypes) {
      const Tensor x = test::sweep_input(dtype, 33, 7, 10 + i).transpose(0, 1);  // a strided view
      UnaryParams p;
      p.lo = -0.5, p.hi = dtype == kUInt8 ? 200.0 : 0.75;
      const DType out_dtype = info.result == ops::Result::Bool ? kBool : dtype;
      compared += expect_same(what.c_str(), dtype, out_dtype, shape, [&](Runtime& b, Tensor& out, Device d) {
        const Tensor xd = x.to(d);
        kernel_for<kernel::Unary>(b.type())(op, out.view_of(), xd.view_of(), p);
      });
    }
    EXPECT_EQ(compared, dtypes_accepted(info.domain)) << what << " ran in " << compared << " dtypes";
  }
}

TEST(CudaEveryElementwiseOp, BinaryOpsInEveryDtypeWithBroadcast) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Shape shape{5, 3, 19};
  for (int i = 0; i < ops::kBinaryOpCount; ++i) {
    const auto op = static_cast<BinaryOp>(i);
    const ops::BinaryOpInfo& info = ops::binary_info(op);
    const std::string what = std::string("binary op ") + info.name;
    int compared = 0;
    for (DType dtype : kAllDtypes) {
      const Tensor a = input(dtype, shape, 50 + i, false);
      Tensor b = input(dtype, {3, 1}, 80 + i, op == BinaryOp::Div);  // broadcast over dims 0 and 2
      if (op == BinaryOp::Pow && is_floating(dtype)) b = abs(b);  // real powers of negative bases are NaN
      const DType out_dtype = info.result == ops::Result::Bool ? kBool : dtype;
      compared += expect_same(what.c_str(), dtype, out_dtype, shape, [&](Runtime& be, Tensor& out, Device d) {
        const Tensor ad = a.to(d), bd = b.to(d).expand(shape);
        kernel_for<kernel::Binary>(be.type())(op, out.view_of(), ad.view_of(), bd.view_of());
      });
    }
    EXPECT_EQ(compared, dtypes_accepted(info.domain)) << what << " ran in " << compared << " dtypes";
  }
}

}  // namespace
}  // namespace anvil
