// Every row of the reduction table (kernels/ops/reduce_ops.h) in every dtype,
// through the backends directly: CUDA must give the CPU's result where the
// table accepts the dtype (the CPU itself is held to the definitions by
// tests/kernels/ops/test_reduce_table.cpp) and refuse with the CPU's message
// where it does not. Inputs are strided views carrying the dtype's special
// values (+-0, +-inf, NaN, subnormals, the extremes); each op runs along rows
// and along columns, short and long (the kernels' warp-per-row, block-per-row,
// split and column paths).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>
#include <string>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/runtime.h"
#include "kernels/ops/reduce_ops.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/ops/op_sweep_inputs.h"

namespace anvil {
namespace {

const DType kAllDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};
const double kNormOrders[] = {2.0, 1.0, 0.0, 3.0, INFINITY, -INFINITY};

std::string error_of(Runtime& backend, ReduceOp op, const Tensor& out, const Tensor& in, const ReduceParams& p) {
  try {
    kernel_for<kernel::Reduce>(backend.type())(op, out.view_of(), in.view_of(), p);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Reduces dim `dim` of x on both backends and compares; true when both ran.
bool expect_same(ReduceOp op, const Tensor& x, int64_t dim, const ReduceParams& p) {
  const ops::ReduceInfo& info = ops::reduce_info(op);
  std::string what = std::string(info.name) + " over dim " + std::to_string(dim) + " of " + x.shape_str() + " " +
                     dtype_name(x.dtype());
  if (op == ReduceOp::Norm) what += " (p = " + std::to_string(p.p) + ")";
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(dim)] = 1;
  const DType result = ops::reduce_result_dtype(op, x.dtype());
  Tensor want = empty(out_shape, TensorOptions(result));
  Tensor got = empty(out_shape, TensorOptions(result).device(Device::cuda(0)));
  const Tensor xc = x.cuda().transpose(0, 1).contiguous().transpose(0, 1);  // the same strides on the GPU
  const std::string cpu_error = error_of(runtime_for(DeviceType::CPU), op, want, x, p);
  const std::string gpu_error = error_of(runtime_for(DeviceType::CUDA), op, got, xc, p);
  EXPECT_EQ(gpu_error, cpu_error) << what;
  EXPECT_EQ(cpu_error.empty(), ops::reduce_accepts(op, x.dtype())) << what << ": " << cpu_error;
  if (!cpu_error.empty() || !gpu_error.empty()) return false;
  const test::Tolerance tol = test::tolerance_for(result);
  if (op == ReduceOp::Sum || op == ReduceOp::Mean) {
    // A sum's rounding depends on its order (float partials on the GPU, double
    // on the CPU) and is bounded by eps times the sum of the terms' magnitudes,
    // not of the result: [big, -big, 1.5] may sum to 0 or to 1.5.
    Tensor scale = sum(abs(x.to(kFloat64)), {dim}, true);
    if (op == ReduceOp::Mean) scale = scale / static_cast<double>(x.shape()[static_cast<size_t>(dim)]);
    const std::vector<double> g = got.cpu().to_vector<double>(), w = want.to_vector<double>(),
                              m = scale.to_vector<double>();
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::isnan(w[i]) || std::isinf(w[i])) {
        EXPECT_TRUE(std::isnan(w[i]) ? std::isnan(g[i]) : g[i] == w[i]) << what << " at " << i << ": got " << g[i];
      } else {
        EXPECT_LE(std::abs(g[i] - w[i]), tol.atol + tol.rtol * std::max(std::abs(w[i]), m[i]))
            << what << " at " << i << ": got " << g[i] << ", want " << w[i];
      }
    }
    return true;
  }
  EXPECT_TRUE(test::all_close(got, want, tol)) << what;
  return true;
}

TEST(CudaEveryReduction, EveryTableRowInEveryDtypeMatchesTheCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (int i = 0; i < ops::kReduceOpCount; ++i) {
    const auto op = static_cast<ReduceOp>(i);
    int compared = 0;
    for (DType dtype : kAllDtypes) {
      // Short slices ([7, 33]) and long ones ([5, 3000]), both transposed views.
      for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{7, 33}, {5, 3000}}) {
        const Tensor x = test::sweep_input(dtype, cols, rows, 3 + i).transpose(0, 1);
        for (int64_t dim : {1, 0}) {
          // A product of thousands of values leaves the float range, where it
          // lands then depends on the order and the accumulator's range.
          if (op == ReduceOp::Prod && x.shape()[static_cast<size_t>(dim)] > 100) continue;
          if (op == ReduceOp::Norm) {
            for (double order : kNormOrders) compared += expect_same(op, x, dim, ReduceParams{1, order});
          } else {
            compared += expect_same(op, x, dim, ReduceParams{1, 2.0});
          }
        }
      }
    }
    const int accepted = ops::reduce_info(op).inputs == ReduceInputs::AnyDType ? 8 : 4;
    const int per_dtype = op == ReduceOp::Norm ? 2 * 2 * 6 : op == ReduceOp::Prod ? 3 : 2 * 2;
    EXPECT_EQ(compared, accepted * per_dtype) << ops::reduce_info(op).name;
  }
}

}  // namespace
}  // namespace anvil
