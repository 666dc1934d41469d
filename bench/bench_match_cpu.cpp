// bench_match_cpu - template matching on the host: pixelkit's ref and cpu
// backends (direct, fft, and the automatic choice, through the public Matcher)
// and OpenCV's cv::matchTemplate on the same u8 data when the build has OpenCV
// (PIXELKIT_BENCH_HAVE_OPENCV).
//
// Cases: seed 001's two (1326x1025 image with a 479x432 template, 1200x1983
// with 150x150) and 1920x1080 frames with 32x32, 64x64 and 256x256 templates;
// 1 and 3 channels; methods sqdiff, ccorr_normed, ccoeff_normed; plus masked
// cases (a 1-channel elliptical mask) for the cost model's masked constants.
//
// Names: match/<runner>/<method>/<C>ch/<W>x<H>/<w>x<h>[/masked], runner one of
//   ref         pixelkit reference (1920x1080 with 32x32 only: it is slow)
//   cpu_direct  pixelkit cpu backend, strategy direct, all cores
//   cpu_fft     pixelkit cpu backend, strategy fft (needs OpenCV's dft)
//   cpu_auto    pixelkit cpu backend, strategy automatic (the cost model's pick,
//               shown in the label)
//   cv          cv::matchTemplate (OpenCV's crossCorr: DFT for the correlation)
// The image and template are random; the template is also pasted into the
// image, so every method has a clear best match.
//
// Before a runner is timed its score map for a small case of the same method
// and channels (a 97x71 sub-image view of a padded image, a 23x17 template) is
// compared with the ref backend: bit for bit for pixelkit, within 1e-4 of the
// map's largest magnitude for OpenCV; on the benchmark's own data the best
// location must be the pasted copy (cv's too). A mismatch marks that benchmark
// as an error instead of timing it.
//
// Time is wall-clock per call (the score map is written; the Matcher is built
// and reserve()d before timing). Counters: Mwin/s = output windows per second;
// GMAC/s = window x template x channels multiply-adds per second (what direct
// evaluation does; a measure of the work, whichever strategy runs).
//
// Stages (seed 001's per-stage table): match_stages/cpu_<strategy>/sqdiff/<C>ch/<case>
// runs a Matcher (top 1, the colour check on for 3 channels) with profiling on, and
// reports the median of each stage in ms as counters: corr (image conversion
// and correlation, or the transforms and spectrum products for fft), sums
// (the running window sums, which take the place of seed 001's integral
// images), score (the SSD map from the sums), select (best match), color (HSV
// count in the match rectangle). The cpu backend fuses the first three per
// band of rows; each thread adds up its time per stage and the call's wall
// time is split in those proportions (src/match/match_backends.hpp).
//
// The cores may be shared with other work: use repetitions and compare the
// best and the median repetition, with OMP_WAIT_POLICY=passive on a busy
// machine:
//   OMP_WAIT_POLICY=passive bench_match_cpu --benchmark_repetitions=3
//   bench_match_cpu --benchmark_filter='1920x1080/32x32'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "match/match_backends.hpp"  // detail::MatchCpuStages (stage profiling)
#include "bench_cpu.hpp"
#include "pixelkit/match.hpp"

#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace {

using pixelkit::Backend;
using pixelkit::ConstImageView;
using pixelkit::Image;
using pixelkit::ImageView;
using pixelkit::MatchMethod;
using pixelkit::MatchStrategy;
using pixelkit::PixelType;

struct Case {
  int W, H, w, h;
  std::string name() const {
    return std::to_string(W) + "x" + std::to_string(H) + "/" + std::to_string(w) + "x" + std::to_string(h);
  }
};
const std::vector<Case> kCases = {
    {1326, 1025, 479, 432}, {1200, 1983, 150, 150}, {1920, 1080, 32, 32}, {1920, 1080, 64, 64}, {1920, 1080, 256, 256}};
const MatchMethod kMethods[] = {MatchMethod::sqdiff, MatchMethod::ccorr_normed, MatchMethod::ccoeff_normed};

using pixelkit::bench::fill_random;

// An elliptical 0/1 mask.
Image ellipse_mask(int w, int h) {
  Image m(w, h, 1, PixelType::u8);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double u = (x + 0.5 - w / 2.0) / (w / 2.0), v = (y + 0.5 - h / 2.0) / (h / 2.0);
      m.row<std::uint8_t>(y)[x] = u * u + v * v <= 1.0 ? 1 : 0;
    }
  return m;
}

// Image with the template pasted at (px, py).
struct Data {
  Image image, templ, mask, scores;
  int px = 0, py = 0;
};

Data make_data(const Case& c, int channels, bool masked, unsigned seed) {
  Data d;
  d.image = Image(c.W, c.H, channels, PixelType::u8);
  d.templ = Image(c.w, c.h, channels, PixelType::u8);
  fill_random(d.image.view(), seed);
  fill_random(d.templ.view(), seed + 1);
  d.px = (c.W - c.w) / 3;
  d.py = (c.H - c.h) * 2 / 3;
  for (int y = 0; y < c.h; ++y)
    std::memcpy(d.image.row<std::uint8_t>(d.py + y) + static_cast<std::size_t>(d.px) * channels,
                d.templ.row<std::uint8_t>(y), d.templ.view().row_bytes());
  if (masked) d.mask = ellipse_mask(c.w, c.h);
  d.scores = Image(c.W - c.w + 1, c.H - c.h + 1, 1, PixelType::f32);
  return d;
}

// One way to compute a score map; made once per benchmark (the Matcher is
// built, and reserve()d for the size, outside the timed loop).
using Runner = std::function<void(const ConstImageView& image, const ImageView& scores)>;
struct RunnerMaker {
  std::string name;
  // (template, mask, method, image width, height) -> runner; `label` receives what it runs.
  std::function<Runner(const ConstImageView&, const ConstImageView&, MatchMethod, int, int, std::string*)> make;
};

RunnerMaker pixelkit_maker(const std::string& name, Backend backend, MatchStrategy strategy) {
  return {name, [=](const ConstImageView& t, const ConstImageView& mask, MatchMethod m, int W, int H,
                    std::string* label) -> Runner {
            pixelkit::MatchParams p;
            p.method = m;
            p.strategy = strategy;
            auto matcher = std::make_shared<pixelkit::Matcher>(t, p, mask);
            pixelkit::Options opt;
            opt.backend = backend;
            matcher->reserve(W, H, opt);
            if (label) {
              // What the automatic choice picks (and the path) at this size.
              Image probe(W, H, t.channels, PixelType::u8), map(W - t.width + 1, H - t.height + 1, 1, PixelType::f32);
              std::memset(probe.row<std::uint8_t>(0), 0, static_cast<std::size_t>(probe.pitch()) * H);
              pixelkit::RunInfo info;
              pixelkit::Options o = opt;
              o.info = &info;
              if (backend != Backend::ref) (*matcher)(probe.cview(), map.view(), o);
              *label = info.path;
            }
            return [matcher, opt](const ConstImageView& img, const ImageView& s) { (*matcher)(img, s, opt); };
          }};
}

#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
cv::Mat as_mat(const ConstImageView& v, int type) {
  return cv::Mat(v.height, v.width, CV_MAKETYPE(type, v.channels), const_cast<void*>(v.data),
                 static_cast<std::size_t>(v.pitch));
}
RunnerMaker opencv_maker() {
  return {"cv", [](const ConstImageView& t, const ConstImageView& mask, MatchMethod m, int, int,
                   std::string* label) -> Runner {
            auto templ = std::make_shared<cv::Mat>(as_mat(t, CV_8U).clone());
            auto msk = std::make_shared<cv::Mat>();
            if (!mask.empty()) {
              // OpenCV wants a mask of the template's type and channels.
              cv::Mat m1 = as_mat(mask, CV_8U);
              if (t.channels == 3) cv::merge(std::vector<cv::Mat>{m1, m1, m1}, *msk); else *msk = m1.clone();
            }
            if (label) *label = "cv::matchTemplate";
            return [templ, msk, m](const ConstImageView& img, const ImageView& s) {
              cv::Mat out = as_mat(s, CV_32F);  // wraps the map: OpenCV writes in place
              cv::matchTemplate(as_mat(img, CV_8U), *templ, out, static_cast<int>(m), *msk);
            };
          }};
}
#endif

// Largest |a - b| over the map, relative to the largest |b|; or -1 when not
// bit-identical is asked and they differ.
double compare(const Image& a, const Image& b, bool exact) {
  double worst = 0, big = 0;
  for (int y = 0; y < a.height(); ++y)
    for (int x = 0; x < a.width(); ++x) {
      const float u = a.row<float>(y)[x], v = b.row<float>(y)[x];
      if (exact && std::memcmp(&u, &v, sizeof u) != 0) return -1;
      worst = std::max(worst, std::fabs(static_cast<double>(u) - v));
      big = std::max(big, std::fabs(static_cast<double>(v)));
    }
  return worst / std::max(big, 1e-30);
}

// The small check: a sub-image view of a padded image against ref.
std::string check_small(const RunnerMaker& rm, MatchMethod m, int channels, bool masked, bool exact) {
  const int W = 97, H = 71, w = 23, h = 17;
  Image big(W + 5, H + 3, channels, PixelType::u8);
  fill_random(big.view(), 5);
  const ConstImageView img = big.cview().sub(3, 2, W, H);
  Image t(w, h, channels, PixelType::u8);
  fill_random(t.view(), 6);
  const Image mask = masked ? ellipse_mask(w, h) : Image();
  Image want(W - w + 1, H - h + 1, 1, PixelType::f32), got(W - w + 1, H - h + 1, 1, PixelType::f32);
  pixelkit_maker("ref", Backend::ref, MatchStrategy::direct).make(t.cview(), mask.cview(), m, W, H, nullptr)(
      img, want.view());
  rm.make(t.cview(), mask.cview(), m, W, H, nullptr)(img, got.view());
  const double d = compare(got, want, exact);
  if (d < 0) return "differs from ref (not bit-identical)";
  if (d > 1e-4) return "differs from ref by " + std::to_string(d) + " of the largest score";
  return {};
}

// Best position of a map (minimum for sqdiff, maximum otherwise; first wins).
void best_of(const Image& s, bool lower, int& bx, int& by) {
  float b = s.row<float>(0)[0];
  bx = by = 0;
  for (int y = 0; y < s.height(); ++y)
    for (int x = 0; x < s.width(); ++x) {
      const float v = s.row<float>(y)[x];
      if (lower ? v < b : v > b) {
        b = v;
        bx = x;
        by = y;
      }
    }
}

struct Held {
  std::string key;
  Data data;
};
// One data set at a time (the benchmarks are registered case by case).
Data& data_for(const Case& c, int channels, bool masked) {
  static Held held;
  const std::string key = c.name() + "/" + std::to_string(channels) + (masked ? "m" : "");
  if (held.key != key) {
    held.data = Data();
    held.data = make_data(c, channels, masked, 1000 + c.w + channels);
    held.key = key;
  }
  return held.data;
}

void bench_match(benchmark::State& state, Case c, int channels, bool masked, MatchMethod m, RunnerMaker rm,
                 bool exact) {
  const std::string bad = check_small(rm, m, channels, masked, exact);
  if (!bad.empty()) {
    state.SkipWithError(bad.c_str());
    for (auto _ : state) {
    }
    return;
  }
  Data& d = data_for(c, channels, masked);
  std::string label;
  const Runner run = rm.make(d.templ.cview(), d.mask.cview(), m, c.W, c.H, &label);
  run(d.image.cview(), d.scores.view());  // warm up; also the check on the real data
  int bx = 0, by = 0;
  best_of(d.scores, pixelkit::lower_is_better(m), bx, by);
  if (bx != d.px || by != d.py) {
    const std::string msg = "best match at (" + std::to_string(bx) + ", " + std::to_string(by) +
                            "), not at the pasted copy (" + std::to_string(d.px) + ", " + std::to_string(d.py) + ")";
    state.SkipWithError(msg.c_str());
    for (auto _ : state) {
    }
    return;
  }
  double total = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    run(d.image.cview(), d.scores.view());
    const auto t1 = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(s);
    total += s;
  }
  const double windows = static_cast<double>(c.W - c.w + 1) * (c.H - c.h + 1);
  const double n = static_cast<double>(state.iterations());
  state.counters["Mwin/s"] = windows * n / total / 1e6;
  state.counters["GMAC/s"] = windows * c.w * c.h * channels * n / total / 1e9;
  state.SetLabel(label);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void bench_stages(benchmark::State& state, Case c, int channels, MatchStrategy strategy) {
  Data& d = data_for(c, channels, false);
  pixelkit::MatchParams p;
  p.method = MatchMethod::sqdiff;
  p.strategy = strategy;
  p.color_check = channels == 3;  // the colour check needs RGB
  p.hsv = pixelkit::parse_hsv_range("100,60,20:135,255,255");
  pixelkit::Matcher matcher(d.templ.cview(), p);
  pixelkit::Options opt;
  opt.backend = Backend::cpu;
  pixelkit::RunInfo info;
  opt.info = &info;
  matcher.reserve(c.W, c.H, opt);
  pixelkit::MatchResult r = matcher(d.image.cview(), d.scores.view(), opt);  // warm up and check
  if (r.matches.empty() || r.matches[0].x != d.px || r.matches[0].y != d.py) {
    state.SkipWithError("best match is not the pasted copy");
    for (auto _ : state) {
    }
    return;
  }
  std::vector<double> corr, sums, score, select, color;
  pixelkit::detail::set_match_cpu_profiling(true);
  double total = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    matcher(d.image.cview(), d.scores.view(), opt);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    total += s;
    const pixelkit::detail::MatchCpuStages st = pixelkit::detail::match_cpu_last_stages();
    corr.push_back(st.corr_ms);
    sums.push_back(st.sums_ms);
    score.push_back(st.score_ms);
    select.push_back(st.select_ms);
    color.push_back(st.color_ms);
  }
  pixelkit::detail::set_match_cpu_profiling(false);
  state.counters["corr_ms"] = median(corr);
  state.counters["sums_ms"] = median(sums);
  state.counters["score_ms"] = median(score);
  state.counters["select_ms"] = median(select);
  state.counters["color_ms"] = median(color);
  state.SetLabel(info.path);
}

void register_all() {
  std::vector<RunnerMaker> makers = {pixelkit_maker("cpu_direct", Backend::cpu, MatchStrategy::direct)};
#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
  makers.push_back(pixelkit_maker("cpu_fft", Backend::cpu, MatchStrategy::fft));
#endif
  makers.push_back(pixelkit_maker("cpu_auto", Backend::cpu, MatchStrategy::automatic));
#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
  makers.push_back(opencv_maker());
#endif
  const RunnerMaker ref = pixelkit_maker("ref", Backend::ref, MatchStrategy::direct);

  auto reg = [](const Case& c, int ch, bool masked, MatchMethod m, const RunnerMaker& rm) {
    const std::string name = "match/" + rm.name + "/" + pixelkit::to_string(m) + "/" + std::to_string(ch) + "ch/" +
                             c.name() + (masked ? "/masked" : "");
    const bool exact = rm.name != "cv";
    benchmark::RegisterBenchmark(name.c_str(), bench_match, c, ch, masked, m, rm, exact)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  };
  for (const Case& c : kCases)
    for (int ch : {1, 3})
      for (MatchMethod m : kMethods) {
        if (c.w == 32) reg(c, ch, false, m, ref);
        for (const RunnerMaker& rm : makers) reg(c, ch, false, m, rm);
      }
  // Per stage, seed 001's method (sqdiff) with the colour check.
  for (const Case& c : kCases)
    for (int ch : {1, 3}) {
      std::vector<std::pair<std::string, MatchStrategy>> strategies = {{"direct", MatchStrategy::direct}};
#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
      strategies.emplace_back("fft", MatchStrategy::fft);
#endif
      for (const auto& st : strategies) {
        const std::string name = "match_stages/cpu_" + st.first + "/sqdiff/" + std::to_string(ch) + "ch/" + c.name();
        benchmark::RegisterBenchmark(name.c_str(), bench_stages, c, ch, st.second)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  // Masked: the cost model's masked constants (sqdiff and ccoeff_normed need
  // the most correlations).
  for (const Case& c : {Case{1920, 1080, 32, 32}, Case{1920, 1080, 64, 64}, Case{1200, 1983, 150, 150}})
    for (int ch : {1, 3})
      for (MatchMethod m : {MatchMethod::sqdiff, MatchMethod::ccoeff_normed})
        for (const RunnerMaker& rm : makers) reg(c, ch, true, m, rm);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  pixelkit::bench::add_cpu_context();
#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
  benchmark::AddCustomContext("opencv", std::string(CV_VERSION) + ", " + std::to_string(cv::getNumThreads()) +
                                            " threads");
#else
  benchmark::AddCustomContext("opencv", "not built in");
#endif
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
