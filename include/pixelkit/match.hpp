// pixelkit/match.hpp - template matching with a colour check of the match (seed 001).
//
// The six methods of OpenCV's matchTemplate, with OpenCV's definitions and
// result size (W - w + 1) x (H - h + 1) for a W x H image and a w x h template.
// For the window whose top-left pixel is (x, y), with I the image, T the
// template and M the mask (1 where the mask is non-zero, 0 elsewhere; all 1
// without a mask), sums over the template's pixels (i, j) and channels c:
//
//   sqdiff         R = sum M (T - I)^2
//   sqdiff_normed  R = sum M (T - I)^2 / sqrt(sum M T^2 * sum M I^2)
//   ccorr          R = sum M T I
//   ccorr_normed   R = sum M T I / sqrt(sum M T^2 * sum M I^2)
//   ccoeff         R = sum M T' I'   with T' = T - mean_M(T), I' = I - mean_M(I)
//                                    (means per channel, over the mask's pixels)
//   ccoeff_normed  R = sum M T' I' / sqrt(sum M T'^2 * sum M I'^2)
//
// A colour (3-channel) score sums over the channels, as OpenCV does; a mask
// has 1 channel (applied to every channel) or the template's channels.
//
// Numerics, identical on every backend:
//   * Sums are exact for u8 images: the products, window sums and
//     correlations are accumulated in integers or in f64 and, where an FFT
//     computes them, rounded back to the exact integer (the FFT's error bound
//     is checked first). Scores are then formed in f64 with one formula shared
//     by every backend and stored as f32, so a u8 score map is bit-identical
//     on ref, cpu and cuda, with either strategy. f32 images are summed in f64
//     (FFT: f64 transforms) and agree with ref to about 1e-6 relative.
//   * Normalised scores are clamped to their range: sqdiff_normed to [0, 1]
//     (as OpenCV), ccorr_normed and ccoeff_normed to [-1, 1].
//   * Degenerate windows, as OpenCV defines them: the denominator counts as
//     zero when its window part (sum M I^2, or sum M I'^2 for ccoeff_normed) is
//     at most min(0.5, 10 * FLT_EPSILON * sum M I^2), or when the template part
//     is zero. A zero denominator gives 1 for sqdiff_normed and 0 for
//     ccorr_normed and ccoeff_normed, except that a flat template (all masked
//     pixels equal) gives 1 everywhere for ccoeff_normed, as in OpenCV. Never
//     NaN.
//
// The best match is the minimum for the sqdiff methods and the maximum
// otherwise, taken over the f32 score map; ties go to the first position in
// row-major order. Several matches: greedy non-maximum suppression, i.e. the
// best position, then the best position at Chebyshev distance >= min_distance
// from every match already taken, and so on (the same algorithm on every
// backend, so the same matches).
//
// The colour check counts, inside each match's w x h rectangle of the image
// (which must be 3-channel u8, RGB order as read_image gives), the pixels whose
// HSV value lies in an inclusive range, HSV being OpenCV's 8-bit conversion
// (cvtColor COLOR_RGB2HSV: H in 0..179, S and V in 0..255), bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pixelkit/backend.hpp"
#include "pixelkit/image.hpp"

namespace pixelkit {

enum class MatchMethod : std::uint8_t { sqdiff, sqdiff_normed, ccorr, ccorr_normed, ccoeff, ccoeff_normed };

/// "sqdiff", "sqdiff_normed", "ccorr", "ccorr_normed", "ccoeff", "ccoeff_normed".
const char* to_string(MatchMethod method) noexcept;
/// Parses the names above; throws invalid_argument quoting the text otherwise.
MatchMethod parse_match_method(const std::string& text);
/// True for sqdiff and sqdiff_normed (the best match is the minimum).
inline bool lower_is_better(MatchMethod m) noexcept {
  return m == MatchMethod::sqdiff || m == MatchMethod::sqdiff_normed;
}

/// How the correlation sums are computed: direct evaluation over the template
/// (SIMD + threads on cpu, shared-memory tiles on cuda) or FFT
/// cross-correlation plus integral-image window sums (cuFFT on cuda, OpenCV's
/// dft on cpu). `automatic` chooses per call with a cost model calibrated by
/// bench/bench_match_gpu.cu and bench/bench_match_cpu.cpp. The ref backend
/// always evaluates the definition directly and ignores the strategy.
enum class MatchStrategy : std::uint8_t { automatic, direct, fft };
const char* to_string(MatchStrategy strategy) noexcept;
/// "auto", "direct", "fft"; throws invalid_argument otherwise.
MatchStrategy parse_match_strategy(const std::string& text);

/// An inclusive HSV range on OpenCV's 8-bit scale. h_lo > h_hi wraps around
/// red: the hue is in range when h >= h_lo or h <= h_hi.
struct HsvRange {
  int h_lo = 0, s_lo = 0, v_lo = 0;
  int h_hi = 179, s_hi = 255, v_hi = 255;
  bool contains(int h, int s, int v) const noexcept {
    const bool hue = h_lo <= h_hi ? (h >= h_lo && h <= h_hi) : (h >= h_lo || h <= h_hi);
    return hue && s >= s_lo && s <= s_hi && v >= v_lo && v <= v_hi;
  }
};
/// Parses "H1,S1,V1:H2,S2,V2" (H in 0..179, S and V in 0..255, S1 <= S2,
/// V1 <= V2); throws invalid_argument quoting the text and saying what is wrong.
HsvRange parse_hsv_range(const std::string& text);
std::string to_string(const HsvRange& range);

/// OpenCV's 8-bit RGB -> HSV conversion of one pixel (H 0..179).
void rgb_to_hsv(std::uint8_t r, std::uint8_t g, std::uint8_t b, std::uint8_t hsv[3]) noexcept;

/// What a Matcher computes besides the score map.
struct MatchParams {
  MatchMethod method = MatchMethod::sqdiff;
  MatchStrategy strategy = MatchStrategy::automatic;
  int top_k = 1;             ///< matches to report (>= 1)
  int min_distance = -1;     ///< NMS distance; < 0: max(1, min(w, h) / 2)
  bool color_check = false;  ///< count pixels in `hsv` inside each match
  HsvRange hsv{};
  double min_fraction = -1;  ///< >= 0: a pass/fail verdict per match (fraction >= min_fraction passes)
};

enum class Verdict : std::uint8_t { none, pass, fail };
const char* to_string(Verdict verdict) noexcept;

struct Match {
  int x = 0, y = 0;  ///< top-left corner of the matched window in the image
  float score = 0;
  // The colour check (when MatchParams::color_check): pixels of the w x h
  // window in the HSV range, their fraction of w * h, and the verdict.
  std::int64_t color_count = -1;
  double color_fraction = 0;
  Verdict verdict = Verdict::none;
};

/// One call's result.
struct MatchResult {
  std::vector<Match> matches;  ///< best first; fewer than top_k when NMS leaves fewer
  MatchStrategy strategy = MatchStrategy::direct;  ///< the strategy that ran (ref: direct)
};

/// A template prepared once and matched against image after image.
///
/// The constructor checks the template and mask and computes the template's
/// sums. The first call on an image size (and backend) prepares what that size
/// needs (on cuda: the template and its spectrum on the device, cuFFT plans,
/// the score map and scratch; on cpu: the template's spectrum and scratch); later
/// calls with the same size allocate nothing. reserve() does it ahead of time.
///
/// On cuda, a device-resident image is matched on options.stream: the score
/// map stays on the device, the best matches are reduced there and the colour
/// check runs there too, so only the few numbers of the result come back (the
/// call synchronises `stream` once, to read them). A host image is uploaded
/// first. Host backends (ref, cpu) are synchronous.
///
/// A Matcher is not safe to call from several threads at once; use one per
/// thread (they may share read-only images).
class Matcher {
 public:
  /// `templ`: u8 or f32, 1 or 3 channels, host or device memory (copied).
  /// `mask`: empty, or a u8 image of the template's size with 1 channel or the
  /// template's channels (non-zero = the pixel counts); copied.
  /// Throws invalid_argument for a bad template, mask or parameter.
  explicit Matcher(const ConstImageView& templ, const MatchParams& params = {},
                   const ConstImageView& mask = {});
  ~Matcher();
  Matcher(Matcher&&) noexcept;
  Matcher& operator=(Matcher&&) noexcept;

  /// Matches `image` (same type and channels as the template, at least as
  /// large). Throws invalid_argument for a bad image, unsupported for a
  /// backend or strategy this build lacks (fft on cpu needs OpenCV).
  MatchResult operator()(const ConstImageView& image, const Options& options = {});

  /// The same, also writing the score map into `scores`: (W - w + 1) x
  /// (H - h + 1), 1 channel f32, host or device memory (device only on cuda).
  MatchResult operator()(const ConstImageView& image, const ImageView& scores, const Options& options = {});

  /// Prepares everything a width x height image on options.backend needs.
  void reserve(int width, int height, const Options& options = {});

  const MatchParams& params() const noexcept;
  int template_width() const noexcept;
  int template_height() const noexcept;
  int channels() const noexcept;
  PixelType type() const noexcept;
  bool masked() const noexcept;
  /// The NMS distance in effect (params().min_distance resolved).
  int min_distance() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// The score map's size for an image and a template: (W - w + 1) x (H - h + 1).
/// Throws invalid_argument when the template is larger than the image.
void match_result_size(int image_width, int image_height, int templ_width, int templ_height, int& width,
                       int& height);

/// One-shot convenience: Matcher(templ, params, mask)(image, options).
MatchResult match_template(const ConstImageView& image, const ConstImageView& templ, const MatchParams& params = {},
                           const ConstImageView& mask = {}, const Options& options = {});

/// The colour check on its own: pixels of `rect` (x, y, w, h) of a 3-channel
/// u8 host image whose HSV value lies in `range`.
std::int64_t count_in_hsv_range(const ConstImageView& image, int x, int y, int w, int h, const HsvRange& range);

}  // namespace pixelkit
