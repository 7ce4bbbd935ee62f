#pragma once
/// @file
/// One exception type for the whole framework. Messages name the op, the
/// shapes, dtypes and devices involved, and what was expected.
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace anvil {

/// The exception every anvil check throws; its message names the op, the shapes, dtypes and devices involved.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <typename T> void append(std::ostringstream& os, const T& v) { os << v; }
template <typename T> void append(std::ostringstream& os, const std::vector<T>& v) {
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ']';
}
template <typename... Args> std::string concat(const Args&... args) {
  std::ostringstream os;
  (append(os, args), ...);
  return os.str();
}
}  // namespace detail

/// Throws anvil::Error with the arguments streamed into one message.
template <typename... Args> [[noreturn]] void fail(const Args&... args) { throw Error(detail::concat(args...)); }

}  // namespace anvil

/// ANVIL_CHECK(cond, "op: ", "expected ... got ", shape) throws anvil::Error.
#define ANVIL_CHECK(cond, ...) \
  do { \
    if (!(cond)) ::anvil::fail(__VA_ARGS__); \
  } while (0)
