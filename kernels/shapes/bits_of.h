#pragma once
// The unsigned integer type of a given size: copies, gathers and selects that
// only move elements move their bits, so float16 and int16-sized dtypes share
// one loop (or kernel), and so on. Usable in host and device code.
#include <cstddef>
#include <cstdint>

namespace anvil::shapes {

template <size_t Bytes> struct bits_of;
template <> struct bits_of<1> { using type = uint8_t; };
template <> struct bits_of<2> { using type = uint16_t; };
template <> struct bits_of<4> { using type = uint32_t; };
template <> struct bits_of<8> { using type = uint64_t; };

}  // namespace anvil::shapes
