// pixelkit/border.hpp - how operations read pixels outside the image.
//
// The modes and their meanings are OpenCV's (cv::BorderTypes), shown on a row
// abcdefgh extended to the left and right:
//   constant[:V]  VVVVVV|abcdefgh|VVVVVV   (V defaults to 0)
//   replicate     aaaaaa|abcdefgh|hhhhhh
//   reflect       fedcba|abcdefgh|hgfedc
//   reflect101    gfedcb|abcdefgh|gfedcb   (pixelkit's default; seed 002's "mirror")
//   wrap          cdefgh|abcdefgh|abcdef
// Indices arbitrarily far outside the image are folded again and again, so a
// kernel larger than the image is well defined in every mode.
#pragma once

#include <string>

#if defined(__CUDACC__)
#define PIXELKIT_HD __host__ __device__ __forceinline__
#else
#define PIXELKIT_HD inline
#endif

namespace pixelkit {

enum class BorderMode : unsigned char { constant, replicate, reflect, reflect101, wrap };

struct Border {
  BorderMode mode = BorderMode::reflect101;
  float value = 0.0f;  ///< the fill value of BorderMode::constant
};

/// Parses "constant[:V]", "replicate", "reflect", "reflect101", "wrap".
/// Throws invalid_argument naming the text on anything else.
Border parse_border(const std::string& text);
/// The canonical text of a border ("reflect101", "constant:5", ...).
std::string to_string(const Border& border);
const char* to_string(BorderMode mode) noexcept;

/// Maps a coordinate i (any integer) onto 0..n-1 by `mode`; returns -1 for
/// BorderMode::constant when i lies outside (the caller then uses the value).
/// n must be >= 1.
PIXELKIT_HD int border_index(int i, int n, BorderMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case BorderMode::constant:
      return -1;
    case BorderMode::replicate:
      return i < 0 ? 0 : n - 1;
    case BorderMode::reflect: {
      const int period = 2 * n;
      int r = i % period;
      if (r < 0) r += period;
      return r < n ? r : period - 1 - r;
    }
    case BorderMode::reflect101: {
      if (n == 1) return 0;
      const int period = 2 * n - 2;
      int r = i % period;
      if (r < 0) r += period;
      return r < n ? r : period - r;
    }
    case BorderMode::wrap: {
      int r = i % n;
      return r < 0 ? r + n : r;
    }
  }
  return -1;
}

namespace detail {
/// border_index for a coordinate at most one image size outside (a tile's
/// reach, wherever the image is wider than the kernel): one reflection or
/// period, without the division that border_index takes for reflect,
/// reflect101 and wrap; coordinates farther out go through border_index, so
/// the answer is the same. Kept apart from border_index, whose every caller
/// would inline it: in the streaming tensor-core filter kernel it cost 2-6%
/// at 4K and 8K (docs/notes-filter-cuda.md, run 27).
PIXELKIT_HD int border_index_near(int i, int n, BorderMode mode) {
  if (i >= 0 && i < n) return i;
  int q = -1;
  switch (mode) {
    case BorderMode::constant:
      return -1;
    case BorderMode::replicate:
      return i < 0 ? 0 : n - 1;
    case BorderMode::reflect:
      q = i < 0 ? -1 - i : 2 * n - 1 - i;
      break;
    case BorderMode::reflect101:
      q = n == 1 ? 0 : i < 0 ? -i : 2 * n - 2 - i;
      break;
    case BorderMode::wrap:
      q = i < 0 ? i + n : i - n;
      break;
  }
  return q >= 0 && q < n ? q : border_index(i, n, mode);
}
}  // namespace detail

}  // namespace pixelkit
