// Template matching's backends, behind the one dispatch in match.cpp.
//
// Dispatch checks everything first: image and template of the same type (u8
// or f32) and channels (1 or 3), image at least as large as the template,
// score views of exactly (W - w + 1) x (H - h + 1) x 1 f32 on the backend's
// side, a concrete strategy (never automatic) that the backend supports.
//
// A backend computes the score map; every score comes from match_score()
// (match_common.hpp) fed with exact (u8) or f64 (f32) per-channel sums, so
// that all backends and strategies agree (bit for bit for u8). Selection of
// the best matches and the colour check follow one algorithm everywhere:
// select_matches() and color_check() below on the host, their device twins
// in match_cuda.cu.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "match/match_common.hpp"
#include "pixelkit/match.hpp"

namespace pixelkit::detail {

/// The template as the Matcher keeps it (host memory), built once.
struct PreparedTemplate {
  MatchMethod method = MatchMethod::sqdiff;
  TemplateStats stats;
  Image templ;  ///< host copy of the template, its own type, tightly packed rows (pitch may be padded)
  Image mask;   ///< host u8, 0 or 1, the template's channels (a 1-channel mask broadcast); empty without a mask
};

/// Builds the prepared template: copies (from host or device) templ and mask,
/// binarises and broadcasts the mask, computes the stats. Arguments checked.
PreparedTemplate prepare_template(const ConstImageView& templ, const ConstImageView& mask, MatchMethod method);

// ---- ref ------------------------------------------------------------------------

/// match_ref.cpp: the definition, plain loops over every window and template
/// pixel, sums in f64 (exact for u8). `scores` is host f32.
void match_ref(const ConstImageView& image, const PreparedTemplate& t, const ImageView& scores);

// ---- cpu ------------------------------------------------------------------------

/// match_cpu.cpp: SIMD + OpenMP. One per Matcher; keeps what a size needs
/// (FFT spectrum of the template, padded buffers, integral tables) between
/// calls, so repeated calls on one size allocate nothing.
class CpuMatcher {
 public:
  virtual ~CpuMatcher() = default;
  /// Host image, host f32 scores. Returns a short description of the path.
  virtual std::string run(const ConstImageView& image, const ImageView& scores, MatchStrategy strategy,
                          int threads) = 0;
  /// Prepares for a width x height image with this strategy.
  virtual void reserve(int width, int height, MatchStrategy strategy) = 0;
};
std::unique_ptr<CpuMatcher> make_cpu_matcher(const PreparedTemplate& t);
/// True when the cpu backend has an FFT (built with OpenCV: cv::dft).
bool cpu_match_fft_available() noexcept;
/// The cost model of the cpu backend: predicted milliseconds of one call with
/// `strategy` (direct or fft) on `threads` threads, from constants that
/// bench/bench_match_cpu.cpp calibrates (see docs/notes-match.md).
double cpu_match_cost_ms(MatchStrategy strategy, int image_width, int image_height, const TemplateStats& t,
                         PixelType type, int threads);

/// Per-stage times of the last host-backend call (cpu) while profiling is on,
/// for bench_match_cpu. The cpu paths fuse the stages within each band of
/// rows, so each thread adds up the time it spends in each stage and the
/// call's wall time is split in those proportions: corr = image conversion,
/// correlation (direct) or transforms and spectrum products (fft); sums = the
/// running window sums; score = the score formula; select = best match / NMS;
/// color = the HSV count. Profiling costs a clock read per row group; it is
/// off unless a benchmark turns it on, and the record is one global (not for
/// concurrent calls).
struct MatchCpuStages {
  double corr_ms = 0, sums_ms = 0, score_ms = 0, select_ms = 0, color_ms = 0;
};
void set_match_cpu_profiling(bool on) noexcept;
bool match_cpu_profiling() noexcept;
MatchCpuStages match_cpu_last_stages() noexcept;
void set_match_cpu_last_stages(const MatchCpuStages& s) noexcept;

// ---- cuda -----------------------------------------------------------------------

/// What the device does after the score map.
struct MatchSelect {
  bool lower_is_better = true;
  int top_k = 1;
  int min_distance = 1;
  bool color_check = false;
  HsvRange hsv{};
};

/// match_cuda.cu: the CUDA backend, one per Matcher. The template, its
/// spectrum, cuFFT plans and scratch are made on the first call for a size
/// and kept; later calls of that size allocate nothing.
class CudaMatcher {
 public:
  virtual ~CudaMatcher() = default;
  /// `image` in device memory; `scores` a device view, or empty to use the
  /// matcher's own buffer. Queues the score map, the selection (select_matches'
  /// algorithm) and the colour check on `stream`, then downloads the matches
  /// (x, y, score, colour count; verdicts are left to dispatch) and
  /// synchronises `stream`. Returns a short description of the path.
  virtual std::string run(const ConstImageView& image, const ImageView& scores, MatchStrategy strategy,
                          const MatchSelect& select, std::vector<Match>& matches, stream_t stream) = 0;
  virtual void reserve(int width, int height, MatchStrategy strategy, stream_t stream) = 0;
};
/// Defined in match_cuda.cu (CUDA builds only).
std::unique_ptr<CudaMatcher> make_cuda_matcher(const PreparedTemplate& t);
/// The cost model of the cuda backend (device-resident image), calibrated by
/// bench/bench_match_gpu.cu: predicted milliseconds with `strategy`.
/// Defined in match_cuda.cu.
double cuda_match_cost_ms(MatchStrategy strategy, int image_width, int image_height, const TemplateStats& t,
                          PixelType type);

// ---- shared host pieces (match_select.cpp) -----------------------------------------

/// Greedy non-maximum suppression over a host f32 map: the best position
/// (first in row-major order among equals), then the best position whose
/// Chebyshev distance to every match taken is >= min_distance, and so on, up to
/// top_k. Returns matches with x, y, score.
std::vector<Match> select_matches(const ConstImageView& scores, bool lower_is_better, int top_k, int min_distance,
                                  int threads = 1);

/// Counts, per match, the pixels of the template-sized window of a 3-channel
/// u8 host image that lie in the HSV range; sets color_count.
void color_check(const ConstImageView& image, int templ_width, int templ_height, const HsvRange& range,
                 std::vector<Match>& matches);

/// Sets color_fraction and verdict from color_count (dispatch, every backend).
void set_verdicts(int templ_width, int templ_height, double min_fraction, std::vector<Match>& matches);

// ---- strategy cost model (match.cpp) --------------------------------------------------

/// The strategy `automatic` picks on `backend` (cpu or cuda): the cheaper of
/// direct and fft by the backend's cost model (fft only where available).
MatchStrategy choose_match_strategy(Backend backend, int image_width, int image_height, const TemplateStats& t,
                                    PixelType type, int threads);

/// True when an f64 FFT correlation of a u8 image of this size with this
/// template is accurate to well under 0.5 (so it can be rounded to the exact
/// integer sum): bound = 4 * eps * log2(n) * ||I|| * ||T|| with the image's worst
/// case ||I|| = 255 sqrt(W H C).
bool fft_rounds_exactly(int padded_width, int padded_height, int image_width, int image_height,
                        const TemplateStats& t);

}  // namespace pixelkit::detail
