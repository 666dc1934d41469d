// bench_integral_gpu - integral images (summed-area tables) on every backend,
// against the memory floor, NPP, and seed 003's scan + transpose method; and
// the box filter's crossover between its own path and the table.
//
//   bench_integral_gpu [--quick] [--reps N] [--csv FILE] [--no-ref] [--profile] [--no-box]
//   (--profile: only 8192^2 sum and sum + sqsum, twice each, for ncu/nsys;
//    --no-box: skip part 3)
//
// Prints markdown tables (stdout):
//  1. The device and its measured copy bandwidth (a large device-to-device
//     cudaMemcpy, bytes read + bytes written per second): the ceiling.
//  2. Per size (1024^2, 2048^2, 4096^2, 8192^2 u8 gray; 1080p, 4K, 8K u8 RGB)
//     and request (sum i64; sum i64 + sqsum u64; sum u32; sum u32 + sqsum f64):
//     cuda on device-resident data (kernels only, CUDA events), cuda with
//     upload + download from pinned memory, cpu (all cores), ref (small sizes),
//     NPP (nppiIntegral_8u32s_C1R / nppiSqrIntegral_8u32s64f_C1R, 1 channel,
//     when built with NPP), seed 003's scan + transpose (i64, 1 channel);
//     from 3840 pixels wide, the cuda benchmark variants too (the previous
//     4-launch path; other single-pass tile configurations for 1 channel).
//     floor = (image bytes + table bytes) / copy bandwidth; "x floor" = time / floor.
//  3. Box filter, u8 RGB: filter2d's own separable path against the table
//     path for N = 3..31, on cuda (4K, device-resident) and cpu (1080p): the
//     crossover used by detail::box_integral_crossover.
// Every cuda result is checked against the cpu backend (bit for bit) before
// it is reported. Times are medians.
#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_timing.hpp"
#include "seed_variants.cuh"
#include "core/cuda_check.hpp"
#include "integral/integral_backends.hpp"
#include "pixelkit/filter.hpp"
#include "pixelkit/integral.hpp"

#if defined(PIXELKIT_BENCH_HAVE_NPP)
#include <nppi.h>
#include "bench_npp.hpp"
#endif

using namespace pixelkit;

namespace {

int g_reps = 20;
FILE* g_csv = nullptr;

using pixelkit::bench::median;
using pixelkit::bench::time_device;
using pixelkit::bench::time_host;

double copy_bandwidth(cudaStream_t s) {
  const std::size_t bytes = std::size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  PIXELKIT_CUDA_TRY(cudaMalloc(&a, bytes));
  PIXELKIT_CUDA_TRY(cudaMalloc(&b, bytes));
  PIXELKIT_CUDA_TRY(cudaMemsetAsync(a, 1, bytes, s));
  const double ms = time_device([&] { PIXELKIT_CUDA_TRY(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s)); }, s, 10);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes / (ms * 1e-3);  // bytes read + written per second
}

// ---- seed 003: scan rows, transpose, scan rows, transpose (benchmark only) ---------

constexpr int kScanThreads = 256;  // the seed's scan block (bench/seed_variants.cuh's seed003_row_scan)

// 32x32 tiles through padded shared memory (Harris), blockDim (32, 8).
__global__ void seed_transpose(const long long* in, std::size_t in_pitch, long long* out, std::size_t out_pitch, int w,
                               int h) {
  __shared__ long long tile[32][33];
  const int x = blockIdx.x * 32 + threadIdx.x, y0 = blockIdx.y * 32;
  for (int j = threadIdx.y; j < 32; j += 8)
    if (x < w && y0 + j < h)
      tile[j][threadIdx.x] = reinterpret_cast<const long long*>(reinterpret_cast<const char*>(in) + (y0 + j) * in_pitch)[x];
  __syncthreads();
  const int ox = blockIdx.y * 32 + threadIdx.x, oy0 = blockIdx.x * 32;
  for (int j = threadIdx.y; j < 32; j += 8)
    if (ox < h && oy0 + j < w)
      reinterpret_cast<long long*>(reinterpret_cast<char*>(out) + (oy0 + j) * out_pitch)[ox] = tile[threadIdx.x][j];
}


struct Buffers {
  void* a = nullptr;
  void* b = nullptr;
  ~Buffers() {
    if (a) cudaFree(a);
    if (b) cudaFree(b);
  }
};

// W x H u8 -> W x H i64 inclusive 2-D scan (no zero row/column), the seed's way.
void seed_integral(const ConstImageView& d, Buffers& buf, cudaStream_t s) {
  const int w = d.width, h = d.height;
  const std::size_t pa = static_cast<std::size_t>(w) * 8, pb = static_cast<std::size_t>(h) * 8;
  if (!buf.a) {
    PIXELKIT_CUDA_TRY(cudaMalloc(&buf.a, pa * h));
    PIXELKIT_CUDA_TRY(cudaMalloc(&buf.b, pb * w));
  }
  auto* A = static_cast<long long*>(buf.a);
  auto* B = static_cast<long long*>(buf.b);
  pixelkit::bench::seed003_row_scan<kScanThreads, unsigned char><<<h, kScanThreads, 0, s>>>(static_cast<const unsigned char*>(d.data), d.pitch, A, pa, w);
  seed_transpose<<<dim3((w + 31) / 32, (h + 31) / 32), dim3(32, 8), 0, s>>>(A, pa, B, pb, w, h);
  pixelkit::bench::seed003_row_scan<kScanThreads, long long><<<w, kScanThreads, 0, s>>>(B, pb, B, pb, h);
  seed_transpose<<<dim3((h + 31) / 32, (w + 31) / 32), dim3(32, 8), 0, s>>>(B, pb, A, pa, h, w);
  PIXELKIT_CUDA_CHECK_LAUNCH("seed scan + transpose");
}

#if defined(PIXELKIT_BENCH_HAVE_NPP)
using pixelkit::bench::npp_context;
#endif

Image random_u8(int w, int h, int c, unsigned seed, Memory m) {
  Image img(w, h, c, PixelType::u8, m);
  std::mt19937 rng(seed);
  for (int y = 0; y < h; ++y) {
    auto* r = img.row<unsigned char>(y);
    for (int i = 0; i < w * c; ++i) r[i] = static_cast<unsigned char>(rng() >> 24);
  }
  return img;
}

bool same_table(const IntegralTableView& dev, const IntegralTableView& host) {
  std::vector<unsigned char> row(dev.row_bytes());
  for (int y = 0; y < dev.height; ++y) {
    PIXELKIT_CUDA_TRY(cudaMemcpy(row.data(), static_cast<const char*>(dev.data) + y * dev.pitch, row.size(),
                                 cudaMemcpyDeviceToHost));
    if (std::memcmp(row.data(), static_cast<const char*>(host.data) + y * host.pitch, row.size()) != 0) return false;
  }
  return true;
}

struct Row {
  std::string size, request, impl;
  double ms, bytes, floor_ms;
  std::string note;
};
std::vector<Row> g_rows;

void report(const Row& r) {
  const double gbs = r.bytes / (r.ms * 1e-3) / 1e9;
  std::printf("| %-12s | %-18s | %-30s | %9.3f | %8.1f | %6.2f | %s\n", r.size.c_str(), r.request.c_str(),
              r.impl.c_str(), r.ms, gbs, r.ms / r.floor_ms, r.note.c_str());
  std::fflush(stdout);
  if (g_csv)
    std::fprintf(g_csv, "%s,%s,%s,%.6f,%.3f,%.4f,%s\n", r.size.c_str(), r.request.c_str(), r.impl.c_str(), r.ms, gbs,
                 r.ms / r.floor_ms, r.note.c_str());
  g_rows.push_back(r);
}

struct Req {
  const char* name;
  IntegralRequest r;
};

}  // namespace

int main(int argc, char** argv) try {
  bool quick = false, with_ref = true, profile = false, no_box = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--no-ref") with_ref = false;
    else if (a == "--profile") profile = true;
    else if (a == "--no-box") no_box = true;
    else if (a == "--reps" && i + 1 < argc) g_reps = std::atoi(argv[++i]);
    else if (a == "--csv" && i + 1 < argc) {
      g_csv = std::fopen(argv[++i], "w");
      if (g_csv) std::fprintf(g_csv, "size,request,impl,ms,GBps,x_floor,note\n");
    } else {
      std::fprintf(stderr, "usage: bench_integral_gpu [--quick] [--reps N] [--csv FILE] [--no-ref] [--profile] [--no-box]\n");
      return 2;
    }
  }
  if (!cuda_available()) {
    std::fprintf(stderr, "bench_integral_gpu: no usable CUDA device\n");
    return 1;
  }
  cudaStream_t s;
  PIXELKIT_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (profile) {
    // For a profiler: 8192^2 u8 sum i64, then sum + sqsum, twice each.
    const Image dev = clone(random_u8(8192, 8192, 1, 5, Memory::host).cview(), Memory::device);
    for (bool sq : {false, true}) {
      IntegralRequest r;
      r.sqsum = sq;
      Integral op(r);
      IntegralTables t;
      Options o;
      o.backend = Backend::cuda;
      o.stream = s;
      for (int i = 0; i < 2; ++i) op(dev, t, o);
      PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
    }
    return 0;
  }
  const double bw = copy_bandwidth(s);
  std::printf("# integral benchmark\n\ndevice: %s; copy bandwidth (read + write): %.0f GB/s; cpu threads: %d\n\n",
              cuda_device_name().c_str(), bw / 1e9, resolve_threads(0));
#if defined(PIXELKIT_BENCH_HAVE_NPP)
  std::printf("NPP: nppiIntegral_8u32s_C1R_Ctx, nppiSqrIntegral_8u32s64f_C1R_Ctx\n\n");
#else
  std::printf("NPP: not built (no NPP found at configure time)\n\n");
#endif

  struct Size {
    const char* name;
    int w, h, c;
  };
  std::vector<Size> sizes = {{"1024^2", 1024, 1024, 1}, {"2048^2", 2048, 2048, 1}, {"4096^2", 4096, 4096, 1},
                             {"8192^2", 8192, 8192, 1}, {"1080p RGB", 1920, 1080, 3}, {"4K RGB", 3840, 2160, 3},
                             {"8K RGB", 7680, 4320, 3}};
  if (quick) sizes = {{"2048^2", 2048, 2048, 1}, {"8192^2", 8192, 8192, 1}, {"4K RGB", 3840, 2160, 3}};
  auto req = [](bool sq, TableType st, TableType qt) {
    IntegralRequest r;
    r.sum = true;
    r.sqsum = sq;
    r.sum_type = st;
    r.sqsum_type = qt;
    return r;
  };
  const std::vector<Req> requests = {{"sum i64", req(false, TableType::i64, TableType::u64)},
                                     {"sum i64 + sq u64", req(true, TableType::i64, TableType::u64)},
                                     {"sum u32", req(false, TableType::u32, TableType::u64)},
                                     {"sum u32 + sq f64", req(true, TableType::u32, TableType::f64)}};

  std::printf("| size | request | implementation | ms | GB/s | x floor | note\n|---|---|---|---:|---:|---:|---|\n");
  unsigned seed = 1;
  for (const Size& sz : sizes) {
    const Image host = random_u8(sz.w, sz.h, sz.c, ++seed, Memory::pinned);
    const Image dev = clone(host.cview(), Memory::device);
    const double px = static_cast<double>(sz.w) * sz.h * sz.c;
    const double entries = static_cast<double>(sz.w + 1) * (sz.h + 1) * sz.c;
    for (const Req& q : requests) {
      const double out_bytes = entries * (element_size(q.r.sum_type) + (q.r.sqsum ? element_size(q.r.sqsum_type) : 0));
      const double bytes = px + out_bytes;
      const double floor_ms = bytes / bw * 1e3;
      Options oc;
      oc.backend = Backend::cuda;
      oc.stream = s;
      // cuda, device-resident
      Integral op(q.r);
      op.reserve(sz.w, sz.h, sz.c, PixelType::u8);
      IntegralTables dt;
      op(dev, dt, oc);
      PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
      const double t_cuda = time_device([&] { op(dev, dt, oc); }, s, g_reps);
      // Check against cpu before reporting.
      Options ocpu;
      ocpu.backend = Backend::cpu;
      IntegralTables ht;
      Integral cpu_op(q.r);
      cpu_op(host, ht, ocpu);
      const bool ok = same_table(dt.sum.view(), ht.sum.view()) && (!q.r.sqsum || same_table(dt.sqsum.view(), ht.sqsum.view()));
      report({sz.name, q.name, "pixelkit cuda (device)", t_cuda, bytes, floor_ms, ok ? "= cpu" : "MISMATCH vs cpu"});
      // The other paths (variant 1: the previous 4-launch reduce-then-scan, on
      // any input; 2..: single-pass tile configurations, u8 1 channel only,
      // except 4: any u8), each checked too.
      if (sz.w >= 3840)
        for (int v = 1; v < detail::integral_cuda_variants(); ++v) {
          if (sz.c != 1 && v != 1 && v != 4) continue;
          detail::set_integral_cuda_variant(v);
          op(dev, dt, oc);
          PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
          const bool vok = same_table(dt.sum.view(), ht.sum.view()) &&
                           (!q.r.sqsum || same_table(dt.sqsum.view(), ht.sqsum.view()));
          const double tv = time_device([&] { op(dev, dt, oc); }, s, g_reps);
          report({sz.name, q.name, std::string("cuda variant ") + detail::integral_cuda_variant_name(v), tv, bytes,
                  floor_ms, vok ? "= cpu" : "MISMATCH vs cpu"});
          detail::set_integral_cuda_variant(0);
        }
      // cuda with transfers
      IntegralTables pt;
      pt.sum = IntegralTable(sz.w, sz.h, sz.c, q.r.sum_type, Memory::pinned);
      if (q.r.sqsum) pt.sqsum = IntegralTable(sz.w, sz.h, sz.c, q.r.sqsum_type, Memory::pinned);
      const double t_h2d = time_host([&] { op(host, pt, oc); }, std::max(3, g_reps / 4));
      report({sz.name, q.name, "pixelkit cuda (pinned host)", t_h2d, bytes, floor_ms, "upload + download included"});
      // cpu
      const double t_cpu = time_host([&] { cpu_op(host, ht, ocpu); }, std::max(3, g_reps / 4));
      report({sz.name, q.name, "pixelkit cpu", t_cpu, bytes, floor_ms, std::to_string(resolve_threads(0)) + " threads"});
      if (with_ref && px <= 2048.0 * 2048.0 * 1.5) {
        Options orf;
        orf.backend = Backend::ref;
        const double t_ref = time_host([&] { cpu_op(host, ht, orf); }, 1, 0);
        report({sz.name, q.name, "pixelkit ref", t_ref, bytes, floor_ms, ""});
      }
    }
    if (sz.c == 1) {
      // seed 003, i64 sum without the zero border
      Buffers buf;
      const double t_seed = time_device([&] { seed_integral(dev.cview(), buf, s); }, s, g_reps);
      const double sb = px * (1 + 8);
      report({sz.name, "sum i64", "seed 003 scan+transpose", t_seed, sb, sb / bw * 1e3, "4 launches, 57 B/px moved"});
#if defined(PIXELKIT_BENCH_HAVE_NPP)
      void *d32 = nullptr, *d64 = nullptr;
      const std::size_t p32 = static_cast<std::size_t>(sz.w + 1) * 4, p64 = static_cast<std::size_t>(sz.w + 1) * 8;
      PIXELKIT_CUDA_TRY(cudaMalloc(&d32, p32 * (sz.h + 1)));
      PIXELKIT_CUDA_TRY(cudaMalloc(&d64, p64 * (sz.h + 1)));
      const NppStreamContext ctx = npp_context(s);
      const NppiSize roi{sz.w, sz.h};
      auto check = [](NppStatus st, const char* what) {
        if (st != NPP_SUCCESS) throw std::runtime_error(std::string(what) + ": NPP status " + std::to_string(st));
      };
      const double t_npp = time_device(
          [&] {
            check(nppiIntegral_8u32s_C1R_Ctx(static_cast<const Npp8u*>(dev.view().data), static_cast<int>(dev.pitch()),
                                             static_cast<Npp32s*>(d32), static_cast<int>(p32), roi, 0, ctx),
                  "nppiIntegral_8u32s_C1R_Ctx");
          },
          s, g_reps);
      const double b32 = px + static_cast<double>(sz.w + 1) * (sz.h + 1) * 4;
      report({sz.name, "sum u32", "NPP nppiIntegral_8u32s", t_npp, b32, b32 / bw * 1e3, "i32 table"});
      const double t_npp_sq = time_device(
          [&] {
            check(nppiSqrIntegral_8u32s64f_C1R_Ctx(static_cast<const Npp8u*>(dev.view().data), static_cast<int>(dev.pitch()),
                                                   static_cast<Npp32s*>(d32), static_cast<int>(p32),
                                                   static_cast<Npp64f*>(d64), static_cast<int>(p64), roi, 0, 0.0, ctx),
                  "nppiSqrIntegral_8u32s64f_C1R_Ctx");
          },
          s, g_reps);
      const double b96 = px + static_cast<double>(sz.w + 1) * (sz.h + 1) * 12;
      report({sz.name, "sum u32 + sq f64", "NPP nppiSqrIntegral_8u32s64f", t_npp_sq, b96, b96 / bw * 1e3, "i32 + f64 tables"});
      cudaFree(d32);
      cudaFree(d64);
#endif
    }
  }

  // ---- the box filter's crossover -------------------------------------------------------
  if (no_box) {
    if (g_csv) std::fclose(g_csv);
    cudaStreamDestroy(s);
    return 0;
  }
  std::printf("\n## box filter: the filter's separable path vs the summed-area table (u8 RGB)\n\n");
  std::printf("| backend | size | N | filter ms | table ms | faster |\n|---|---|---:|---:|---:|---|\n");
  auto box_like = [](int n) {
    // Same cost as box:N but not all-equal coefficients, so filter2d keeps its
    // own path even once it routes boxes through the table.
    std::vector<float> f(static_cast<std::size_t>(n), 1.0f / static_cast<float>(n));
    f[0] = std::nextafter(f[0], 1.0f);
    return Kernel::from_factors(f, f, "box-like:" + std::to_string(n));
  };
  const std::vector<int> ns = quick ? std::vector<int>{3, 9, 15, 31, 63, 127}
                                    : std::vector<int>{3, 5, 7, 9, 11, 15, 21, 31, 63, 127};
  // Boxes beyond the filter's 31-pixel limit: the table path alone (its cost
  // should stay flat), built by hand since Kernel::box stops at 31.
  auto big_box = [](int n) {
    Kernel k;
    k.width = k.height = n;
    k.coeffs.assign(static_cast<std::size_t>(n) * n, static_cast<float>(1.0 / (static_cast<double>(n) * n)));
    k.name = "box:" + std::to_string(n);
    return k;
  };
  for (int pass = 0; pass < 2; ++pass) {
    const bool gpu = pass == 0;
    const int w = gpu ? 3840 : 1920, h = gpu ? 2160 : 1080;
    const Image host = random_u8(w, h, 3, 99, Memory::host);
    const Image dsrc = clone(host.cview(), Memory::device);
    Image ddst(w, h, 3, PixelType::u8, Memory::device), hdst(w, h, 3, PixelType::u8);
    int crossover = -1;
    for (int n : ns) {
      Options o;
      o.backend = gpu ? Backend::cuda : Backend::cpu;
      o.stream = s;
      const Kernel box = n <= Kernel::kMaxSide ? Kernel::box(n) : big_box(n);
      double t_f = NAN, t_t;
      if (n > Kernel::kMaxSide) {
        t_t = gpu ? time_host([&] { detail::box_filter_via_integral(dsrc, ddst.view(), box, {BorderMode::reflect101, 0}, Backend::cuda, o); }, g_reps)
                  : time_host([&] { detail::box_filter_via_integral(host, hdst.view(), box, {BorderMode::reflect101, 0}, Backend::cpu, o); }, 5);
        std::printf("| %s | %dx%d | %d | n/a (max side 31) | %.3f | table |\n", gpu ? "cuda" : "cpu", w, h, n, t_t);
        continue;
      }
      Filter2D f(box_like(n), {BorderMode::reflect101, 0});
      if (gpu) {
        // Both timed on the host with a synchronise: the table path synchronises itself.
        t_f = time_host([&] { f(dsrc, ddst.view(), o); PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s)); }, g_reps);
        t_t = time_host([&] { detail::box_filter_via_integral(dsrc, ddst.view(), box, {BorderMode::reflect101, 0}, Backend::cuda, o); },
                        g_reps);
      } else {
        t_f = time_host([&] { f(host, hdst.view(), o); }, 5);
        t_t = time_host([&] { detail::box_filter_via_integral(host, hdst.view(), box, {BorderMode::reflect101, 0}, Backend::cpu, o); },
                        5);
      }
      if (crossover < 0 && t_t < t_f) crossover = n;
      std::printf("| %s | %dx%d | %d | %.3f | %.3f | %s |\n", gpu ? "cuda" : "cpu", w, h, n, t_f, t_t,
                  t_t < t_f ? "table" : "filter");
      if (g_csv)
        std::fprintf(g_csv, "box %dx%d,N=%d,%s,%.6f,%.6f,,\n", w, h, n, gpu ? "cuda filter|table" : "cpu filter|table",
                     t_f, t_t);
    }
    std::printf("\n%s crossover (first N where the table wins): %d; compiled-in: %d\n\n", gpu ? "cuda" : "cpu", crossover,
                detail::box_integral_crossover(gpu ? Backend::cuda : Backend::cpu));
  }
  if (g_csv) std::fclose(g_csv);
  cudaStreamDestroy(s);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_integral_gpu: %s\n", e.what());
  return 1;
}
