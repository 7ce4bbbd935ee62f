// core/print.cpp: to_string and operator<< of tensors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/ops.h"

namespace anvil {
namespace {

// Printing a summarized tensor chose the number format (and column width)
// from the first and last three values only; a printed value outside those
// (row 1 here) was longer than the width, and padding it with
// width - length spaces underflowed: to_string threw std::length_error.
TEST(Print, PrintingASummarizedTensorFormatsEveryPrintedValue) {
  std::vector<float> v(100 * 100, 0.0f);
  v[100] = -123.25f;  // row 1, column 0: printed, but not a first or last flat value
  Tensor x = from_vector(v, {100, 100});
  std::string s;
  ASSERT_NO_THROW(s = to_string(x));
  EXPECT_NE(s.find("-123.2500"), std::string::npos) << s;
}

}  // namespace
}  // namespace anvil
