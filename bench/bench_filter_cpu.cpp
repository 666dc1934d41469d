// bench_filter_cpu - filter2d on the host: pixelkit's ref and cpu backends, and
// OpenCV's cv::filter2D (plus cv::sepFilter2D for separable kernels) on the
// same RGB u8 data when the build has OpenCV (PIXELKIT_BENCH_HAVE_OPENCV).
//
// Names: filter/<backend>/<kernel>/<W>x<H>, backend one of
//   ref       pixelkit reference (640x480 and kernels up to 81 taps only: slow)
//   cpu       pixelkit cpu backend, all cores (Options::threads = 0)
//   cpu_1t    pixelkit cpu backend, one thread (OpenCV's filter2D is single-threaded)
//   cv        cv::filter2D (what OpenCV's users call; DFT for large kernels)
//   cv_sep    cv::sepFilter2D with the kernel's factors (separable kernels only)
// plus copy/<W>x<H>: a row-by-row memcpy on one thread, the bandwidth floor.
//
// Before a configuration is timed its output on a 67x45 sub-image view is
// compared with the ref backend (within 1 grey level); a mismatch marks that
// benchmark as an error instead of timing it.
//
// Time is wall-clock per call. Counters: Mpix/s; GB/s = bytes read + written
// (2 * W * H * 3) per second; of_copy = GB/s as a fraction of the best copy
// rate at that size (1.0 would be a filter as fast as a memcpy).
//
// The cores may be shared with other work: use repetitions and compare the
// best and the median repetition; on a busy machine also run with
// OMP_WAIT_POLICY=passive (libgomp's default spinning then costs a lot):
//   OMP_WAIT_POLICY=passive bench_filter_cpu --benchmark_repetitions=5
//
//   bench_filter_cpu --benchmark_filter='/1920x1080'   # one size
//   bench_filter_cpu --benchmark_filter='dense3x3|copy'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_cpu.hpp"
#include "pixelkit/filter.hpp"

#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace {

using pixelkit::Backend;
using pixelkit::Border;
using pixelkit::BorderMode;
using pixelkit::ConstImageView;
using pixelkit::Image;
using pixelkit::ImageView;
using pixelkit::Kernel;
using pixelkit::PixelType;

constexpr int kChannels = 3;
const Border kBorder{BorderMode::reflect101, 0.0f};  // OpenCV's BORDER_DEFAULT

struct Size {
  int w, h;
  std::string name() const { return std::to_string(w) + "x" + std::to_string(h); }
};
const std::vector<Size> kSizes = {{640, 480}, {1280, 720}, {1920, 1080}, {3840, 2160}, {7680, 4320}};

using pixelkit::bench::fill_random;

// The source and destination of the size being benchmarked. Benchmarks are
// registered size by size, so one size is held at a time (8K RGB is 100 MB).
struct Images {
  Size size{0, 0};
  Image src, dst;
  double copy_bytes_per_s = 0.0;
};
Images& images_for(const Size& s);

// A kernel to benchmark: dense kernels have random (non-separable) coefficients.
Kernel dense_kernel(int n) {
  std::mt19937 rng(1000 + n);
  std::uniform_real_distribution<float> d(-0.25f, 1.0f);
  std::vector<float> c(static_cast<std::size_t>(n) * n);
  double sum = 0.0;
  for (float& v : c) sum += (v = d(rng));
  for (float& v : c) v = static_cast<float>(v / sum);
  Kernel k = Kernel::from_matrix(n, n, c, "dense" + std::to_string(n) + "x" + std::to_string(n));
  if (k.separable) throw std::runtime_error("random kernel came out separable");
  return k;
}

Kernel gaussian_kernel(int n) {
  Kernel k = Kernel::gaussian(n);
  k.name = "gauss" + std::to_string(n) + "x" + std::to_string(n);
  return k;
}

// One way to run the filter: src, dst (same shape) -> dst.
using Runner = std::function<void(const ConstImageView&, const ImageView&)>;

Runner pixelkit_runner(const Kernel& k, Backend backend, int threads) {
  auto f = std::make_shared<pixelkit::Filter2D>(k, kBorder);
  pixelkit::Options opt;
  opt.backend = backend;
  opt.threads = threads;
  return [f, opt](const ConstImageView& s, const ImageView& d) { (*f)(s, d, opt); };
}

#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
cv::Mat as_mat(const ConstImageView& v) {
  return cv::Mat(v.height, v.width, CV_8UC3, const_cast<void*>(v.data), static_cast<std::size_t>(v.pitch));
}
Runner opencv_runner(const Kernel& k, bool separable) {
  auto kernel = std::make_shared<cv::Mat>(cv::Mat(k.height, k.width, CV_32F,
                                                  const_cast<float*>(k.coeffs.data())).clone());
  auto row = std::make_shared<std::vector<float>>(k.row);
  auto col = std::make_shared<std::vector<float>>(k.col);
  return [kernel, row, col, separable](const ConstImageView& s, const ImageView& d) {
    const cv::Mat in = as_mat(s);
    cv::Mat out = as_mat(d);  // wraps dst: OpenCV writes in place, no reallocation
    if (separable) {
      cv::sepFilter2D(in, out, -1, cv::Mat(*row), cv::Mat(*col), cv::Point(-1, -1), 0.0,
                      cv::BORDER_REFLECT_101);
    } else {
      cv::filter2D(in, out, -1, *kernel, cv::Point(-1, -1), 0.0, cv::BORDER_REFLECT_101);
    }
  };
}
#endif

// Runs `run` on a 67x45 sub-image view and compares it with the ref backend.
// Returns "" when every value is within 1 grey level, else what differs.
std::string check_against_ref(const Kernel& k, const Runner& run) {
  const int w = 67, h = 45;
  Image big(w + 5, h + 4, kChannels, PixelType::u8), a(w, h, kChannels, PixelType::u8),
      b(w + 3, h + 1, kChannels, PixelType::u8);
  fill_random(big.view(), 7);
  const ConstImageView src = big.cview().sub(2, 3, w, h);
  const ImageView out = b.view().sub(1, 1, w, h);
  pixelkit::filter2d(src, a.view(), k, kBorder, pixelkit::Options{Backend::ref});
  run(src, out);
  int worst = 0;
  for (int y = 0; y < h; ++y)
    for (int i = 0; i < w * kChannels; ++i)
      worst = std::max(worst, std::abs(int(a.row<std::uint8_t>(y)[i]) - int(out.row<std::uint8_t>(y)[i])));
  return worst <= 1 ? std::string() : "differs from ref by " + std::to_string(worst) + " grey levels";
}

// One thread: a copy on every core is at the mercy of whatever else runs on
// the machine (one descheduled thread stalls the whole copy), which made the
// floor itself unmeasurable on a shared machine.
void copy_rows(const ConstImageView& s, const ImageView& d) {
  for (int y = 0; y < s.height; ++y) std::memcpy(d.row<std::uint8_t>(y), s.row<std::uint8_t>(y), s.row_bytes());
}

Images& images_for(const Size& s) {
  static Images im;
  if (im.size.w != s.w || im.size.h != s.h) {
    im.src = Image();
    im.dst = Image();
    im.src = Image(s.w, s.h, kChannels, PixelType::u8);
    im.dst = Image(s.w, s.h, kChannels, PixelType::u8);
    fill_random(im.src.view(), 1);
    copy_rows(im.src.cview(), im.dst.view());  // touch every page
    im.size = s;
    // The bandwidth floor: the best of many full copies (read + write); the
    // best, because other processes sharing the cores only ever slow it down.
    double best = 1e30;
    for (int r = 0; r < 30; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      copy_rows(im.src.cview(), im.dst.view());
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    im.copy_bytes_per_s = 2.0 * s.w * s.h * kChannels / best;
  }
  return im;
}

// Times one call per iteration (wall clock, fed to the framework as manual
// time) and sets the counters from the total, as plain numbers.
template <typename F>
void time_loop(benchmark::State& state, const Size& s, double copy_bytes_per_s, F&& body) {
  const double total = pixelkit::bench::time_manual(state, body);
  if (total <= 0.0) return;
  const double pixels = double(s.w) * s.h * static_cast<double>(state.iterations());
  const double bytes = 2.0 * pixels * kChannels;
  state.counters["Mpix/s"] = pixels / total / 1e6;
  state.counters["GB/s"] = bytes / total / 1e9;
  state.counters["of_copy"] = bytes / total / copy_bytes_per_s;
}

void bench_filter(benchmark::State& state, Size s, Kernel k, Runner run) {
  const std::string bad = check_against_ref(k, run);
  if (!bad.empty()) {
    state.SkipWithError(bad.c_str());
    for (auto _ : state) {
    }
    return;
  }
  Images& im = images_for(s);
  run(im.src.cview(), im.dst.view());  // warm up: pages, thread pool, code paths
  time_loop(state, s, im.copy_bytes_per_s, [&] { run(im.src.cview(), im.dst.view()); });
}

void bench_copy(benchmark::State& state, Size s) {
  Images& im = images_for(s);
  time_loop(state, s, im.copy_bytes_per_s, [&] { copy_rows(im.src.cview(), im.dst.view()); });
}

void register_all() {
  std::vector<Kernel> kernels;
  for (int n : {3, 5, 7, 9}) kernels.push_back(dense_kernel(n));
  for (int n : {3, 5, 7, 9, 15, 21, 31}) kernels.push_back(gaussian_kernel(n));

  for (const Size& s : kSizes) {
    benchmark::RegisterBenchmark(("copy/" + s.name()).c_str(), bench_copy, s)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    for (const Kernel& k : kernels) {
      auto reg = [&](const std::string& backend, Runner run) {
        benchmark::RegisterBenchmark(("filter/" + backend + "/" + k.name + "/" + s.name()).c_str(),
                                     bench_filter, s, k, std::move(run))
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      };
      if (s.w == 640 && k.width * k.height <= 81) reg("ref", pixelkit_runner(k, Backend::ref, 1));
      reg("cpu", pixelkit_runner(k, Backend::cpu, 0));
      reg("cpu_1t", pixelkit_runner(k, Backend::cpu, 1));
#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
      reg("cv", opencv_runner(k, false));
      if (k.separable) reg("cv_sep", opencv_runner(k, true));
#endif
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  pixelkit::bench::add_cpu_context();
  {
    // Which code path the cpu backend takes here (ISA, threads).
    Image a(64, 64, kChannels, PixelType::u8), b(64, 64, kChannels, PixelType::u8);
    fill_random(a.view(), 3);
    pixelkit::RunInfo info;
    pixelkit::Options opt{Backend::cpu};
    opt.info = &info;
    pixelkit::filter2d(a.cview(), b.view(), dense_kernel(3), kBorder, opt);
    benchmark::AddCustomContext("pixelkit_cpu_path", info.path);
  }
#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
  benchmark::AddCustomContext("opencv", std::string(CV_VERSION) + ", " +
                                            std::to_string(cv::getNumThreads()) + " threads");
#else
  benchmark::AddCustomContext("opencv", "not built in");
#endif
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
