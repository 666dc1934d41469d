// The reference integral: the definition of the operation, written to be
// obviously right rather than fast.
//
//   sum(X+1, Y+1)   = sum(X+1, Y) + (I(0, Y) + ... + I(X, Y))
//   sqsum likewise with I^2,
// accumulated exactly (int64 for u8) or in f64 (f32) and converted once when
// stored. The tilted table uses the classic recurrence (Lienhart & Maydt),
//   T(X, Y) = T(X-1, Y-1) + T(X+1, Y-1) - T(X, Y-2) + I(X-1, Y-1) + I(X-1, Y-2),
// which holds on the infinite zero-padded image: the cone of (X, Y) is the
// union of the cones of (X-1, Y-1) and (X+1, Y-1), which overlap in the cone of
// (X, Y-2), plus the two pixels on its axis that neither covers. Beyond the
// table's edges, T(-1, Y) = T(0, Y-1) (left of the image a cone's sum depends
// only on X+Y) and T(W+1, Y) = T(W, Y-1) (right of it, only on X-Y).
// tests/test_integral.cpp checks this against the cone definition itself.
#include <cstdint>
#include <vector>

#include "core/view2d.hpp"
#include "integral/integral_backends.hpp"
#include "integral/integral_common.hpp"

namespace pixelkit::detail {

namespace {

template <typename Tin>
void sums_ref(const ConstImageView& src_v, const IntegralTableView& sum, const IntegralTableView& sq) {
  using Acc = typename integral_acc<Tin>::type;
  const auto src = view2d<Tin>(src_v);
  const int W = src.width, H = src.height, C = src.channels;
  const std::size_t n = static_cast<std::size_t>(W + 1) * C;
  // Rows of the tables being built, accumulated in Acc; entry 0..C-1 stays 0.
  std::vector<Acc> s_row(n, Acc(0)), q_row(n, Acc(0));
  if (!sum.empty()) store_entries(sum, 0, 0, s_row.data(), n);
  if (!sq.empty()) store_entries(sq, 0, 0, q_row.data(), n);
  for (int y = 0; y < H; ++y) {
    for (int c = 0; c < C; ++c) {
      Acc line = 0, line_sq = 0;  // I(0..x, y) and its squares, this channel
      for (int x = 0; x < W; ++x) {
        const Acc v = static_cast<Acc>(src.at(y, x, c));
        line += v;
        line_sq += v * v;
        s_row[static_cast<std::size_t>(x + 1) * C + c] += line;
        q_row[static_cast<std::size_t>(x + 1) * C + c] += line_sq;
      }
    }
    if (!sum.empty()) store_entries(sum, y + 1, 0, s_row.data(), n);
    if (!sq.empty()) store_entries(sq, y + 1, 0, q_row.data(), n);
  }
}

template <typename Tin>
void tilted_ref(const ConstImageView& src_v, const IntegralTableView& tilted) {
  using Acc = typename integral_acc<Tin>::type;
  const auto src = view2d<Tin>(src_v);
  const int W = src.width, H = src.height, C = src.channels;
  const std::size_t n = static_cast<std::size_t>(W + 1) * C;
  auto pixel = [&](int x, int y, int c) -> Acc {
    return (x < 0 || x >= W || y < 0 || y >= H) ? Acc(0) : static_cast<Acc>(src.at(y, x, c));
  };
  // Rows Y-2, Y-1 and Y of the table.
  std::vector<Acc> r2(n, Acc(0)), r1(n, Acc(0)), r0(n, Acc(0));
  store_entries(tilted, 0, 0, r1.data(), n);
  for (int Y = 1; Y <= H; ++Y) {
    for (int X = 0; X <= W; ++X)
      for (int c = 0; c < C; ++c) {
        const Acc left = X > 0 ? r1[static_cast<std::size_t>(X - 1) * C + c] : r2[c];
        const Acc right = X < W ? r1[static_cast<std::size_t>(X + 1) * C + c] : r2[static_cast<std::size_t>(W) * C + c];
        r0[static_cast<std::size_t>(X) * C + c] =
            left + right - r2[static_cast<std::size_t>(X) * C + c] + pixel(X - 1, Y - 1, c) + pixel(X - 1, Y - 2, c);
      }
    store_entries(tilted, Y, 0, r0.data(), n);
    r2.swap(r1);  // r2 <- row Y-1
    r1.swap(r0);  // r1 <- row Y
  }
}

}  // namespace

void integral_ref(const ConstImageView& src, const IntegralViews& out) {
  if (src.type == PixelType::u8) {
    if (!out.sum.empty() || !out.sqsum.empty()) sums_ref<std::uint8_t>(src, out.sum, out.sqsum);
    if (!out.tilted.empty()) tilted_ref<std::uint8_t>(src, out.tilted);
  } else {
    if (!out.sum.empty() || !out.sqsum.empty()) sums_ref<float>(src, out.sum, out.sqsum);
    if (!out.tilted.empty()) tilted_ref<float>(src, out.tilted);
  }
}

}  // namespace pixelkit::detail
