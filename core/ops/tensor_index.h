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
inline constexpr EllipsisIndexType Ellipsis{};  ///< All the dims not otherwise named, as Python's `...`.
/// libtorch's None is c10::nullopt: it both opens a Slice bound and adds a dim.
inline constexpr std::nullopt_t None = std::nullopt;

/// start:stop:step, as Python's slice: a bound left open (None) covers the dim to its end.
struct Slice {
  /// Slice(), Slice(1), Slice(1, None, 2): absent bounds are open; the step defaults to 1.
  Slice(std::optional<int64_t> start_index = std::nullopt, std::optional<int64_t> stop_index = std::nullopt,
        std::optional<int64_t> step_index = std::nullopt)
      : start(start_index), stop(stop_index), step(step_index) {}
  ///@{
  /// the bounds and the step; nullopt: open (the step: 1)
  std::optional<int64_t> start, stop, step;
  ///@}
};

/// One entry of an index list: None, Ellipsis, an integer, a bool, a Slice or a tensor (implicit from each).
class TensorIndex {
 public:
  // libtorch's names (TensorIndexType): None and Ellipsis are scoped here,
  // so the namespace's constants of those names stay reachable; GCC's
  // -Wshadow flags them all the same.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
  /// What the entry is.
  enum class Kind : uint8_t { None, Ellipsis, Integer, Boolean, Slice, Tensor };
#pragma GCC diagnostic pop

  /// None: a new dim of size 1.
  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}  // NOLINT: implicit, as libtorch's
  /// Ellipsis: every dim not otherwise named.
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}  // NOLINT
  /// "..." is Ellipsis (any other string is an error).
  TensorIndex(const char* s);  // NOLINT: "..." is Ellipsis
  /// An integer: selects one index (negative counts from the end) and drops the dim.
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  TensorIndex(T i) : kind_(Kind::Integer), integer_(static_cast<int64_t>(i)) {}  // NOLINT
  /// true adds a dim of size 1, false one of size 0, as PyTorch's.
  template <typename T, std::enable_if_t<std::is_same_v<T, bool>, int> = 0>
  TensorIndex(T b) : kind_(Kind::Boolean), boolean_(b) {}  // NOLINT
  /// A Slice of the dim.
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}  // NOLINT
  /// A bool mask or an int64/int32 index tensor.
  TensorIndex(anvil::Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}  // NOLINT

  Kind kind() const { return kind_; }  ///< Which of the forms this is.
  int64_t integer() const { return integer_; }  ///< The integer (Kind::Integer).
  bool boolean() const { return boolean_; }  ///< The bool (Kind::Boolean).
  const Slice& slice() const { return slice_; }  ///< The slice (Kind::Slice).
  const anvil::Tensor& tensor() const { return tensor_; }  ///< The tensor (Kind::Tensor).

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
