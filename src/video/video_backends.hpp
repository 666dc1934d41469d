// The video pipeline's internal pieces, behind VideoPipeline in video.cpp:
// host-side rendering of output frames (video_render.cpp) and the CUDA
// streams and events that let consecutive frames overlap (video_cuda.cu,
// CUDA builds only; everything else on the GPU goes through the public
// Image / copy / Filter2D / HaarTransform / Matcher API with a stream).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "pixelkit/haar.hpp"
#include "pixelkit/image.hpp"
#include "pixelkit/match.hpp"

namespace pixelkit::detail {

// ---- video_render.cpp -------------------------------------------------------------

/// Grow-only scratch of render_haar_view (one per rendering thread).
struct HaarViewScratch {
  std::vector<float> vals, mag;
};

/// `pixelkit haar --view`'s picture of the coefficients (host f32, the
/// layout's coeff_width x coeff_height) written into `out` (host u8, the
/// image's width x height, the coefficients' channels): the approximation
/// stretched to 0..255, each detail band per channel scaled so that its 99th
/// percentile magnitude maps to +-127 around 128, cells outside every band
/// 128. Band statistics are taken over whole bands; only the pixels inside
/// `out` are written (the array is larger than the image for odd sizes).
void render_haar_view(const ConstImageView& coeffs, const HaarLayout& layout, const ImageView& out,
                      HaarViewScratch& scratch);

/// Copies a 1-channel u8 image into the three channels of `rgb`.
void grey_to_rgb(const ConstImageView& grey, const ImageView& rgb);

/// Draws the outline of the w x h rectangle at (x, y), `thickness` pixels
/// wide inside the rectangle, in colour (r, g, b), clipped to the image
/// (host u8, 3 channels).
void draw_box(const ImageView& rgb, int x, int y, int w, int h, int thickness, std::uint8_t r, std::uint8_t g,
              std::uint8_t b);

/// The frame annotated for the match operation: each match's rectangle,
/// green (pass or no verdict) or red (fail).
void draw_matches(const ImageView& rgb, const std::vector<Match>& matches, int templ_width, int templ_height);

// ---- video_cuda.cu ------------------------------------------------------------------

/// Streams ("lanes") that consecutive frames rotate through, and per frame
/// slot three events: the start and end of the operation's GPU work (timing)
/// and the completion of everything queued for the slot (its download).
class VideoStreams {
 public:
  virtual ~VideoStreams() = default;
  virtual stream_t stream(int lane) const = 0;
  virtual void mark_start(int slot, int lane) = 0;
  virtual void mark_stop(int slot, int lane) = 0;
  virtual void mark_done(int slot, int lane) = 0;
  /// Blocks until the slot's work is complete; returns the milliseconds the
  /// GPU spent between mark_start and mark_stop.
  virtual double wait(int slot) = 0;
  /// Waits for every stream, ignoring errors (teardown after a failure).
  virtual void synchronize_all() noexcept = 0;
};

/// Defined in video_cuda.cu (CUDA builds only).
std::unique_ptr<VideoStreams> make_video_streams(int lanes, int slots);

}  // namespace pixelkit::detail
