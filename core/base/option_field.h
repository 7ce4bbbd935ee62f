#pragma once
/// @file
/// Options structs that read both ways: as aggregates with designated
/// initializers (anvil's spelling) and with libtorch's chained setters.
///
///     struct Conv2dOptions {
///       ANVIL_OPTION(Conv2dOptions, int64_t, in_channels) = 0;
///       ANVIL_OPTION(Conv2dOptions, Size2, stride) = 1;
///     };
///     Conv2dOptions{.in_channels = 3, .stride = 2}  // aggregate, as before
///     Conv2dOptions(3).stride(2)                     // libtorch: C++20 parenthesized aggregate init, then setters
///     options.stride.h, options.in_channels * 2      // reads: the field is (or converts to) its value
///     options.stride()                               // libtorch's getter
///
/// C++ cannot give a data member and a member function one name, so the
/// member is an OptionField: it holds the value (deriving from a class type,
/// wrapping a scalar), and its call operator sets it and returns the struct
/// that holds it, found from the field's offset in that struct (the
/// container_of idiom; the struct must be standard-layout, which is checked).
/// A setter returns a reference, as libtorch's do: copy the result
/// (`auto o = Conv2dOptions(3).stride(2);`), don't bind it to a reference.
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace anvil {

namespace detail {

template <class Owner, class Offset> Owner& owner_of(void* field) {
  static_assert(std::is_standard_layout_v<Owner>,
                "ANVIL_OPTION: the options struct must be standard-layout (its fields found by offset)");
  return *reinterpret_cast<Owner*>(static_cast<char*>(field) - Offset::value());
}

}  // namespace detail

/// A field of class type T (Size2, std::optional, Shape): is a T, so its
/// members and T's operators work on it directly.
template <class T, class Owner, class Offset, bool = std::is_class_v<T>> struct OptionField : T {
  using T::T;
  OptionField() = default;
  /// From a value of T (implicit, as the plain field was).
  OptionField(const T& v) : T(v) {}  // NOLINT: implicit, as the plain field was
  /// From a value of T, moved (implicit, as the plain field was).
  OptionField(T&& v) : T(std::move(v)) {}  // NOLINT
  /// A template, so that `field = 3` prefers T's assignment over building a field first.
  template <class U>
  requires std::assignable_from<T&, U&&> OptionField& operator=(U&& v) {
    static_cast<T&>(*this) = std::forward<U>(v);
    return *this;
  }
  /// libtorch's setter: sets the value and returns the options struct, so setters chain.
  Owner& operator()(T v) {
    static_cast<T&>(*this) = std::move(v);
    return detail::owner_of<Owner, Offset>(this);
  }
  const T& operator()() const { return *this; }  ///< libtorch's getter: the value.
};

/// A field of scalar type T (int64_t, double, bool): converts to its value.
template <class T, class Owner, class Offset> struct OptionField<T, Owner, Offset, false> {
  T value{};  ///< the field's value
  OptionField() = default;
  /// From anything that converts to T, another struct's field of the same kind included.
  template <class U>
  requires std::convertible_to<U, T> OptionField(U&& v)
      : value(static_cast<T>(std::forward<U>(v))) {}  // NOLINT: implicit, as the plain field was
  /// The value (implicit, so the field reads as a plain T).
  operator T() const { return value; }  // NOLINT
  /// Sets the value.
  OptionField& operator=(T v) {
    value = v;
    return *this;
  }
  /// libtorch's setter: sets the value and returns the options struct, so setters chain.
  Owner& operator()(T v) {
    value = v;
    return detail::owner_of<Owner, Offset>(this);
  }
  T operator()() const { return value; }  ///< libtorch's getter: the value.
};

}  // namespace anvil

/// Declares field `name` of type T in options struct Owner; follow it with
/// `= default_value;`. (T must not contain a comma: use an alias.)
#define ANVIL_OPTION(Owner, T, name) \
  struct name##_offset { \
    static constexpr std::size_t value() { return offsetof(Owner, name); } \
  }; \
  ::anvil::OptionField<T, Owner, name##_offset> name
