// study_gpu (issue 7) - the GPU side of seeds 003, 000 and 001's performance
// studies, re-measured on today's hardware with pixelkit's own code.
//
//   study_gpu [--csv FILE] [--quick] [--studies a,b] [--reps N]
//
// Writes bench/studies/SCHEMA.md rows (CSV, header first; stdout without
// --csv) and a short table per study on stderr at the end. Studies (names
// for --studies; a prefix such as "s003" selects both of its studies):
//
//   s003_blocks  seed 003's scan + transpose integral (u8 -> i64, W x H without
//                the zero row and column) at 2048x2048, sweeping the
//                thread-block configuration as the seed did: transpose
//                blocks T x T (T = 8, 16, 32) by scan blocks of S threads
//                (S = 32 .. 1024); x = "TxT/S" (the seed's (T,T,S)), x_value = S.
//                pixelkit_cuda (the production Integral, device-resident) is
//                one reference row, x = "production".
//   s003_sizes   128^2 .. 8192^2 (doubling), u8 1 channel, sum i64:
//                cuda_scan_transpose (the seed's best: 32x32 transpose, 256
//                scan threads), pixelkit_cuda, pixelkit_cuda_v<i> (every
//                alternative of detail::set_integral_cuda_variant; the variant
//                name is in notes), npp (nppiIntegral_8u32s_C1R_Ctx, i32
//                table, when built with NPP). Host series are study_cpu's.
//   s000_table   seed 000's images (sizes and levels of its table, f32 grey,
//                forward, `average` normalisation = the seed's averages and
//                half-differences): cuda_v1 (the seed's v1: a host round trip
//                per level, device buffers allocated per level), cuda_v2
//                (pixelkit's HaarTransform on host images: one upload, one
//                download, as the seed's v2 was measured), pixelkit_cuda
//                (device-resident, kernels only), seq (ref backend), cpu (cpu
//                backend, all cores).
//   s000_blocks  threads per block 8 .. 256 (the seed's sweep) on the largest
//                of the seed's images: cuda_v1, cuda_v2 and pixelkit_cuda.
//                pixelkit's HaarCudaTuning::block_threads must be a multiple
//                of 32 in 32..512: smaller values are refused, and the row
//                says so (check n/a, no time).
//   s001_stages  seed 001's two cases (A: 1326x1025 image, 479x432 template;
//                B: 1200x1983, 150x150), grey u8, sqdiff, per stage
//                (x = "A/<stage>", x_value = stage index): 0 integral_source,
//                1 integral_template, 2 correlation, 3 ssd_map, 4 best_match,
//                5 colour_count, 6 total.
//                cuda_naive: seed 001's naive CUDA pipeline, written here:
//                  integral images by one thread per row, then one thread per
//                  column; cross-correlation by cuFFT (pad, forward
//                  transforms of image and template, product with the
//                  conjugate, inverse, normalise); the SSD map one thread per
//                  position from the integral of the squares, the correlation
//                  and the template's sum of squares; the best match by
//                  downloading the map and scanning it on the host (the seed's
//                  cv::minMaxLoc); the colour count one thread per pixel of
//                  the matched window. f64 where the seed used f32, so that
//                  the map can be checked against ref.
//                cuda_naive_direct: one thread per position summing (I - T)^2
//                  over the whole template directly (correlation and SSD map
//                  in one kernel; reported at stage 2, correlation).
//                pixelkit_cuda: the production Matcher (automatic strategy),
//                  per stage through detail::set_match_cuda_profiling: window
//                  sums (its integral of the source), correlation, score map,
//                  selection + download; the template's sums are computed on
//                  the host once, in the Matcher's constructor (timed as that,
//                  device = the CPU); the colour count is the selection time
//                  of an RGB Matcher with the colour check on minus off; total
//                  = the whole grey call.
//
// Every timed result is checked first (check column): integral bit for bit
// against pixelkit's cpu backend on the same input (npp modulo 2^32, its
// table being i32); Haar max |diff| / max |ref| <= 1e-5 against the ref
// backend; matching: best location equal to the cpu backend's (bit-identical
// to ref by contract; ref itself would take minutes on seed A) and score map
// within 1e-4 of max |score| (relative), colour counts equal to the host's
// count_in_hsv_range. Device times are medians of CUDA-event timings after
// warm-up; inputs rotate among several buffers while a set is smaller than
// twice the L2 cache. Host-side series (seq, cpu, cuda_v1, cuda_v2, whose
// calls return when the host result is complete) use the host clock.
#include <cuda_runtime.h>
#include <cufft.h>

#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_timing.hpp"
#include "seed_variants.cuh"
#include "core/cuda_check.hpp"
#include "core/cuda_resources.hpp"
#include "haar/haar_backends.hpp"
#include "integral/integral_backends.hpp"
#include "match/match_backends.hpp"
#define PIXELKIT_MATCH_CUDA_HOOKS_ONLY  // the profiling hooks, not the kernels
#include "match/match_cuda_kernels.cuh"
#include "pixelkit/haar.hpp"
#include "pixelkit/integral.hpp"
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

// ---- settings, rows, output ----------------------------------------------------------

struct Settings {
  bool quick = false;
  int reps = 0;  // device reps; 0 = the default for quick / full
  std::vector<std::string> studies;
};
Settings g_set;
FILE* g_csv = nullptr;
std::string g_gpu, g_cpu;
std::size_t g_l2 = 50u << 20;

int dev_reps() { return g_set.reps > 0 ? g_set.reps : (g_set.quick ? 10 : 30); }
int host_reps() { return g_set.reps > 0 ? std::max(3, g_set.reps / 3) : (g_set.quick ? 3 : 10); }

bool wanted(const std::string& study) {
  if (g_set.studies.empty()) return true;
  for (const std::string& s : g_set.studies)
    if (study.compare(0, s.size(), s) == 0) return true;
  return false;
}

struct Row {
  std::string study, series, x;
  double x_value = 0;
  double time_ms = NAN;  // NAN: empty
  int threads = 0;
  std::string check, device, notes;
};
std::vector<Row> g_rows;

std::string clean(std::string s) {
  for (char& c : s)
    if (c == ',' || c == '\n' || c == '\r' || c == '"') c = ';';
  return s;
}

void emit(Row r) {
  r.notes = clean(r.notes);
  r.x = clean(r.x);
  if (r.device.empty()) r.device = g_gpu;
  char t[64] = "";
  if (!std::isnan(r.time_ms)) std::snprintf(t, sizeof t, "%.6f", r.time_ms);
  std::fprintf(g_csv, "%s,%s,%s,%.10g,%s,%d,%s,%s,%s\n", r.study.c_str(), r.series.c_str(), r.x.c_str(), r.x_value, t,
               r.threads, r.check.c_str(), clean(r.device).c_str(), r.notes.c_str());
  std::fflush(g_csv);
  g_rows.push_back(std::move(r));
}

const char* ok(bool good) { return good ? "ok" : "mismatch"; }

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.compare(0, 10, "model name") == 0) {
      const auto p = line.find(':');
      if (p != std::string::npos) {
        std::string m = line.substr(p + 1);
        m.erase(0, m.find_first_not_of(" \t"));
        return m;
      }
    }
  return "unknown CPU";
}

/// How many input sets to rotate among so that one pass touches at least
/// twice the L2 cache (1 when one set already does; at most 8).
int rotation(double bytes_per_set) {
  const double want = 2.0 * static_cast<double>(g_l2);
  return static_cast<int>(std::clamp(std::ceil(want / std::max(bytes_per_set, 1.0)), 1.0, 8.0));
}

/// The summary on stderr: per study, one line per x, one column per series.
void print_summary() {
  std::vector<std::string> studies;
  for (const Row& r : g_rows)
    if (std::find(studies.begin(), studies.end(), r.study) == studies.end()) studies.push_back(r.study);
  for (const std::string& st : studies) {
    std::vector<std::string> series, xs;
    std::map<std::pair<std::string, std::string>, std::string> cell;
    for (const Row& r : g_rows) {
      if (r.study != st) continue;
      if (std::find(series.begin(), series.end(), r.series) == series.end()) series.push_back(r.series);
      if (std::find(xs.begin(), xs.end(), r.x) == xs.end()) xs.push_back(r.x);
      char b[64];
      if (r.check == "mismatch") std::snprintf(b, sizeof b, "MISMATCH");
      else if (std::isnan(r.time_ms)) std::snprintf(b, sizeof b, "-");
      else std::snprintf(b, sizeof b, "%.4g", r.time_ms);
      cell[{r.x, r.series}] = b;
    }
    std::fprintf(stderr, "\n%s (ms)\n%-22s", st.c_str(), "x");
    for (const std::string& s : series) std::fprintf(stderr, " %14.14s", s.c_str());
    std::fprintf(stderr, "\n");
    for (const std::string& x : xs) {
      std::fprintf(stderr, "%-22.22s", x.c_str());
      for (const std::string& s : series) {
        const auto it = cell.find({x, s});
        std::fprintf(stderr, " %14s", it == cell.end() ? "" : it->second.c_str());
      }
      std::fprintf(stderr, "\n");
    }
  }
  int bad = 0;
  for (const Row& r : g_rows) bad += r.check == "mismatch";
  std::fprintf(stderr, "\n%zu rows, %d mismatch%s; device %s\n", g_rows.size(), bad, bad == 1 ? "" : "es",
               g_gpu.c_str());
}

// ---- inputs -----------------------------------------------------------------------------

Image random_u8(int w, int h, int c, unsigned seed, Memory m = Memory::host) {
  Image img(w, h, c, PixelType::u8, m);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int y = 0; y < h; ++y) {
    auto* r = img.row<std::uint8_t>(y);
    for (int i = 0; i < w * c; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      r[i] = static_cast<std::uint8_t>(x >> 56);
    }
  }
  return img;
}

Image random_f32(int w, int h, unsigned seed) {
  Image img(w, h, 1, PixelType::f32);
  unsigned x = seed * 2654435761u + 1;
  for (int y = 0; y < h; ++y) {
    float* r = img.row<float>(y);
    for (int i = 0; i < w; ++i) {
      x = x * 1664525u + 1013904223u;
      r[i] = static_cast<float>(x >> 8) * (255.0f / 16777216.0f);
    }
  }
  return img;
}

Image to_host(const ConstImageView& v) {
  Image h(v.width, v.height, v.channels, v.type);
  copy(v, h.view());
  synchronize(nullptr);
  return h;
}

// =========================================================================================
// seed 003: scan rows, transpose, scan rows, transpose (study-only), block sizes as
// parameters: scan blocks of S threads (one block per row, S x kSeedScanItems elements
// per step, CUB's block scan), transpose tiles of T x T with T x T threads.
// =========================================================================================

using pixelkit::bench::kSeedScanItems;
using pixelkit::bench::seed003_row_scan;  // bench/seed_variants.cuh

// T x T tile through padded shared memory (no bank conflicts), blockDim (T, T).
template <int T>
__global__ void __launch_bounds__(T * T) st_transpose(const long long* in, std::size_t in_pitch, long long* out,
                                                      std::size_t out_pitch, int w, int h) {
  __shared__ long long tile[T][T + 1];
  const int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
  if (x < w && y < h)
    tile[threadIdx.y][threadIdx.x] = reinterpret_cast<const long long*>(reinterpret_cast<const char*>(in) + y * in_pitch)[x];
  __syncthreads();
  const int ox = blockIdx.y * T + threadIdx.x, oy = blockIdx.x * T + threadIdx.y;
  if (ox < h && oy < w)
    reinterpret_cast<long long*>(reinterpret_cast<char*>(out) + oy * out_pitch)[ox] = tile[threadIdx.x][threadIdx.y];
}

template <int S>
void launch_scan(const void* in, std::size_t ip, bool u8, long long* out, std::size_t op, int rows, int n,
                 cudaStream_t s) {
  if (u8) seed003_row_scan<S, unsigned char><<<rows, S, 0, s>>>(static_cast<const unsigned char*>(in), ip, out, op, n);
  else seed003_row_scan<S, long long><<<rows, S, 0, s>>>(static_cast<const long long*>(in), ip, out, op, n);
  PIXELKIT_CUDA_CHECK_LAUNCH("seed003_row_scan");
}

void scan_rows(int S, const void* in, std::size_t ip, bool u8, long long* out, std::size_t op, int rows, int n,
               cudaStream_t s) {
  switch (S) {
    case 32: launch_scan<32>(in, ip, u8, out, op, rows, n, s); return;
    case 64: launch_scan<64>(in, ip, u8, out, op, rows, n, s); return;
    case 128: launch_scan<128>(in, ip, u8, out, op, rows, n, s); return;
    case 256: launch_scan<256>(in, ip, u8, out, op, rows, n, s); return;
    case 512: launch_scan<512>(in, ip, u8, out, op, rows, n, s); return;
    case 1024: launch_scan<1024>(in, ip, u8, out, op, rows, n, s); return;
    default: throw std::invalid_argument("scan threads " + std::to_string(S) + " not instantiated");
  }
}

template <int T>
void launch_transpose(const long long* in, std::size_t ip, long long* out, std::size_t op, int w, int h,
                      cudaStream_t s) {
  st_transpose<T><<<dim3((w + T - 1) / T, (h + T - 1) / T), dim3(T, T), 0, s>>>(in, ip, out, op, w, h);
  PIXELKIT_CUDA_CHECK_LAUNCH("st_transpose");
}

void transpose(int T, const long long* in, std::size_t ip, long long* out, std::size_t op, int w, int h,
               cudaStream_t s) {
  switch (T) {
    case 8: launch_transpose<8>(in, ip, out, op, w, h, s); return;
    case 16: launch_transpose<16>(in, ip, out, op, w, h, s); return;
    case 32: launch_transpose<32>(in, ip, out, op, w, h, s); return;
    default: throw std::invalid_argument("transpose side " + std::to_string(T) + " not instantiated");
  }
}

/// The seed's integral of one W x H u8 device image into its own W x H i64
/// buffer `a` (b is the transposed scratch).
struct SeedIntegral {
  detail::DeviceBuffer a, b;
  int w = 0, h = 0;
  SeedIntegral(int w_, int h_) : a(std::size_t(w_) * h_ * 8), b(std::size_t(w_) * h_ * 8), w(w_), h(h_) {}
  void run(const ConstImageView& d, int T, int S, cudaStream_t s) {
    const std::size_t pa = std::size_t(w) * 8, pb = std::size_t(h) * 8;
    auto* A = static_cast<long long*>(a.get());
    auto* B = static_cast<long long*>(b.get());
    scan_rows(S, d.data, d.pitch, true, A, pa, h, w, s);
    transpose(T, A, pa, B, pb, w, h, s);
    scan_rows(S, B, pb, false, B, pb, w, h, s);
    transpose(T, B, pb, A, pa, h, w, s);
  }
};

/// The seed's table (no zero row / column) against a host i64 table.
bool seed_equal(const SeedIntegral& si, const IntegralTableView& host) {
  std::vector<long long> a(std::size_t(si.w) * si.h);
  PIXELKIT_CUDA_TRY(cudaMemcpy(a.data(), si.a.get(), a.size() * 8, cudaMemcpyDeviceToHost));
  const TableRef<const std::int64_t> t = host.ref<const std::int64_t>();
  for (int y = 0; y < si.h; ++y)
    if (std::memcmp(a.data() + std::size_t(y) * si.w, t.row(y + 1) + 1, std::size_t(si.w) * 8) != 0) return false;
  return true;
}

bool same_table(const IntegralTableView& dev, const IntegralTableView& host) {
  std::vector<unsigned char> all(dev.row_bytes() * dev.height);
  PIXELKIT_CUDA_TRY(cudaMemcpy2D(all.data(), dev.row_bytes(), dev.data, dev.pitch, dev.row_bytes(), dev.height,
                                 cudaMemcpyDeviceToHost));
  for (int y = 0; y < dev.height; ++y)
    if (std::memcmp(all.data() + y * dev.row_bytes(), static_cast<const char*>(host.data) + y * host.pitch,
                    dev.row_bytes()) != 0)
      return false;
  return true;
}

#if defined(PIXELKIT_BENCH_HAVE_NPP)
using pixelkit::bench::npp_context;

void npp_try(NppStatus st, const char* what) {
  if (st != NPP_SUCCESS) throw std::runtime_error(std::string(what) + ": NPP status " + std::to_string(st));
}
#endif

void study_s003_blocks(cudaStream_t s) {
  const int n = 2048;
  const Image host = random_u8(n, n, 1, 3003);
  Integral cpu_op;
  IntegralTables ref;
  Options oc;
  oc.backend = Backend::cpu;
  cpu_op(host, ref, oc);
  const int k = rotation(double(n) * n * (1 + 8 + 8));
  std::vector<Image> ins;
  std::vector<SeedIntegral> outs;
  for (int i = 0; i < k; ++i) {
    ins.push_back(clone(host.cview(), Memory::device));
    outs.emplace_back(n, n);
  }
  const std::string size = std::to_string(n) + "x" + std::to_string(n);
  for (int T : {8, 16, 32})
    for (int S : {32, 64, 128, 256, 512, 1024}) {
      outs[0].run(ins[0].cview(), T, S, s);
      PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
      const bool good = seed_equal(outs[0], ref.sum.view());
      int i = 0;
      const double ms = time_device([&] { outs[i].run(ins[i].cview(), T, S, s); i = (i + 1) % k; }, s, dev_reps());
      char label[32];
      std::snprintf(label, sizeof label, "%dx%d/%d", T, T, S);
      emit({"s003_blocks", "cuda_scan_transpose", label, double(S), ms, 0, ok(good), "",
            size + " u8 -> i64; seed (" + std::to_string(T) + "," + std::to_string(T) + "," + std::to_string(S) +
                "): transpose " + std::to_string(T) + "x" + std::to_string(T) + " threads; scan " +
                std::to_string(S) + " threads x " + std::to_string(kSeedScanItems) + " items; " + std::to_string(k) +
                " input sets"});
    }
  // The production path as a reference line.
  Integral op;
  op.reserve(n, n, 1, PixelType::u8);
  std::vector<IntegralTables> ts(k);
  Options o;
  o.backend = Backend::cuda;
  o.stream = s;
  RunInfo info;
  o.info = &info;
  op(ins[0], ts[0], o);
  PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
  o.info = nullptr;
  const bool good = same_table(ts[0].sum.view(), ref.sum.view());
  int i = 0;
  const double ms = time_device([&] { op(ins[i], ts[i], o); i = (i + 1) % k; }, s, dev_reps());
  emit({"s003_blocks", "pixelkit_cuda", "production", 0, ms, 0, ok(good), "",
        size + " u8 -> i64 (W+1)x(H+1) table; device-resident; " + info.path});
}

void study_s003_sizes(cudaStream_t s) {
  const int n_variants = detail::integral_cuda_variants();
  for (int n = 128; n <= 8192; n *= 2) {
    const std::string size = std::to_string(n) + "x" + std::to_string(n);
    const double px = double(n) * n;
    const Image host = random_u8(n, n, 1, 1000 + n);
    Integral cpu_op;
    IntegralTables ref;
    Options oc;
    oc.backend = Backend::cpu;
    cpu_op(host, ref, oc);
    const double table_bytes = double(n + 1) * (n + 1) * 8;
    const int k = rotation(px + table_bytes);
    std::vector<Image> ins;
    for (int i = 0; i < k; ++i) ins.push_back(clone(host.cview(), Memory::device));
    const int reps = n >= 4096 ? std::max(5, dev_reps() / 2) : dev_reps();
    const std::string sets = std::to_string(k) + " input set" + (k > 1 ? "s" : "");

    // Seed 003's method, its best configuration.
    {
      std::vector<SeedIntegral> outs;
      for (int i = 0; i < k; ++i) outs.emplace_back(n, n);
      outs[0].run(ins[0].cview(), 32, 256, s);
      PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
      const bool good = seed_equal(outs[0], ref.sum.view());
      int i = 0;
      const double ms = time_device([&] { outs[i].run(ins[i].cview(), 32, 256, s); i = (i + 1) % k; }, s, reps);
      emit({"s003_sizes", "cuda_scan_transpose", size, px, ms, 0, ok(good), "",
            "seed (32;32;256): 4 launches; W x H i64 without the zero border; " + sets});
    }
    // pixelkit: production (variant 0) and every alternative the hook offers.
    for (int v = 0; v < n_variants; ++v) {
      struct Reset {
        ~Reset() { detail::set_integral_cuda_variant(0); }
      } reset;
      detail::set_integral_cuda_variant(v);
      Integral op;
      op.reserve(n, n, 1, PixelType::u8);
      std::vector<IntegralTables> ts(k);
      Options o;
      o.backend = Backend::cuda;
      o.stream = s;
      RunInfo info;
      o.info = &info;
      op(ins[0], ts[0], o);
      PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
      o.info = nullptr;
      const bool good = same_table(ts[0].sum.view(), ref.sum.view());
      int i = 0;
      const double ms = time_device([&] { op(ins[i], ts[i], o); i = (i + 1) % k; }, s, reps);
      const std::string series = v == 0 ? "pixelkit_cuda" : "pixelkit_cuda_v" + std::to_string(v);
      emit({"s003_sizes", series, size, px, ms, 0, ok(good), "",
            std::string("variant ") + std::to_string(v) + " '" + detail::integral_cuda_variant_name(v) +
                "'; device-resident; (W+1)x(H+1) i64; " + info.path + "; " + sets});
    }
#if defined(PIXELKIT_BENCH_HAVE_NPP)
    {
      const std::size_t p32 = std::size_t(n + 1) * 4;
      std::vector<detail::DeviceBuffer> outs;
      for (int i = 0; i < k; ++i) outs.emplace_back(p32 * (n + 1));
      const NppStreamContext ctx = npp_context(s);
      const NppiSize roi{n, n};
      auto call = [&](int i) {
        npp_try(nppiIntegral_8u32s_C1R_Ctx(static_cast<const Npp8u*>(ins[i].view().data), static_cast<int>(ins[i].pitch()),
                                           static_cast<Npp32s*>(outs[i].get()), static_cast<int>(p32), roi, 0, ctx),
                "nppiIntegral_8u32s_C1R_Ctx");
      };
      call(0);
      PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
      std::vector<std::uint32_t> got(std::size_t(n + 1) * (n + 1));
      PIXELKIT_CUDA_TRY(cudaMemcpy(got.data(), outs[0].get(), got.size() * 4, cudaMemcpyDeviceToHost));
      const TableRef<const std::int64_t> t = ref.sum.view().ref<const std::int64_t>();
      bool good = true;
      for (int y = 0; y <= n && good; ++y)
        for (int x = 0; x <= n; ++x)
          if (got[std::size_t(y) * (n + 1) + x] != static_cast<std::uint32_t>(t.row(y)[x])) {
            good = false;
            break;
          }
      int i = 0;
      const double ms = time_device([&] { call(i); i = (i + 1) % k; }, s, reps);
      emit({"s003_sizes", "npp", size, px, ms, 0, ok(good), "",
            "nppiIntegral_8u32s_C1R_Ctx: (W+1)x(H+1) i32 table (checked modulo 2^32); " + sets});
    }
#endif
  }
}

// =========================================================================================
// seed 000: the Haar table and the threads-per-block sweep
// =========================================================================================

constexpr HaarNormalize kHaarNorm = HaarNormalize::average;  // the seed's averages and half-differences

double max_rel_diff(const ConstImageView& a, const ConstImageView& b) {
  double m = 0, r = 0;
  for (int y = 0; y < a.height; ++y)
    for (int i = 0; i < a.width * a.channels; ++i) {
      const double x = a.row<float>(y)[i], z = b.row<float>(y)[i];
      m = std::max(m, std::isnan(x - z) ? INFINITY : std::fabs(x - z));
      r = std::max(r, std::fabs(z));
    }
  return m / std::max(r, 1.0);
}

// Seed 000's v1 (bench/seed_variants.cuh, as bench_haar_gpu's), the seed's averages.
void v1_forward(const ConstImageView& src, const ImageView& coeffs, const HaarLayout& l, int block) {
  pixelkit::bench::seed000_v1_forward(src, coeffs, l, block, kHaarNorm);
}
struct HaarCase {
  const char* name;
  int w, h, levels;
};
// Seed 000, section 5.2: image, size as printed there (read as W x H), levels.
const HaarCase kHaarCases[] = {{"img3.png", 250, 256, 1},  {"debbie.jpg", 256, 256, 8}, {"foto1.jpg", 512, 512, 9},
                               {"img.png", 512, 512, 9},   {"img5.jpg", 400, 600, 3},   {"flower.jpg", 400, 620, 3},
                               {"img4.jpg", 600, 800, 3},  {"wall3.jpg", 1700, 1000, 2}, {"wall.jpg", 1800, 2880, 3}};

/// pixelkit_cuda on device-resident images (rotating sets), kernels only.
double haar_device_ms(detail::CudaHaar& cuda, const Image& src, const HaarLayout& l, const Image& want, cudaStream_t s,
                      bool& good) {
  const int k = rotation(4.0 * (double(src.width()) * src.height() + double(l.coeff_width) * l.coeff_height));
  std::vector<Image> din, dco;
  for (int i = 0; i < k; ++i) {
    din.push_back(clone(src.cview(), Memory::device));
    dco.emplace_back(l.coeff_width, l.coeff_height, 1, PixelType::f32, Memory::device);
  }
  cuda.forward(din[0].cview(), dco[0].view(), l, kHaarNorm, s);
  PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
  good = max_rel_diff(to_host(dco[0].cview()), want) <= 1e-5;
  int i = 0;
  return time_device([&] { cuda.forward(din[i].cview(), dco[i].view(), l, kHaarNorm, s); i = (i + 1) % k; }, s,
                     dev_reps());
}

void study_s000_table(cudaStream_t s) {
  const int threads = resolve_threads(0);
  for (const HaarCase& c : kHaarCases) {
    const HaarLayout l = haar_layout(c.w, c.h, c.levels);
    const std::string x = std::string(c.name) + " " + std::to_string(c.w) + "x" + std::to_string(c.h) + " L" +
                          std::to_string(c.levels);
    const double px = double(c.w) * c.h;
    const Image src = random_f32(c.w, c.h, 3);
    Image want(l.coeff_width, l.coeff_height, 1, PixelType::f32), hc(l.coeff_width, l.coeff_height, 1, PixelType::f32);
    Options o;
    o.backend = Backend::ref;
    const double t_ref = time_host([&] { haar_forward(src, want.view(), c.levels, kHaarNorm, o); },
                                   std::max(1, host_reps() / 2), 1);
    emit({"s000_table", "seq", x, px, t_ref, 1, "ok", g_cpu, "pixelkit ref backend (the reference); f32 in; average"});
    o.backend = Backend::cpu;
    const double t_cpu = time_host([&] { haar_forward(src, hc.view(), c.levels, kHaarNorm, o); }, host_reps());
    emit({"s000_table", "cpu", x, px, t_cpu, threads, ok(max_rel_diff(hc, want) <= 1e-5), g_cpu,
          "pixelkit cpu backend; all cores"});
    const double t_v1 = time_host([&] { v1_forward(src, hc.view(), l, 256); }, host_reps());
    emit({"s000_table", "cuda_v1", x, px, t_v1, 0, ok(max_rel_diff(hc, want) <= 1e-5), "",
          "seed v1: per level upload + one level + download + host rearrangement; 256 threads/block; host clock"});
    HaarTransform tr(c.levels, kHaarNorm);
    Options ocuda;
    ocuda.backend = Backend::cuda;
    ocuda.stream = s;
    const double t_v2 = time_host([&] { tr.forward(src, hc.view(), ocuda); }, host_reps());
    emit({"s000_table", "cuda_v2", x, px, t_v2, 0, ok(max_rel_diff(hc, want) <= 1e-5), "",
          "pixelkit HaarTransform on pageable host images: one upload + all levels + one download; host clock"});
    auto cuda = detail::make_cuda_haar();
    bool good = false;
    const double t_dev = haar_device_ms(*cuda, src, l, want, s, good);
    emit({"s000_table", "pixelkit_cuda", x, px, t_dev, 0, ok(good), "",
          "device-resident; kernels only; block " + std::to_string(cuda->tuning().block_threads)});
  }
}

void study_s000_blocks(cudaStream_t s) {
  const HaarCase& c = kHaarCases[sizeof(kHaarCases) / sizeof(kHaarCases[0]) - 1];  // the largest, wall.jpg
  const HaarLayout l = haar_layout(c.w, c.h, c.levels);
  const std::string img = std::string(c.name) + " " + std::to_string(c.w) + "x" + std::to_string(c.h) + " L" +
                          std::to_string(c.levels);
  const Image src = random_f32(c.w, c.h, 5);
  Image want(l.coeff_width, l.coeff_height, 1, PixelType::f32), hc(l.coeff_width, l.coeff_height, 1, PixelType::f32);
  Options o;
  o.backend = Backend::ref;
  haar_forward(src, want.view(), c.levels, kHaarNorm, o);
  for (int b : {8, 16, 32, 64, 128, 256}) {
    const std::string x = std::to_string(b);
    auto refused = [&](const char* series, const std::exception& e) {
      emit({"s000_blocks", series, x, double(b), NAN, 0, "n/a", "", img + "; refused by pixelkit: " + e.what()});
    };
    try {
      v1_forward(src, hc.view(), l, b);
      const bool good = max_rel_diff(hc, want) <= 1e-5;
      const double ms = time_host([&] { v1_forward(src, hc.view(), l, b); }, host_reps());
      emit({"s000_blocks", "cuda_v1", x, double(b), ms, 0, ok(good), "", img + "; seed v1 (host round trip per level)"});
    } catch (const Error& e) {
      refused("cuda_v1", e);
    }
    auto cuda = detail::make_cuda_haar();
    cuda->tuning().block_threads = b;
    try {
      cuda->forward(src, hc.view(), l, kHaarNorm, s);
      const bool good = max_rel_diff(hc, want) <= 1e-5;
      const double ms = time_host([&] { cuda->forward(src, hc.view(), l, kHaarNorm, s); }, host_reps());
      emit({"s000_blocks", "cuda_v2", x, double(b), ms, 0, ok(good), "",
            img + "; pixelkit cuda on pageable host images (one upload + one download)"});
    } catch (const Error& e) {
      refused("cuda_v2", e);
    }
    try {
      bool good = false;
      const double ms = haar_device_ms(*cuda, src, l, want, s, good);
      emit({"s000_blocks", "pixelkit_cuda", x, double(b), ms, 0, ok(good), "", img + "; device-resident; kernels only"});
    } catch (const Error& e) {
      refused("pixelkit_cuda", e);
    }
  }
}

// =========================================================================================
// seed 001: template matching per stage
// =========================================================================================

const HsvRange kBlue{100, 60, 20, 135, 255, 255};  // the seed counted blue pixels

/// A textured RGB u8 image: smooth blobs plus noise (as bench_match_gpu's).
Image make_rgb(int w, int h, unsigned seed) {
  Image img(w, h, 3, PixelType::u8);
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
      for (int ch = 0; ch < 3; ++ch) {
        double v = 128;
        for (int k = 0; k < 3; ++k) v += 35 * std::sin(fx[ch][k] * x + ph[ch][k]) * std::cos(fy[ch][k] * y + ph[ch][k]);
        v += static_cast<double>(rng() % 41) - 20;
        r[x * 3 + ch] = static_cast<std::uint8_t>(std::min(255.0, std::max(0.0, std::round(v))));
      }
  }
  return img;
}

Image grey_of(const Image& rgb) {
  Image g(rgb.width(), rgb.height(), 1, PixelType::u8);
  for (int y = 0; y < rgb.height(); ++y) {
    const auto* p = rgb.row<std::uint8_t>(y);
    auto* q = g.row<std::uint8_t>(y);
    for (int x = 0; x < rgb.width(); ++x) q[x] = static_cast<std::uint8_t>((p[3 * x] + 2 * p[3 * x + 1] + p[3 * x + 2] + 2) / 4);
  }
  return g;
}

Image cut(const Image& img, int x0, int y0, int w, int h, unsigned seed) {
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

/// max |a - b| / max |ref| over two host f32 maps of the same shape.
double map_rel_diff(const ConstImageView& a, const ConstImageView& ref) {
  double m = 0, r = 0;
  for (int y = 0; y < a.height; ++y)
    for (int x = 0; x < a.width; ++x) {
      const double p = a.row<float>(y)[x], q = ref.row<float>(y)[x];
      m = std::max(m, std::isnan(p - q) ? INFINITY : std::fabs(p - q));
      r = std::max(r, std::fabs(q));
    }
  return m / std::max(r, 1e-30);
}

// ---- the naive pipeline's kernels (study-only, one thread per element / row / column) ----

/// Squares of a u8 image into the interior of an (H+1) x (W+1) f64 table
/// (row 0 and column 0 stay zero); 32 x 32 blocks, as the seed's "multiply".
__global__ void nv_square(const std::uint8_t* img, std::size_t ip, int w, int h, double* t) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const double v = img[y * ip + x];
  t[std::size_t(y + 1) * (w + 1) + x + 1] = v * v;
}
/// One thread per row: running sum along the row (the seed's rowCumSum).
__global__ void nv_row_cumsum(double* t, int w1, int h1) {
  const int y = blockIdx.x * blockDim.x + threadIdx.x;
  if (y >= h1) return;
  double acc = 0;
  for (int x = 0; x < w1; ++x) t[std::size_t(y) * w1 + x] = acc += t[std::size_t(y) * w1 + x];
}
/// One thread per column (the seed's colCumSum).
__global__ void nv_col_cumsum(double* t, int w1, int h1) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= w1) return;
  double acc = 0;
  for (int y = 0; y < h1; ++y) t[std::size_t(y) * w1 + x] = acc += t[std::size_t(y) * w1 + x];
}
/// u8 image -> zero-padded Px x Py f64 (the seed's padToZero), 16 x 16 blocks.
__global__ void nv_pad(const std::uint8_t* img, std::size_t ip, int w, int h, double* out, int px, int py) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= px || y >= py) return;
  out[std::size_t(y) * px + x] = x < w && y < h ? static_cast<double>(img[y * ip + x]) : 0.0;
}
/// a *= conj(b) (the seed's mulConj).
__global__ void nv_mul_conj(cufftDoubleComplex* a, const cufftDoubleComplex* b, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const cufftDoubleComplex p = a[i], q = b[i];
  a[i] = {p.x * q.x + p.y * q.y, p.y * q.x - p.x * q.y};
}
/// Divides by the transform size (the seed's normalize), 256 threads.
__global__ void nv_normalize(double* c, std::size_t n, double scale) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] *= scale;
}
/// SSD = S2 - 2 SC + T2 per position, one thread each, 32 x 32 blocks (computeSSD).
__global__ void nv_ssd(const double* sq, int w1, const double* corr, int px, const double* t2, int tw, int th,
                       float* map, int mw, int mh) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= mw || y >= mh) return;
  auto at = [&](int yy, int xx) { return sq[std::size_t(yy) * w1 + xx]; };
  const double s2 = at(y + th, x + tw) - at(y, x + tw) - at(y + th, x) + at(y, x);
  map[std::size_t(y) * mw + x] = static_cast<float>(s2 - 2.0 * corr[std::size_t(y) * px + x] + *t2);
}
/// Pixels of the w x h window at (x0, y0) of an RGB image in the HSV range,
/// one thread per pixel (the seed's countBluePixelKernel).
__global__ void nv_colour(const std::uint8_t* rgb, std::size_t ip, int x0, int y0, int w, int h, HsvRange r,
                          unsigned* count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= w * h) return;
  const std::uint8_t* p = rgb + std::size_t(y0 + i / w) * ip + 3 * (x0 + i % w);
  int hh, ss, vv;
  detail::rgb_to_hsv8(p[0], p[1], p[2], hh, ss, vv);
  if (detail::hsv_in_range(r, hh, ss, vv)) atomicAdd(count, 1u);
}
/// The direct SSD, one thread per position over the whole template (exact:
/// u32 per template row, u64 in total), 16 x 16 blocks.
__global__ void nv_direct_ssd(const std::uint8_t* img, std::size_t ip, const std::uint8_t* tpl, std::size_t tp, int tw,
                              int th, float* map, std::size_t map_pitch, int mw, int mh) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= mw || y >= mh) return;
  unsigned long long acc = 0;
  for (int j = 0; j < th; ++j) {
    const std::uint8_t* a = img + std::size_t(y + j) * ip + x;
    const std::uint8_t* b = tpl + std::size_t(j) * tp;
    unsigned row = 0;
    for (int i = 0; i < tw; ++i) {
      const int d = int(a[i]) - int(b[i]);
      row += unsigned(d * d);
    }
    acc += row;
  }
  reinterpret_cast<float*>(reinterpret_cast<char*>(map) + y * map_pitch)[x] = static_cast<float>(static_cast<double>(acc));
}

void cufft_try(cufftResult r, const char* what) {
  if (r != CUFFT_SUCCESS) throw std::runtime_error(std::string(what) + ": cuFFT error " + std::to_string(int(r)));
}

/// The smallest n' >= n whose prime factors are 2, 3, 5, 7 (cuFFT's fast sizes).
int fft_size(int n) {
  for (int m = n;; ++m) {
    int r = m;
    for (int p : {2, 3, 5, 7})
      while (r % p == 0) r /= p;
    if (r == 1) return m;
  }
}

/// Seed 001's naive CUDA pipeline on one case, buffers made once.
struct NaivePipeline {
  int W, H, w, h, mw, mh, px, py;
  const Image &dimg, &dtpl, &drgb;
  detail::DeviceBuffer sq_img, sq_tpl, pad_img, pad_tpl, spec_img, spec_tpl, map, count;
  cufftHandle fwd = 0, inv = 0;
  std::vector<float> host_map;
  int best_x = -1, best_y = -1;
  unsigned colour = 0;

  NaivePipeline(const Image& di, const Image& dt, const Image& dr)
      : W(di.width()), H(di.height()), w(dt.width()), h(dt.height()), mw(W - w + 1), mh(H - h + 1),
        px(fft_size(W + w - 1)), py(fft_size(H + h - 1)), dimg(di), dtpl(dt), drgb(dr) {
    sq_img.reserve(std::size_t(W + 1) * (H + 1) * 8);
    sq_tpl.reserve(std::size_t(w + 1) * (h + 1) * 8);
    pad_img.reserve(std::size_t(px) * py * 8);
    pad_tpl.reserve(std::size_t(px) * py * 8);
    const std::size_t nspec = std::size_t(px / 2 + 1) * py;
    spec_img.reserve(nspec * sizeof(cufftDoubleComplex));
    spec_tpl.reserve(nspec * sizeof(cufftDoubleComplex));
    map.reserve(std::size_t(mw) * mh * 4);
    count.reserve(4);
    PIXELKIT_CUDA_TRY(cudaMemset(sq_img.get(), 0, std::size_t(W + 1) * (H + 1) * 8));
    PIXELKIT_CUDA_TRY(cudaMemset(sq_tpl.get(), 0, std::size_t(w + 1) * (h + 1) * 8));
    cufft_try(cufftPlan2d(&fwd, py, px, CUFFT_D2Z), "cufftPlan2d D2Z");
    cufft_try(cufftPlan2d(&inv, py, px, CUFFT_Z2D), "cufftPlan2d Z2D");
    host_map.resize(std::size_t(mw) * mh);
  }
  ~NaivePipeline() {
    if (fwd) cufftDestroy(fwd);
    if (inv) cufftDestroy(inv);
  }
  NaivePipeline(const NaivePipeline&) = delete;
  NaivePipeline& operator=(const NaivePipeline&) = delete;

  static void integral_sq(const Image& d, double* t, cudaStream_t s) {
    const int iw = d.width(), ih = d.height();
    nv_square<<<dim3((iw + 31) / 32, (ih + 31) / 32), dim3(32, 32), 0, s>>>(
        static_cast<const std::uint8_t*>(d.view().data), d.pitch(), iw, ih, t);
    nv_row_cumsum<<<(ih + 1 + 31) / 32, 32, 0, s>>>(t, iw + 1, ih + 1);
    nv_col_cumsum<<<(iw + 1 + 31) / 32, 32, 0, s>>>(t, iw + 1, ih + 1);
    PIXELKIT_CUDA_CHECK_LAUNCH("naive integral");
  }
  double* sqi() { return static_cast<double*>(sq_img.get()); }
  double* sqt() { return static_cast<double*>(sq_tpl.get()); }

  void stage_integral_source(cudaStream_t s) { integral_sq(dimg, sqi(), s); }
  void stage_integral_template(cudaStream_t s) { integral_sq(dtpl, sqt(), s); }
  void stage_correlation(cudaStream_t s) {
    const dim3 b(16, 16), g((px + 15) / 16, (py + 15) / 16);
    auto* pi = static_cast<double*>(pad_img.get());
    auto* pt = static_cast<double*>(pad_tpl.get());
    auto* si = static_cast<cufftDoubleComplex*>(spec_img.get());
    auto* st = static_cast<cufftDoubleComplex*>(spec_tpl.get());
    nv_pad<<<g, b, 0, s>>>(static_cast<const std::uint8_t*>(dimg.view().data), dimg.pitch(), W, H, pi, px, py);
    nv_pad<<<g, b, 0, s>>>(static_cast<const std::uint8_t*>(dtpl.view().data), dtpl.pitch(), w, h, pt, px, py);
    PIXELKIT_CUDA_CHECK_LAUNCH("nv_pad");
    cufft_try(cufftSetStream(fwd, s), "cufftSetStream");
    cufft_try(cufftSetStream(inv, s), "cufftSetStream");
    cufft_try(cufftExecD2Z(fwd, pi, si), "cufftExecD2Z image");
    cufft_try(cufftExecD2Z(fwd, pt, st), "cufftExecD2Z template");
    const std::size_t nspec = std::size_t(px / 2 + 1) * py;
    nv_mul_conj<<<unsigned((nspec + 255) / 256), 256, 0, s>>>(si, st, nspec);
    cufft_try(cufftExecZ2D(inv, si, pi), "cufftExecZ2D");
    const std::size_t n = std::size_t(px) * py;
    nv_normalize<<<unsigned((n + 255) / 256), 256, 0, s>>>(pi, n, 1.0 / double(n));
    PIXELKIT_CUDA_CHECK_LAUNCH("naive correlation");
  }
  void stage_ssd(cudaStream_t s) {
    nv_ssd<<<dim3((mw + 31) / 32, (mh + 31) / 32), dim3(32, 32), 0, s>>>(
        sqi(), W + 1, static_cast<const double*>(pad_img.get()), px, sqt() + std::size_t(w + 1) * (h + 1) - 1, w, h,
        static_cast<float*>(map.get()), mw, mh);
    PIXELKIT_CUDA_CHECK_LAUNCH("nv_ssd");
  }
  void stage_best(cudaStream_t s) {
    PIXELKIT_CUDA_TRY(cudaMemcpyAsync(host_map.data(), map.get(), host_map.size() * 4, cudaMemcpyDeviceToHost, s));
    PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
    std::size_t best = 0;
    for (std::size_t i = 1; i < host_map.size(); ++i)
      if (host_map[i] < host_map[best]) best = i;
    best_x = int(best % mw);
    best_y = int(best / mw);
  }
  void stage_colour(cudaStream_t s) {
    PIXELKIT_CUDA_TRY(cudaMemsetAsync(count.get(), 0, 4, s));
    nv_colour<<<(w * h + 255) / 256, 256, 0, s>>>(static_cast<const std::uint8_t*>(drgb.view().data), drgb.pitch(),
                                                  best_x, best_y, w, h, kBlue, static_cast<unsigned*>(count.get()));
    PIXELKIT_CUDA_CHECK_LAUNCH("nv_colour");
    PIXELKIT_CUDA_TRY(cudaMemcpyAsync(&colour, count.get(), 4, cudaMemcpyDeviceToHost, s));
    PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
  }
  void all(cudaStream_t s) {
    stage_integral_source(s);
    stage_integral_template(s);
    stage_correlation(s);
    stage_ssd(s);
    stage_best(s);
    stage_colour(s);
  }
};

const char* const kStages[] = {"integral_source", "integral_template", "correlation", "ssd_map",
                               "best_match",      "colour_count",      "total"};

detail::MatchCudaStages profile(Matcher& m, const ConstImageView& img, const Options& o, int runs) {
  detail::set_match_cuda_profiling(true);
  std::vector<double> a, b, c, d;
  detail::MatchCudaStages last;
  try {
    for (int i = 0; i < runs + 2; ++i) {
      m(img, o);
      last = detail::match_cuda_last_stages();
      if (i < 2) continue;  // warm-up
      a.push_back(last.sums_ms);
      b.push_back(last.corr_ms);
      c.push_back(last.score_ms);
      d.push_back(last.select_ms);
    }
  } catch (...) {
    detail::set_match_cuda_profiling(false);
    throw;
  }
  detail::set_match_cuda_profiling(false);
  last.sums_ms = median(a);
  last.corr_ms = median(b);
  last.score_ms = median(c);
  last.select_ms = median(d);
  return last;
}

void study_s001_stages(cudaStream_t s) {
  struct Case {
    const char* name;
    int W, H, w, h;
  };
  const Case cases[] = {{"A", 1326, 1025, 479, 432}, {"B", 1200, 1983, 150, 150}};
  unsigned seed = 11;
  for (const Case& cs : cases) {
    const std::string A = cs.name;
    const std::string what = std::to_string(cs.W) + "x" + std::to_string(cs.H) + " t" + std::to_string(cs.w) + "x" +
                             std::to_string(cs.h) + " grey u8 sqdiff";
    auto row = [&](const char* series, int stage, double ms, const std::string& check, const std::string& notes,
                   const std::string& device = "", int threads = 0) {
      emit({"s001_stages", series, A + "/" + kStages[stage], double(stage), ms, threads, check, device,
            what + "; " + notes});
    };
    const Image rgb = make_rgb(cs.W, cs.H, ++seed);
    const Image grey = grey_of(rgb);
    const int tx = cs.W / 3, ty = cs.H / 4;
    const Image tpl = cut(grey, tx, ty, cs.w, cs.h, seed);
    const Image tpl_rgb = cut(rgb, tx, ty, cs.w, cs.h, seed + 100);
    const int mw = cs.W - cs.w + 1, mh = cs.H - cs.h + 1;

    // The reference: pixelkit's cpu backend (bit-identical to ref by contract).
    MatchParams p;
    p.method = MatchMethod::sqdiff;
    Image want(mw, mh, 1, PixelType::f32);
    Options ocpu;
    ocpu.backend = Backend::cpu;
    const MatchResult r_cpu = Matcher(tpl, p)(grey, want.view(), ocpu);
    const Match best = r_cpu.matches.at(0);
    const std::int64_t colour_want = count_in_hsv_range(rgb, best.x, best.y, cs.w, cs.h, kBlue);
    const std::string where = "best (" + std::to_string(best.x) + " " + std::to_string(best.y) + ") cut at (" +
                              std::to_string(tx) + " " + std::to_string(ty) + ")";

    const Image dgrey = clone(grey.cview(), Memory::device), dtpl = clone(tpl.cview(), Memory::device);
    const Image drgb = clone(rgb.cview(), Memory::device);
    Image dmap(mw, mh, 1, PixelType::f32, Memory::device);
    const int reps = dev_reps();

    // ---- cuda_naive: seed 001's pipeline ----
    {
      NaivePipeline nv(dgrey, dtpl, drgb);
      nv.all(s);
      Image got(mw, mh, 1, PixelType::f32);
      for (int y = 0; y < mh; ++y) std::memcpy(got.row<float>(y), nv.host_map.data() + std::size_t(y) * mw, mw * 4);
      const double err = map_rel_diff(got, want);
      const bool map_ok = err <= 1e-4 && nv.best_x == best.x && nv.best_y == best.y;
      const bool col_ok = std::int64_t(nv.colour) == colour_want;
      char e[64];
      std::snprintf(e, sizeof e, "map rel err %.2e", err);
      const std::string c = ok(map_ok), cc = ok(map_ok && col_ok);
      const std::string fft = "cuFFT D2Z/Z2D " + std::to_string(nv.px) + "x" + std::to_string(nv.py);
      row("cuda_naive", 0, time_device([&] { nv.stage_integral_source(s); }, s, reps), c,
          "squares + row cumsum (1 thread/row) + column cumsum (1 thread/column); f64");
      row("cuda_naive", 1, time_device([&] { nv.stage_integral_template(s); }, s, reps), c, "same kernels on the template");
      row("cuda_naive", 2, time_device([&] { nv.stage_correlation(s); }, s, reps), c,
          "pad + 2 forward + conj product + inverse + normalise; " + fft + "; " + e);
      row("cuda_naive", 3, time_device([&] { nv.stage_ssd(s); }, s, reps), c, "S2 - 2 SC + T2; 1 thread/position");
      row("cuda_naive", 4, time_device([&] { nv.stage_best(s); }, s, reps), c,
          "map download + host scan (the seed's minMaxLoc); " + where);
      row("cuda_naive", 5, time_device([&] { nv.stage_colour(s); }, s, reps), ok(col_ok),
          "1 thread/pixel of the window; " + std::to_string(nv.colour) + " pixels in range (host " +
              std::to_string(colour_want) + ")");
      row("cuda_naive", 6, time_device([&] { nv.all(s); }, s, reps), cc, "the six stages in a row; " + std::string(e));
    }
    // ---- cuda_naive_direct: one thread per position, the whole sum ----
    {
      const dim3 b(16, 16), g((mw + 15) / 16, (mh + 15) / 16);
      auto run = [&] {
        nv_direct_ssd<<<g, b, 0, s>>>(static_cast<const std::uint8_t*>(dgrey.view().data), dgrey.pitch(),
                                      static_cast<const std::uint8_t*>(dtpl.view().data), dtpl.pitch(), cs.w, cs.h,
                                      static_cast<float*>(dmap.view().data), dmap.pitch(), mw, mh);
        PIXELKIT_CUDA_CHECK_LAUNCH("nv_direct_ssd");
      };
      run();
      PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
      const Image got = to_host(dmap.cview());
      const double err = map_rel_diff(got, want);
      const std::vector<Match> sel = detail::select_matches(got, true, 1, 1);
      const bool good = err <= 1e-4 && !sel.empty() && sel[0].x == best.x && sel[0].y == best.y;
      char e[64];
      std::snprintf(e, sizeof e, "map rel err %.2e", err);
      const double ms = time_device(run, s, std::max(3, reps / 5), 1);
      row("cuda_naive_direct", 2, ms, ok(good),
          std::string("direct SSD: correlation and SSD map in one kernel; 1 thread/position; 16x16 blocks; ") + e);
    }
    // ---- pixelkit_cuda: the production Matcher ----
    {
      Options o;
      o.backend = Backend::cuda;
      o.stream = s;
      Matcher m(tpl, p);
      m.reserve(cs.W, cs.H, o);
      RunInfo info;
      o.info = &info;
      const MatchResult r = m(dgrey, dmap.view(), o);
      o.info = nullptr;
      const double err = map_rel_diff(to_host(dmap.cview()), want);
      const bool good = err <= 1e-4 && r.matches.at(0).x == best.x && r.matches.at(0).y == best.y;
      char e[64];
      std::snprintf(e, sizeof e, "map rel err %.2e", err);
      const std::string c = ok(good);
      const detail::MatchCudaStages st = profile(m, dgrey, o, reps);
      const std::string sums = st.window_sums == 1   ? "integral tables"
                               : st.window_sums == 2 ? "column sums + row prefix sums"
                                                     : "none";
      row("pixelkit_cuda", 0, st.sums_ms, c, "window sums of I^2 (" + sums + "); CUDA events inside the call");
      const double t_tpl = time_host([&] { detail::prepare_template(tpl, {}, MatchMethod::sqdiff); }, host_reps());
      row("pixelkit_cuda", 1, t_tpl, c, "template sums on the host once per Matcher (its constructor); not per call",
          g_cpu, 1);
      row("pixelkit_cuda", 2, st.corr_ms, c,
          std::string("strategy ") + to_string(r.strategy) +
              (st.padded_w ? "; FFT " + std::to_string(st.padded_w) + "x" + std::to_string(st.padded_h)
                           : "; " + std::to_string(st.slices) + " slices") +
              "; " + e);
      row("pixelkit_cuda", 3, st.score_ms, c, "score map from the sums and the correlation");
      row("pixelkit_cuda", 4, st.select_ms, c, "device argmin + download of the result; " + where);
      // Colour: an RGB Matcher's selection with the colour check on minus off.
      {
        MatchParams pc = p;
        pc.color_check = true;
        pc.hsv = kBlue;
        Matcher on(tpl_rgb, pc), off(tpl_rgb, p);
        const MatchResult ron = on(drgb, o);
        off(drgb, o);
        const Match& mb = ron.matches.at(0);
        const bool col_ok = mb.color_count == count_in_hsv_range(rgb, mb.x, mb.y, cs.w, cs.h, kBlue);
        const double sel_on = profile(on, drgb, o, reps).select_ms, sel_off = profile(off, drgb, o, reps).select_ms;
        row("pixelkit_cuda", 5, std::max(0.0, sel_on - sel_off), ok(col_ok),
            "RGB Matcher: selection with the colour check minus without (" + std::to_string(sel_on) + " - " +
                std::to_string(sel_off) + " ms); " + std::to_string(mb.color_count) + " pixels in range");
      }
      const int k = rotation(double(cs.W) * cs.H + double(mw) * mh * 4);
      std::vector<Image> ins;
      for (int i = 0; i < k; ++i) ins.push_back(clone(grey.cview(), Memory::device));
      int i = 0;
      const double total = time_device([&] { m(ins[i], o); i = (i + 1) % k; }, s, reps);
      row("pixelkit_cuda", 6, total, c,
          "the whole grey call (score map + best match + download); " + info.path + "; " + std::to_string(k) +
              " input sets");
    }
  }
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t a = 0;
  while (a <= s.size()) {
    const std::size_t b = s.find(',', a);
    const std::string t = s.substr(a, b == std::string::npos ? std::string::npos : b - a);
    if (!t.empty()) out.push_back(t);
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string csv_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") g_set.quick = true;
    else if (a == "--csv" && i + 1 < argc) csv_path = argv[++i];
    else if (a == "--studies" && i + 1 < argc) g_set.studies = split(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) g_set.reps = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr,
                   "usage: study_gpu [--csv FILE] [--quick] [--studies s003_blocks,s003_sizes,s000_table,"
                   "s000_blocks,s001_stages] [--reps N]\n");
      return 2;
    }
  }
  g_csv = csv_path.empty() ? stdout : std::fopen(csv_path.c_str(), "w");
  if (!g_csv) {
    std::fprintf(stderr, "study_gpu: cannot write %s\n", csv_path.c_str());
    return 1;
  }
  std::fprintf(g_csv, "study,series,x,x_value,time_ms,threads,check,device,notes\n");
  std::fflush(g_csv);
  if (!cuda_available()) {
    std::fprintf(stderr, "study_gpu: no usable CUDA device: nothing measured\n");
    return 1;
  }
  int failures = 0;
  try {
    cudaDeviceProp prop{};
    PIXELKIT_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
    g_gpu = prop.name;
    g_l2 = static_cast<std::size_t>(prop.l2CacheSize);
    g_cpu = cpu_model();
    std::fprintf(stderr, "study_gpu: %s (%d SMs, L2 %zu MB); host %s, %d threads; %s\n", prop.name,
                 prop.multiProcessorCount, g_l2 >> 20, g_cpu.c_str(), resolve_threads(0), g_set.quick ? "quick" : "full");
    const detail::Stream stream;
    const cudaStream_t s = stream.get();
    struct Study {
      const char* name;
      void (*run)(cudaStream_t);
    };
    const Study studies[] = {{"s003_blocks", study_s003_blocks},
                             {"s003_sizes", study_s003_sizes},
                             {"s000_table", study_s000_table},
                             {"s000_blocks", study_s000_blocks},
                             {"s001_stages", study_s001_stages}};
    for (const Study& st : studies) {
      if (!wanted(st.name)) continue;
      const auto t0 = std::chrono::steady_clock::now();
      try {
        st.run(s);
      } catch (const std::exception& e) {
        // One study failing does not lose the others' rows.
        std::fprintf(stderr, "study_gpu: %s failed: %s\n", st.name, e.what());
        ++failures;
      }
      std::fprintf(stderr, "study_gpu: %s done in %.1f s\n", st.name,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "study_gpu: %s\n", e.what());
    ++failures;
  }
  print_summary();
  if (g_csv != stdout) std::fclose(g_csv);
  int bad = 0;
  for (const Row& r : g_rows) bad += r.check == "mismatch";
  return failures || bad ? 1 : 0;
}
