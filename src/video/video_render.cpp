// Host-side rendering of the pipeline's output frames: the Haar picture (the
// same arithmetic as `pixelkit haar --view` in src/cli/cmd_haar.cpp, so a
// frame's picture equals that command's output, cropped to the frame) and the
// match rectangles. Scratch is grow-only: nothing is allocated per frame once
// the first frame has been drawn.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "video/video_backends.hpp"

namespace pixelkit::detail {

namespace {

struct Rect {
  int x, y, w, h;
};

void paint(const ConstImageView& co, const ImageView& out, const Rect& r, bool approx, HaarViewScratch& s) {
  const int C = co.channels;
  const std::size_t n = static_cast<std::size_t>(r.w) * r.h;
  if (n == 0) return;
  for (int c = 0; c < C; ++c) {
    s.vals.resize(n);
    std::size_t i = 0;
    for (int y = r.y; y < r.y + r.h; ++y) {
      const float* row = co.row<float>(y);
      for (int x = r.x; x < r.x + r.w; ++x) s.vals[i++] = row[x * C + c];
    }
    double off = 0.0, scale = 1.0;
    if (approx) {
      const auto [mn, mx] = std::minmax_element(s.vals.begin(), s.vals.end());
      off = *mn;
      scale = *mx > *mn ? 255.0 / (*mx - *mn) : 0.0;
    } else {
      s.mag.resize(n);
      std::transform(s.vals.begin(), s.vals.end(), s.mag.begin(), [](float f) { return std::fabs(f); });
      const std::size_t k = std::min(n - 1, n * 99 / 100);
      std::nth_element(s.mag.begin(), s.mag.begin() + static_cast<std::ptrdiff_t>(k), s.mag.end());
      const double q = s.mag[k] > 0 ? s.mag[k] : 1.0;
      off = -128.0 * q / 127.0;
      scale = 127.0 / q;
    }
    i = 0;
    for (int y = r.y; y < r.y + r.h; ++y) {
      std::uint8_t* o = y < out.height ? out.row<std::uint8_t>(y) : nullptr;
      for (int x = r.x; x < r.x + r.w; ++x) {
        const double g = std::nearbyint((s.vals[i++] - off) * scale);
        if (o && x < out.width) o[x * C + c] = static_cast<std::uint8_t>(g < 0 ? 0 : (g > 255 ? 255 : g));
      }
    }
  }
}

}  // namespace

void render_haar_view(const ConstImageView& co, const HaarLayout& l, const ImageView& out, HaarViewScratch& s) {
  for (int y = 0; y < out.height; ++y) std::memset(out.row<std::uint8_t>(y), 128, out.row_bytes());
  paint(co, out, {0, 0, l.band[l.levels].width, l.band[l.levels].height}, true, s);
  for (int k = 1; k <= l.levels; ++k) {
    const auto& b = l.band[k];
    paint(co, out, {b.x0, 0, b.width, b.height}, false, s);
    paint(co, out, {0, b.y0, b.width, b.height}, false, s);
    paint(co, out, {b.x0, b.y0, b.width, b.height}, false, s);
  }
}

void grey_to_rgb(const ConstImageView& grey, const ImageView& rgb) {
  for (int y = 0; y < grey.height; ++y) {
    const std::uint8_t* s = grey.row<std::uint8_t>(y);
    std::uint8_t* d = rgb.row<std::uint8_t>(y);
    for (int x = 0; x < grey.width; ++x) d[3 * x] = d[3 * x + 1] = d[3 * x + 2] = s[x];
  }
}

namespace {
void fill(const ImageView& img, int x0, int y0, int x1, int y1, std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  x0 = std::max(x0, 0);
  y0 = std::max(y0, 0);
  x1 = std::min(x1, img.width);
  y1 = std::min(y1, img.height);
  for (int y = y0; y < y1; ++y) {
    std::uint8_t* p = img.row<std::uint8_t>(y);
    for (int x = x0; x < x1; ++x) {
      p[3 * x] = r;
      p[3 * x + 1] = g;
      p[3 * x + 2] = b;
    }
  }
}
}  // namespace

void draw_box(const ImageView& img, int x, int y, int w, int h, int thickness, std::uint8_t r, std::uint8_t g,
              std::uint8_t b) {
  if (w <= 0 || h <= 0) return;
  const int t = std::max(1, std::min({thickness, (w + 1) / 2, (h + 1) / 2}));
  fill(img, x, y, x + w, y + t, r, g, b);          // top
  fill(img, x, y + h - t, x + w, y + h, r, g, b);  // bottom
  fill(img, x, y, x + t, y + h, r, g, b);          // left
  fill(img, x + w - t, y, x + w, y + h, r, g, b);  // right
}

void draw_matches(const ImageView& rgb, const std::vector<Match>& matches, int tw, int th) {
  for (const Match& m : matches) {
    if (m.verdict == Verdict::fail) draw_box(rgb, m.x, m.y, tw, th, 2, 255, 0, 0);
    else draw_box(rgb, m.x, m.y, tw, th, 2, 0, 255, 0);
  }
}

}  // namespace pixelkit::detail
