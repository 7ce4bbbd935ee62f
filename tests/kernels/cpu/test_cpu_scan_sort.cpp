// The CPU backend's scan and sort (kernels/cpu/scan.cpp, sort.cpp) called
// directly on strided views: transposed inputs and outputs give the same
// values as contiguous ones, 16-bit floats scan in double, every dtype sorts,
// and bad arguments are refused with the op's name.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/runtime.h"

namespace anvil {
namespace {

TEST(CpuScan, StridedViewsMatchContiguousOnes) {
  manual_seed(5);
  const Tensor x = randn({7, 9}, kFloat64);
  const Tensor xt = x.t();  // [9, 7], strided
  for (ScanOp op : {ScanOp::Sum, ScanOp::Prod, ScanOp::LogSumExp}) {
    for (int64_t dim : {0, 1}) {
      Tensor strided_out = empty({7, 9}, kFloat64).t();  // the output strided too
      kernel_for<kernel::Scan>(DeviceType::CPU)(op, strided_out.view_of(), xt.view_of(), dim);
      const Tensor contiguous_in = xt.contiguous();
      Tensor want = empty({9, 7}, kFloat64);
      kernel_for<kernel::Scan>(DeviceType::CPU)(op, want.view_of(), contiguous_in.view_of(), dim);
      EXPECT_EQ(strided_out.contiguous().to_vector<double>(), want.to_vector<double>()) << ops::scan_name(op);
    }
  }
}

TEST(CpuScan, HalfPrecisionAccumulatesInDouble) {
  // 3000 ones: a float16 running sum would stick at 2048 (1 is half its
  // spacing there); the double accumulator keeps counting exactly.
  const Tensor x = ones({3000}, kFloat16);
  Tensor out = empty({3000}, kFloat16);
  kernel_for<kernel::Scan>(DeviceType::CPU)(ScanOp::Sum, out.view_of(), x.view_of(), 0);
  const std::vector<double> v = out.to_vector<double>();
  EXPECT_EQ(v[2999], 3000.0);
  EXPECT_EQ(v[2048], 2048.0);  // 2049 rounds to even in float16
}

TEST(CpuScan, RefusesBadArguments) {
  const Tensor x = zeros({2, 3}, kInt64);
  Tensor out = empty({2, 3}, kInt64);
  try {
    kernel_for<kernel::Scan>(DeviceType::CPU)(ScanOp::LogSumExp, out.view_of(), x.view_of(), 1);
    ADD_FAILURE() << "logcumsumexp of int64 ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("logcumsumexp: not supported for dtype int64"), std::string::npos) << e.what();
  }
  Tensor wrong = empty({3, 2}, kInt64);
  EXPECT_THROW(kernel_for<kernel::Scan>(DeviceType::CPU)(ScanOp::Sum, wrong.view_of(), x.view_of(), 1), Error);
  EXPECT_THROW(kernel_for<kernel::Scan>(DeviceType::CPU)(ScanOp::Sum, out.view_of(), x.view_of(), 2), Error);
}

TEST(CpuSort, EveryDtypeOnStridedViews) {
  manual_seed(6);
  for (DType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    const Tensor x = (randn({5, 11}, kFloat64) * 4.0).to(dtype).t();  // [11, 5], strided
    Tensor values = empty({5, 11}, dtype).t();
    Tensor indices = empty({5, 11}, kInt64).t();
    kernel_for<kernel::Sort>(DeviceType::CPU)(values.view_of(), indices.view_of(), x.view_of(), 0,
                                              SortParams{true, true});
    const std::vector<double> v = values.contiguous().to_vector<double>();
    const std::vector<int64_t> i = indices.contiguous().to_vector<int64_t>();
    const std::vector<double> xs = x.contiguous().to_vector<double>();
    for (int64_t c = 0; c < 5; ++c) {
      for (int64_t r = 0; r < 11; ++r) {
        EXPECT_EQ(v[r * 5 + c], xs[i[r * 5 + c] * 5 + c]) << dtype;  // values are the input's at the indices
        if (r > 0) {
          EXPECT_GE(v[(r - 1) * 5 + c], v[r * 5 + c]) << dtype;  // descending
          if (v[(r - 1) * 5 + c] == v[r * 5 + c]) {
            EXPECT_LT(i[(r - 1) * 5 + c], i[r * 5 + c]) << dtype;  // stable
          }
        }
      }
    }
  }
}

TEST(CpuSort, RefusesBadArguments) {
  const Tensor x = zeros({4});
  Tensor values = empty({4});
  Tensor wrong_indices = empty({4}, kInt32);
  try {
    kernel_for<kernel::Sort>(DeviceType::CPU)(values.view_of(), wrong_indices.view_of(), x.view_of(), 0, {});
    ADD_FAILURE() << "int32 indices accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sort: expected values float32[4] and indices int64[4]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace anvil
