// pixelkit/haar.hpp - the multi-level 2D Haar wavelet transform, seed 000.
//
// Convention and layout are PyWavelets', so results can be checked against it:
// for an image x of any size (odd sizes included) and 1 <= L <= the maximum,
// the coefficient array equals, channel by channel,
//
//     pywt.coeffs_to_array(pywt.wavedec2(x, 'haar', mode='periodization', level=L))[0]
//
// One level maps an approximation of h x w samples to four bands of
// ceil(h/2) x ceil(w/2): a side of odd length is padded by repeating its last
// sample (what PyWavelets' 'periodization' does). For the 2x2 block
//     [a b]
//     [c d]
// the orthonormal transform (filters (1/sqrt2)[1, 1] and (1/sqrt2)[1, -1],
// energy preserving) gives
//     approximation  (a + b + c + d) / 2
//     x-detail       (a - b + c - d) / 2   (right band;    PyWavelets' cV, 'ad')
//     y-detail       (a + b - c - d) / 2   (bottom band;   PyWavelets' cH, 'da')
//     diagonal       (a - b - c + d) / 2   (bottom-right;  PyWavelets' cD, 'dd')
// and `average` normalisation divides by 4 instead of 2 (seed 000's averages
// and half-differences; the seed's detail sign, second - first, is flipped
// here to match PyWavelets). At level k the average coefficients are the
// orthonormal ones divided by 2^k.
//
// The next level transforms the approximation. The array stacks the levels as
// coeffs_to_array does (see HaarLayout): the final approximation top-left,
// then each level's three detail bands, coarsest first; for odd sizes the
// array is larger than the image and the few cells no band covers are 0.
//
// Types: u8 or f32 images with 1, 3 or 4 interleaved channels, any view
// (sub-image views included); coefficients are always f32 with the image's
// channels (an H' x W' x C image). The inverse writes u8 (rounded to nearest,
// ties to even, saturated) or f32, and restores exactly the original width and
// height, which PyWavelets' waverec2 does not for odd sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pixelkit/backend.hpp"
#include "pixelkit/image.hpp"

namespace pixelkit {

enum class HaarNormalize : std::uint8_t {
  orthonormal,  ///< (1/sqrt2)[1, 1] and (1/sqrt2)[1, -1]: PyWavelets' 'haar'
  average,      ///< [1/2, 1/2] and [1/2, -1/2]: averages and half-differences
};

/// Parses "orthonormal" or "average"; throws invalid_argument otherwise.
HaarNormalize parse_haar_normalize(const std::string& text);
const char* to_string(HaarNormalize normalize) noexcept;

/// The largest level count for a width x height image: the number of halvings
/// (rounding up) after which the approximation is 1 pixel on its shorter side,
/// i.e. ceil(log2(min(width, height))), and at least 1 (a 1-pixel-wide image
/// still has one level, as in PyWavelets: its detail bands are all 0).
/// Examples: 512x512 -> 9, 1000x999 -> 10, 3x5 -> 2, 2x2 -> 1, 1x1 -> 1.
/// Throws invalid_argument for a non-positive side.
int haar_max_levels(int width, int height);

/// Where everything lives in the coefficient array of a width x height image
/// transformed to `levels` levels. Level k (1 = finest) has bands of
/// band[k].width x band[k].height (band[0] is the image itself):
///   x-detail  rows [0, h)            columns [x0, x0 + w)
///   y-detail  rows [y0, y0 + h)      columns [0, w)
///   diagonal  rows [y0, y0 + h)      columns [x0, x0 + w)
/// with (w, h) = band[k] size and (x0, y0) = band[k] origin, and the final
/// approximation at rows [0, band[levels].height), columns [0, band[levels].width).
/// x0 is the width of everything coarser (band[levels].width plus the widths
/// of levels levels..k+1), likewise y0.
struct HaarLayout {
  struct Band {
    int width = 0;
    int height = 0;
    int x0 = 0;  ///< first column of this level's x-detail and diagonal bands
    int y0 = 0;  ///< first row of this level's y-detail and diagonal bands
  };
  int width = 0;   ///< the image
  int height = 0;
  int levels = 0;
  int coeff_width = 0;   ///< the coefficient array (>= the image's sides)
  int coeff_height = 0;
  std::vector<Band> band;  ///< levels + 1 entries; band[0] = the image

  /// Detail coefficients per channel (3 bands per level).
  std::size_t detail_count() const noexcept;
  /// Approximation coefficients per channel.
  std::size_t approx_count() const noexcept;
};

/// The layout for a width x height image and 1 <= levels <= haar_max_levels.
/// Throws invalid_argument naming the maximum when levels is out of range.
HaarLayout haar_layout(int width, int height, int levels);

/// A reusable transform for a fixed level count and normalisation. On cuda it
/// keeps grow-only device scratch, so that calling it frame after frame
/// allocates nothing once the largest size has been seen.
///
/// cuda: with src and coeffs (or coeffs and dst) in device memory the work is
/// queued on options.stream and the call returns at once; with host views the
/// image is uploaded once, every level is computed on the device and the
/// result downloaded once, and the call returns when the result is in place.
class HaarTransform {
 public:
  explicit HaarTransform(int levels, HaarNormalize normalize = HaarNormalize::orthonormal);
  ~HaarTransform();
  HaarTransform(HaarTransform&&) noexcept;
  HaarTransform& operator=(HaarTransform&&) noexcept;

  /// src: u8 or f32, 1/3/4 channels. coeffs: f32, same channels, exactly
  /// haar_layout(src.width, src.height, levels).coeff_width x coeff_height.
  /// Throws invalid_argument for levels outside 1..haar_max_levels(src),
  /// mismatched or overlapping views; unsupported for a backend this build
  /// lacks.
  void forward(const ConstImageView& src, const ImageView& coeffs, const Options& options = {});

  /// coeffs as forward() writes them for a dst.width x dst.height image;
  /// dst: u8 or f32 with the coefficients' channels. Same errors as forward.
  void inverse(const ConstImageView& coeffs, const ImageView& dst, const Options& options = {});

  int levels() const noexcept;
  HaarNormalize normalize() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// One-shot conveniences: HaarTransform(levels, normalize).forward / inverse.
void haar_forward(const ConstImageView& src, const ImageView& coeffs, int levels,
                  HaarNormalize normalize = HaarNormalize::orthonormal, const Options& options = {});
void haar_inverse(const ConstImageView& coeffs, const ImageView& dst, int levels,
                  HaarNormalize normalize = HaarNormalize::orthonormal, const Options& options = {});

/// What haar_keep_largest did.
struct HaarKeepStats {
  std::size_t details = 0;  ///< detail coefficients considered (all bands, all channels)
  std::size_t kept = 0;     ///< of those, left unchanged (the rest are now 0)
  std::size_t approx = 0;   ///< approximation coefficients (always kept)
};

/// Compression by thresholding: keeps the ceil(keep * details) detail
/// coefficients of largest magnitude (over every band and channel), sets the
/// others to 0; the approximation is never touched. Host memory only.
/// Throws invalid_argument unless 0 < keep <= 1 or if coeffs does not match
/// `layout`.
HaarKeepStats haar_keep_largest(const ImageView& coeffs, const HaarLayout& layout, double keep);

/// A coefficient file's contents: the array and what the inverse needs.
struct HaarCoefficients {
  Image coeffs;  ///< f32, H' x W' x C
  int width = 0;
  int height = 0;
  int levels = 0;
  HaarNormalize normalize = HaarNormalize::orthonormal;
  PixelType source_type = PixelType::f32;  ///< the transformed image's type
};

/// Writes an uncompressed NumPy .npz, atomically, holding
///   coeffs     float32 (H', W') or (H', W', C)
///   levels, height, width   int64 scalars
///   normalize  uint8 ASCII text: bytes(npz['normalize']).decode() is
///              'orthonormal' or 'average'
///   dtype      uint8 ASCII text: 'uint8' or 'float32', the source image's type
///   pixelkit_haar  int64 scalar 1 (the format version)
/// coeffs must be host memory matching haar_layout(width, height, levels).
void write_haar_npz(const std::string& path, const ConstImageView& coeffs, int width, int height, int levels,
                    HaarNormalize normalize, PixelType source_type);

/// Reads what write_haar_npz wrote (or numpy.savez with the same members).
/// Throws io when the file is unreadable, truncated, not an .npz, or not a
/// pixelkit Haar coefficient file (a member missing, of the wrong type or
/// shape, or inconsistent with the others), naming the path and the reason.
HaarCoefficients read_haar_npz(const std::string& path);

}  // namespace pixelkit
