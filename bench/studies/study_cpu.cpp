// study_cpu - the CPU side of the seeds' performance studies (issue 7), as one
// program writing bench/studies/SCHEMA.md's CSV:
//
//   s002_resolution  gaussian:3 on RGB u8 640x480 .. 7680x4320 (reflect101)
//   s002_kernel      dense (non-separable) 3x3 / 5x5 / 7x7 / 9x9 on 1920x1080 RGB u8
//   s002_layout      AoS (interleaved RGB) vs SoA (three planes, to_planar), 3x3 and 9x9 dense
//   s004_edge        edge [-1 -1 -1; -1 8 -1; -1 -1 -1], 256x256 / 1920x1080 / 7680x4320,
//                    zero border (seed 004's), 1, 2, 4, ... threads up to all
//   s003_sizes       integral image 128^2 .. 8192^2, u8 -> i64 (the seed's long long):
//                    the seed's sequential scan-transpose and one-pass methods, pixelkit
//                    ref / cpu, cv::integral
//   s000_table       seed 000's image sizes and levels, f32 grey, forward and inverse
//   s001_stages      seed 001's two cases (grey SSD match + HSV count on the RGB image),
//                    per stage and whole call
//
// Series: seq (the ref backend, or the study's scalar code where the seed's
// sequential version has stages the ref backend does not expose), cpu_1t, cpu
// (all cores, capped by --threads), cpu_<N>t, opencv_cpu (when built with
// OpenCV: PIXELKIT_STUDY_HAVE_OPENCV), and the study-only sequential variants.
//
// Every timed result is checked before it is timed: cpu / OpenCV against the
// ref backend (u8 filters within 1 grey level, integral tables exactly, Haar
// relative error <= 1e-5, matching the same best location), the study-only
// sequential code against ref exactly. The check run is also the warm-up.
// Times: host steady_clock, median of several runs, fewer for slow cases (a run
// over 1.5 s, 0.5 s with --quick, is timed once: the checked run itself; the
// notes say "reps=1").
//
//   study_cpu [--csv FILE] [--quick] [--studies s002,s003_sizes,...] [--threads N]
//
// --studies takes ids or prefixes of ids. A short table goes to stderr at the end.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "match/match_backends.hpp"  // detail:: stage profiling, select_matches
#include "pixelkit/filter.hpp"
#include "pixelkit/haar.hpp"
#include "pixelkit/image.hpp"
#include "pixelkit/integral.hpp"
#include "pixelkit/match.hpp"

#if defined(PIXELKIT_STUDY_HAVE_OPENCV)
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace {

using namespace pixelkit;
using Clock = std::chrono::steady_clock;

// ---- configuration, output -------------------------------------------------------

struct Config {
  bool quick = false;
  int threads = 0;  // cap for the all-cores series (resolved)
  std::vector<std::string> studies;  // empty = all
  std::string csv;                   // empty = stdout
};
Config g_cfg;

struct Row {
  std::string study, series, x;
  double x_value = 0;
  double time_ms = NAN;  // NAN = empty
  int threads = 1;
  std::string check = "ok";
  std::string notes;
};

std::string g_device;
std::ostream* g_out = &std::cout;
std::vector<Row> g_rows;
int g_mismatches = 0;

std::string no_commas(std::string s) {
  for (char& c : s)
    if (c == ',' || c == '\n') c = ';';
  return s;
}

std::string fmt(double v, int prec = 3) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

void emit(Row r) {
  r.notes = no_commas(r.notes);
  r.x = no_commas(r.x);
  if (r.check == "mismatch") ++g_mismatches;
  *g_out << r.study << ',' << r.series << ',' << r.x << ',' << fmt(r.x_value, 0) << ','
         << (std::isnan(r.time_ms) ? std::string() : fmt(r.time_ms, 4)) << ',' << r.threads << ',' << r.check << ','
         << g_device << ',' << r.notes << '\n';
  g_out->flush();
  std::fprintf(stderr, "  %-16s %-20s %-28s %12s ms  %s\n", r.study.c_str(), r.series.c_str(), r.x.c_str(),
               std::isnan(r.time_ms) ? "-" : fmt(r.time_ms, 3).c_str(), r.check.c_str());
  g_rows.push_back(std::move(r));
}

bool wanted(const std::string& id) {
  if (g_cfg.studies.empty()) return true;
  for (const std::string& s : g_cfg.studies)
    if (id.compare(0, s.size(), s) == 0) return true;
  return false;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      std::string m = line.substr(line.find(':') + 1);
      m.erase(0, m.find_first_not_of(" \t"));
      return no_commas(m);
    }
  return "unknown CPU";
}

// ---- timing ---------------------------------------------------------------------

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double time_once(const std::function<void()>& f) {
  const auto t0 = Clock::now();
  f();
  return ms_since(t0);
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Timed {
  double ms = NAN;
  int reps = 0;
  double min_ms = NAN;
};

// How many timed runs after a first (checked, warm-up) run of first_ms.
int reps_for(double first_ms) {
  const double slow = g_cfg.quick ? 500.0 : 1500.0;
  if (first_ms >= slow) return 0;  // the checked run is the one timing
  const double target = g_cfg.quick ? 150.0 : 800.0;
  const int lo = g_cfg.quick ? 2 : 5, hi = g_cfg.quick ? 15 : 101;
  const int n = static_cast<int>(target / std::max(first_ms, 1e-3));
  return std::max(lo, std::min(hi, n));
}

// The first run (already done, first_ms) served as check and warm-up.
Timed measure(const std::function<void()>& f, double first_ms) {
  const int n = reps_for(first_ms);
  if (n == 0) return {first_ms, 1, first_ms};
  std::vector<double> t;
  for (int i = 0; i < n; ++i) t.push_back(time_once(f));
  return {median(t), n, *std::min_element(t.begin(), t.end())};
}

std::string reps_note(const Timed& t) {
  return t.reps == 1 ? "reps=1 (slow: the checked run)"
                     : "median of " + std::to_string(t.reps) + " (min " + fmt(t.min_ms, 4) + " ms)";
}

std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "; " + b;
}

// ---- data ---------------------------------------------------------------------

void fill_u8(const ImageView& v, unsigned seed) {
  std::uint32_t x = seed * 2654435761u + 12345u;
  for (int y = 0; y < v.height; ++y) {
    auto* r = v.row<std::uint8_t>(y);
    for (std::size_t i = 0; i < static_cast<std::size_t>(v.width) * v.channels; ++i) {
      x = x * 1664525u + 1013904223u;
      r[i] = static_cast<std::uint8_t>(x >> 24);
    }
  }
}

// A smooth-ish RGB picture plus noise (filters see realistic, not saturated, data).
Image make_rgb(int w, int h, unsigned seed) {
  Image img(w, h, 3, PixelType::u8);
  fill_u8(img.view(), seed);
  for (int y = 0; y < h; ++y) {
    auto* r = img.row<std::uint8_t>(y);
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        const int base = (x * (c + 1) / 7 + y * (3 - c) / 5) & 255;
        r[3 * x + c] = static_cast<std::uint8_t>((3 * base + r[3 * x + c]) / 4);
      }
  }
  return img;
}

Image make_f32(int w, int h, unsigned seed) {
  Image img(w, h, 1, PixelType::f32);
  std::uint32_t x = seed * 2654435761u + 1;
  for (int y = 0; y < h; ++y) {
    float* r = img.row<float>(y);
    for (int i = 0; i < w; ++i) {
      x = x * 1664525u + 1013904223u;
      r[i] = static_cast<float>(x >> 8) * (255.0f / 16777216.0f);
    }
  }
  return img;
}

int max_abs_diff_u8(const ConstImageView& a, const ConstImageView& b) {
  int m = 0;
  for (int y = 0; y < a.height; ++y) {
    const auto* p = a.row<std::uint8_t>(y);
    const auto* q = b.row<std::uint8_t>(y);
    for (std::size_t i = 0; i < a.row_bytes(); ++i) m = std::max(m, std::abs(int(p[i]) - int(q[i])));
  }
  return m;
}

double max_rel_diff_f32(const ConstImageView& a, const ConstImageView& b) {
  double m = 0, r = 0;
  for (int y = 0; y < a.height; ++y)
    for (int i = 0; i < a.width * a.channels; ++i) {
      const double x = a.row<float>(y)[i], z = b.row<float>(y)[i];
      m = std::max(m, std::isnan(x - z) ? INFINITY : std::fabs(x - z));
      r = std::max(r, std::fabs(z));
    }
  return m / std::max(r, 1.0);
}

std::string size_label(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

Options opts(Backend b, int threads, RunInfo* info = nullptr) {
  Options o;
  o.backend = b;
  o.threads = threads;
  o.info = info;
  return o;
}

std::vector<int> thread_ladder(int cap) {
  std::vector<int> v;
  for (int n = 1; n < cap; n *= 2) v.push_back(n);
  v.push_back(cap);
  return v;
}

#if defined(PIXELKIT_STUDY_HAVE_OPENCV)
cv::Mat as_mat(const ConstImageView& v, int depth) {
  return cv::Mat(v.height, v.width, CV_MAKETYPE(depth, v.channels), const_cast<void*>(v.data),
                 static_cast<std::size_t>(v.pitch));
}
int cv_threads() {
  cv::setNumThreads(g_cfg.threads);
  return cv::getNumThreads();
}
#endif

// ---- filters: s002_resolution, s002_kernel, s004_edge --------------------------------

// A k x k kernel whose coefficients are not an outer product (so the dense
// path runs), summing to about 1.
Kernel dense_kernel(int k) {
  std::vector<float> c(static_cast<std::size_t>(k) * k);
  for (int y = 0; y < k; ++y)
    for (int x = 0; x < k; ++x)
      c[static_cast<std::size_t>(y) * k + x] =
          static_cast<float>((1.0 + 0.25 * (((3 * x + 5 * y) % 7) - 3) / 3.0) / (k * k));
  Kernel kn = Kernel::from_matrix(k, k, c, "dense" + std::to_string(k));
  if (kn.separable) throw std::runtime_error("dense kernel came out separable");
  return kn;
}

struct FilterSeries {
  std::string name;
  int threads;  // cpu threads (0 = ref)
};

// OpenCV's version of one filter case, writing dst (same shape as src).
using CvFilter = std::function<void(const ConstImageView& src, const ImageView& dst)>;

void filter_case(const std::string& study, const std::string& x, double xv, const Image& src, const Kernel& kernel,
                 const Border& border, const std::vector<FilterSeries>& series, const CvFilter& cvf,
                 const std::string& cv_note, const std::string& note) {
  Filter2D f(kernel, border);
  Image want(src.width(), src.height(), src.channels(), PixelType::u8);
  // seq: the ref backend, the reference.
  {
    const Options o = opts(Backend::ref, 1);
    const double first = time_once([&] { f(src, want.view(), o); });
    const Timed t = measure([&] { f(src, want.view(), o); }, first);
    emit({study, "seq", x, xv, t.ms, 1, "ok", join(join("ref backend (the reference)", reps_note(t)), note)});
  }
  Image got(src.width(), src.height(), src.channels(), PixelType::u8);
  double t1 = NAN;
  for (const FilterSeries& s : series) {
    RunInfo info;
    const Options oi = opts(Backend::cpu, s.threads, &info), o = opts(Backend::cpu, s.threads);
    std::memset(got.row<std::uint8_t>(0), 0, static_cast<std::size_t>(got.pitch()) * got.height());
    const double first = time_once([&] { f(src, got.view(), oi); });
    const int d = max_abs_diff_u8(got, want);
    if (d > 1) {
      emit({study, s.name, x, xv, NAN, s.threads, "mismatch", "max diff " + std::to_string(d) + " vs ref"});
      continue;
    }
    const Timed t = measure([&] { f(src, got.view(), o); }, first);
    std::string n = join(join(info.path, reps_note(t)), "max diff vs ref " + std::to_string(d));
    if (study == "s004_edge") {
      if (s.threads == 1) t1 = t.ms;
      if (!std::isnan(t1)) {
        const double sp = t1 / t.ms;
        n = join(n, "speedup vs cpu_1t " + fmt(sp, 2) + " efficiency " + fmt(sp / s.threads, 2));
      }
    }
    emit({study, s.name, x, xv, t.ms, s.threads, "ok", join(n, note)});
  }
#if defined(PIXELKIT_STUDY_HAVE_OPENCV)
  if (cvf) {
    const int nt = cv_threads();
    std::memset(got.row<std::uint8_t>(0), 0, static_cast<std::size_t>(got.pitch()) * got.height());
    const double first = time_once([&] { cvf(src, got.view()); });
    const int d = max_abs_diff_u8(got, want);
    if (d > 1) {
      emit({study, "opencv_cpu", x, xv, NAN, nt, "mismatch", cv_note + "; max diff " + std::to_string(d) + " vs ref"});
    } else {
      const Timed t = measure([&] { cvf(src, got.view()); }, first);
      emit({study, "opencv_cpu", x, xv, t.ms, nt, "ok",
            join(join(join(cv_note, reps_note(t)), "max diff vs ref " + std::to_string(d)), note)});
    }
  }
#else
  (void)cvf;
  (void)cv_note;
#endif
}

std::vector<FilterSeries> cpu_series() {
  std::vector<FilterSeries> s = {{"cpu_1t", 1}};
  if (g_cfg.threads > 1) s.push_back({"cpu", g_cfg.threads});
  return s;
}

CvFilter cv_filter2d(const Kernel& k, int border_type) {
#if defined(PIXELKIT_STUDY_HAVE_OPENCV)
  cv::Mat km(k.height, k.width, CV_32F);
  for (int y = 0; y < k.height; ++y)
    for (int x = 0; x < k.width; ++x) km.at<float>(y, x) = k.at(y, x);
  return [km, border_type](const ConstImageView& s, const ImageView& d) {
    cv::Mat dm = as_mat(d, CV_8U);
    cv::filter2D(as_mat(s, CV_8U), dm, -1, km, cv::Point(-1, -1), 0, border_type);
  };
#else
  (void)k;
  (void)border_type;
  return {};
#endif
}

void study_s002_resolution() {
  struct R { int w, h; const char* name; };
  std::vector<R> sizes = {{640, 480, "480p"}, {1280, 720, "720p"}, {1920, 1080, "HD"}, {3840, 2160, "4K"}, {7680, 4320, "8K"}};
  if (g_cfg.quick) sizes.pop_back();
  const Kernel k = parse_kernel("gaussian:3");
  CvFilter cvf;
#if defined(PIXELKIT_STUDY_HAVE_OPENCV)
  cvf = [](const ConstImageView& s, const ImageView& d) {
    cv::Mat dm = as_mat(d, CV_8U);
    cv::GaussianBlur(as_mat(s, CV_8U), dm, cv::Size(3, 3), 0, 0, cv::BORDER_REFLECT_101);
  };
#endif
  for (const R& r : sizes) {
    const Image src = make_rgb(r.w, r.h, 11);
    filter_case("s002_resolution", size_label(r.w, r.h), double(r.w) * r.h, src, k, Border{}, cpu_series(), cvf,
                "cv::GaussianBlur 3x3 BORDER_REFLECT_101", std::string("gaussian:3 reflect101 RGB u8 ") + r.name);
  }
}

void study_s002_kernel() {
  const Image src = make_rgb(1920, 1080, 12);
  for (int k : {3, 5, 7, 9}) {
    const Kernel kn = dense_kernel(k);
    filter_case("s002_kernel", std::to_string(k) + "x" + std::to_string(k), k, src, kn, Border{}, cpu_series(),
                cv_filter2d(kn, 4 /* cv::BORDER_REFLECT_101 */), "cv::filter2D BORDER_REFLECT_101",
                "dense non-separable kernel reflect101 1920x1080 RGB u8");
  }
}

void study_s004_edge() {
  std::vector<std::pair<int, int>> sizes = {{256, 256}, {1920, 1080}, {7680, 4320}};
  if (g_cfg.quick) sizes.pop_back();
  const Kernel k = Kernel::edge();
  const Border zero{BorderMode::constant, 0.0f};
  std::vector<FilterSeries> series;
  for (int n : thread_ladder(g_cfg.threads)) series.push_back({"cpu_" + std::to_string(n) + "t", n});
  const char* seed[] = {"seed C++ seq 21 ms", "seed C++ seq 730 ms", "seed C++ seq 12800 ms"};
  int i = 0;
  for (const auto& [w, h] : sizes) {
    const Image src = make_rgb(w, h, 13);
    filter_case("s004_edge", size_label(w, h), double(w) * h, src, k, zero, series,
                cv_filter2d(k, 0 /* cv::BORDER_CONSTANT */), "cv::filter2D BORDER_CONSTANT 0",
                std::string("edge kernel; zero border (seed 004's); RGB u8; ") + seed[i++]);
  }
}

// ---- s002_layout: AoS vs SoA -------------------------------------------------------

void study_s002_layout() {
  const int W = 1920, H = 1080;
  const Image src = make_rgb(W, H, 14);
  Image planar(W, H * 3, 1, PixelType::u8), pdst(W, H * 3, 1, PixelType::u8);
  const double t_to = time_once([&] { to_planar(src, planar.view()); });
  for (int k : {3, 9}) {
    const Kernel kn = dense_kernel(k);
    Filter2D f(kn, Border{});
    // The same x labels as study_filter_gpu's s002_layout rows ("WxH/KxK").
    const std::string x = "1920x1080/" + std::to_string(k) + "x" + std::to_string(k);
    Image want(W, H, 3, PixelType::u8), got(W, H, 3, PixelType::u8);
    const std::string note = "dense non-separable " + x + " reflect101 1920x1080";
    auto planes = [&](const Options& o) {
      for (int c = 0; c < 3; ++c) f(planar.cview().sub(0, c * H, W, H), pdst.view().sub(0, c * H, W, H), o);
    };
    for (int nt : {0, g_cfg.threads}) {
      const bool ref = nt == 0;
      const std::string base = ref ? "seq" : "cpu";
      const Options o = ref ? opts(Backend::ref, 1) : opts(Backend::cpu, nt);
      const int threads = ref ? 1 : nt;
      // AoS
      {
        Image& out = ref ? want : got;
        const double first = time_once([&] { f(src, out.view(), o); });
        const int d = ref ? 0 : max_abs_diff_u8(got, want);
        if (d > 1) {
          emit({"s002_layout", base + "_aos", x, double(k), NAN, threads, "mismatch", "max diff " + std::to_string(d)});
        } else {
          const Timed t = measure([&] { f(src, out.view(), o); }, first);
          emit({"s002_layout", base + "_aos", x, double(k), t.ms, threads, "ok",
                join(join("interleaved RGB", reps_note(t)), note)});
        }
      }
      // SoA: three 1-channel planes filtered one after the other.
      {
        const double first = time_once([&] { planes(o); });
        double t_from = 0;
        t_from = time_once([&] { from_planar(pdst, got.view()); });
        const int d = max_abs_diff_u8(got, want);
        if (d > (ref ? 0 : 1)) {
          emit({"s002_layout", base + "_soa", x, double(k), NAN, threads, "mismatch", "max diff " + std::to_string(d)});
        } else {
          const Timed t = measure([&] { planes(o); }, first);
          emit({"s002_layout", base + "_soa", x, double(k), t.ms, threads, "ok",
                join(join("three planes (to_planar) filtered as 1-channel views; to_planar " + fmt(t_to, 2) +
                              " ms and from_planar " + fmt(t_from, 2) + " ms not timed",
                          reps_note(t)),
                     note)});
        }
      }
    }
  }
}

// ---- s003_sizes: integral images ------------------------------------------------

// Seed 003's sequential scan-transpose: scan every row, transpose, scan the rows
// of the transpose, transpose back. The first scan reads the u8 image (the seed
// had already widened it to long long). Output: W x H, no zero border.
void scan_transpose(const ConstImageView& src, std::int64_t* a, std::int64_t* tmp) {
  const int w = src.width, h = src.height;
  for (int j = 0; j < h; ++j) {
    const std::uint8_t* s = src.row<std::uint8_t>(j);
    std::int64_t acc = 0;
    for (int i = 0; i < w; ++i) {
      acc += s[i];
      a[static_cast<std::size_t>(j) * w + i] = acc;
    }
  }
  for (int j = 0; j < h; ++j)
    for (int i = 0; i < w; ++i) tmp[static_cast<std::size_t>(i) * h + j] = a[static_cast<std::size_t>(j) * w + i];
  for (int j = 0; j < w; ++j) {
    std::int64_t acc = 0;
    std::int64_t* r = tmp + static_cast<std::size_t>(j) * h;
    for (int i = 0; i < h; ++i) {
      acc += r[i];
      r[i] = acc;
    }
  }
  for (int j = 0; j < w; ++j)
    for (int i = 0; i < h; ++i) a[static_cast<std::size_t>(i) * w + j] = tmp[static_cast<std::size_t>(j) * h + i];
}

// Seed 003's optimised sequential: one pass, S(x,y) = I + S(x-1,y) + S(x,y-1) - S(x-1,y-1).
void one_pass(const ConstImageView& src, std::int64_t* s) {
  const int w = src.width, h = src.height;
  const std::uint8_t* r0 = src.row<std::uint8_t>(0);
  s[0] = r0[0];
  for (int x = 1; x < w; ++x) s[x] = s[x - 1] + r0[x];
  for (int y = 1; y < h; ++y) {
    const std::uint8_t* r = src.row<std::uint8_t>(y);
    std::int64_t* cur = s + static_cast<std::size_t>(y) * w;
    const std::int64_t* up = cur - w;
    cur[0] = up[0] + r[0];
    for (int x = 1; x < w; ++x) cur[x] = r[x] + cur[x - 1] + up[x] - up[x - 1];
  }
}

bool same_as_table(const std::int64_t* a, int w, int h, const IntegralTableView& t) {
  const TableRef<const std::int64_t> r = t.ref<const std::int64_t>();
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      if (a[static_cast<std::size_t>(y) * w + x] != r.at(y + 1, x + 1, 0)) return false;
  return true;
}

bool same_tables(const IntegralTableView& a, const IntegralTableView& b) {
  for (int y = 0; y < a.height; ++y)
    if (std::memcmp(static_cast<const unsigned char*>(a.data) + y * a.pitch,
                    static_cast<const unsigned char*>(b.data) + y * b.pitch, a.row_bytes()) != 0)
      return false;
  return true;
}

void study_s003_sizes() {
  const int top = g_cfg.quick ? 4096 : 8192;
  for (int n = 128; n <= top; n *= 2) {
    const std::string x = size_label(n, n);
    const double xv = double(n) * n;
    Image src(n, n, 1, PixelType::u8);
    fill_u8(src.view(), 31);
    const std::string seed = n == 2048 ? "seed 003 at 2048^2 (i7-8565U): scan-transpose 235 ms; one-pass 36 ms" : "";
    IntegralRequest req;
    req.sum = true;
    req.sum_type = TableType::i64;
    Integral integ(req);
    IntegralTables want;
    {
      const Options o = opts(Backend::ref, 1);
      const double first = time_once([&] { integ(src, want, o); });
      const Timed t = measure([&] { integ(src, want, o); }, first);
      emit({"s003_sizes", "seq", x, xv, t.ms, 1, "ok", join(join("ref backend i64 (the reference)", reps_note(t)), seed)});
    }
    {
      std::vector<std::int64_t> a(static_cast<std::size_t>(n) * n), tmp(a.size());
      const double first = time_once([&] { scan_transpose(src, a.data(), tmp.data()); });
      if (!same_as_table(a.data(), n, n, want.sum)) {
        emit({"s003_sizes", "seq_scan_transpose", x, xv, NAN, 1, "mismatch", "differs from ref"});
      } else {
        const Timed t = measure([&] { scan_transpose(src, a.data(), tmp.data()); }, first);
        emit({"s003_sizes", "seq_scan_transpose", x, xv, t.ms, 1, "ok",
              join(join("seed's scan rows + transpose + scan + transpose; i64; buffers preallocated", reps_note(t)),
                   seed)});
      }
      std::fill(a.begin(), a.end(), 0);
      const double first1 = time_once([&] { one_pass(src, a.data()); });
      if (!same_as_table(a.data(), n, n, want.sum)) {
        emit({"s003_sizes", "seq_one_pass", x, xv, NAN, 1, "mismatch", "differs from ref"});
      } else {
        const Timed t = measure([&] { one_pass(src, a.data()); }, first1);
        emit({"s003_sizes", "seq_one_pass", x, xv, t.ms, 1, "ok",
              join(join("seed's optimised sequential S=I+S(x-1)+S(y-1)-S(x-1;y-1); i64", reps_note(t)), seed)});
      }
    }
    for (const FilterSeries& s : cpu_series()) {
      IntegralTables got;
      RunInfo info;
      const Options oi = opts(Backend::cpu, s.threads, &info), o = opts(Backend::cpu, s.threads);
      const double first = time_once([&] { integ(src, got, oi); });
      if (!same_tables(got.sum, want.sum)) {
        emit({"s003_sizes", s.name, x, xv, NAN, s.threads, "mismatch", "differs from ref"});
        continue;
      }
      const Timed t = measure([&] { integ(src, got, o); }, first);
      emit({"s003_sizes", s.name, x, xv, t.ms, s.threads, "ok", join(join(join(info.path, "i64"), reps_note(t)), seed)});
    }
#if defined(PIXELKIT_STUDY_HAVE_OPENCV)
    {
      const int nt = cv_threads();
      const cv::Mat s = as_mat(src, CV_8U);
      cv::Mat sum;
      const double first = time_once([&] { cv::integral(s, sum, CV_64F); });
      const TableRef<const std::int64_t> r = want.sum.ref<const std::int64_t>();
      bool ok = sum.rows == n + 1 && sum.cols == n + 1;
      for (int y = 0; ok && y <= n; ++y)
        for (int xx = 0; xx <= n; ++xx)
          if (sum.at<double>(y, xx) != static_cast<double>(r.at(y, xx, 0))) {
            ok = false;
            break;
          }
      if (!ok) {
        emit({"s003_sizes", "opencv_cpu", x, xv, NAN, nt, "mismatch", "cv::integral CV_64F differs from ref"});
      } else {
        const Timed t = measure([&] { cv::integral(s, sum, CV_64F); }, first);
        emit({"s003_sizes", "opencv_cpu", x, xv, t.ms, nt, "ok",
              join(join("cv::integral CV_64F (OpenCV has no 64-bit integer sum; exact vs ref i64)", reps_note(t)),
                   seed)});
      }
    }
#endif
  }
}

// ---- s000_table: Haar -----------------------------------------------------------

void study_s000_table() {
  // Seed 000, section 5.2: image, size (W x H), levels, the seed's host time (ms).
  struct Case { const char* name; int w, h, levels; double seed_host; };
  const Case cases[] = {{"img3.png", 250, 256, 1, 4.22},   {"debbie.jpg", 256, 256, 8, 5.19},
                        {"foto1.jpg", 512, 512, 9, 19.08}, {"img.png", 512, 512, 9, 21.60},
                        {"img5.jpg", 400, 600, 3, 21.22},  {"flower.jpg", 400, 620, 3, 23.22},
                        {"img4.jpg", 600, 800, 3, 43.65},  {"wall3.jpg", 1700, 1000, 2, 140.16},
                        {"wall.jpg", 1800, 2880, 3, 458.34}};
  for (const Case& c : cases) {
    const HaarLayout l = haar_layout(c.w, c.h, c.levels);
    const Image src = make_f32(c.w, c.h, 3);
    HaarTransform ht(c.levels);
    Image want(l.coeff_width, l.coeff_height, 1, PixelType::f32), got(l.coeff_width, l.coeff_height, 1, PixelType::f32);
    Image back_want(c.w, c.h, 1, PixelType::f32), back(c.w, c.h, 1, PixelType::f32);
    // The same x labels as study_gpu's s000_table rows (forward), " inverse" appended.
    const std::string base = std::string(c.name) + " " + size_label(c.w, c.h) + " L" + std::to_string(c.levels);
    const double xv = double(c.w) * c.h;
    const std::string note = "f32 grey orthonormal; seed host forward " + fmt(c.seed_host, 2) + " ms";
    for (int dir = 0; dir < 2; ++dir) {
      const bool fwd = dir == 0;
      const std::string x = fwd ? base : base + " inverse";
      auto run = [&](const Options& o, bool into_want) {
        if (fwd) ht.forward(src, (into_want ? want : got).view(), o);
        else ht.inverse(want, (into_want ? back_want : back).view(), o);
      };
      {
        const Options o = opts(Backend::ref, 1);
        const double first = time_once([&] { run(o, true); });
        const Timed t = measure([&] { run(o, true); }, first);
        emit({"s000_table", "seq", x, xv, t.ms, 1, "ok", join(join("ref backend (the reference)", reps_note(t)), note)});
      }
      for (const FilterSeries& s : cpu_series()) {
        const Options o = opts(Backend::cpu, s.threads);
        const double first = time_once([&] { run(o, false); });
        const double err = fwd ? max_rel_diff_f32(got, want) : max_rel_diff_f32(back, back_want);
        if (!(err <= 1e-5)) {
          emit({"s000_table", s.name, x, xv, NAN, s.threads, "mismatch", "rel err " + fmt(err * 1e6, 3) + "e-6"});
          continue;
        }
        const Timed t = measure([&] { run(o, false); }, first);
        char e[32];
        std::snprintf(e, sizeof e, "%.1e", err);
        emit({"s000_table", s.name, x, xv, t.ms, s.threads, "ok",
              join(join(reps_note(t), std::string("rel err vs ref ") + e), note)});
      }
    }
  }
}

// ---- s001_stages: template matching per stage -----------------------------------

struct MatchCase {
  const char* id;
  int W, H, w, h;
  double seed_seq_ms, seed_omp_ms;
};

// Stage labels (x = "<case>/<stage>", x_value = stage index + 10 * case index).
const char* const kStages[] = {"integral_source", "integral_template", "correlation", "ssd_map", "best_match",
                               "colour_count", "total"};

void study_s001_stages() {
  const MatchCase cases[] = {{"A", 1326, 1025, 479, 432, 924.604, 170.222}, {"B", 1200, 1983, 150, 150, 369.821, 56.726}};
  const HsvRange blue = parse_hsv_range("100,60,20:135,255,255");
  int ci = 0;
  for (const MatchCase& mc : cases) {
    const int base_xv = 10 * ci++;
    const int W = mc.W, H = mc.H, w = mc.w, h = mc.h, oW = W - w + 1, oH = H - h + 1;
    auto X = [&](int stage) { return std::string(mc.id) + "/" + kStages[stage]; };
    auto XV = [&](int stage) { return double(base_xv + stage + 1); };
    // Grey image with the template pasted at (px, py); an RGB image of the same
    // size for the colour count (seed 001 matches grey and counts on colour).
    Image grey(W, H, 1, PixelType::u8), templ(w, h, 1, PixelType::u8);
    fill_u8(grey.view(), 41);
    fill_u8(templ.view(), 42);
    const int px = (W - w) / 3, py = (H - h) * 2 / 3;
    for (int y = 0; y < h; ++y) std::memcpy(grey.row<std::uint8_t>(py + y) + px, templ.row<std::uint8_t>(y), w);
    const Image rgb = make_rgb(W, H, 43);
    const std::string case_note = std::string("case ") + mc.id + " " + size_label(W, H) + " template " + size_label(w, h) +
                                  " grey u8 sqdiff";
    const std::string seed_total = "seed seq " + fmt(mc.seed_seq_ms, 1) + " ms; SIMD+OpenMP " + fmt(mc.seed_omp_ms, 1) +
                                   " ms (i7-8565U)";
    // The seed's stage table (its case is not stated), in ms.
    const double seed_stage[] = {18.0, 2.0, 321.0, 17.0, NAN, 11.432};
    auto seed_note = [&](int stage) {
      return std::isnan(seed_stage[stage]) ? std::string()
                                           : "seed seq " + fmt(seed_stage[stage], 1) + " ms (case not stated)";
    };

    // ---- seq: the seed's optimised sequential pipeline, stage by stage ----
    // integral tables of the squares (pixelkit ref), the correlation (scalar,
    // direct; the seed used an FFT), the SSD map from them, the minimum, the
    // HSV count. The correlation is computed on k output rows around the
    // match and scaled to the whole map, and so is the ref backend's whole call.
    const int k = g_cfg.quick ? (mc.id[0] == 'A' ? 1 : 4) : (mc.id[0] == 'A' ? 4 : 16);
    const int r0 = std::max(0, std::min(oH - k, py - k / 2));
    {
      IntegralRequest rq;
      rq.sum = false;
      rq.sqsum = true;
      Integral integ(rq);
      IntegralTables ts, tt;
      const Options oref = opts(Backend::ref, 1);
      const double f0 = time_once([&] { integ(grey, ts, oref); });
      const Timed t0 = measure([&] { integ(grey, ts, oref); }, f0);
      const double f1 = time_once([&] { integ(templ, tt, oref); });
      const Timed t1 = measure([&] { integ(templ, tt, oref); }, f1);
      const std::int64_t T2 = static_cast<std::int64_t>(rect_sum<std::uint64_t>(tt.sqsum, Rect{0, 0, w, h}));
      std::vector<std::int64_t> corr(static_cast<std::size_t>(oW) * oH, 0);
      auto correlate = [&] {
        for (int y = r0; y < r0 + k; ++y)
          for (int x = 0; x < oW; ++x) {
            std::int64_t acc = 0;
            for (int j = 0; j < h; ++j) {
              const std::uint8_t* ir = grey.row<std::uint8_t>(y + j) + x;
              const std::uint8_t* tr = templ.row<std::uint8_t>(j);
              std::int32_t a = 0;
              for (int i = 0; i < w; ++i) a += int(ir[i]) * int(tr[i]);
              acc += a;
            }
            corr[static_cast<std::size_t>(y) * oW + x] = acc;
          }
      };
      const double f2 = time_once(correlate);
      const Timed t2 = measure(correlate, f2);
      const double scale = double(oH) / k;
      Image ssd(oW, oH, 1, PixelType::f32);
      const TableRef<const std::uint64_t> sq = ts.sqsum.ref<const std::uint64_t>();
      auto ssd_map = [&] {
        for (int y = 0; y < oH; ++y) {
          float* o = ssd.row<float>(y);
          const std::int64_t* c = corr.data() + static_cast<std::size_t>(y) * oW;
          for (int x = 0; x < oW; ++x) {
            const std::int64_t s2 = static_cast<std::int64_t>(sq.rect_sum(x, y, w, h));
            o[x] = static_cast<float>(static_cast<double>(s2 + T2 - 2 * c[x]));
          }
        }
      };
      const double f3 = time_once(ssd_map);
      const Timed t3 = measure(ssd_map, f3);
      std::vector<Match> best;
      auto select = [&] { best = detail::select_matches(ssd, true, 1, 1, 1); };
      const double f4 = time_once(select);
      const Timed t4 = measure(select, f4);
      std::int64_t count = 0;
      auto color = [&] { count = count_in_hsv_range(rgb, best.at(0).x, best.at(0).y, w, h, blue); };
      const double f5 = time_once(color);
      const Timed t5 = measure(color, f5);
      // The ref backend on the same k output rows (a sub-image view of rows r0 .. r0+k+h-2).
      MatchParams mp;
      mp.method = MatchMethod::sqdiff;
      Matcher mref(templ, mp);
      Image rscores(oW, k, 1, PixelType::f32);
      MatchResult rr;
      const ConstImageView crop = grey.cview().sub(0, r0, W, k + h - 1);
      const double fr = time_once([&] { rr = mref(crop, rscores.view(), oref); });
      const Timed tr = measure([&] { rr = mref(crop, rscores.view(), oref); }, fr);
      // Checks: the study's SSD rows equal ref's map bit for bit; both find the pasted copy.
      bool same = true;
      for (int y = 0; y < k && same; ++y)
        same = std::memcmp(rscores.row<float>(y), ssd.row<float>(r0 + y), sizeof(float) * oW) == 0;
      const bool found_seq = !best.empty() && best[0].x == px && best[0].y == py;
      const bool found_ref = !rr.matches.empty() && rr.matches[0].x == px && rr.matches[0].y == py - r0;
      const std::string chk = same && found_seq && found_ref ? "ok" : "mismatch";
      const std::string why = chk == "ok" ? "" :
          std::string(same ? "" : "SSD rows differ from ref; ") + (found_seq ? "" : "study best not at pasted copy; ") +
          (found_ref ? "" : "ref best not at pasted copy");
      const std::string sn = "study's scalar pipeline (seed's optimised sequential) on " + case_note;
      emit({"s001_stages", "seq", X(0), XV(0), t0.ms, 1, chk,
            join(join(join("ref integral sqsum u64 of the source", reps_note(t0)), seed_note(0)), why)});
      emit({"s001_stages", "seq", X(1), XV(1), t1.ms, 1, chk,
            join(join("ref integral sqsum u64 of the template", reps_note(t1)), seed_note(1))});
      emit({"s001_stages", "seq", X(2), XV(2), t2.ms * scale, 1, chk,
            join(join("direct scalar correlation (the seed used an FFT) timed on " + std::to_string(k) + " of " +
                          std::to_string(oH) + " output rows and scaled; " + reps_note(t2),
                      sn),
                 seed_note(2))});
      emit({"s001_stages", "seq", X(3), XV(3), t3.ms, 1, chk,
            join(join("S2 (4 reads) + T2 - 2X per window; f32 map; " + reps_note(t3), sn), seed_note(3))});
      emit({"s001_stages", "seq", X(4), XV(4), t4.ms, 1, chk,
            join("detail::select_matches 1 thread (what ref uses); " + reps_note(t4), sn)});
      emit({"s001_stages", "seq", X(5), XV(5), t5.ms, 1, chk,
            join(join("count_in_hsv_range on the RGB image " + std::to_string(count) + " px; " + reps_note(t5), sn),
                 seed_note(5))});
      emit({"s001_stages", "seq", X(6), XV(6), tr.ms * double(oH) / k + t5.ms, 1, chk,
            join(join("ref backend Matcher (direct definition) timed on " + std::to_string(k) + " of " +
                          std::to_string(oH) + " output rows and scaled + colour count; " + reps_note(tr) +
                          "; study stages sum " +
                          fmt(t0.ms + t1.ms + t2.ms * scale + t3.ms + t4.ms + t5.ms, 1) + " ms",
                      case_note),
                 seed_total)});
    }

    // ---- cpu: the Matcher with stage profiling ----
    for (const FilterSeries& s : cpu_series()) {
      MatchParams mp;
      mp.method = MatchMethod::sqdiff;
      mp.strategy = MatchStrategy::automatic;
      const Options o = opts(Backend::cpu, s.threads);
      RunInfo info;
      const Options oi = opts(Backend::cpu, s.threads, &info);
      // integral_template: what the Matcher constructor does (template copy and sums).
      std::vector<double> tc;
      std::unique_ptr<Matcher> m;
      for (int i = 0; i < (g_cfg.quick ? 3 : 7); ++i) {
        const auto t0 = Clock::now();
        m = std::make_unique<Matcher>(templ, mp);
        tc.push_back(ms_since(t0));
      }
      m->reserve(W, H, o);
      MatchResult r;
      std::int64_t count = 0;
      auto whole = [&](const Options& oo) {
        r = (*m)(grey, oo);
        count = count_in_hsv_range(rgb, r.matches.at(0).x, r.matches.at(0).y, w, h, blue);
      };
      const double first = time_once([&] { whole(oi); });
      if (r.matches.empty() || r.matches[0].x != px || r.matches[0].y != py) {
        emit({"s001_stages", s.name, X(6), XV(6), NAN, s.threads, "mismatch", "best match not at the pasted copy"});
        continue;
      }
      const int n = std::max(g_cfg.quick ? 2 : 3, reps_for(first));
      std::vector<double> tot, corr, sums, score, sel, col;
      detail::set_match_cpu_profiling(true);
      for (int i = 0; i < n; ++i) {
        const auto t0 = Clock::now();
        r = (*m)(grey, o);
        const auto t1 = Clock::now();
        count = count_in_hsv_range(rgb, r.matches.at(0).x, r.matches.at(0).y, w, h, blue);
        const auto t2 = Clock::now();
        tot.push_back(std::chrono::duration<double, std::milli>(t2 - t0).count());
        col.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
        const detail::MatchCpuStages st = detail::match_cpu_last_stages();
        corr.push_back(st.corr_ms);
        sums.push_back(st.sums_ms);
        score.push_back(st.score_ms);
        sel.push_back(st.select_ms);
      }
      detail::set_match_cpu_profiling(false);
      const std::string rn = "median of " + std::to_string(n);
      const std::string pn = "pixelkit cpu Matcher (" + info.path + ") stage split by detail:: profiling; " + rn;
      emit({"s001_stages", s.name, X(0), XV(0), median(sums), s.threads, "ok",
            join(join("running window sums S2 (take the place of the source's integral tables)", pn), case_note)});
      emit({"s001_stages", s.name, X(1), XV(1), median(tc), s.threads, "ok",
            join("Matcher constructor (template copy and sums; once per template); median of " +
                     std::to_string(tc.size()),
                 case_note)});
      emit({"s001_stages", s.name, X(2), XV(2), median(corr), s.threads, "ok",
            join(join("correlation incl. image conversion / FFT", pn), case_note)});
      emit({"s001_stages", s.name, X(3), XV(3), median(score), s.threads, "ok", join(join("score formula", pn), case_note)});
      emit({"s001_stages", s.name, X(4), XV(4), median(sel), s.threads, "ok", join(join("best match", pn), case_note)});
      emit({"s001_stages", s.name, X(5), XV(5), median(col), s.threads, "ok",
            join("count_in_hsv_range on the RGB image " + std::to_string(count) + " px; " + rn, case_note)});
      emit({"s001_stages", s.name, X(6), XV(6), median(tot), s.threads, "ok",
            join(join("Matcher call + colour count (profiling on); " + info.path + "; " + rn + " (min " +
                          fmt(*std::min_element(tot.begin(), tot.end()), 4) + " ms)",
                      case_note),
                 seed_total)});
    }

#if defined(PIXELKIT_STUDY_HAVE_OPENCV)
    {
      const int nt = cv_threads();
      const cv::Mat g = as_mat(grey, CV_8U), t = as_mat(templ, CV_8U);
      cv::Mat res;
      cv::Point loc;
      auto run = [&] {
        cv::matchTemplate(g, t, res, cv::TM_SQDIFF);
        double mn = 0;
        cv::minMaxLoc(res, &mn, nullptr, &loc, nullptr);
      };
      const double first = time_once(run);
      if (loc.x != px || loc.y != py) {
        emit({"s001_stages", "opencv_cpu", X(6), XV(6), NAN, nt, "mismatch", "cv best match not at the pasted copy"});
      } else {
        const Timed tm = measure(run, first);
        emit({"s001_stages", "opencv_cpu", X(6), XV(6), tm.ms, nt, "ok",
              join(join("cv::matchTemplate TM_SQDIFF + minMaxLoc (no colour count); " + reps_note(tm), case_note),
                   seed_total)});
      }
    }
#endif
  }
}

// ---- the table on stderr ------------------------------------------------------------

void print_table() {
  std::vector<std::string> studies;
  for (const Row& r : g_rows)
    if (std::find(studies.begin(), studies.end(), r.study) == studies.end()) studies.push_back(r.study);
  for (const std::string& st : studies) {
    std::vector<std::string> xs, ss;
    std::map<std::pair<std::string, std::string>, const Row*> cell;
    for (const Row& r : g_rows) {
      if (r.study != st) continue;
      if (std::find(xs.begin(), xs.end(), r.x) == xs.end()) xs.push_back(r.x);
      if (std::find(ss.begin(), ss.end(), r.series) == ss.end()) ss.push_back(r.series);
      cell[{r.x, r.series}] = &r;
    }
    std::size_t xw = 4;
    for (const std::string& x : xs) xw = std::max(xw, x.size());
    std::fprintf(stderr, "\n%s (ms)\n%-*s", st.c_str(), int(xw), "x");
    for (const std::string& s : ss) std::fprintf(stderr, " %12s", s.c_str());
    std::fprintf(stderr, "\n");
    for (const std::string& x : xs) {
      std::fprintf(stderr, "%-*s", int(xw), x.c_str());
      for (const std::string& s : ss) {
        auto it = cell.find({x, s});
        std::string v = "";
        if (it != cell.end()) v = it->second->check == "mismatch" ? "MISMATCH" : fmt(it->second->time_ms, 3);
        std::fprintf(stderr, " %12s", v.c_str());
      }
      std::fprintf(stderr, "\n");
    }
  }
}

void usage() {
  std::fprintf(stderr,
               "usage: study_cpu [--csv FILE] [--quick] [--studies ID,ID,...] [--threads N]\n"
               "studies: s002_resolution s002_kernel s002_layout s004_edge s003_sizes s000_table s001_stages\n"
               "(an id prefix such as s002 selects several)\n");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
        return argv[++i];
      };
      if (a == "--csv") g_cfg.csv = value();
      else if (a == "--quick") g_cfg.quick = true;
      else if (a == "--threads") g_cfg.threads = std::stoi(value());
      else if (a == "--studies") {
        std::stringstream ss(value());
        std::string t;
        while (std::getline(ss, t, ','))
          if (!t.empty()) g_cfg.studies.push_back(t);
      } else if (a == "-h" || a == "--help") {
        usage();
        return 0;
      } else {
        usage();
        return 2;
      }
    }
    g_cfg.threads = resolve_threads(g_cfg.threads > 0 ? g_cfg.threads : 0);
    g_device = cpu_model();
    std::ofstream file;
    if (!g_cfg.csv.empty()) {
      file.open(g_cfg.csv);
      if (!file) throw std::runtime_error("cannot write " + g_cfg.csv);
      g_out = &file;
    }
    *g_out << "study,series,x,x_value,time_ms,threads,check,device,notes\n";
    const char* wp = std::getenv("OMP_WAIT_POLICY");
    std::fprintf(stderr, "study_cpu: %s; %d threads for the all-cores series (hardware %u); OMP_WAIT_POLICY=%s; %s%s\n",
                 g_device.c_str(), g_cfg.threads, std::thread::hardware_concurrency(), wp ? wp : "(unset)",
#if defined(PIXELKIT_STUDY_HAVE_OPENCV)
                 "OpenCV " CV_VERSION,
#else
                 "no OpenCV",
#endif
                 g_cfg.quick ? "; quick" : "");
    {
      std::ifstream la("/proc/loadavg");
      std::string l;
      std::getline(la, l);
      std::fprintf(stderr, "study_cpu: load average at start: %s\n", l.c_str());
    }
    const auto t0 = Clock::now();
    const std::pair<const char*, void (*)()> studies[] = {
        {"s002_resolution", study_s002_resolution}, {"s002_kernel", study_s002_kernel},
        {"s002_layout", study_s002_layout},         {"s004_edge", study_s004_edge},
        {"s003_sizes", study_s003_sizes},           {"s000_table", study_s000_table},
        {"s001_stages", study_s001_stages}};
    for (const auto& [id, fn] : studies) {
      if (!wanted(id)) continue;
      const auto ts = Clock::now();
      std::fprintf(stderr, "[%s]\n", id);
      fn();
      std::fprintf(stderr, "[%s] %.1f s\n", id, ms_since(ts) / 1000.0);
    }
    print_table();
    std::fprintf(stderr, "\nstudy_cpu: %zu rows, %d mismatch(es), %.1f s\n", g_rows.size(), g_mismatches,
                 ms_since(t0) / 1000.0);
    return g_mismatches ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "study_cpu: %s\n", e.what());
    return 1;
  }
}
