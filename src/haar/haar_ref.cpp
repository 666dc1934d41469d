// The reference Haar transform: the definition of the operation, written to
// be obviously right rather than fast. Seed 000's separable loops: one level
// is a 1D transform of every row, then of every column of that result, on the
// current approximation; the next level repeats it on the new approximation.
// Everything is held in double precision until the coefficients are stored.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/view2d.hpp"
#include "haar/haar_backends.hpp"

namespace pixelkit::detail {

namespace {

// A dense h x w x c array of doubles.
struct Plane {
  int w = 0, h = 0, c = 0;
  std::vector<double> v;
  Plane(int w_, int h_, int c_) : w(w_), h(h_), c(c_), v(static_cast<std::size_t>(w_) * h_ * c_) {}
  double& at(int y, int x, int ch) { return v[(static_cast<std::size_t>(y) * w + x) * c + ch]; }
};

// 1D filter gain per pass: (1/sqrt2) orthonormal, 1/2 average. The inverse
// pass gain makes inverse(forward(x)) == x: 1/sqrt2 again, or 1.
double forward_gain(HaarNormalize n) { return n == HaarNormalize::average ? 0.5 : 1.0 / std::sqrt(2.0); }
double inverse_gain(HaarNormalize n) { return n == HaarNormalize::average ? 1.0 : 1.0 / std::sqrt(2.0); }

void zero_gaps(const View2D<float>& out, const HaarLayout& l) {
  const int ch = out.channels;
  for (int k = 1; k <= l.levels; ++k) {
    const auto& b = l.band[k];
    // Below the x-detail band, and between the y-detail and diagonal bands.
    for (int y = b.height; y < b.y0; ++y)
      for (int x = b.x0; x < b.x0 + b.width; ++x)
        for (int c = 0; c < ch; ++c) out.at(y, x, c) = 0.0f;
    for (int y = b.y0; y < b.y0 + b.height; ++y)
      for (int x = b.width; x < b.x0; ++x)
        for (int c = 0; c < ch; ++c) out.at(y, x, c) = 0.0f;
  }
}

template <typename T>
void forward_t(const ConstImageView& src_v, const ImageView& coeffs_v, const HaarLayout& l, HaarNormalize n) {
  const auto src = view2d<T>(src_v);
  const auto out = view2d<float>(coeffs_v);
  const int C = src.channels;
  const double g = forward_gain(n);
  Plane a(src.width, src.height, C);
  for (int y = 0; y < a.h; ++y)
    for (int x = 0; x < a.w; ++x)
      for (int c = 0; c < C; ++c) a.at(y, x, c) = static_cast<double>(src.at(y, x, c));
  for (int k = 1; k <= l.levels; ++k) {
    const auto& b = l.band[k];
    // Rows: lo | hi halves, the odd last sample paired with itself.
    Plane lo(b.width, a.h, C), hi(b.width, a.h, C);
    for (int y = 0; y < a.h; ++y)
      for (int j = 0; j < b.width; ++j) {
        const int x0 = 2 * j, x1 = std::min(2 * j + 1, a.w - 1);
        for (int c = 0; c < C; ++c) {
          lo.at(y, j, c) = g * (a.at(y, x0, c) + a.at(y, x1, c));
          hi.at(y, j, c) = g * (a.at(y, x0, c) - a.at(y, x1, c));
        }
      }
    // Columns of both halves.
    Plane next(b.width, b.height, C);
    for (int i = 0; i < b.height; ++i) {
      const int y0 = 2 * i, y1 = std::min(2 * i + 1, a.h - 1);
      for (int j = 0; j < b.width; ++j)
        for (int c = 0; c < C; ++c) {
          next.at(i, j, c) = g * (lo.at(y0, j, c) + lo.at(y1, j, c));
          out.at(i, b.x0 + j, c) = static_cast<float>(g * (hi.at(y0, j, c) + hi.at(y1, j, c)));
          out.at(b.y0 + i, j, c) = static_cast<float>(g * (lo.at(y0, j, c) - lo.at(y1, j, c)));
          out.at(b.y0 + i, b.x0 + j, c) = static_cast<float>(g * (hi.at(y0, j, c) - hi.at(y1, j, c)));
        }
    }
    a = std::move(next);
  }
  for (int y = 0; y < a.h; ++y)
    for (int x = 0; x < a.w; ++x)
      for (int c = 0; c < C; ++c) out.at(y, x, c) = static_cast<float>(a.at(y, x, c));
  zero_gaps(out, l);
}

template <typename T>
void inverse_t(const ConstImageView& coeffs_v, const ImageView& dst_v, const HaarLayout& l, HaarNormalize n) {
  const auto in = view2d<float>(coeffs_v);
  const auto dst = view2d<T>(dst_v);
  const int C = in.channels;
  const double g = inverse_gain(n);
  const auto& top = l.band[l.levels];
  Plane a(top.width, top.height, C);
  for (int y = 0; y < a.h; ++y)
    for (int x = 0; x < a.w; ++x)
      for (int c = 0; c < C; ++c) a.at(y, x, c) = in.at(y, x, c);
  for (int k = l.levels; k >= 1; --k) {
    const auto& b = l.band[k];
    const auto& up = l.band[k - 1];  // the size this level restores
    // Columns: the row-lowpass and row-highpass halves, cropped to up.height.
    Plane lo(b.width, up.height, C), hi(b.width, up.height, C);
    for (int i = 0; i < b.height; ++i)
      for (int j = 0; j < b.width; ++j)
        for (int c = 0; c < C; ++c) {
          const double ll = a.at(i, j, c), xd = in.at(i, b.x0 + j, c);
          const double yd = in.at(b.y0 + i, j, c), dd = in.at(b.y0 + i, b.x0 + j, c);
          lo.at(2 * i, j, c) = g * (ll + yd);
          hi.at(2 * i, j, c) = g * (xd + dd);
          if (2 * i + 1 < up.height) {
            lo.at(2 * i + 1, j, c) = g * (ll - yd);
            hi.at(2 * i + 1, j, c) = g * (xd - dd);
          }
        }
    // Rows, cropped to up.width.
    Plane next(up.width, up.height, C);
    for (int y = 0; y < up.height; ++y)
      for (int j = 0; j < b.width; ++j)
        for (int c = 0; c < C; ++c) {
          next.at(y, 2 * j, c) = g * (lo.at(y, j, c) + hi.at(y, j, c));
          if (2 * j + 1 < up.width) next.at(y, 2 * j + 1, c) = g * (lo.at(y, j, c) - hi.at(y, j, c));
        }
    a = std::move(next);
  }
  for (int y = 0; y < a.h; ++y)
    for (int x = 0; x < a.w; ++x)
      for (int c = 0; c < C; ++c) {
        const double v = a.at(y, x, c);
        if constexpr (std::is_same_v<T, std::uint8_t>) {
          const double r = std::nearbyint(v);
          dst.at(y, x, c) = static_cast<std::uint8_t>(r < 0 ? 0 : (r > 255 ? 255 : r));
        } else {
          dst.at(y, x, c) = static_cast<float>(v);
        }
      }
}

}  // namespace

void haar_forward_ref(const ConstImageView& src, const ImageView& coeffs, const HaarLayout& layout,
                      HaarNormalize normalize) {
  if (src.type == PixelType::u8) forward_t<std::uint8_t>(src, coeffs, layout, normalize);
  else forward_t<float>(src, coeffs, layout, normalize);
}

void haar_inverse_ref(const ConstImageView& coeffs, const ImageView& dst, const HaarLayout& layout,
                      HaarNormalize normalize) {
  if (dst.type == PixelType::u8) inverse_t<std::uint8_t>(coeffs, dst, layout, normalize);
  else inverse_t<float>(coeffs, dst, layout, normalize);
}

}  // namespace pixelkit::detail
