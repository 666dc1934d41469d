// bench_integral_cpu - integral images on the host: pixelkit's ref and cpu
// backends against OpenCV's cv::integral (PIXELKIT_BENCH_HAVE_OPENCV) on the
// same data, for the table types that correspond:
//
//   pair       pixelkit                          OpenCV
//   u32        sum u32                           cv::integral(src, sum, CV_32S)
//   i64        sum i64                           cv::integral(src, sum, CV_64F)  (same bytes per entry)
//   f64        sum f64                           cv::integral(src, sum, CV_64F)
//   i64sq      sum i64 + sqsum u64               cv::integral(src, sum, sqsum, CV_64F, CV_64F)
//   f32in      f32 image, sum f64                cv::integral(src, sum, CV_64F)
//
// Names: integral/<pair>/<impl>/<W>x<H>x<C>, impl one of
//   ref       pixelkit reference (sizes up to 1024^2 only)
//   cpu_1t    pixelkit cpu backend, one thread (OpenCV's integral is single-threaded)
//   cpu       pixelkit cpu backend, default threads (Options::threads = 0: all cores)
//   cv        cv::integral
//
// Before a configuration is timed, its tables are checked: pixelkit's against
// ref on a 67x45 sub-image view (integer tables bit for bit), and on the full
// image against OpenCV where OpenCV is built in (u32 == CV_32S bits; i64, u64
// and f64 of u8 images == CV_64F values exactly; f64 of f32 images within
// 1e-12 of the largest entry). A mismatch marks the benchmark as an error.
//
// Time is wall-clock per call (manual time); outputs are allocated and the
// operators built outside the timed loop. Counters: Mpix/s, GB/s (bytes read
// + table bytes written, per second).
//
// The VM is noisy: use repetitions, random interleaving and the median:
//   bench_integral_cpu --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true \
//       --benchmark_report_aggregates_only=true --benchmark_filter='/2048x2048x1$'
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
#include "pixelkit/integral.hpp"

#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace {

using pixelkit::Backend;
using pixelkit::ConstImageView;
using pixelkit::Image;
using pixelkit::ImageView;
using pixelkit::IntegralRequest;
using pixelkit::IntegralTables;
using pixelkit::IntegralTableView;
using pixelkit::PixelType;
using pixelkit::TableType;

struct Size {
  int w, h, c;
  std::string name() const { return std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(c); }
};
const std::vector<Size> kSizes = {{512, 512, 1},   {1024, 1024, 1}, {2048, 2048, 1}, {4096, 4096, 1},
                                  {8192, 8192, 1}, {1920, 1080, 3}, {3840, 2160, 3}};

struct Pair {
  std::string name;
  PixelType input;
  bool sum, sq;
  TableType st, qt;
  int cv_sdepth, cv_sqdepth;  // -1: not asked
};
const std::vector<Pair>& pairs() {
#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
  const int s32 = CV_32S, f64 = CV_64F;
#else
  const int s32 = 4, f64 = 6;
#endif
  static const std::vector<Pair> p = {
      {"u32", PixelType::u8, true, false, TableType::u32, TableType::automatic, s32, -1},
      {"i64", PixelType::u8, true, false, TableType::i64, TableType::automatic, f64, -1},
      {"f64", PixelType::u8, true, false, TableType::f64, TableType::automatic, f64, -1},
      {"i64sq", PixelType::u8, true, true, TableType::i64, TableType::u64, f64, f64},
      {"f32in", PixelType::f32, true, false, TableType::f64, TableType::automatic, f64, -1},
  };
  return p;
}

using pixelkit::bench::fill_random;

// Source images, one per (size, input type), kept for the program's life.
const Image& source(const Size& s, PixelType t) {
  static std::map<std::string, Image> images;
  const std::string key = s.name() + (t == PixelType::u8 ? "u8" : "f32");
  auto it = images.find(key);
  if (it == images.end()) {
    Image img(s.w, s.h, s.c, t);
    fill_random(img.view(), 1 + s.w + s.c);
    it = images.emplace(key, std::move(img)).first;
  }
  return it->second;
}

IntegralRequest request_of(const Pair& p) {
  IntegralRequest r;
  r.sum = p.sum;
  r.sqsum = p.sq;
  r.sum_type = p.st;
  r.sqsum_type = p.qt;
  return r;
}

double value_at(const IntegralTableView& t, int y, std::size_t i) {
  const auto* row = static_cast<const unsigned char*>(t.data) + static_cast<std::ptrdiff_t>(y) * t.pitch;
  switch (t.type) {
    case TableType::u32: return reinterpret_cast<const std::uint32_t*>(row)[i];
    case TableType::i64: return static_cast<double>(reinterpret_cast<const std::int64_t*>(row)[i]);
    case TableType::u64: return static_cast<double>(reinterpret_cast<const std::uint64_t*>(row)[i]);
    case TableType::f32: return reinterpret_cast<const float*>(row)[i];
    case TableType::f64: return reinterpret_cast<const double*>(row)[i];
    default: return NAN;
  }
}

// "" when a == b (integer tables: bits; f64 tables: exact, or within
// rel * max|entry| when rel > 0), else where they differ.
std::string compare_tables(const IntegralTableView& a, const IntegralTableView& b, double rel) {
  if (a.width != b.width || a.height != b.height || a.channels != b.channels || a.type != b.type)
    return "table shapes differ";
  const std::size_t n = static_cast<std::size_t>(a.width) * a.channels;
  double worst = 0, big = 1;
  for (int y = 0; y < a.height; ++y)
    for (std::size_t i = 0; i < n; ++i) {
      const double u = value_at(a, y, i), v = value_at(b, y, i);
      big = std::max(big, std::fabs(v));
      if (rel == 0.0 && !(u == v))
        return "entry (row " + std::to_string(y) + ", " + std::to_string(i) + ") " + std::to_string(u) + " vs " +
               std::to_string(v);
      worst = std::max(worst, std::fabs(u - v));
    }
  if (worst > rel * big) return "max |diff| " + std::to_string(worst);
  return "";
}

// A pixelkit runner: one operator and one set of output tables, shared by the
// 1-thread and the default-thread runs of the same pair and size.
struct PkRun {
  pixelkit::Integral op;
  IntegralTables out;
  explicit PkRun(const IntegralRequest& r) : op(r) {}
};
PkRun& pk_state(const Pair& p, const Size& s) {
  static std::map<std::string, std::unique_ptr<PkRun>> m;
  auto& slot = m[p.name + "/" + s.name()];
  if (!slot) slot = std::make_unique<PkRun>(request_of(p));
  return *slot;
}

#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
cv::Mat as_mat(const ConstImageView& v) {
  const int depth = v.type == PixelType::u8 ? CV_8U : CV_32F;
  return cv::Mat(v.height, v.width, CV_MAKETYPE(depth, v.channels), const_cast<void*>(v.data),
                 static_cast<std::size_t>(v.pitch));
}
struct CvRun {
  cv::Mat sum, sq;
};
CvRun& cv_state(const Pair& p, const Size& s) {
  static std::map<std::string, CvRun> m;
  return m[p.name + "/" + s.name()];
}
void run_cv(const Pair& p, const ConstImageView& src, CvRun& st) {
  const cv::Mat in = as_mat(src);
  if (p.cv_sqdepth < 0)
    cv::integral(in, st.sum, p.cv_sdepth);
  else
    cv::integral(in, st.sum, st.sq, p.cv_sdepth, p.cv_sqdepth);
}
// Our table against an OpenCV table of the same shape: u32 vs CV_32S bits,
// anything else vs CV_64F values (exact unless rel > 0).
std::string compare_cv(const IntegralTableView& t, const cv::Mat& m, double rel) {
  const std::size_t n = static_cast<std::size_t>(t.width) * t.channels;
  if (m.rows != t.height || static_cast<std::size_t>(m.cols) * m.channels() != n) return "shape differs from OpenCV";
  double worst = 0, big = 1;
  for (int y = 0; y < t.height; ++y)
    for (std::size_t i = 0; i < n; ++i) {
      double u, v;
      if (m.depth() == CV_32S) {
        const std::uint32_t a = reinterpret_cast<const std::uint32_t*>(static_cast<const unsigned char*>(t.data) +
                                                                       y * t.pitch)[i];
        const std::uint32_t b = static_cast<std::uint32_t>(m.ptr<std::int32_t>(y)[i]);
        u = a, v = b;
      } else {
        u = value_at(t, y, i);
        v = m.ptr<double>(y)[i];
      }
      big = std::max(big, std::fabs(v));
      if (rel == 0.0 && !(u == v))
        return "entry (row " + std::to_string(y) + ", " + std::to_string(i) + ") " + std::to_string(u) +
               " vs OpenCV " + std::to_string(v);
      worst = std::max(worst, std::fabs(u - v));
    }
  if (worst > rel * big) return "max |diff| vs OpenCV " + std::to_string(worst);
  return "";
}
#endif

pixelkit::Options options(Backend b, int threads) {
  pixelkit::Options o;
  o.backend = b;
  o.threads = threads;
  return o;
}

// pixelkit on a 67x45 sub-image view against ref.
std::string check_sub_view(const Pair& p, Backend b, int threads) {
  const int w = 67, h = 45;
  Image big((w + 5) * 3, h + 4, 1, p.input);  // viewed as 1 or 3 channels
  fill_random(big.view(), 9);
  const double rel = p.input == PixelType::f32 ? 1e-12 : 0.0;
  for (int c : {1, 3}) {
    const ImageView whole = pixelkit::make_view(big.view().data, (w + 5) * 3 / c, h + 4, c, p.input,
                                                pixelkit::Memory::host, big.view().pitch);
    const ConstImageView src = whole.sub(2, 3, w, h);
    IntegralTables want, got;
    pixelkit::integral(src, want, request_of(p), options(Backend::ref, 1));
    pixelkit::integral(src, got, request_of(p), options(b, threads));
    if (p.sum) {
      const std::string e = compare_tables(got.sum.view(), want.sum.view(), rel);
      if (!e.empty()) return "sub-view sum vs ref: " + e;
    }
    if (p.sq) {
      const std::string e = compare_tables(got.sqsum.view(), want.sqsum.view(), rel);
      if (!e.empty()) return "sub-view sqsum vs ref: " + e;
    }
  }
  return "";
}

template <typename F>
void time_loop(benchmark::State& state, const Size& s, double bytes_per_call, F&& body) {
  const double total = pixelkit::bench::time_manual(state, body);
  if (total <= 0.0) return;
  const double it = static_cast<double>(state.iterations());
  state.counters["Mpix/s"] = double(s.w) * s.h * it / total / 1e6;
  state.counters["GB/s"] = bytes_per_call * it / total / 1e9;
}

double bytes_per_call(const Pair& p, const Size& s) {
  const double px = double(s.w) * s.h * s.c;
  double b = px * (p.input == PixelType::u8 ? 1 : 4);
  if (p.sum) b += px * pixelkit::element_size(p.st);
  if (p.sq) b += px * pixelkit::element_size(p.qt);
  return b;
}

void skip(benchmark::State& state, const std::string& why) {
  state.SkipWithError(why.c_str());
  for (auto _ : state) {
  }
}

void bench_pixelkit(benchmark::State& state, Pair p, Size s, Backend b, int threads) {
  PkRun& st = pk_state(p, s);
  const ConstImageView src = source(s, p.input).cview();
  static std::map<std::string, bool> checked;
  const std::string key = p.name + "/" + s.name() + "/" + std::to_string(int(b)) + "/" + std::to_string(threads);
  if (!checked[key]) {
    std::string bad = b == Backend::ref ? "" : check_sub_view(p, b, threads);
    st.op(src, st.out, options(b, threads));
#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
    if (bad.empty()) {
      CvRun& cvs = cv_state(p, s);
      if (cvs.sum.empty()) run_cv(p, src, cvs);
      const double rel = p.input == PixelType::f32 ? 1e-12 : 0.0;
      if (p.sum) bad = compare_cv(st.out.sum.view(), cvs.sum, rel);
      if (bad.empty() && p.sq) bad = compare_cv(st.out.sqsum.view(), cvs.sq, rel);
    }
#endif
    if (!bad.empty()) return skip(state, bad);
    checked[key] = true;
  }
  const pixelkit::Options o = options(b, threads);
  st.op(src, st.out, o);  // warm up
  time_loop(state, s, bytes_per_call(p, s), [&] { st.op(src, st.out, o); });
}

#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
void bench_cv(benchmark::State& state, Pair p, Size s) {
  CvRun& st = cv_state(p, s);
  const ConstImageView src = source(s, p.input).cview();
  run_cv(p, src, st);  // allocates the outputs; later calls reuse them
  time_loop(state, s, bytes_per_call(p, s), [&] { run_cv(p, src, st); });
}
#endif

void register_all() {
  for (const Size& s : kSizes)
    for (const Pair& p : pairs()) {
      if (p.input == PixelType::f32 && s.c != 1) continue;
      auto reg = [&](const std::string& impl, auto fn, auto... args) {
        benchmark::RegisterBenchmark(("integral/" + p.name + "/" + impl + "/" + s.name()).c_str(), fn, p, s,
                                     args...)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
      };
      if (static_cast<long long>(s.w) * s.h <= 1024 * 1024) reg("ref", bench_pixelkit, Backend::ref, 1);
      reg("cpu_1t", bench_pixelkit, Backend::cpu, 1);
      reg("cpu", bench_pixelkit, Backend::cpu, 0);
#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
      reg("cv", bench_cv);
#endif
    }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  pixelkit::bench::add_cpu_context();
  {
    Image a(256, 300, 1, PixelType::u8);
    fill_random(a.view(), 3);
    pixelkit::RunInfo info;
    pixelkit::Options opt{Backend::cpu};
    opt.info = &info;
    IntegralTables t;
    pixelkit::integral(a.cview(), t, IntegralRequest{}, opt);
    benchmark::AddCustomContext("pixelkit_cpu_path", info.path);
  }
#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
  benchmark::AddCustomContext("opencv", std::string(CV_VERSION) + ", " + std::to_string(cv::getNumThreads()) +
                                            " threads (cv::integral runs on one)");
#else
  benchmark::AddCustomContext("opencv", "not built in");
#endif
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
