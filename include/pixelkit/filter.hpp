// pixelkit/filter.hpp - 2D kernel filtering (convolution), seeds 002 and 004.
//
// Semantics are those of OpenCV's filter2D: correlation (the kernel is not
// flipped) with the anchor at the kernel's centre, each channel on its own.
// u8 results are rounded to nearest (ties to even) and saturated to 0..255;
// f32 results are stored unchanged. Kernel sides are odd, 1..31, and need not
// be square.
//
// Types: u8 and f32 images with 1, 3 or 4 interleaved channels; src and dst
// have the same size, type and channels, and must not overlap. Any view,
// including sub-image views, is accepted.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pixelkit/backend.hpp"
#include "pixelkit/border.hpp"
#include "pixelkit/image.hpp"

namespace pixelkit {

/// A filter kernel: width x height coefficients in row-major order. If the
/// kernel is rank 1 (box, Gaussian, any outer product) `separable` is set and
/// coeffs(y, x) == col[y] * row[x] within float rounding.
struct Kernel {
  static constexpr int kMaxSide = 31;

  int width = 0;
  int height = 0;
  std::vector<float> coeffs;  ///< height * width, row-major
  bool separable = false;
  std::vector<float> row;  ///< width factors (horizontal pass), if separable
  std::vector<float> col;  ///< height factors (vertical pass), if separable
  std::string name;        ///< the spec it came from, for messages and logs

  float at(int y, int x) const { return coeffs[static_cast<std::size_t>(y) * width + x]; }
  int radius_x() const { return width / 2; }
  int radius_y() const { return height / 2; }

  /// Builds a kernel from explicit coefficients; checks the sides and detects
  /// separability. Throws invalid_argument.
  static Kernel from_matrix(int width, int height, std::vector<float> coeffs,
                            std::string name = "matrix");
  /// A separable kernel from its two factors (exactly rank 1).
  static Kernel from_factors(std::vector<float> row, std::vector<float> col,
                             std::string name = "separable");

  static Kernel box(int n);                           ///< n x n, all 1/n^2
  static Kernel gaussian(int n, double sigma = 0.0);  ///< OpenCV getGaussianKernel outer product
  static Kernel sharpen();                            ///< [0 -1 0; -1 5 -1; 0 -1 0]
  static Kernel edge();                               ///< [-1 -1 -1; -1 8 -1; -1 -1 -1]
  static Kernel laplacian();                          ///< [0 1 0; 1 -4 1; 0 1 0]
  static Kernel emboss();                             ///< [-2 -1 0; -1 1 1; 0 1 2]
  static Kernel unsharp(int n, double amount = 1.0);  ///< (1+a) identity - a gaussian:n
};

/// OpenCV's getGaussianKernel(n, sigma, CV_64F): sigma <= 0 gives
/// 0.3*((n-1)*0.5 - 1) + 0.8; the small fixed tables OpenCV uses for n <= 9
/// with sigma <= 0 are reproduced. Throws invalid_argument for even or bad n.
std::vector<double> gaussian_coefficients(int n, double sigma);

/// Parses a kernel specification:
///   box:N  gaussian:N[:SIGMA]  sharpen  edge  laplacian  emboss
///   unsharp:N[:AMOUNT]  "a,b,c;d,e,f;g,h,i[/DIVISOR]"  @FILE
/// @FILE holds the inline syntax over lines (rows on lines or separated by ';',
/// '#' starts a comment, an optional last line "/DIVISOR").
/// Throws invalid_argument (or io for an unreadable @FILE) with a message that
/// quotes the offending text.
Kernel parse_kernel(const std::string& spec);

/// A reusable filter: the kernel is prepared (and uploaded, on cuda) once, and
/// device scratch grows to the largest image seen, so calling it on frame
/// after frame allocates nothing.
///
/// On cuda, device images are filtered asynchronously on options.stream.
/// Host images (pageable or pinned) are filtered through device buffers in
/// horizontal strips on several streams so that upload, compute and download
/// overlap; the call returns when dst holds the result.
///
/// One Filter2D may be used on several streams, but is not safe to call from
/// several threads at once: use one per thread. Destroying one that has run
/// the dense tensor-core kernel waits for the device (the kernel may still be
/// using the filter's tile counters), so the one-shot filter2d() returns only
/// when such work is done.
class Filter2D {
 public:
  explicit Filter2D(const Kernel& kernel, const Border& border = {});
  ~Filter2D();
  Filter2D(Filter2D&&) noexcept;
  Filter2D& operator=(Filter2D&&) noexcept;

  /// Filters src into dst. Throws invalid_argument for mismatched or
  /// overlapping views, unsupported for a backend this build lacks.
  void operator()(const ConstImageView& src, const ImageView& dst, const Options& options = {});

  const Kernel& kernel() const noexcept;
  const Border& border() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// One-shot convenience: Filter2D(kernel, border)(src, dst, options).
void filter2d(const ConstImageView& src, const ImageView& dst, const Kernel& kernel,
              const Border& border = {}, const Options& options = {});

}  // namespace pixelkit
