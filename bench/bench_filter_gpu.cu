// bench_filter_gpu - pixelkit's CUDA filter on device-resident u8 images (RGB
// unless --channels says otherwise), against the memory floor and, when the
// build found NPP (PIXELKIT_BENCH_HAVE_NPP), against nppiFilterBorder32f_8u_C3R
// (C1R, C4R for 1 and 4 channels).
//
//   bench_filter_gpu [--quick] [--csv FILE] [--runs N] [--batch B] [--no-npp]
//                    [--size WxH]... [--only KERNEL]... [--border MODE] [--channels 1|3|4]
//                    (e.g. --size 7680x4320 --only dense3x3)
//
// Sizes 640x480, 1280x720, 1920x1080, 3840x2160, 7680x4320 (--quick: 1920x1080
// and 7680x4320). Kernels: dense 3x3, 5x5, 7x7, 9x9 with random coefficients
// (not separable, so the dense path runs) and gaussian 3, 5, ..., 31
// (separable). Border: replicate (NPP_BORDER_REPLICATE for NPP); --border MODE
// times pixelkit with another (NPP is then left out).
//
// Method. Before a configuration is timed its output is checked: at 640x480
// against the ref backend over the whole image (and the cpu backend is
// checked against ref there too); at larger sizes against the cpu backend over
// the whole image and against ref on three bands of rows (top, middle,
// bottom; not with --border wrap), within 1 grey level. Timing: B launches (inputs and outputs rotated
// among enough buffers to exceed 2x L2 when the image is smaller than that)
// are captured in a CUDA graph; after warm-up replays the graph is replayed N
// times, each replay timed with CUDA events; a launch's time is the median
// replay time / B. On sm_90 up pixelkit launches its filter kernels with
// programmatic dependent launch, so a launch in the graph may start while the
// one before it drains: the time of a filter that follows another on a stream
// (PIXELKIT_CUDA_FILTER_PDL=off times them without; notes, run 31). NPP's
// launches and the copy kernel are plain. The copy bandwidth is measured here (1 GiB copied by
// cudaMemcpy D2D and by a copy kernel, bytes read + written / time, the
// faster of the two); floor = (bytes read + written by the
// filter) / copy bandwidth, and floor_frac = floor / time (1.0 = as fast as a
// copy). Each size also times a plain copy kernel on its own buffers, the
// same way (copy ms: what reading and writing the image once costs at that
// size, launch and ramp included). GB/s counts the image read once and
// written once.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "pixelkit/filter.hpp"
#include "filter/filter_cuda_stream.hpp"  // peak_dram_gbps_per_sm: what the band rule reads

#if defined(PIXELKIT_BENCH_HAVE_NPP)
#include <nppi_filtering_functions.h>
#include "bench_npp.hpp"
#endif

namespace {

using pixelkit::Backend;
using pixelkit::Border;
using pixelkit::BorderMode;
using pixelkit::ConstImageView;
using pixelkit::Image;
using pixelkit::ImageView;
using pixelkit::Kernel;
using pixelkit::Memory;
using pixelkit::PixelType;

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
#define BENCH_CUDA(call) check_cuda((call), #call)

struct Options {
  bool quick = false;
  bool npp = true;
  int runs = 50;
  int batch = 10;
  std::string csv;
  std::vector<std::pair<int, int>> sizes;  // --size WxH (repeatable); empty: the default list
  std::vector<std::string> only;           // --only NAME (repeatable): kernels by row name
  Border border{BorderMode::replicate, 0.0f};  // --border MODE
  int channels = 3;                            // --channels 1|3|4 (interleaved)
};

struct Row {
  int w = 0, h = 0;
  std::string kernel, path;
  double ms = 0, npp_ms = -1, floor_ms = 0;
  double copy_ms = -1;  ///< a copy kernel on the same buffers, timed the same way
  double max_diff = 0, npp_diff = -1;
  bool ok = true;
  std::string check;
};

Kernel random_dense(int n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> c(static_cast<std::size_t>(n) * n);
  float sum = 0;
  for (auto& v : c) sum += v = d(rng);
  // Sum 1 (keeps values in range on average); random, so rank > 1.
  for (auto& v : c) v = v / n / n + (1.0f - sum / n / n) / (static_cast<float>(n) * n);
  Kernel k = Kernel::from_matrix(n, n, c, "dense" + std::to_string(n) + "x" + std::to_string(n));
  if (k.separable) throw std::runtime_error("random kernel came out separable");
  return k;
}

double max_abs_diff(const ConstImageView& a, const ConstImageView& b, int row0 = 0, int brow0 = 0, int rows = -1) {
  if (rows < 0) rows = a.height;
  double m = 0;
  const int n = a.width * a.channels;
  for (int y = 0; y < rows; ++y) {
    const auto* pa = a.row<std::uint8_t>(row0 + y);
    const auto* pb = b.row<std::uint8_t>(brow0 + y);
    for (int i = 0; i < n; ++i) m = std::max(m, std::fabs(double(pa[i]) - double(pb[i])));
  }
  return m;
}

/// Times `enqueue(i, stream)` (one launch on buffer set i). Captures `batch`
/// launches in a graph and replays it; falls back to plain stream launches if
/// capture is refused. Returns the median time of one launch in ms.
double time_launches(const std::function<void(int, cudaStream_t)>& enqueue, cudaStream_t stream, int runs,
                     int batch) {
  for (int i = 0; i < 3; ++i) enqueue(i, stream);  // warm-up: module load, attributes, caches
  BENCH_CUDA(cudaStreamSynchronize(stream));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool graph_ok = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
  if (graph_ok) {
    try {
      for (int i = 0; i < batch; ++i) enqueue(i, stream);
    } catch (...) {
      graph_ok = false;
    }
    graph_ok = cudaStreamEndCapture(stream, &graph) == cudaSuccess && graph_ok;
    graph_ok = graph_ok && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  }
  (void)cudaGetLastError();
  std::vector<cudaEvent_t> ev(static_cast<std::size_t>(2 * runs));
  for (auto& e : ev) BENCH_CUDA(cudaEventCreate(&e));
  auto one = [&](int r) {
    BENCH_CUDA(cudaEventRecord(ev[2 * r], stream));
    if (graph_ok) BENCH_CUDA(cudaGraphLaunch(exec, stream));
    else for (int i = 0; i < batch; ++i) enqueue(i, stream);
    BENCH_CUDA(cudaEventRecord(ev[2 * r + 1], stream));
  };
  for (int r = 0; r < std::min(runs, 5); ++r) one(r);  // warm-up replays
  BENCH_CUDA(cudaStreamSynchronize(stream));
  for (int r = 0; r < runs; ++r) one(r);
  BENCH_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> t(static_cast<std::size_t>(runs));
  for (int r = 0; r < runs; ++r) {
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, ev[2 * r], ev[2 * r + 1]));
    t[static_cast<std::size_t>(r)] = ms / batch;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  std::nth_element(t.begin(), t.begin() + runs / 2, t.end());
  return t[static_cast<std::size_t>(runs / 2)];
}

__global__ void copy_kernel(const uint4* __restrict__ a, uint4* __restrict__ b, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) b[i] = a[i];
}

/// Copies a pitched image of `row_bytes` x `rows`, 16 bytes a thread (row
/// bytes a multiple of 16): the per-size copy row of the table.
__global__ void copy_rows_kernel(const char* __restrict__ a, std::size_t pitch_a, char* __restrict__ b,
                                 std::size_t pitch_b, int row_units, int rows) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = i / row_units, u = i - y * row_units;
  if (y < rows)
    reinterpret_cast<uint4*>(b + y * pitch_b)[u] = reinterpret_cast<const uint4*>(a + y * pitch_a)[u];
}

/// Device copy bandwidth (bytes read + written per second) of 1 GiB, by
/// cudaMemcpy D2D and by a 16-byte-per-thread copy kernel; both are reported,
/// the larger one is the floor's bandwidth.
double copy_bandwidth(cudaStream_t stream, double* memcpy_bw, double* kernel_bw) {
  const std::size_t bytes = 1ull << 30;
  void *a = nullptr, *b = nullptr;
  BENCH_CUDA(cudaMalloc(&a, bytes));
  BENCH_CUDA(cudaMalloc(&b, bytes));
  BENCH_CUDA(cudaMemsetAsync(a, 1, bytes, stream));
  BENCH_CUDA(cudaMemsetAsync(b, 2, bytes, stream));
  const double ms_memcpy = time_launches(
      [&](int i, cudaStream_t s) {
        BENCH_CUDA(cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice, s));
      },
      stream, 20, 2);
  const std::size_t n = bytes / sizeof(uint4);
  const double ms_kernel = time_launches(
      [&](int i, cudaStream_t s) {
        const auto* from = static_cast<const uint4*>(i % 2 ? b : a);
        auto* to = static_cast<uint4*>(i % 2 ? a : b);
        copy_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(from, to, n);
        BENCH_CUDA(cudaGetLastError());
      },
      stream, 20, 2);
  BENCH_CUDA(cudaFree(a));
  BENCH_CUDA(cudaFree(b));
  *memcpy_bw = 2.0 * bytes / (ms_memcpy * 1e-3);
  *kernel_bw = 2.0 * bytes / (ms_kernel * 1e-3);
  return std::max(*memcpy_bw, *kernel_bw);
}

#if defined(PIXELKIT_BENCH_HAVE_NPP)
using pixelkit::bench::npp_context;
#endif

std::string fmt(double v, int prec = 3) {
  if (v < 0) return "-";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

}  // namespace

int main(int argc, char** argv) try {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--quick") opt.quick = true;
    else if (a == "--csv") opt.csv = next();
    else if (a == "--runs") opt.runs = std::max(1, std::atoi(next().c_str()));
    else if (a == "--batch") opt.batch = std::max(1, std::atoi(next().c_str()));
    else if (a == "--no-npp") opt.npp = false;
    else if (a == "--size") {
      const std::string v = next();
      int w = 0, h = 0;
      if (std::sscanf(v.c_str(), "%dx%d", &w, &h) != 2 || w <= 0 || h <= 0)
        throw std::runtime_error("--size wants WxH, got " + v);
      opt.sizes.emplace_back(w, h);
    } else if (a == "--only") {
      opt.only.push_back(next());
    } else if (a == "--channels") {
      const std::string v = next();
      opt.channels = std::atoi(v.c_str());
      if (v.size() != 1 || (opt.channels != 1 && opt.channels != 3 && opt.channels != 4))
        throw std::runtime_error("--channels wants 1, 3 or 4, got " + v);
    } else if (a == "--border") {
      opt.border = pixelkit::parse_border(next());
      if (opt.border.mode != BorderMode::replicate) opt.npp = false;  // NPP runs replicate only
    }
    else if (a == "--help" || a == "-h") {
      std::printf("usage: bench_filter_gpu [--quick] [--csv FILE] [--runs N] [--batch B] [--no-npp]\n"
                  "                        [--size WxH]... [--only dense3x3|...|gauss31]... [--border MODE]\n"
                  "                        [--channels 1|3|4]\n");
      return 0;
    } else {
      throw std::runtime_error("unknown argument " + a);
    }
  }
  if (!pixelkit::cuda_available()) {
    std::fprintf(stderr, "bench_filter_gpu: no usable CUDA device\n");
    return 2;
  }
  int dev = 0;
  BENCH_CUDA(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, dev));
  int l2 = 0, sm_clock = 0, mem_clock = 0;
  BENCH_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  (void)cudaDeviceGetAttribute(&sm_clock, cudaDevAttrClockRate, dev);
  (void)cudaDeviceGetAttribute(&mem_clock, cudaDevAttrMemoryClockRate, dev);
  cudaStream_t stream = nullptr;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  double bw_memcpy = 0, bw_kernel = 0;
  const double bw = copy_bandwidth(stream, &bw_memcpy, &bw_kernel);
  std::printf("device: %s, %d SMs, L2 %.0f MB, SM clock %.0f MHz (max), CUDA runtime via pixelkit\n",
              prop.name, prop.multiProcessorCount, l2 / 1048576.0, sm_clock / 1000.0);
  std::printf("device copy bandwidth (1 GiB, read+write): cudaMemcpy D2D %.0f GB/s, copy kernel %.0f GB/s; "
              "floor uses %.0f GB/s\n", bw_memcpy / 1e9, bw_kernel / 1e9, bw / 1e9);
  {
    // What the row-streaming kernel's band rule reads (stream_tuning::bands_by_rule).
    namespace cf = pixelkit::detail::cuda_filter;
    int bus_bits = 0;
    (void)cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev);
    const double per_sm = cf::peak_dram_gbps_per_sm(mem_clock, bus_bits, prop.multiProcessorCount);
    std::printf("peak DRAM bandwidth (memory clock %.0f MHz, %d-bit bus): %.0f GB/s, %.1f GB/s a SM (%s memory "
                "for the row-streaming band rule: %.0f GB/s a SM or more)\n",
                mem_clock / 1000.0, bus_bits, per_sm * prop.multiProcessorCount, per_sm,
                per_sm >= cf::kStreamFastMemoryGBpsPerSM ? "fast" : "not fast", cf::kStreamFastMemoryGBpsPerSM);
  }
  bool have_npp = false;
#if defined(PIXELKIT_BENCH_HAVE_NPP)
  have_npp = opt.npp;
#endif
  const int ch = opt.channels;
  const std::string npp_name = "nppiFilterBorder32f_8u_C" + std::to_string(ch) + "R_Ctx";
  std::printf("NPP comparison: %s\n\n", have_npp ? (npp_name + " (flipped kernel)").c_str() : "no");

  std::vector<std::pair<int, int>> sizes = {{640, 480}, {1280, 720}, {1920, 1080}, {3840, 2160}, {7680, 4320}};
  if (opt.quick) sizes = {{1920, 1080}, {7680, 4320}};
  if (!opt.sizes.empty()) sizes = opt.sizes;
  std::vector<Kernel> kernels;
  for (int n : {3, 5, 7, 9}) kernels.push_back(random_dense(n, 1000u + static_cast<unsigned>(n)));
  for (int n = 3; n <= 31; n += 2) kernels.push_back(Kernel::gaussian(n));
  const Border border = opt.border;

  std::vector<Row> rows;
  bool all_ok = true;
  for (const auto& size : sizes) {
    // Plain ints, not structured bindings: lambdas below capture them (C++20 for bindings).
    const int w = size.first, h = size.second;
    const std::size_t bytes = static_cast<std::size_t>(w) * h * ch;
    Image hsrc(w, h, ch, PixelType::u8);
    std::mt19937 rng(static_cast<unsigned>(w * 7 + h));
    for (int y = 0; y < h; ++y) {
      auto* r = hsrc.row<std::uint8_t>(y);
      for (int i = 0; i < w * ch; ++i) r[i] = static_cast<std::uint8_t>(rng() >> 24);
    }
    const int nbuf = bytes * 2 < static_cast<std::size_t>(l2) * 2
                         ? static_cast<int>(std::min<std::size_t>(16, (4ull * l2 + bytes - 1) / bytes))
                         : (bytes < static_cast<std::size_t>(l2) * 2 ? 2 : 1);
    std::vector<Image> dsrc, ddst;
    for (int i = 0; i < std::max(nbuf, 1); ++i) {
      dsrc.push_back(pixelkit::clone(hsrc.cview(), Memory::device));
      ddst.emplace_back(w, h, ch, PixelType::u8, Memory::device);
    }
    // The same buffers copied by a plain kernel, timed as the filters are:
    // what this size costs anything that reads and writes the image once
    // (launch and ramp included), beside the floor from 1 GiB copies.
    double copy_ms = -1;
    if ((w * ch) % 16 == 0) {
      const int units = w * ch / 16, rows = h;  // (a lambda cannot capture a structured binding in C++17)
      const unsigned blocks = static_cast<unsigned>((static_cast<long long>(units) * h + 255) / 256);
      copy_ms = time_launches(
          [&](int i, cudaStream_t s) {
            const std::size_t b = static_cast<std::size_t>(i % nbuf);
            copy_rows_kernel<<<blocks, 256, 0, s>>>(static_cast<const char*>(dsrc[b].cview().data), dsrc[b].pitch(),
                                                    static_cast<char*>(ddst[b].view().data), ddst[b].pitch(), units, rows);
            BENCH_CUDA(cudaGetLastError());
          },
          stream, opt.runs, opt.batch);
    }
    std::printf("== %dx%d %s u8: %.1f MB, %d buffer set(s); copy kernel on these buffers %s ms (floor %.4f ms) ==\n",
                w, h, ch == 3 ? "RGB" : ch == 1 ? "C1" : "C4", bytes / 1e6, nbuf, fmt(copy_ms, 4).c_str(), 2.0 * bytes / bw * 1e3);
    std::fflush(stdout);
    const bool small = static_cast<long long>(w) * h <= 640 * 480;

    for (const Kernel& k : kernels) {
      Row row;
      row.w = w;
      row.h = h;
      row.kernel = k.separable ? "gauss" + std::to_string(k.width) : k.name;
      if (!opt.only.empty() && std::find(opt.only.begin(), opt.only.end(), row.kernel) == opt.only.end()) continue;
      row.floor_ms = 2.0 * bytes / bw * 1e3;
      row.copy_ms = copy_ms;
      pixelkit::Filter2D f(k, border);
      pixelkit::RunInfo info;
      pixelkit::Options o;
      o.backend = Backend::cuda;
      o.stream = reinterpret_cast<pixelkit::stream_t>(stream);
      o.info = &info;

      // ---- check ----
      f(dsrc[0].cview(), ddst[0].view(), o);
      BENCH_CUDA(cudaStreamSynchronize(stream));
      row.path = info.path;
      o.info = nullptr;
      const Image got = pixelkit::clone(ddst[0].cview(), Memory::host);
      const auto t0 = std::chrono::steady_clock::now();
      if (small) {
        Image want(w, h, ch, PixelType::u8);
        pixelkit::Options r;
        r.backend = Backend::ref;
        pixelkit::filter2d(hsrc.cview(), want.view(), k, border, r);
        row.max_diff = max_abs_diff(got.cview(), want.cview());
        Image cpu(w, h, ch, PixelType::u8);
        r.backend = Backend::cpu;
        pixelkit::filter2d(hsrc.cview(), cpu.view(), k, border, r);
        const double cpu_diff = max_abs_diff(cpu.cview(), want.cview());
        row.check = "ref full";
        if (cpu_diff > 1) row.check += " (cpu vs ref " + fmt(cpu_diff, 0) + "!)";
      } else {
        Image cpu(w, h, ch, PixelType::u8);
        pixelkit::Options r;
        r.backend = Backend::cpu;
        pixelkit::filter2d(hsrc.cview(), cpu.view(), k, border, r);
        row.max_diff = max_abs_diff(got.cview(), cpu.cview());
        // ref on three bands of 4 rows (computed on a sub-view holding the
        // band's apron rows, so its borders are the image's). Not for wrap:
        // a band's rows beyond the image would wrap within the band.
        const int ry = k.height / 2;
        const bool bands = border.mode != BorderMode::wrap;
        r.backend = Backend::ref;
        double band = 0;
        for (int b0 : {0, h / 2, h - 4}) {
          if (!bands) break;
          const int s0 = std::max(0, b0 - ry), s1 = std::min(h, b0 + 4 + ry);
          const ConstImageView sub = hsrc.cview().sub(0, s0, w, s1 - s0);
          Image want(w, s1 - s0, ch, PixelType::u8);
          pixelkit::filter2d(sub, want.view(), k, border, r);
          band = std::max(band, max_abs_diff(got.cview(), want.cview(), b0, b0 - s0, 4));
        }
        row.max_diff = std::max(row.max_diff, band);
        row.check = bands ? "cpu full + ref bands" : "cpu full (wrap: no ref bands)";
      }
      const double check_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      row.ok = row.max_diff <= 1.0;
      all_ok = all_ok && row.ok;

      // ---- time ----
      if (row.ok) {
        row.ms = time_launches(
            [&](int i, cudaStream_t s) {
              const std::size_t b = static_cast<std::size_t>(i % nbuf);
              pixelkit::Options oo;
              oo.backend = Backend::cuda;
              oo.stream = reinterpret_cast<pixelkit::stream_t>(s);
              f(dsrc[b].cview(), ddst[b].view(), oo);
            },
            stream, opt.runs, opt.batch);
      }

#if defined(PIXELKIT_BENCH_HAVE_NPP)
      if (have_npp && !k.separable) {
        // NPP convolves (kernel applied flipped): pass the flipped kernel so
        // that both compute the same correlation; anchor at the centre.
        const int n = k.width;
        std::vector<float> flipped(static_cast<std::size_t>(n) * n);
        for (int y = 0; y < n; ++y)
          for (int x = 0; x < n; ++x)
            flipped[static_cast<std::size_t>(y) * n + x] = k.at(n - 1 - y, n - 1 - x);
        float* dk = nullptr;
        BENCH_CUDA(cudaMalloc(&dk, flipped.size() * sizeof(float)));
        BENCH_CUDA(cudaMemcpy(dk, flipped.data(), flipped.size() * sizeof(float), cudaMemcpyHostToDevice));
        const NppStreamContext ctx = npp_context(stream);
        auto* const npp_filter = ch == 1   ? nppiFilterBorder32f_8u_C1R_Ctx
                                 : ch == 3 ? nppiFilterBorder32f_8u_C3R_Ctx
                                           : nppiFilterBorder32f_8u_C4R_Ctx;
        auto npp_run = [&](int i, cudaStream_t) {
          const std::size_t b = static_cast<std::size_t>(i % nbuf);
          const NppStatus st = npp_filter(
              static_cast<const Npp8u*>(dsrc[b].cview().data), static_cast<int>(dsrc[b].pitch()), NppiSize{w, h},
              NppiPoint{0, 0}, static_cast<Npp8u*>(ddst[b].view().data), static_cast<int>(ddst[b].pitch()),
              NppiSize{w, h}, dk, NppiSize{n, n}, NppiPoint{n / 2, n / 2}, NPP_BORDER_REPLICATE, ctx);
          if (st != NPP_SUCCESS)
            throw std::runtime_error(npp_name + ": status " + std::to_string(st));
        };
        npp_run(0, stream);
        BENCH_CUDA(cudaStreamSynchronize(stream));
        const Image npp_out = pixelkit::clone(ddst[0].cview(), Memory::host);
        row.npp_diff = max_abs_diff(npp_out.cview(), got.cview());
        row.npp_ms = time_launches(npp_run, stream, opt.runs, opt.batch);
        BENCH_CUDA(cudaFree(dk));
      }
#endif
      std::printf("%5dx%-4d %-10s %8s ms  floor %.3f ms  frac %.2f  max|diff| %g (%s, %.1f s)%s  NPP %s ms (diff %s)  [%s]\n",
                  w, h, row.kernel.c_str(), fmt(row.ms, 4).c_str(), row.floor_ms,
                  row.ms > 0 ? row.floor_ms / row.ms : 0.0, row.max_diff, row.check.c_str(), check_s,
                  row.ok ? "" : "  CHECK FAILED", fmt(row.npp_ms, 4).c_str(), fmt(row.npp_diff, 0).c_str(),
                  row.path.c_str());
      std::fflush(stdout);
      rows.push_back(row);
    }
  }

  // ---- report ----
  std::printf("\n%s, %d-channel u8, copy %.0f GB/s; floor = 2 x image bytes / copy bandwidth\n\n", prop.name, ch,
              bw / 1e9);
  std::printf("| size | kernel | ms | Mpix/s | GB/s | floor ms | floor/ms | copy ms | ms/copy | NPP ms | ours/NPP | max diff | path |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    const double mpix = r.ms > 0 ? r.w * double(r.h) / (r.ms * 1e3) : 0;
    const double gbs = r.ms > 0 ? 2.0 * r.w * r.h * ch / (r.ms * 1e6) : 0;
    std::printf("| %dx%d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %g%s | %s |\n", r.w, r.h, r.kernel.c_str(),
                fmt(r.ms, 4).c_str(), fmt(mpix, 0).c_str(), fmt(gbs, 0).c_str(), fmt(r.floor_ms, 4).c_str(),
                r.ms > 0 ? fmt(r.floor_ms / r.ms, 2).c_str() : "-", fmt(r.copy_ms, 4).c_str(),
                r.ms > 0 && r.copy_ms > 0 ? fmt(r.ms / r.copy_ms, 2).c_str() : "-", fmt(r.npp_ms, 4).c_str(),
                r.npp_ms > 0 && r.ms > 0 ? fmt(r.ms / r.npp_ms, 2).c_str() : "-", r.max_diff, r.ok ? "" : " FAIL",
                r.path.c_str());
  }
  if (!opt.csv.empty()) {
    std::ofstream out(opt.csv);
    out << "impl,width,height,kernel,ms,mpix_s,gb_s,floor_ms,floor_frac,npp_ms,ours_over_npp,max_diff,ok,path,copy_ms\n";
    for (const Row& r : rows) {
      out << "pixelkit," << r.w << ',' << r.h << ',' << r.kernel << ',' << r.ms << ','
          << (r.ms > 0 ? r.w * double(r.h) / (r.ms * 1e3) : 0) << ','
          << (r.ms > 0 ? 2.0 * r.w * r.h * ch / (r.ms * 1e6) : 0) << ',' << r.floor_ms << ','
          << (r.ms > 0 ? r.floor_ms / r.ms : 0) << ',' << r.npp_ms << ','
          << (r.npp_ms > 0 && r.ms > 0 ? r.ms / r.npp_ms : -1) << ',' << r.max_diff << ',' << (r.ok ? 1 : 0) << ",\""
          << r.path << "\"," << r.copy_ms << "\n";
    }
  }
  cudaStreamDestroy(stream);
  if (!all_ok) {
    std::fprintf(stderr, "bench_filter_gpu: some results disagree with the reference (see FAIL rows)\n");
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_filter_gpu: %s\n", e.what());
  return 1;
}
