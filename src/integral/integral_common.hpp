// Host-side helpers shared by the ref and cpu integral backends: the
// accumulator type of each input type and the one conversion to a table's
// element type, applied when an entry is stored.
#pragma once

#include <cstddef>
#include <cstdint>

#include "pixelkit/error.hpp"
#include "pixelkit/integral.hpp"

namespace pixelkit::detail {

/// Exact 64-bit integers for u8 images (every table type of a u8 image is the
/// exact value converted: u32 modulo 2^32, f64 exact below 2^53), f64 for f32.
template <typename Tin> struct integral_acc;
template <> struct integral_acc<std::uint8_t> { using type = std::int64_t; };
template <> struct integral_acc<float> { using type = double; };

template <typename T>
inline T* table_row(const IntegralTableView& t, int y) {
  return reinterpret_cast<T*>(static_cast<unsigned char*>(t.data) + static_cast<std::ptrdiff_t>(y) * t.pitch);
}

/// Calls f(T{}) with T the element type of `type`.
template <typename F>
decltype(auto) with_table_type(TableType type, F&& f) {
  switch (type) {
    case TableType::u32: return f(std::uint32_t{});
    case TableType::i64: return f(std::int64_t{});
    case TableType::u64: return f(std::uint64_t{});
    case TableType::f32: return f(float{});
    case TableType::f64: return f(double{});
    case TableType::automatic: break;
  }
  throw Error(Status::internal, "integral: table type not resolved");
}

/// Stores n accumulated entries into row y of t from element offset `first`.
template <typename Acc>
inline void store_entries(const IntegralTableView& t, int y, std::size_t first, const Acc* v, std::size_t n) {
  with_table_type(t.type, [&](auto tag) {
    using T = decltype(tag);
    T* out = table_row<T>(t, y) + first;
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<T>(v[i]);
  });
}

/// Writes zeros to a whole table row.
inline void zero_row(const IntegralTableView& t, int y) {
  with_table_type(t.type, [&](auto tag) {
    using T = decltype(tag);
    T* out = table_row<T>(t, y);
    const std::size_t n = static_cast<std::size_t>(t.width) * t.channels;
    for (std::size_t i = 0; i < n; ++i) out[i] = T(0);
  });
}

}  // namespace pixelkit::detail
