// Template matching: what happens after the score map, on the host (the ref
// and cpu backends; match_cuda.cu has the device twins of the same
// algorithms): the best matches with greedy non-maximum suppression, the
// colour check inside each match, and the verdicts.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "match/match_backends.hpp"

namespace pixelkit {

std::int64_t count_in_hsv_range(const ConstImageView& image, int x, int y, int w, int h, const HsvRange& range) {
  PIXELKIT_EXPECTS(image.data != nullptr && !image.empty(), Status::invalid_argument, "colour check: image is empty");
  PIXELKIT_EXPECTS(image.channels == 3 && image.type == PixelType::u8, Status::invalid_argument,
                   "colour check: needs a 3-channel u8 (RGB) image, got " + describe(image));
  PIXELKIT_EXPECTS(is_host(image.memory), Status::invalid_argument, "colour check: the image is in device memory");
  PIXELKIT_EXPECTS(x >= 0 && y >= 0 && w >= 0 && h >= 0 && x <= image.width - w && y <= image.height - h,
                   Status::invalid_argument,
                   "colour check: rectangle " + std::to_string(w) + "x" + std::to_string(h) + " at (" +
                       std::to_string(x) + ", " + std::to_string(y) + ") is outside the " + describe(image) +
                       " image");
  std::int64_t count = 0;
  for (int j = 0; j < h; ++j) {
    const std::uint8_t* p = image.row<std::uint8_t>(y + j) + static_cast<std::ptrdiff_t>(x) * 3;
    for (int i = 0; i < w; ++i, p += 3) {
      int hh, s, v;
      detail::rgb_to_hsv8(p[0], p[1], p[2], hh, s, v);
      count += detail::hsv_in_range(range, hh, s, v) ? 1 : 0;
    }
  }
  return count;
}

namespace detail {

namespace {

struct Best {
  float value;
  std::int64_t index;  // -1: none
};

// a better than b: the better score, then the smaller index; NaN never wins.
inline bool better(const Best& a, const Best& b, bool lower) {
  if (a.index < 0) return false;
  if (b.index < 0) return true;
  if (a.value != b.value) return lower ? a.value < b.value : a.value > b.value;
  return a.index < b.index;
}

Best argbest(const float* map, int width, int height, std::ptrdiff_t stride, bool lower, int threads) {
  Best best{0.0f, -1};
  const int nthreads = std::max(1, std::min(threads, height));
#pragma omp parallel num_threads(nthreads)
  {
    Best local{0.0f, -1};
#pragma omp for schedule(static)
    for (int y = 0; y < height; ++y) {
      const float* row = map + y * stride;
      for (int x = 0; x < width; ++x) {
        const float v = row[x];
        if (std::isnan(v)) continue;
        const Best cand{v, static_cast<std::int64_t>(y) * width + x};
        if (better(cand, local, lower)) local = cand;
      }
    }
#pragma omp critical
    if (better(local, best, lower)) best = local;
  }
  return best;
}

}  // namespace

std::vector<Match> select_matches(const ConstImageView& scores, bool lower_is_better, int top_k, int min_distance,
                                  int threads) {
  std::vector<Match> out;
  const int W = scores.width, H = scores.height;
  if (W <= 0 || H <= 0 || top_k < 1) return out;
  const std::ptrdiff_t pitch_floats = scores.pitch / static_cast<std::ptrdiff_t>(sizeof(float));
  const float* map = scores.row<float>(0);
  if (top_k == 1) {
    const Best b = argbest(map, W, H, pitch_floats, lower_is_better, threads);
    if (b.index >= 0) {
      Match m;
      m.x = static_cast<int>(b.index % W);
      m.y = static_cast<int>(b.index / W);
      m.score = b.value;
      out.push_back(m);
    }
    return out;
  }
  // Several: a working copy in which suppressed positions become NaN.
  std::vector<float> work(static_cast<std::size_t>(W) * H);
  for (int y = 0; y < H; ++y) std::memcpy(work.data() + static_cast<std::size_t>(y) * W, scores.row<float>(y), sizeof(float) * W);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int d = std::max(1, min_distance);
  for (int k = 0; k < top_k; ++k) {
    const Best b = argbest(work.data(), W, H, W, lower_is_better, threads);
    if (b.index < 0) break;
    Match m;
    m.x = static_cast<int>(b.index % W);
    m.y = static_cast<int>(b.index / W);
    m.score = b.value;
    out.push_back(m);
    const int x0 = std::max(0, m.x - d + 1), x1 = std::min(W - 1, m.x + d - 1);
    const int y0 = std::max(0, m.y - d + 1), y1 = std::min(H - 1, m.y + d - 1);
    for (int y = y0; y <= y1; ++y) std::fill(work.data() + static_cast<std::size_t>(y) * W + x0, work.data() + static_cast<std::size_t>(y) * W + x1 + 1, nan);
  }
  return out;
}

void color_check(const ConstImageView& image, int templ_width, int templ_height, const HsvRange& range,
                 std::vector<Match>& matches) {
  for (Match& m : matches) m.color_count = count_in_hsv_range(image, m.x, m.y, templ_width, templ_height, range);
}

void set_verdicts(int templ_width, int templ_height, double min_fraction, std::vector<Match>& matches) {
  const double area = static_cast<double>(templ_width) * templ_height;
  for (Match& m : matches) {
    if (m.color_count < 0) {
      m.color_fraction = 0;
      m.verdict = Verdict::none;
      continue;
    }
    m.color_fraction = area > 0 ? static_cast<double>(m.color_count) / area : 0.0;
    m.verdict = min_fraction < 0 ? Verdict::none : (m.color_fraction >= min_fraction ? Verdict::pass : Verdict::fail);
  }
}

}  // namespace detail
}  // namespace pixelkit
