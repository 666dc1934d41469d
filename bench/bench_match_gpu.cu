// bench_match_gpu - template matching on the GPU: the cuda backend's direct
// and FFT strategies and the automatic choice, per stage, through a Matcher,
// against NPP on the same data; also the numbers that calibrate the cost model
// (cuda_match_cost_ms in src/match/match_cuda.cu).
//
//   bench_match_gpu [--quick] [--reps N] [--csv FILE]
//
// Cases (u8, image already on the device): seed 001's two (1326x1025 image
// with a 479x432 template; 1200x1983 with 150x150) and 1080p frames with
// 32x32, 64x64 and 256x256 templates, 1 and 3 channels; methods sqdiff,
// ccorr_normed, ccoeff_normed; strategies direct, fft and auto. The template
// is cut from the image (plus noise) at a known place.
//
// Before anything is timed, each configuration is checked: the direct and FFT
// score maps bit for bit against each other, sampled windows bit for bit
// against a host computation with exact integer sums and the shared score
// formula, and the best match at the place the template was cut from.
//
// Prints (stdout), in order: the device; per case the stage times (window
// sums = integral images, correlation, score map, selection + colour count +
// download; CUDA events), the whole call (CUDA events around the Matcher call,
// median) and its throughput (frames/s, host clock, the call returns after its
// one synchronisation), with the floors (bytes moved at the copy bandwidth;
// products at the dp4a peak); NPP's nppiSqrDistanceValid_Norm_8u32f_C1R and
// nppiCrossCorrValid_NormLevel_8u32f_C1R on the 1-channel cases (when built
// with NPP) as ratios to the same methods here; the cost model's constants
// measured; machine-readable `RESULT` lines; and last a short summary table.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_timing.hpp"
#include "core/cuda_check.hpp"
#include "match/match_backends.hpp"
#define PIXELKIT_MATCH_CUDA_HOOKS_ONLY  // the profiling hooks, not the kernels
#include "match/match_cuda_kernels.cuh"
#include "pixelkit/match.hpp"

#if defined(PIXELKIT_BENCH_HAVE_NPP)
#include <nppi.h>
#include "bench_npp.hpp"
#endif

using namespace pixelkit;
using pixelkit::bench::median;
using pixelkit::bench::time_device;
using pixelkit::bench::time_host;

namespace {

int g_reps = 20;
FILE* g_csv = nullptr;

// ---- data --------------------------------------------------------------------------------

/// A textured u8 image: smooth blobs plus noise (so that windows differ and
/// normalised scores are not flat).
Image make_image(int w, int h, int c, unsigned seed) {
  Image img(w, h, c, PixelType::u8, Memory::pinned);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double fx[3][3], fy[3][3], ph[3][3];
  for (int ch = 0; ch < 3; ++ch)
    for (int k = 0; k < 3; ++k) {
      fx[ch][k] = 0.002 + 0.03 * u(rng);
      fy[ch][k] = 0.002 + 0.03 * u(rng);
      ph[ch][k] = 6.28 * u(rng);
    }
  for (int y = 0; y < h; ++y) {
    auto* r = img.row<std::uint8_t>(y);
    for (int x = 0; x < w; ++x)
      for (int ch = 0; ch < c; ++ch) {
        double v = 128;
        for (int k = 0; k < 3; ++k) v += 35 * std::sin(fx[ch][k] * x + ph[ch][k]) * std::cos(fy[ch][k] * y + ph[ch][k]);
        v += static_cast<double>(rng() % 41) - 20;
        r[x * c + ch] = static_cast<std::uint8_t>(std::min(255.0, std::max(0.0, std::round(v))));
      }
  }
  return img;
}

Image cut_template(const Image& img, int x0, int y0, int w, int h, unsigned seed) {
  const int c = img.channels();
  Image t(w, h, c, PixelType::u8);
  std::mt19937 rng(seed);
  for (int j = 0; j < h; ++j)
    for (int i = 0; i < w * c; ++i) {
      const int v = img.row<std::uint8_t>(y0 + j)[x0 * c + i] + static_cast<int>(rng() % 7) - 3;
      t.row<std::uint8_t>(j)[i] = static_cast<std::uint8_t>(std::min(255, std::max(0, v)));
    }
  return t;
}

Image make_mask(int w, int h) {
  // An ellipse: the corners do not count.
  Image m(w, h, 1, PixelType::u8);
  for (int j = 0; j < h; ++j)
    for (int i = 0; i < w; ++i) {
      const double dx = (i + 0.5) / w - 0.5, dy = (j + 0.5) / h - 0.5;
      m.row<std::uint8_t>(j)[i] = dx * dx + dy * dy <= 0.25 ? 1 : 0;
    }
  return m;
}

/// The score of window (x, y) on the host: exact integer sums, the shared formula.
float host_score(const Image& img, const Image& tpl, const Image& mask, const detail::TemplateStats& st, MatchMethod m,
                 int x, int y) {
  const int C = img.channels();
  long long X = 0, S1[3] = {0, 0, 0}, S2[3] = {0, 0, 0};
  for (int j = 0; j < tpl.height(); ++j)
    for (int i = 0; i < tpl.width(); ++i) {
      if (!mask.empty() && !mask.row<std::uint8_t>(j)[i]) continue;
      for (int c = 0; c < C; ++c) {
        const long long I = img.row<std::uint8_t>(y + j)[(x + i) * C + c];
        const long long T = tpl.row<std::uint8_t>(j)[i * C + c];
        X += I * T;
        S1[c] += I;
        S2[c] += I * I;
      }
    }
  double s1[3], s2[3];
  for (int c = 0; c < 3; ++c) {
    s1[c] = static_cast<double>(S1[c]);
    s2[c] = static_cast<double>(S2[c]);
  }
  return detail::match_score(m, st, static_cast<double>(X), s1, s2);
}

double copy_bandwidth(cudaStream_t s) {
  const std::size_t bytes = std::size_t{1} << 29;
  detail::DeviceBuffer a(bytes), b(bytes);
  PIXELKIT_CUDA_TRY(cudaMemsetAsync(a.get(), 1, bytes, s));
  const double ms = time_device(
      [&] { PIXELKIT_CUDA_TRY(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s)); }, s, 10);
  return 2.0 * bytes / (ms * 1e-3);
}

#if defined(PIXELKIT_BENCH_HAVE_NPP)
using pixelkit::bench::npp_context;
void npp_check(NppStatus st, const char* what) {
  if (st != NPP_SUCCESS) throw Error(Status::cuda, std::string(what) + ": NPP status " + std::to_string(st));
}
/// The scratch size of a *GetBufferHostSize function, whatever its size type.
template <typename S>
std::size_t npp_buffer_size(NppStatus (*f)(NppiSize, S*, NppStreamContext), NppiSize roi, NppStreamContext ctx,
                            const char* what) {
  S v = 0;
  npp_check(f(roi, &v, ctx), what);
  return static_cast<std::size_t>(v);
}
#endif

// ---- reporting -----------------------------------------------------------------------------

struct Summary {
  std::string name;
  int C;
  std::string method;
  double direct_ms, fft_ms, auto_ms;
  std::string auto_choice;
  double auto_fps;
  double npp_ms;    ///< NaN without
  double ours_ms;   ///< the same method as NPP's (sqdiff_normed / ccoeff_normed), auto
};
std::vector<Summary> g_summary;

struct Calib {
  std::string what;
  double value;
};
std::vector<Calib> g_u8_direct, g_fft, g_sums, g_tables, g_score, g_fixed, g_masked_direct, g_f32_direct;

void result_line(const std::string& c, int C, const char* method, const char* strategy, bool masked, double ms,
                 double fps, const detail::MatchCudaStages& st, const std::string& note) {
  std::printf("RESULT case=\"%s\" C=%d method=%s strategy=%s mask=%d ms=%.4f fps=%.1f sums=%.4f corr=%.4f score=%.4f "
              "select=%.4f note=\"%s\"\n",
              c.c_str(), C, method, strategy, masked ? 1 : 0, ms, fps, st.sums_ms, st.corr_ms, st.score_ms, st.select_ms,
              note.c_str());
  if (g_csv)
    std::fprintf(g_csv, "%s,%d,%s,%s,%d,%.6f,%.2f,%.6f,%.6f,%.6f,%.6f,\"%s\"\n", c.c_str(), C, method, strategy,
                 masked ? 1 : 0, ms, fps, st.sums_ms, st.corr_ms, st.score_ms, st.select_ms, note.c_str());
}

detail::MatchCudaStages profile_stages(Matcher& m, const ConstImageView& img, const Options& o, int runs) {
  detail::set_match_cuda_profiling(true);
  std::vector<double> a, b, c, d;
  detail::MatchCudaStages last;
  for (int i = 0; i < runs; ++i) {
    m(img, o);
    last = detail::match_cuda_last_stages();
    a.push_back(last.sums_ms);
    b.push_back(last.corr_ms);
    c.push_back(last.score_ms);
    d.push_back(last.select_ms);
  }
  detail::set_match_cuda_profiling(false);
  last.sums_ms = median(a);
  last.corr_ms = median(b);
  last.score_ms = median(c);
  last.select_ms = median(d);
  return last;
}

struct Case {
  const char* name;
  int W, H, w, h;
};

}  // namespace

int main(int argc, char** argv) try {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--reps" && i + 1 < argc) g_reps = std::atoi(argv[++i]);
    else if (a == "--csv" && i + 1 < argc) {
      g_csv = std::fopen(argv[++i], "w");
      if (g_csv) std::fprintf(g_csv, "case,C,method,strategy,mask,ms,fps,sums_ms,corr_ms,score_ms,select_ms,note\n");
    } else {
      std::fprintf(stderr, "usage: bench_match_gpu [--quick] [--reps N] [--csv FILE]\n");
      return 2;
    }
  }
  if (!cuda_available()) {
    std::fprintf(stderr, "bench_match_gpu: no usable CUDA device\n");
    return 1;
  }
  if (quick) g_reps = std::min(g_reps, 10);
  detail::Stream stream;
  const cudaStream_t s = stream.get();
  const double bw = copy_bandwidth(s);
  int sms = 0, clock_khz = 0, dev = 0;
  PIXELKIT_CUDA_TRY(cudaGetDevice(&dev));
  PIXELKIT_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  PIXELKIT_CUDA_TRY(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  // dp4a: 64 per SM per clock (4 products each) is the assumed peak for the floor.
  const double dp4a_products_per_s = 64.0 * 4 * sms * clock_khz * 1e3;
  std::printf("# template matching benchmark (cuda backend)\n\ndevice: %s, %d SMs at %.0f MHz; copy bandwidth (read + "
              "write) %.0f GB/s; assumed dp4a peak %.1f T products/s\n",
              cuda_device_name().c_str(), sms, clock_khz / 1e3, bw / 1e9, dp4a_products_per_s / 1e12);
#if defined(PIXELKIT_BENCH_HAVE_NPP)
  std::printf("NPP: nppiSqrDistanceValid_Norm_8u32f_C1R_Ctx, nppiCrossCorrValid_NormLevel_8u32f_C1R_Ctx\n");
#else
  std::printf("NPP: not built (no NPP found at configure time)\n");
#endif
  std::printf("reps: %d (median)\n\n", g_reps);

  std::vector<Case> cases = {{"seed A 1326x1025 t479x432", 1326, 1025, 479, 432},
                             {"seed B 1200x1983 t150x150", 1200, 1983, 150, 150},
                             {"1080p t32x32", 1920, 1080, 32, 32},
                             {"1080p t64x64", 1920, 1080, 64, 64},
                             {"1080p t256x256", 1920, 1080, 256, 256}};
  const MatchMethod methods[] = {MatchMethod::sqdiff, MatchMethod::ccorr_normed, MatchMethod::ccoeff_normed};
  const MatchStrategy strategies[] = {MatchStrategy::direct, MatchStrategy::fft, MatchStrategy::automatic};
  int failures = 0;
  unsigned seed = 1;

  for (const Case& cs : cases) {
    for (int C : {1, 3}) {
      const Image host = make_image(cs.W, cs.H, C, ++seed);
      const int tx = cs.W / 3, ty = cs.H / 4;
      const Image tpl = cut_template(host, std::min(tx, cs.W - cs.w), std::min(ty, cs.H - cs.h), cs.w, cs.h, seed);
      const int ex = std::min(tx, cs.W - cs.w), ey = std::min(ty, cs.H - cs.h);
      const Image dimg = clone(host.cview(), Memory::device);
      const int Wo = cs.W - cs.w + 1, Ho = cs.H - cs.h + 1;
      Image dmap(Wo, Ho, 1, PixelType::f32, Memory::device), dmap2(Wo, Ho, 1, PixelType::f32, Memory::device);
      Image hmap(Wo, Ho, 1, PixelType::f32, Memory::pinned), hmap2(Wo, Ho, 1, PixelType::f32, Memory::pinned);
      const double products = static_cast<double>(Wo) * Ho * cs.w * cs.h * C;
      const double bytes = static_cast<double>(cs.W) * cs.H * C + static_cast<double>(Wo) * Ho * 4;
      std::printf("## %s, %d channel%s: %dx%d windows, %.3g products; floors: bytes %.4f ms, products at dp4a peak "
                  "%.4f ms\n\n",
                  cs.name, C, C > 1 ? "s" : "", Wo, Ho, products, bytes / bw * 1e3, products / dp4a_products_per_s * 1e3);
      std::printf("| method | strategy | mask | call ms | frames/s | sums | correlation | score | select+download | "
                  "path |\n|---|---|---|---:|---:|---:|---:|---:|---:|---|\n");
      for (MatchMethod m : methods) {
        Summary sum{cs.name, C, to_string(m), NAN, NAN, NAN, "", NAN, NAN, NAN};
        const detail::TemplateStats st = detail::prepare_template(tpl.cview(), {}, m).stats;
        // ---- check: direct vs fft bit for bit, samples vs the host, the best place ----
        {
          MatchParams p;
          p.method = m;
          p.strategy = MatchStrategy::direct;
          Matcher md(tpl.cview(), p);
          p.strategy = MatchStrategy::fft;
          Matcher mf(tpl.cview(), p);
          Options o;
          o.backend = Backend::cuda;
          o.stream = s;
          const MatchResult rd = md(dimg.cview(), dmap.view(), o);
          const MatchResult rf = mf(dimg.cview(), dmap2.view(), o);
          copy(dmap.cview(), hmap.view(), s);
          copy(dmap2.cview(), hmap2.view(), s);
          synchronize(s);
          long long differ = 0;
          for (int y = 0; y < Ho; ++y)
            if (std::memcmp(hmap.row<float>(y), hmap2.row<float>(y), sizeof(float) * Wo) != 0)
              for (int x = 0; x < Wo; ++x)
                differ += std::memcmp(hmap.row<float>(y) + x, hmap2.row<float>(y) + x, 4) != 0;
          std::mt19937 rng(seed * 7 + static_cast<unsigned>(m));
          int sample_bad = 0;
          std::vector<std::pair<int, int>> pts = {{0, 0}, {Wo - 1, Ho - 1}, {ex, ey}};
          for (int k = 0; k < 13; ++k) pts.push_back({static_cast<int>(rng() % Wo), static_cast<int>(rng() % Ho)});
          for (auto [x, y] : pts) {
            const float want = host_score(host, tpl, Image(), st, m, x, y);
            const float got = hmap.row<float>(y)[x];
            sample_bad += std::memcmp(&want, &got, 4) != 0;
          }
          const bool place = !rd.matches.empty() && rd.matches[0].x == ex && rd.matches[0].y == ey &&
                             !rf.matches.empty() && rf.matches[0].x == ex && rf.matches[0].y == ey;
          if (differ || sample_bad || !place) {
            ++failures;
            std::printf("CHECK FAILED %s C=%d %s: direct vs fft %lld differ, %d/%zu samples differ from the host, best "
                        "(%d,%d)/(%d,%d) expected (%d,%d)\n",
                        cs.name, C, to_string(m), differ, sample_bad, pts.size(),
                        rd.matches.empty() ? -1 : rd.matches[0].x, rd.matches.empty() ? -1 : rd.matches[0].y,
                        rf.matches.empty() ? -1 : rf.matches[0].x, rf.matches.empty() ? -1 : rf.matches[0].y, ex, ey);
          }
        }
        // ---- timing ----
        for (MatchStrategy sg : strategies) {
          MatchParams p;
          p.method = m;
          p.strategy = sg;
          if (C == 3) {
            p.color_check = true;
            p.hsv = parse_hsv_range("90,40,40:130,255,255");
          }
          Matcher mm(tpl.cview(), p);
          Options o;
          o.backend = Backend::cuda;
          o.stream = s;
          RunInfo info;
          o.info = &info;
          mm.reserve(cs.W, cs.H, o);
          mm(dimg.cview(), o);
          const std::string path = info.path;
          o.info = nullptr;
          const double ms = time_device([&] { mm(dimg.cview(), o); }, s, g_reps);
          const double wall = time_host([&] { mm(dimg.cview(), o); }, g_reps);
          const detail::MatchCudaStages stg = profile_stages(mm, dimg.cview(), o, quick ? 3 : 7);
          const char* sname = sg == MatchStrategy::direct ? "direct" : (sg == MatchStrategy::fft ? "fft" : "auto");
          std::printf("| %s | %s | no | %.3f | %.0f | %.3f | %.3f | %.3f | %.3f | %s |\n", to_string(m), sname, ms,
                      1e3 / wall, stg.sums_ms, stg.corr_ms, stg.score_ms, stg.select_ms, path.c_str());
          result_line(cs.name, C, to_string(m), sname, false, ms, 1e3 / wall, stg, path);
          if (sg == MatchStrategy::direct) sum.direct_ms = ms;
          if (sg == MatchStrategy::fft) sum.fft_ms = ms;
          if (sg == MatchStrategy::automatic) {
            sum.auto_ms = ms;
            sum.auto_fps = 1e3 / wall;
            sum.auto_choice = path.find("fft:") != std::string::npos ? "fft" : "direct";
          }
          // calibration samples (sqdiff: both window sums' tables are not needed; use
          // ccoeff_normed for the tables, which needs sum and sqsum)
          if (sg == MatchStrategy::direct)
            g_u8_direct.push_back({std::string(cs.name) + " C" + std::to_string(C),
                                   stg.corr_ms / (static_cast<double>(Wo) * Ho * C * cs.h *
                                                  (std::ceil((cs.w + 3) / 4.0) * 4))});
          if (sg == MatchStrategy::fft && stg.padded_w > 0) {
            const double n = static_cast<double>(stg.padded_w) * stg.padded_h;
            g_fft.push_back({std::string(cs.name) + " C" + std::to_string(C), stg.corr_ms / ((C + 1) * n * std::log2(n))});
          }
          if (sg != MatchStrategy::automatic && m == MatchMethod::ccoeff_normed) {
            g_sums.push_back({std::string(cs.name) + " C" + std::to_string(C),
                              stg.sums_ms / (static_cast<double>(cs.W) * cs.H * C)});
            g_score.push_back({std::string(cs.name) + " C" + std::to_string(C),
                               stg.score_ms / (static_cast<double>(Wo) * Ho * C)});
            g_fixed.push_back({std::string(cs.name) + " C" + std::to_string(C), stg.select_ms});
          }
        }
        g_summary.push_back(sum);
        // The integral-table window sums (the path f32 images take), against the
        // default column + row sums: same map bit for bit, and the time.
        if (m == MatchMethod::ccoeff_normed) {
          MatchParams p;
          p.method = m;
          Matcher mm(tpl.cview(), p);
          Options o;
          o.backend = Backend::cuda;
          o.stream = s;
          mm(dimg.cview(), dmap.view(), o);
          detail::set_match_cuda_force_tables(true);
          RunInfo info;
          o.info = &info;
          mm(dimg.cview(), dmap2.view(), o);
          o.info = nullptr;
          copy(dmap.cview(), hmap.view(), s);
          copy(dmap2.cview(), hmap2.view(), s);
          synchronize(s);
          bool same = true;
          for (int y = 0; y < Ho && same; ++y) same = std::memcmp(hmap.row<float>(y), hmap2.row<float>(y), 4 * Wo) == 0;
          if (!same) {
            ++failures;
            std::printf("CHECK FAILED %s C=%d: integral-table window sums differ from the column sums\n", cs.name, C);
          }
          const double ms = time_device([&] { mm(dimg.cview(), o); }, s, g_reps);
          const detail::MatchCudaStages stg = profile_stages(mm, dimg.cview(), o, quick ? 3 : 7);
          detail::set_match_cuda_force_tables(false);
          std::printf("| %s | auto, integral tables | no | %.3f | | %.3f | %.3f | %.3f | %.3f | %s |\n", to_string(m), ms,
                      stg.sums_ms, stg.corr_ms, stg.score_ms, stg.select_ms, info.path.c_str());
          result_line(cs.name, C, to_string(m), "auto-tables", false, ms, 0, stg, info.path);
          g_tables.push_back({std::string(cs.name) + " C" + std::to_string(C),
                              stg.sums_ms / (static_cast<double>(cs.W) * cs.H * C)});
        }
      }
      // ---- masked (cost model): ccoeff_normed with an elliptic mask, both strategies ----
      if (!quick || cs.w <= 64) {
        const Image mask = make_mask(cs.w, cs.h);
        for (MatchStrategy sg : {MatchStrategy::direct, MatchStrategy::fft}) {
          MatchParams p;
          p.method = MatchMethod::ccoeff_normed;
          p.strategy = sg;
          Matcher mm(tpl.cview(), p, mask.cview());
          Options o;
          o.backend = Backend::cuda;
          o.stream = s;
          RunInfo info;
          o.info = &info;
          const MatchResult r = mm(dimg.cview(), dmap.view(), o);
          o.info = nullptr;
          // check a few windows against the host
          copy(dmap.cview(), hmap.view(), s);
          synchronize(s);
          const detail::TemplateStats st = detail::prepare_template(tpl.cview(), mask.cview(), p.method).stats;
          int bad = 0;
          for (auto [x, y] : std::vector<std::pair<int, int>>{{0, 0}, {ex, ey}, {Wo - 1, Ho - 1}, {Wo / 2, Ho / 3}}) {
            const float want = host_score(host, tpl, mask, st, p.method, x, y), got = hmap.row<float>(y)[x];
            bad += std::memcmp(&want, &got, 4) != 0;
          }
          if (bad || r.matches.empty() || r.matches[0].x != ex || r.matches[0].y != ey) {
            ++failures;
            std::printf("CHECK FAILED %s C=%d masked %s: %d samples differ, best (%d,%d) expected (%d,%d)\n", cs.name, C,
                        to_string(sg), bad, r.matches.empty() ? -1 : r.matches[0].x,
                        r.matches.empty() ? -1 : r.matches[0].y, ex, ey);
          }
          const double ms = time_device([&] { mm(dimg.cview(), o); }, s, std::max(3, g_reps / 2));
          const detail::MatchCudaStages stg = profile_stages(mm, dimg.cview(), o, 3);
          const char* sname = sg == MatchStrategy::direct ? "direct" : "fft";
          std::printf("| ccoeff_normed | %s | ellipse | %.3f | | %.3f | %.3f | %.3f | %.3f | %s |\n", sname, ms,
                      stg.sums_ms, stg.corr_ms, stg.score_ms, stg.select_ms, info.path.c_str());
          result_line(cs.name, C, "ccoeff_normed", sname, true, ms, 0, stg, info.path);
          if (sg == MatchStrategy::direct)
            g_masked_direct.push_back({std::string(cs.name) + " C" + std::to_string(C),
                                       stg.corr_ms / (static_cast<double>(Wo) * Ho * C * cs.h *
                                                      (std::ceil((cs.w + 3) / 4.0) * 4))});
        }
      }
      // ---- NPP (1 channel): sqdiff_normed and ccoeff_normed, against ours ----
#if defined(PIXELKIT_BENCH_HAVE_NPP)
      if (C == 1) {
        const Image dtpl = clone(tpl.cview(), Memory::device);
        const NppStreamContext ctx = npp_context(s);
        const NppiSize src_roi{cs.W, cs.H}, tpl_roi{cs.w, cs.h};
        const std::size_t nbuf = npp_buffer_size(nppiValidNormLevelGetBufferHostSize_8u32f_C1R_Ctx, src_roi, ctx,
                                                 "nppiValidNormLevelGetBufferHostSize_8u32f_C1R_Ctx");
        detail::DeviceBuffer buf(std::max<std::size_t>(nbuf, 16));
        Npp32f* out = static_cast<Npp32f*>(dmap2.view().data);
        const int out_step = static_cast<int>(dmap2.pitch());
        for (MatchMethod m : {MatchMethod::sqdiff_normed, MatchMethod::ccoeff_normed}) {
          auto npp_call = [&] {
            if (m == MatchMethod::sqdiff_normed)
              npp_check(nppiSqrDistanceValid_Norm_8u32f_C1R_Ctx(
                            static_cast<const Npp8u*>(dimg.cview().data), static_cast<int>(dimg.pitch()), src_roi,
                            static_cast<const Npp8u*>(dtpl.cview().data), static_cast<int>(dtpl.pitch()), tpl_roi, out,
                            out_step, ctx),
                        "nppiSqrDistanceValid_Norm_8u32f_C1R_Ctx");
            else
              npp_check(nppiCrossCorrValid_NormLevel_8u32f_C1R_Ctx(
                            static_cast<const Npp8u*>(dimg.cview().data), static_cast<int>(dimg.pitch()), src_roi,
                            static_cast<const Npp8u*>(dtpl.cview().data), static_cast<int>(dtpl.pitch()), tpl_roi, out,
                            out_step, buf.as<Npp8u>(), ctx),
                        "nppiCrossCorrValid_NormLevel_8u32f_C1R_Ctx");
          };
          npp_call();
          const double t_npp = time_device(npp_call, s, std::max(3, g_reps / 2));
          // ours: the same method, auto strategy, map + best match
          MatchParams p;
          p.method = m;
          Matcher mm(tpl.cview(), p);
          Options o;
          o.backend = Backend::cuda;
          o.stream = s;
          mm(dimg.cview(), dmap.view(), o);
          copy(dmap.cview(), hmap.view(), s);
          copy(dmap2.cview(), hmap2.view(), s);
          synchronize(s);
          double maxdiff = 0;
          for (int y = 0; y < Ho; ++y)
            for (int x = 0; x < Wo; ++x)
              maxdiff = std::max(maxdiff, std::fabs(static_cast<double>(hmap.row<float>(y)[x]) - hmap2.row<float>(y)[x]));
          const double t_ours = time_device([&] { mm(dimg.cview(), o); }, s, g_reps);
          std::printf("| %s | NPP %s | no | %.3f | | | | | | max |NPP - ours| %.2g; NPP / ours = %.2fx |\n",
                      to_string(m), m == MatchMethod::sqdiff_normed ? "nppiSqrDistanceValid_Norm" : "nppiCrossCorrValid_NormLevel",
                      t_npp, maxdiff, t_npp / t_ours);
          std::printf("RESULT case=\"%s\" C=1 method=%s strategy=npp ms=%.4f ours_ms=%.4f ratio=%.3f maxdiff=%.3g\n",
                      cs.name, to_string(m), t_npp, t_ours, t_npp / t_ours, maxdiff);
          g_summary.push_back({cs.name, 1, std::string(to_string(m)) + " (NPP's method)", NAN, NAN, t_ours, "auto",
                               NAN, t_npp, t_ours});
        }
      }
#endif
      std::printf("\n");
    }
  }

  // ---- f32 (cost model): 1080p with 32x32 and 64x64 templates, sqdiff ----------------------
  std::printf("## f32 images (1080p, sqdiff): direct (f64 sums) and fft\n\n| template | C | strategy | call ms | "
              "correlation | max rel diff direct vs fft |\n|---|---:|---|---:|---:|---:|\n");
  for (int tw : {32, 64}) {
    for (int C : {1, 3}) {
      const Image u = make_image(1920, 1080, C, 77 + tw + C);
      Image f(1920, 1080, C, PixelType::f32, Memory::host);
      for (int y = 0; y < 1080; ++y)
        for (int i = 0; i < 1920 * C; ++i) f.row<float>(y)[i] = u.row<std::uint8_t>(y)[i] * (1.0f / 255.0f) - 0.25f;
      const Image dimg = clone(f.cview(), Memory::device);
      Image tpl(tw, tw, C, PixelType::f32);
      for (int j = 0; j < tw; ++j)
        for (int i = 0; i < tw * C; ++i) tpl.row<float>(j)[i] = f.row<float>(300 + j)[500 * C + i];
      const int Wo = 1920 - tw + 1, Ho = 1080 - tw + 1;
      Image dm[2] = {Image(Wo, Ho, 1, PixelType::f32, Memory::device), Image(Wo, Ho, 1, PixelType::f32, Memory::device)};
      Image hm[2] = {Image(Wo, Ho, 1, PixelType::f32), Image(Wo, Ho, 1, PixelType::f32)};
      double t[2], corr[2];
      for (int k = 0; k < 2; ++k) {
        MatchParams p;
        p.method = MatchMethod::sqdiff;
        p.strategy = k == 0 ? MatchStrategy::direct : MatchStrategy::fft;
        Matcher mm(tpl.cview(), p);
        Options o;
        o.backend = Backend::cuda;
        o.stream = s;
        mm(dimg.cview(), dm[k].view(), o);
        copy(dm[k].cview(), hm[k].view(), s);
        synchronize(s);
        t[k] = time_device([&] { mm(dimg.cview(), o); }, s, g_reps);
        corr[k] = profile_stages(mm, dimg.cview(), o, 3).corr_ms;
      }
      double maxd = 0, maxv = 0;
      for (int y = 0; y < Ho; ++y)
        for (int x = 0; x < Wo; ++x) {
          maxd = std::max(maxd, std::fabs(static_cast<double>(hm[0].row<float>(y)[x]) - hm[1].row<float>(y)[x]));
          maxv = std::max(maxv, std::fabs(static_cast<double>(hm[1].row<float>(y)[x])));
        }
      const double rel = maxd / std::max(maxv, 1e-30);
      if (!(rel <= 1e-5)) {
        ++failures;
        std::printf("CHECK FAILED f32 %dx%d C=%d: direct vs fft rel diff %.3g\n", tw, tw, C, rel);
      }
      for (int k = 0; k < 2; ++k)
        std::printf("| %dx%d | %d | %s | %.3f | %.3f | %.2g |\n", tw, tw, C, k == 0 ? "direct" : "fft", t[k], corr[k], rel);
      g_f32_direct.push_back({std::to_string(tw) + " C" + std::to_string(C),
                              corr[0] / (static_cast<double>(Wo) * Ho * C * tw * tw)});
    }
  }
  std::printf("\n");

  // ---- cost model constants --------------------------------------------------------------
  auto med = [](const std::vector<Calib>& v) {
    std::vector<double> x;
    for (const Calib& c : v) x.push_back(c.value);
    return median(x);
  };
  auto dump = [](const char* name, const std::vector<Calib>& v) {
    std::printf("%s:", name);
    for (const Calib& c : v) std::printf(" [%s] %.3g", c.what.c_str(), c.value);
    std::printf("\n");
  };
  std::printf("## cost model: measured constants (median over the cases)\n\n");
  dump("u8 direct ms per product (padded words)", g_u8_direct);
  dump("u8 masked direct (X + S1 + S2) ms per product", g_masked_direct);
  dump("fft correlation ms per (transforms x N log2 N)", g_fft);
  dump("window sums (column sums) ms per pixel-channel", g_sums);
  dump("window sums (integral tables) ms per pixel-channel", g_tables);
  dump("f32 direct ms per product", g_f32_direct);
  dump("score ms per window-channel", g_score);
  dump("select + colour + download ms", g_fixed);
  std::printf("\nCALIB u8_ms_per_product=%.4g f32_ms_per_product=%.4g masked_factor=%.3g fft_ms_per_point_log=%.4g "
              "sums_ms_per_value=%.4g table_ms_per_value=%.4g score_ms_per_window=%.4g fixed_ms=%.4g\n\n",
              med(g_u8_direct), med(g_f32_direct), med(g_masked_direct) / std::max(1e-30, med(g_u8_direct)), med(g_fft),
              med(g_sums), med(g_tables), med(g_score), med(g_fixed));

  // ---- summary -----------------------------------------------------------------------------
  std::printf("## summary (u8, image on the device; ms = CUDA events around one Matcher call)\n\n");
  std::printf("| case | C | method | direct ms | fft ms | auto ms (choice) | auto frames/s | NPP ms | NPP / ours |\n"
              "|---|---:|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Summary& sm : g_summary) {
    char npp[64] = "", ratio[64] = "";
    if (!std::isnan(sm.npp_ms)) {
      std::snprintf(npp, sizeof npp, "%.3f", sm.npp_ms);
      std::snprintf(ratio, sizeof ratio, "%.2fx", sm.npp_ms / sm.ours_ms);
    }
    if (std::isnan(sm.direct_ms)) {  // an NPP comparison row
      std::printf("| %s | %d | %s | | | %.3f | | %s | %s |\n", sm.name.c_str(), sm.C, sm.method.c_str(), sm.auto_ms, npp,
                  ratio);
      continue;
    }
    const bool auto_ok = std::min(sm.direct_ms, sm.fft_ms) >= 0.9 * sm.auto_ms;
    std::printf("| %s | %d | %s | %.3f | %.3f | %.3f (%s%s) | %.0f | %s | %s |\n", sm.name.c_str(), sm.C,
                sm.method.c_str(), sm.direct_ms, sm.fft_ms, sm.auto_ms, sm.auto_choice.c_str(), auto_ok ? "" : ", SLOWER",
                sm.auto_fps, npp, ratio);
  }
  std::printf("\n%s\n", failures ? "SOME CHECKS FAILED (see CHECK FAILED lines)" : "all checks passed");
  if (g_csv) std::fclose(g_csv);
  return failures ? 1 : 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_match_gpu: %s\n", e.what());
  return 1;
}
