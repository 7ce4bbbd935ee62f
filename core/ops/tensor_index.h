#pragma once
/// @file
/// Indexing as libtorch writes it:
///
///     using namespace anvil::indexing;
///     x.index({Slice(1, None, 2), 0, Ellipsis, None});   // a view
///     x.index({mask});                                    // bool mask: a copy
///     x.index({Slice(), idx_a, idx_b});                   // integer tensors: a copy
///     x.index_put_({mask}, 0);
///     x.index_put_({idx}, values, /*accumulate=*/true);   // repeated indices add up
///
/// Integers (negative count from the end), Slice(start, stop, step) (None
/// leaves a bound open; step > 0), None (a new dim of size 1), Ellipsis (all
/// dims not otherwise named), true/false, and tensors: bool masks (each covers
/// as many dims as it has) and int64/int32 index tensors (negative count from
/// the end). As in PyTorch, the index tensors broadcast together; their
/// result dims replace the indexed dims where those are adjacent, and go
/// first when other indices separate them. Without tensors the result is a
/// view of x; with them, a copy. All of it is differentiable.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/tensor.h"

namespace anvil::indexing {

struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};
/// libtorch's None is c10::nullopt: it both opens a Slice bound and adds a dim.
inline constexpr std::nullopt_t None = std::nullopt;

struct Slice {
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start(start), stop(stop), step(step) {}
  std::optional<int64_t> start, stop, step;
};

class TensorIndex {
 public:
  enum class Kind : uint8_t { None, Ellipsis, Integer, Boolean, Slice, Tensor };

  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}  // NOLINT: implicit, as libtorch's
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}  // NOLINT
  TensorIndex(const char* s);  // NOLINT: "..." is Ellipsis
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  TensorIndex(T i) : kind_(Kind::Integer), integer_(static_cast<int64_t>(i)) {}  // NOLINT
  template <typename T, std::enable_if_t<std::is_same_v<T, bool>, int> = 0>
  TensorIndex(T b) : kind_(Kind::Boolean), boolean_(b) {}  // NOLINT
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}  // NOLINT
  TensorIndex(anvil::Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}  // NOLINT

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const anvil::Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  anvil::Tensor tensor_;
};

}  // namespace anvil::indexing

namespace anvil {

/// x[indices] (see the top of the file).
Tensor index(const Tensor& x, const std::vector<indexing::TensorIndex>& indices);
/// A copy of self with self[indices] = values (values broadcast to the
/// indexed shape and of self's dtype), or += values with accumulate, where
/// repeated positions add up. Differentiable for self and values.
Tensor index_put(const Tensor& self, const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                 bool accumulate = false);
///@{
/// In place; a Scalar value is cast to self's dtype.
Tensor& index_put_(Tensor& self, const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                   bool accumulate = false);
Tensor& index_put_(Tensor& self, const std::vector<indexing::TensorIndex>& indices, const Scalar& value);
///@}

}  // namespace anvil
