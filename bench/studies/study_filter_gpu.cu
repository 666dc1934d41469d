// study_filter_gpu (issue 7) - the GPU side of seeds 002 and 004's convolution
// studies, reproduced on today's hardware. Writes rows of the CSV schema in
// bench/studies/SCHEMA.md and prints a summary table to stderr.
//
//   study_filter_gpu [--csv FILE] [--quick] [--studies a,b,...] [--reps N]
//
// --csv FILE   CSV output (default: stdout). Rows are written as they are made.
// --quick      fewer sizes and repetitions (see each study below).
// --studies    comma list of study ids, with or without the sNNN_ prefix
//              (s002_resolution,kernel,memory,layout,transfer,s004_edge).
// --reps N     timed repetitions per configuration (default 40, --quick 10).
//
// Studies (RGB u8 images of random pixels, border reflect101 = the seed's mirror):
//   s002_resolution  gaussian:3 at 640x480 1280x720 1920x1080 3840x2160
//                    7680x4320 (--quick: 640x480 1920x1080 7680x4320).
//   s002_kernel      dense random 3x3 5x5 7x7 9x9 (not separable, so pixelkit's
//                    dense path runs) at 1920x1080.
//   s002_memory      the seed's global / constant / shared kernels (and
//                    pixelkit_cuda for scale) for each dense kernel at 1920x1080
//                    and 7680x4320 (--quick: 8K with 3x3 and 9x9 only); x is
//                    "WxH/KxK", x_value the kernel side. The 1920x1080 rows are
//                    the s002_kernel measurements (notes say so).
//   s002_layout      AoS (interleaved) vs SoA (three planes): the seed's global
//                    kernel with is_SoA false/true (cuda_global_aos / _soa) and
//                    pixelkit (pixelkit_cuda_aos: one 3-channel call;
//                    pixelkit_cuda_soa: the 1-channel filter on each plane of a
//                    W x 3H planar device image, three calls timed together),
//                    dense 3x3 and 9x9, 1920x1080 and 7680x4320; x "WxH/KxK",
//                    x_value the kernel side.
//   s002_transfer    host to host (upload, filter, download), gaussian:3 at
//                    1920x1080 3840x2160 7680x4320 (--quick: no 4K), host timer
//                    around the whole synchronised call, median:
//                      cuda_sync_pageable   pageable buffers, cudaMemcpy, kernel on the default stream
//                      cuda_pinned_1stream  pinned buffers, cudaMemcpyAsync + kernel on one stream
//                      pixelkit_cuda_host   Filter2D on pageable host images (pinned staging, 3 streams, strips)
//                      pixelkit_cuda_host_pinned  Filter2D on pinned host images
//                    The first two run pixelkit's device kernel, so only the
//                    transfer model differs between them; device buffers are
//                    allocated beforehand (not timed).
//   s004_edge        seed 004's edge kernel [-1 -1 -1; -1 8 -1; -1 -1 -1] at
//                    256x256 1920x1080 7680x4320: cuda_shared (seed 004's
//                    TILE_WIDTH=16 kernel, mask through const __restrict__),
//                    pixelkit_cuda, seq.
// Series shared by the first studies: seq (pixelkit's ref backend, one run, one
// thread - the seeds' sequential baseline; not run at 8K with --quick),
// cuda_global / cuda_constant / cuda_shared (seed 002's naive kernels, below,
// study-only), pixelkit_cuda (Filter2D on device-resident images), npp
// (nppiFilterBorder32f_8u_C3R_Ctx, when the build found NPP: border mirror when
// NPP takes it, else replicate and then checked against a replicate reference).
//
// Method. Every timed configuration is first run once into a poisoned output
// and compared over the whole image with pixelkit's ref backend (tolerance 1
// grey level; the seed kernels truncate where ref rounds, which the tolerance
// covers). The reference is the seq run's output where one is made, else the
// ref backend run on horizontal bands in parallel threads (each band with its
// apron rows, so the result is the ref's, bit for bit). Kernel times: device
// resident, CUDA events (bench::time_device), warm-up, median of --reps timed
// batches of B back-to-back launches divided by B (B chosen so a batch lasts
// >= 0.25 ms), inputs and outputs rotated among buffer sets when the image is
// smaller than 2x the L2 cache (enough sets to exceed 4x L2, at most 16).
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
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_timing.hpp"
#include "core/cuda_check.hpp"
#include "core/cuda_resources.hpp"
#include "pixelkit/border.hpp"
#include "pixelkit/filter.hpp"
#include "pixelkit/image.hpp"

#if defined(PIXELKIT_BENCH_HAVE_NPP)
#include <nppi_filtering_functions.h>
#include "bench_npp.hpp"
#endif

// =====================================================================================
// STUDY-ONLY CODE: the seeds' naive CUDA kernels, written here as seeds 002 and 004
// describe them, so that their memory-level and layout studies can be re-run. They
// are not part of pixelkit and must never be used by the library (pixelkit's filter
// lives in src/filter/). Differences from the seeds, all deliberate: the border is
// reflect101 by index mapping (pixelkit's border_index, as the ref backend does)
// instead of a padded copy of the image; the 2-batch tile load of seed 004 is written
// as a loop so that masks up to 9x9 fit (for 3x3 it is exactly the two batches).
// =====================================================================================
namespace seed {

constexpr int TILE_WIDTH = 16;      // seeds 002 and 004
constexpr int MAX_MASK_WIDTH = 9;   // seed 002's largest filter
constexpr int BLOCK_WIDTH = 16;     // global / constant kernels: 16x16 threads (the seeds do not say)

__constant__ float c_kernel[MAX_MASK_WIDTH * MAX_MASK_WIDTH];

__device__ __forceinline__ int mirror(int i, int n) {
  return pixelkit::border_index(i, n, pixelkit::BorderMode::reflect101);
}

__device__ __forceinline__ float clamp(float lo, float v, float hi) { return fminf(fmaxf(v, lo), hi); }

__device__ __forceinline__ std::uint8_t get_pixel_value(const std::uint8_t* d_input, int col, int row, int channel,
                                                        int width, int height, int channels, bool is_SoA) {
  const int pixel_index = is_SoA ? ((channel * width * height) + (row * width) + col)
                                 : ((row * width + col) * channels + channel);
  return d_input[pixel_index];
}

__device__ __forceinline__ void set_pixel_value(std::uint8_t* d_output, int col, int row, int channel, int width,
                                                int height, int channels, bool is_SoA, std::uint8_t value) {
  const int pixel_index = is_SoA ? ((channel * width * height) + (row * width) + col)
                                 : ((row * width + col) * channels + channel);
  d_output[pixel_index] = value;
}

__device__ __forceinline__ float get_kernel_value(const float* d_kernel, int col, int row, int width, int /*height*/) {
  return d_kernel[(row * width) + col];
}

/// Seed 002's global-memory kernel: one thread per pixel, a loop over channels,
/// the float mask read from global memory, truncating clamp to u8.
__global__ void convolution_kernel_global(const std::uint8_t* d_input, const float* d_kernel, std::uint8_t* d_output,
                                          int width, int height, int channels, int kernel_width, int kernel_height,
                                          bool is_SoA) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;  // column
  const int y = blockIdx.y * blockDim.y + threadIdx.y;  // row
  if (x < width && y < height) {
    for (int channel = 0; channel < channels; channel++) {
      float output_value = 0.0f;
      for (int ky = 0; ky < kernel_height; ky++) {
        for (int kx = 0; kx < kernel_width; kx++) {
          const int col = mirror(x + kx - static_cast<int>(floorf(static_cast<float>(kernel_width) / 2)), width);
          const int row = mirror(y + ky - static_cast<int>(floorf(static_cast<float>(kernel_height) / 2)), height);
          output_value += get_pixel_value(d_input, col, row, channel, width, height, channels, is_SoA) *
                          get_kernel_value(d_kernel, kx, ky, kernel_width, kernel_height);
        }
      }
      set_pixel_value(d_output, x, y, channel, width, height, channels, is_SoA,
                      static_cast<std::uint8_t>(clamp(0.0f, output_value, 255.0f)));
    }
  }
}

/// Seed 002's constant-memory kernel: the global kernel with the mask in __constant__.
__global__ void convolution_kernel_constant(const std::uint8_t* d_input, std::uint8_t* d_output, int width,
                                            int height, int channels, int kernel_width, int kernel_height,
                                            bool is_SoA) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) {
    for (int channel = 0; channel < channels; channel++) {
      float output_value = 0.0f;
      for (int ky = 0; ky < kernel_height; ky++) {
        for (int kx = 0; kx < kernel_width; kx++) {
          const int col = mirror(x + kx - static_cast<int>(floorf(static_cast<float>(kernel_width) / 2)), width);
          const int row = mirror(y + ky - static_cast<int>(floorf(static_cast<float>(kernel_height) / 2)), height);
          output_value += get_pixel_value(d_input, col, row, channel, width, height, channels, is_SoA) *
                          c_kernel[ky * kernel_width + kx];
        }
      }
      set_pixel_value(d_output, x, y, channel, width, height, channels, is_SoA,
                      static_cast<std::uint8_t>(clamp(0.0f, output_value, 255.0f)));
    }
  }
}

/// Seeds 002 / 004's shared-memory tiled kernel (interleaved RGB): a block of
/// TILE_WIDTH^2 threads loads a (TILE_WIDTH + K - 1)^2 float tile of one channel
/// (every thread one element, then the lowest ids the rest), synchronises,
/// computes its pixel, and repeats for the next channel. The mask comes from
/// __constant__ memory (seed 002) or through const __restrict__ global memory,
/// the read-only cache (seed 004).
template <bool kConstantMask>
__global__ void convolution_kernel_shared(const std::uint8_t* __restrict__ d_input,
                                          const float* __restrict__ d_kernel, std::uint8_t* d_output, int width,
                                          int height, int channels, int kernel_width) {
  extern __shared__ float N_ds[];
  const int radius = kernel_width / 2;
  const int w = TILE_WIDTH + kernel_width - 1;
  const int tid = threadIdx.y * TILE_WIDTH + threadIdx.x;
  const int y = blockIdx.y * TILE_WIDTH + threadIdx.y;
  const int x = blockIdx.x * TILE_WIDTH + threadIdx.x;
  for (int k = 0; k < channels; k++) {
    for (int dest = tid; dest < w * w; dest += TILE_WIDTH * TILE_WIDTH) {
      const int destY = dest / w, destX = dest % w;
      const int srcY = mirror(static_cast<int>(blockIdx.y) * TILE_WIDTH + destY - radius, height);
      const int srcX = mirror(static_cast<int>(blockIdx.x) * TILE_WIDTH + destX - radius, width);
      N_ds[destY * w + destX] = d_input[(srcY * width + srcX) * channels + k];
    }
    __syncthreads();
    float accum = 0.0f;
    for (int ky = 0; ky < kernel_width; ky++)
      for (int kx = 0; kx < kernel_width; kx++) {
        const float m = kConstantMask ? c_kernel[ky * kernel_width + kx] : d_kernel[ky * kernel_width + kx];
        accum += N_ds[(threadIdx.y + ky) * w + threadIdx.x + kx] * m;
      }
    if (y < height && x < width) d_output[(y * width + x) * channels + k] = static_cast<std::uint8_t>(clamp(0.0f, accum, 255.0f));
    __syncthreads();
  }
}

}  // namespace seed
// ============================ end of study-only code ================================

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
using pixelkit::detail::DeviceBuffer;
using pixelkit::detail::PinnedBuffer;
namespace bench = pixelkit::bench;

constexpr double kMinBatchMs = 0.25;  // a timed batch of launches lasts at least this long
constexpr int kMaxBatch = 32;
constexpr double kMaxTimingMs = 2000;  // per configuration: fewer reps for slow kernels
constexpr int kTolerance = 1;          // grey levels
constexpr std::uint8_t kPoison = 0x5A;

const Border kBorder{BorderMode::reflect101, 0.0f};

// ---- small helpers --------------------------------------------------------------------

std::string csv_safe(std::string s) {
  for (char& c : s)
    if (c == ',' || c == '\n' || c == '\r' || c == '"') c = ';';
  return s;
}

std::string fmt(double v, int prec = 4) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*g", prec, v);
  return b;
}

std::string size_label(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto p = line.find(':');
      if (p != std::string::npos) {
        std::string m = line.substr(p + 1);
        m.erase(0, m.find_first_not_of(' '));
        return csv_safe(m);
      }
    }
  }
  return "unknown CPU";
}

struct KSpec {
  std::string label;  // "gaussian:3", "3x3" (dense random), "edge"
  Kernel k;
};

/// Dense random kernel, bench_filter_gpu's recipe: sum 1, full rank (not separable).
KSpec dense(int n) {
  std::mt19937 rng(1000u + static_cast<unsigned>(n));
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> c(static_cast<std::size_t>(n) * n);
  float sum = 0;
  for (auto& v : c) sum += v = d(rng);
  for (auto& v : c) v = v / n / n + (1.0f - sum / n / n) / (static_cast<float>(n) * n);
  Kernel k = Kernel::from_matrix(n, n, c, "dense" + std::to_string(n));
  if (k.separable) throw std::runtime_error("random kernel came out separable");
  return {std::to_string(n) + "x" + std::to_string(n), k};
}

struct Diff {
  double max = 0;
  long long bad = 0;  // elements off by more than the tolerance
};

Diff compare(const ConstImageView& got, const ConstImageView& want) {
  if (got.width != want.width || got.height != want.height || got.channels != want.channels)
    throw std::runtime_error("compare: shapes differ " + pixelkit::describe(got) + " vs " + pixelkit::describe(want));
  Diff d;
  const int n = got.width * got.channels;
  for (int y = 0; y < got.height; ++y) {
    const auto* a = got.row<std::uint8_t>(y);
    const auto* b = want.row<std::uint8_t>(y);
    for (int i = 0; i < n; ++i) {
      const int e = std::abs(int(a[i]) - int(b[i]));
      if (e > kTolerance) ++d.bad;
      d.max = std::max(d.max, double(e));
    }
  }
  return d;
}

/// Tightly packed device rows (the seeds' layout) -> a host Image.
Image download_packed(const void* d, int w, int h, int c) {
  Image out(w, h, c, PixelType::u8);
  const std::size_t rb = static_cast<std::size_t>(w) * c;
  PIXELKIT_CUDA_TRY(cudaMemcpy2D(out.row<std::uint8_t>(0), static_cast<std::size_t>(out.pitch()), d, rb, rb, h,
                                 cudaMemcpyDeviceToHost));
  return out;
}

void upload_packed(const ConstImageView& src, void* d) {
  const std::size_t rb = src.row_bytes();
  PIXELKIT_CUDA_TRY(cudaMemcpy2D(d, rb, src.data, static_cast<std::size_t>(src.pitch), rb, src.height,
                                 cudaMemcpyHostToDevice));
}

// ---- images and their device copies -------------------------------------------------

/// One image size: the host source and its device copies, created on demand.
struct Data {
  int w = 0, h = 0;
  std::size_t bytes = 0;  // w * h * 3
  int nbuf = 1;           // buffer sets rotated while timing
  Image host;             // RGB u8, random
  Image host_planar;      // W x 3H x 1 (SoA), on demand
  std::vector<DeviceBuffer> seed_src, seed_dst;          // packed AoS, for the seed kernels
  std::vector<DeviceBuffer> seed_soa_src, seed_soa_dst;  // packed SoA
  std::vector<Image> pk_src, pk_dst;                     // pixelkit device images (AoS)
  std::vector<Image> pk_soa_src, pk_soa_dst;             // pixelkit device images W x 3H x 1

  void ensure_seed() {
    if (!seed_src.empty()) return;
    for (int i = 0; i < nbuf; ++i) {
      seed_src.emplace_back(bytes);
      seed_dst.emplace_back(bytes);
      upload_packed(host.cview(), seed_src.back().get());
    }
  }
  void ensure_planar() {
    if (!host_planar.empty()) return;
    host_planar = Image(w, 3 * h, 1, PixelType::u8);
    pixelkit::to_planar(host.cview(), host_planar.view());
  }
  void ensure_seed_soa() {
    if (!seed_soa_src.empty()) return;
    ensure_planar();
    for (int i = 0; i < nbuf; ++i) {
      seed_soa_src.emplace_back(bytes);
      seed_soa_dst.emplace_back(bytes);
      upload_packed(host_planar.cview(), seed_soa_src.back().get());
    }
  }
  void ensure_pk() {
    if (!pk_src.empty()) return;
    for (int i = 0; i < nbuf; ++i) {
      pk_src.push_back(pixelkit::clone(host.cview(), Memory::device));
      pk_dst.emplace_back(w, h, 3, PixelType::u8, Memory::device);
    }
  }
  void ensure_pk_soa() {
    if (!pk_soa_src.empty()) return;
    ensure_planar();
    for (int i = 0; i < nbuf; ++i) {
      pk_soa_src.push_back(pixelkit::clone(host_planar.cview(), Memory::device));
      pk_soa_dst.emplace_back(w, 3 * h, 1, PixelType::u8, Memory::device);
    }
  }
};

// ---- results -----------------------------------------------------------------------------

struct Meas {
  double ms = -1;  // < 0: not timed
  bool ok = false;
  std::string notes;
  std::string origin;  // the study that made the measurement
};

struct Row {
  std::string study, series, x;
  double x_value = 0;
  double ms = -1;
  int threads = 0;
  std::string check, device, notes;
};

class Study {
 public:
  Study(bool quick, int reps, std::ostream& out) : quick_(quick), reps_(reps), out_(out) {
    int dev = 0;
    PIXELKIT_CUDA_TRY(cudaGetDevice(&dev));
    PIXELKIT_CUDA_TRY(cudaGetDeviceProperties(&prop_, dev));
    PIXELKIT_CUDA_TRY(cudaDeviceGetAttribute(&l2_, cudaDevAttrL2CacheSize, dev));
    gpu_ = csv_safe(prop_.name);
    cpu_ = cpu_model();
    out_ << "study,series,x,x_value,time_ms,threads,check,device,notes\n" << std::flush;
#if defined(PIXELKIT_BENCH_HAVE_NPP)
    npp_ = true;
#endif
  }

  void resolution();
  void kernel_size();
  void memory();
  void layout();
  void transfer();
  void edge();

  void print_table() const;
  bool all_ok() const { return all_ok_; }

 private:
  Data& data(int w, int h);
  const Image& reference(Data& d, const KSpec& k, BorderMode mode = BorderMode::reflect101);
  const Image& reference_planar(Data& d, const KSpec& k);
  void seq_row(const std::string& study, Data& d, const KSpec& k, const std::string& x, double x_value);

  Meas seed_aos(const std::string& which, Data& d, const KSpec& k);
  Meas seed_global_soa(Data& d, const KSpec& k);
  Meas pixelkit_aos(Data& d, const KSpec& k);
  Meas pixelkit_soa(Data& d, const KSpec& k);
  Meas npp(Data& d, const KSpec& k);
  Meas memo(const std::string& key, const std::function<Meas()>& make);

  double time_launches(const std::function<void(int)>& launch);
  std::string timing_note(int nbuf) const;

  void emit(const std::string& study, const std::string& series, const std::string& x, double x_value,
            const Meas& m, const std::string& extra_notes = "");
  void emit_row(Row r);

  bool quick_;
  int reps_;
  std::ostream& out_;
  cudaDeviceProp prop_{};
  int l2_ = 0;
  std::string gpu_, cpu_;
  bool npp_ = false;
  pixelkit::detail::Stream stream_;
  std::map<std::pair<int, int>, std::unique_ptr<Data>> data_;
  std::map<std::string, Image> refs_;
  std::map<std::string, Meas> memo_;
  std::map<std::string, double> seq_ms_;  // one seq run per configuration, shared by studies
  std::string current_study_;
  std::vector<Row> rows_;
  bool all_ok_ = true;
  int last_batch_ = 1, last_reps_ = 0;
};

Data& Study::data(int w, int h) {
  auto& slot = data_[{w, h}];
  if (!slot) {
    auto d = std::make_unique<Data>();
    d->w = w;
    d->h = h;
    d->bytes = static_cast<std::size_t>(w) * h * 3;
    const std::size_t l2 = static_cast<std::size_t>(l2_);
    d->nbuf = d->bytes < l2 ? static_cast<int>(std::min<std::size_t>(16, (4 * l2 + d->bytes - 1) / d->bytes))
                            : (d->bytes < 2 * l2 ? 2 : 1);
    d->host = Image(w, h, 3, PixelType::u8);
    std::uint64_t s = 0x9E3779B97F4A7C15ull ^ (static_cast<std::uint64_t>(w) << 32 | static_cast<unsigned>(h));
    for (int y = 0; y < h; ++y) {
      auto* r = d->host.row<std::uint8_t>(y);
      for (int i = 0; i < w * 3; ++i) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        r[i] = static_cast<std::uint8_t>(s >> 56);
      }
    }
    slot = std::move(d);
  }
  return *slot;
}

/// The ref backend's output, computed in parallel over horizontal bands (each
/// band filtered as a sub-view holding its apron rows, so the rows kept are the
/// whole-image ref's exactly).
const Image& Study::reference(Data& d, const KSpec& k, BorderMode mode) {
  const std::string key = size_label(d.w, d.h) + "|" + k.label + "|" + pixelkit::to_string(mode);
  auto it = refs_.find(key);
  if (it != refs_.end()) return it->second;
  Image out(d.w, d.h, 3, PixelType::u8);
  const int ry = k.k.radius_y();
  const int nthreads = std::max(1u, std::thread::hardware_concurrency());
  const int band = std::max(16, (d.h + nthreads - 1) / nthreads);
  const Border border{mode, 0.0f};
  std::vector<std::thread> pool;
  std::vector<std::string> errors(static_cast<std::size_t>((d.h + band - 1) / band));
  for (int b = 0, i = 0; b < d.h; b += band, ++i) {
    pool.emplace_back([&, b, i] {
      try {
        const int b1 = std::min(d.h, b + band);
        const int s0 = std::max(0, b - ry), s1 = std::min(d.h, b1 + ry);
        Image part(d.w, s1 - s0, 3, PixelType::u8);
        pixelkit::Options o;
        o.backend = Backend::ref;
        pixelkit::filter2d(d.host.cview().sub(0, s0, d.w, s1 - s0), part.view(), k.k, border, o);
        for (int y = b; y < b1; ++y)
          std::memcpy(out.row<std::uint8_t>(y), part.row<std::uint8_t>(y - s0), out.view().row_bytes());
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(i)] = e.what();
      }
    });
  }
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error("reference: " + e);
  return refs_.emplace(key, std::move(out)).first->second;
}

const Image& Study::reference_planar(Data& d, const KSpec& k) {
  const std::string key = size_label(d.w, d.h) + "|" + k.label + "|soa";
  auto it = refs_.find(key);
  if (it != refs_.end()) return it->second;
  const Image& aos = reference(d, k);
  Image p(d.w, 3 * d.h, 1, PixelType::u8);
  pixelkit::to_planar(aos.cview(), p.view());
  return refs_.emplace(key, std::move(p)).first->second;
}

/// The seeds' sequential baseline: pixelkit's ref backend, one run, one thread.
/// Its output becomes the reference (it is the ref's by definition).
void Study::seq_row(const std::string& study, Data& d, const KSpec& k, const std::string& x, double x_value) {
  if (quick_ && d.w * static_cast<long long>(d.h) >= 7680ll * 4320) return;
  const std::string key = size_label(d.w, d.h) + "|" + k.label + "|" + pixelkit::to_string(BorderMode::reflect101);
  auto it = seq_ms_.find(key);
  Row r;
  r.study = study;
  r.series = "seq";
  r.x = x;
  r.x_value = x_value;
  r.threads = 1;
  r.device = cpu_;
  r.check = "ok";
  if (it == seq_ms_.end()) {
    Image out(d.w, d.h, 3, PixelType::u8);
    pixelkit::Options o;
    o.backend = Backend::ref;
    const auto t0 = std::chrono::steady_clock::now();
    pixelkit::filter2d(d.host.cview(), out.view(), k.k, kBorder, o);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    it = seq_ms_.emplace(key, ms).first;
    if (refs_.find(key) == refs_.end()) refs_.emplace(key, std::move(out));
    r.notes = "pixelkit ref backend (scalar loops; double accumulation); 1 run; 1 thread; it defines the check reference";
  } else {
    r.notes = "pixelkit ref backend; 1 run; 1 thread; the same run as an earlier row";
  }
  r.ms = it->second;
  emit_row(r);
}

Meas Study::memo(const std::string& key, const std::function<Meas()>& make) {
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  Meas m;
  try {
    m = make();
  } catch (const std::exception& e) {
    m = Meas{};
    m.ok = false;
    m.notes = std::string("error: ") + e.what();
    (void)cudaGetLastError();
  }
  m.origin = current_study_;
  return memo_.emplace(key, m).first->second;
}

/// Median device time of one launch(i) (i picks the buffer set), in ms.
double Study::time_launches(const std::function<void(int)>& launch) {
  int counter = 0;
  const auto one = [&] { launch(counter++); };
  const double t1 = bench::time_device(one, stream_, 3, 2);
  const int batch = std::clamp(static_cast<int>(std::ceil(kMinBatchMs / std::max(t1, 1e-4))), 1, kMaxBatch);
  const int reps = std::max(std::min(static_cast<int>(kMaxTimingMs / std::max(t1 * batch, 1e-3)), reps_), std::min(5, reps_));
  last_batch_ = batch;
  last_reps_ = reps;
  const double t = bench::time_device(
      [&] {
        for (int b = 0; b < batch; ++b) one();
      },
      stream_, reps, 2);
  return t / batch;
}

std::string Study::timing_note(int nbuf) const {
  return "median of " + std::to_string(last_reps_) + " event-timed batches of " + std::to_string(last_batch_) +
         " launches; " + std::to_string(nbuf) + " buffer set(s)";
}

std::string check_note(const Diff& d) {
  return "max|diff| vs ref " + fmt(d.max, 3) + (d.bad ? " (" + std::to_string(d.bad) + " elements over 1)" : "");
}

// ---- the measurements ---------------------------------------------------------------------

/// Seed 002's global / constant / shared kernels, or seed 004's shared kernel
/// ("shared_ro": mask through const __restrict__), on packed AoS buffers.
Meas Study::seed_aos(const std::string& which, Data& d, const KSpec& k) {
  const std::string key = "seed_" + which + "|" + size_label(d.w, d.h) + "|" + k.label;
  return memo(key, [&] {
    const int kw = k.k.width, kh = k.k.height;
    if (kw > seed::MAX_MASK_WIDTH || kh > seed::MAX_MASK_WIDTH || kw != kh)
      throw std::runtime_error("seed kernels take square masks up to 9x9");
    d.ensure_seed();
    DeviceBuffer mask(k.k.coeffs.size() * sizeof(float));
    PIXELKIT_CUDA_TRY(cudaMemcpy(mask.get(), k.k.coeffs.data(), mask.size(), cudaMemcpyHostToDevice));
    PIXELKIT_CUDA_TRY(cudaMemcpyToSymbol(seed::c_kernel, k.k.coeffs.data(), mask.size()));
    const dim3 block(seed::BLOCK_WIDTH, seed::BLOCK_WIDTH);
    const dim3 grid((d.w + block.x - 1) / block.x, (d.h + block.y - 1) / block.y);
    const dim3 tblock(seed::TILE_WIDTH, seed::TILE_WIDTH);
    const dim3 tgrid((d.w + seed::TILE_WIDTH - 1) / seed::TILE_WIDTH, (d.h + seed::TILE_WIDTH - 1) / seed::TILE_WIDTH);
    const std::size_t smem = sizeof(float) * (seed::TILE_WIDTH + kw - 1) * (seed::TILE_WIDTH + kw - 1);
    const auto launch = [&](int i) {
      const std::size_t b = static_cast<std::size_t>(i % d.nbuf);
      const auto* in = d.seed_src[b].as<const std::uint8_t>();
      auto* out = d.seed_dst[b].as<std::uint8_t>();
      if (which == "global") {
        seed::convolution_kernel_global<<<grid, block, 0, stream_>>>(in, mask.as<const float>(), out, d.w, d.h, 3,
                                                                    kw, kh, false);
      } else if (which == "constant") {
        seed::convolution_kernel_constant<<<grid, block, 0, stream_>>>(in, out, d.w, d.h, 3, kw, kh, false);
      } else if (which == "shared") {
        seed::convolution_kernel_shared<true><<<tgrid, tblock, smem, stream_>>>(in, mask.as<const float>(), out, d.w,
                                                                               d.h, 3, kw);
      } else {
        seed::convolution_kernel_shared<false><<<tgrid, tblock, smem, stream_>>>(in, mask.as<const float>(), out,
                                                                                d.w, d.h, 3, kw);
      }
      PIXELKIT_CUDA_CHECK_LAUNCH("seed convolution kernel");
    };
    PIXELKIT_CUDA_TRY(cudaMemsetAsync(d.seed_dst[0].get(), kPoison, d.bytes, stream_));
    launch(0);
    PIXELKIT_CUDA_TRY(cudaStreamSynchronize(stream_));
    const Diff diff = compare(download_packed(d.seed_dst[0].get(), d.w, d.h, 3).cview(), reference(d, k).cview());
    Meas m;
    m.ok = diff.bad == 0;
    const std::string what =
        which == "global"     ? "seed 002 global-memory kernel (mask in global memory; 16x16 threads)"
        : which == "constant" ? "seed 002 constant-memory kernel (mask in __constant__; 16x16 threads)"
        : which == "shared"   ? "seed 002 shared-memory kernel (TILE_WIDTH 16 tile + apron; mask in __constant__)"
                              : "seed 004 shared-memory kernel (TILE_WIDTH 16 tile + apron; mask via const __restrict__)";
    if (m.ok) m.ms = time_launches(launch);
    m.notes = what + "; study-only code; truncates to u8 where ref rounds (1 level allowed); " + check_note(diff) +
              (m.ok ? "; " + timing_note(d.nbuf) : "");
    return m;
  });
}

Meas Study::seed_global_soa(Data& d, const KSpec& k) {
  const std::string key = "seed_global_soa|" + size_label(d.w, d.h) + "|" + k.label;
  return memo(key, [&] {
    const int kw = k.k.width, kh = k.k.height;
    if (kw > seed::MAX_MASK_WIDTH || kw != kh) throw std::runtime_error("seed kernels take square masks up to 9x9");
    d.ensure_seed_soa();
    DeviceBuffer mask(k.k.coeffs.size() * sizeof(float));
    PIXELKIT_CUDA_TRY(cudaMemcpy(mask.get(), k.k.coeffs.data(), mask.size(), cudaMemcpyHostToDevice));
    const dim3 block(seed::BLOCK_WIDTH, seed::BLOCK_WIDTH);
    const dim3 grid((d.w + block.x - 1) / block.x, (d.h + block.y - 1) / block.y);
    const auto launch = [&](int i) {
      const std::size_t b = static_cast<std::size_t>(i % d.nbuf);
      seed::convolution_kernel_global<<<grid, block, 0, stream_>>>(d.seed_soa_src[b].as<const std::uint8_t>(),
                                                                  mask.as<const float>(),
                                                                  d.seed_soa_dst[b].as<std::uint8_t>(), d.w, d.h, 3,
                                                                  kw, kh, true);
      PIXELKIT_CUDA_CHECK_LAUNCH("seed convolution_kernel_global (SoA)");
    };
    PIXELKIT_CUDA_TRY(cudaMemsetAsync(d.seed_soa_dst[0].get(), kPoison, d.bytes, stream_));
    launch(0);
    PIXELKIT_CUDA_TRY(cudaStreamSynchronize(stream_));
    const Diff diff =
        compare(download_packed(d.seed_soa_dst[0].get(), d.w, 3 * d.h, 1).cview(), reference_planar(d, k).cview());
    Meas m;
    m.ok = diff.bad == 0;
    if (m.ok) m.ms = time_launches(launch);
    m.notes = "seed 002 global-memory kernel with is_SoA (three planes); study-only code; truncates (1 level allowed); " +
              check_note(diff) + (m.ok ? "; " + timing_note(d.nbuf) : "");
    return m;
  });
}

Meas Study::pixelkit_aos(Data& d, const KSpec& k) {
  const std::string key = "pixelkit|" + size_label(d.w, d.h) + "|" + k.label;
  return memo(key, [&] {
    d.ensure_pk();
    pixelkit::Filter2D f(k.k, kBorder);
    pixelkit::RunInfo info;
    pixelkit::Options o;
    o.backend = Backend::cuda;
    o.stream = reinterpret_cast<pixelkit::stream_t>(stream_.get());
    const auto launch = [&](int i) {
      const std::size_t b = static_cast<std::size_t>(i % d.nbuf);
      f(d.pk_src[b].cview(), d.pk_dst[b].view(), o);
    };
    PIXELKIT_CUDA_TRY(cudaMemset2DAsync(d.pk_dst[0].view().data, static_cast<std::size_t>(d.pk_dst[0].pitch()),
                                        kPoison, d.pk_dst[0].view().row_bytes(), d.h, stream_));
    o.info = &info;
    launch(0);
    o.info = nullptr;
    PIXELKIT_CUDA_TRY(cudaStreamSynchronize(stream_));
    const Diff diff = compare(pixelkit::clone(d.pk_dst[0].cview(), Memory::host).cview(), reference(d, k).cview());
    Meas m;
    m.ok = diff.bad == 0;
    if (m.ok) m.ms = time_launches(launch);
    m.notes = "pixelkit Filter2D on device images; path: " + info.path + "; " + check_note(diff) +
              (m.ok ? "; " + timing_note(d.nbuf) : "");
    return m;
  });
}

/// pixelkit on SoA: the 1-channel filter on each plane (a sub-view of the
/// W x 3H planar image, so each plane has its own borders); three calls timed as one.
Meas Study::pixelkit_soa(Data& d, const KSpec& k) {
  const std::string key = "pixelkit_soa|" + size_label(d.w, d.h) + "|" + k.label;
  return memo(key, [&] {
    d.ensure_pk_soa();
    pixelkit::Filter2D f(k.k, kBorder);
    pixelkit::RunInfo info;
    pixelkit::Options o;
    o.backend = Backend::cuda;
    o.stream = reinterpret_cast<pixelkit::stream_t>(stream_.get());
    const auto launch = [&](int i) {
      const std::size_t b = static_cast<std::size_t>(i % d.nbuf);
      for (int c = 0; c < 3; ++c)
        f(d.pk_soa_src[b].cview().sub(0, c * d.h, d.w, d.h), d.pk_soa_dst[b].view().sub(0, c * d.h, d.w, d.h), o);
    };
    PIXELKIT_CUDA_TRY(cudaMemset2DAsync(d.pk_soa_dst[0].view().data, static_cast<std::size_t>(d.pk_soa_dst[0].pitch()),
                                        kPoison, d.pk_soa_dst[0].view().row_bytes(), 3 * d.h, stream_));
    o.info = &info;
    launch(0);
    o.info = nullptr;
    PIXELKIT_CUDA_TRY(cudaStreamSynchronize(stream_));
    const Diff diff =
        compare(pixelkit::clone(d.pk_soa_dst[0].cview(), Memory::host).cview(), reference_planar(d, k).cview());
    Meas m;
    m.ok = diff.bad == 0;
    if (m.ok) m.ms = time_launches(launch);
    m.notes = "pixelkit Filter2D 1-channel on each of the 3 planes (3 calls per launch); path: " + info.path + "; " +
              check_note(diff) + (m.ok ? "; " + timing_note(d.nbuf) : "");
    return m;
  });
}

#if defined(PIXELKIT_BENCH_HAVE_NPP)
using pixelkit::bench::npp_context;
#endif

/// NPP's nppiFilterBorder32f_8u_C3R_Ctx on pixelkit's device images (as
/// bench_filter_gpu calls it: flipped kernel, since NPP convolves).
Meas Study::npp(Data& d, const KSpec& k) {
  const std::string key = "npp|" + size_label(d.w, d.h) + "|" + k.label;
  return memo(key, [&]() -> Meas {
#if defined(PIXELKIT_BENCH_HAVE_NPP)
    d.ensure_pk();
    const int kw = k.k.width, kh = k.k.height;
    std::vector<float> flipped(static_cast<std::size_t>(kw) * kh);
    for (int y = 0; y < kh; ++y)
      for (int x = 0; x < kw; ++x) flipped[static_cast<std::size_t>(y) * kw + x] = k.k.at(kh - 1 - y, kw - 1 - x);
    DeviceBuffer dk(flipped.size() * sizeof(float));
    PIXELKIT_CUDA_TRY(cudaMemcpy(dk.get(), flipped.data(), dk.size(), cudaMemcpyHostToDevice));
    const NppStreamContext ctx = npp_context(stream_);
    NppiBorderType border = NPP_BORDER_MIRROR;
    const auto call = [&](int i) {
      const std::size_t b = static_cast<std::size_t>(i % d.nbuf);
      return nppiFilterBorder32f_8u_C3R_Ctx(
          static_cast<const Npp8u*>(d.pk_src[b].cview().data), static_cast<int>(d.pk_src[b].pitch()),
          NppiSize{d.w, d.h}, NppiPoint{0, 0}, static_cast<Npp8u*>(d.pk_dst[b].view().data),
          static_cast<int>(d.pk_dst[b].pitch()), NppiSize{d.w, d.h}, dk.as<const Npp32f>(), NppiSize{kw, kh},
          NppiPoint{kw / 2, kh / 2}, border, ctx);
    };
    // Mirror (= reflect101) first; if NPP refuses it or its result disagrees
    // with ref's reflect101, replicate, checked against ref with replicate.
    const auto try_border = [&](NppiBorderType bt, BorderMode mode, Diff* diff) -> NppStatus {
      border = bt;
      PIXELKIT_CUDA_TRY(cudaMemset2DAsync(d.pk_dst[0].view().data, static_cast<std::size_t>(d.pk_dst[0].pitch()),
                                          kPoison, d.pk_dst[0].view().row_bytes(), d.h, stream_));
      const NppStatus st = call(0);
      PIXELKIT_CUDA_TRY(cudaStreamSynchronize(stream_));
      if (st != NPP_SUCCESS) return st;
      *diff = compare(pixelkit::clone(d.pk_dst[0].cview(), Memory::host).cview(), reference(d, k, mode).cview());
      return st;
    };
    Diff diff;
    std::string border_note = "border mirror (= reflect101)";
    const NppStatus st = try_border(NPP_BORDER_MIRROR, BorderMode::reflect101, &diff);
    if (st != NPP_SUCCESS || diff.bad != 0) {
      border_note = "border replicate (NPP mirror " +
                    (st != NPP_SUCCESS ? "refused: status " + std::to_string(static_cast<int>(st))
                                       : "disagreed with ref reflect101: " + check_note(diff)) +
                    "); checked against ref with replicate";
      const NppStatus st2 = try_border(NPP_BORDER_REPLICATE, BorderMode::replicate, &diff);
      if (st2 != NPP_SUCCESS)
        throw std::runtime_error("nppiFilterBorder32f_8u_C3R_Ctx: status " + std::to_string(static_cast<int>(st2)));
    }
    Meas m;
    m.ok = diff.bad == 0;
    if (m.ok) {
      m.ms = time_launches([&](int i) {
        const NppStatus s = call(i);
        if (s != NPP_SUCCESS) throw std::runtime_error("nppiFilterBorder32f_8u_C3R_Ctx: status " + std::to_string(static_cast<int>(s)));
      });
    }
    m.notes = "nppiFilterBorder32f_8u_C3R_Ctx (flipped kernel; f32 coefficients); " + border_note + "; " +
              check_note(diff) + (m.ok ? "; " + timing_note(d.nbuf) : "");
    return m;
#else
    (void)d;
    (void)k;
    Meas m;
    m.notes = "NPP not found by this build";
    return m;
#endif
  });
}

// ---- output ---------------------------------------------------------------------------------

void Study::emit_row(Row r) {
  r.notes = csv_safe(r.notes);
  r.x = csv_safe(r.x);
  if (r.check != "ok") all_ok_ = false;
  out_ << r.study << ',' << r.series << ',' << r.x << ',' << fmt(r.x_value, 12) << ','
       << (r.ms >= 0 ? fmt(r.ms, 6) : std::string()) << ',' << r.threads << ',' << r.check << ',' << r.device << ','
       << r.notes << '\n'
       << std::flush;
  std::fprintf(stderr, "%-16s %-26s %-16s %12s ms  %-8s %s\n", r.study.c_str(), r.series.c_str(), r.x.c_str(),
               r.ms >= 0 ? fmt(r.ms, 5).c_str() : "-", r.check.c_str(),
               r.check == "ok" ? "" : r.notes.c_str());
  rows_.push_back(std::move(r));
}

void Study::emit(const std::string& study, const std::string& series, const std::string& x, double x_value,
                 const Meas& m, const std::string& extra_notes) {
  if (series == "npp" && !npp_) return;  // no NPP in this build: no rows
  Row r;
  r.study = study;
  r.series = series;
  r.x = x;
  r.x_value = x_value;
  r.ms = m.ms;
  r.threads = 0;
  r.check = m.ok ? "ok" : "mismatch";
  r.device = gpu_;
  r.notes = m.notes;
  if (!m.origin.empty() && m.origin != study) r.notes += "; same measurement as " + m.origin;
  if (!extra_notes.empty()) r.notes += "; " + extra_notes;
  emit_row(std::move(r));
}

void Study::print_table() const {
  // One pivot per study: rows = x, columns = series, cells = ms ('!' = mismatch);
  // then seq / time where the study has a seq column.
  std::vector<std::string> studies;
  for (const auto& r : rows_)
    if (std::find(studies.begin(), studies.end(), r.study) == studies.end()) studies.push_back(r.study);
  std::fprintf(stderr, "\n== summary: %s; times in ms (median); '!' = check mismatch ==\n", gpu_.c_str());
  for (const auto& s : studies) {
    std::vector<std::string> xs, series;
    for (const auto& r : rows_) {
      if (r.study != s) continue;
      if (std::find(xs.begin(), xs.end(), r.x) == xs.end()) xs.push_back(r.x);
      if (std::find(series.begin(), series.end(), r.series) == series.end()) series.push_back(r.series);
    }
    const auto find = [&](const std::string& x, const std::string& se) -> const Row* {
      for (const auto& r : rows_)
        if (r.study == s && r.x == x && r.series == se) return &r;
      return nullptr;
    };
    const bool has_seq = std::find(series.begin(), series.end(), "seq") != series.end();
    for (int pass = 0; pass < (has_seq ? 2 : 1); ++pass) {
      std::fprintf(stderr, "\n%s%s\n%-15s", s.c_str(), pass ? "  (speed-up over seq)" : "", "x");
      const auto width = [](const std::string& se) { return static_cast<int>(std::max<std::size_t>(10, se.size())); };
      for (const auto& se : series)
        if (!(pass && se == "seq")) std::fprintf(stderr, " %*s", width(se), se.c_str());
      std::fprintf(stderr, "\n");
      for (const auto& x : xs) {
        std::fprintf(stderr, "%-15s", x.c_str());
        const Row* seq = find(x, "seq");
        for (const auto& se : series) {
          if (pass && se == "seq") continue;
          const Row* r = find(x, se);
          std::string cell = "-";
          if (r && r->ms >= 0) {
            if (!pass) cell = fmt(r->ms, 4);
            else if (seq && seq->ms > 0 && r->ms > 0) cell = fmt(seq->ms / r->ms, 4);
          }
          if (r && r->check != "ok") cell += "!";
          std::fprintf(stderr, " %*s", width(se), cell.c_str());
        }
        std::fprintf(stderr, "\n");
      }
    }
  }
}

// ---- the studies ----------------------------------------------------------------------------

void Study::resolution() {
  current_study_ = "s002_resolution";
  const KSpec g3{"gaussian:3", pixelkit::parse_kernel("gaussian:3")};
  std::vector<std::pair<int, int>> sizes = {{640, 480}, {1280, 720}, {1920, 1080}, {3840, 2160}, {7680, 4320}};
  if (quick_) sizes = {{640, 480}, {1920, 1080}, {7680, 4320}};
  for (const auto& sz : sizes) {
    const int w = sz.first, h = sz.second;
    Data& d = data(w, h);
    const std::string x = size_label(w, h);
    const double xv = double(w) * h;
    seq_row(current_study_, d, g3, x, xv);
    emit(current_study_, "cuda_global", x, xv, seed_aos("global", d, g3));
    emit(current_study_, "cuda_constant", x, xv, seed_aos("constant", d, g3));
    emit(current_study_, "cuda_shared", x, xv, seed_aos("shared", d, g3));
    emit(current_study_, "pixelkit_cuda", x, xv, pixelkit_aos(d, g3));
    emit(current_study_, "npp", x, xv, npp(d, g3));
  }
}

void Study::kernel_size() {
  current_study_ = "s002_kernel";
  Data& d = data(1920, 1080);
  for (int n : {3, 5, 7, 9}) {
    const KSpec k = dense(n);
    seq_row(current_study_, d, k, k.label, n);
    emit(current_study_, "cuda_global", k.label, n, seed_aos("global", d, k));
    emit(current_study_, "cuda_constant", k.label, n, seed_aos("constant", d, k));
    emit(current_study_, "cuda_shared", k.label, n, seed_aos("shared", d, k));
    emit(current_study_, "pixelkit_cuda", k.label, n, pixelkit_aos(d, k), "dense random coefficients (not separable)");
    emit(current_study_, "npp", k.label, n, npp(d, k));
  }
}

void Study::memory() {
  current_study_ = "s002_memory";
  for (const auto& sz : std::vector<std::pair<int, int>>{{1920, 1080}, {7680, 4320}}) {
    const int w = sz.first, h = sz.second;
    Data& d = data(w, h);
    std::vector<int> ns = {3, 5, 7, 9};
    if (quick_ && w == 7680) ns = {3, 9};
    for (int n : ns) {
      const KSpec k = dense(n);
      const std::string x = size_label(w, h) + "/" + k.label;
      emit(current_study_, "cuda_global", x, n, seed_aos("global", d, k));
      emit(current_study_, "cuda_constant", x, n, seed_aos("constant", d, k));
      emit(current_study_, "cuda_shared", x, n, seed_aos("shared", d, k));
      emit(current_study_, "pixelkit_cuda", x, n, pixelkit_aos(d, k));
    }
  }
}

void Study::layout() {
  current_study_ = "s002_layout";
  for (const auto& sz : std::vector<std::pair<int, int>>{{1920, 1080}, {7680, 4320}}) {
    const int w = sz.first, h = sz.second;
    Data& d = data(w, h);
    for (int n : {3, 9}) {
      const KSpec k = dense(n);
      const std::string x = size_label(w, h) + "/" + k.label;
      emit(current_study_, "cuda_global_aos", x, n, seed_aos("global", d, k));
      emit(current_study_, "cuda_global_soa", x, n, seed_global_soa(d, k));
      emit(current_study_, "pixelkit_cuda_aos", x, n, pixelkit_aos(d, k));
      emit(current_study_, "pixelkit_cuda_soa", x, n, pixelkit_soa(d, k));
    }
  }
}

void Study::transfer() {
  current_study_ = "s002_transfer";
  const KSpec g3{"gaussian:3", pixelkit::parse_kernel("gaussian:3")};
  std::vector<std::pair<int, int>> sizes = {{1920, 1080}, {3840, 2160}, {7680, 4320}};
  if (quick_) sizes = {{1920, 1080}, {7680, 4320}};
  const int reps = quick_ ? 5 : 20;
  const std::string tnote = "host timer around the synchronised call; median of " + std::to_string(reps) +
                            " after 2 warm-ups; kernel: pixelkit Filter2D";
  for (const auto& sz : sizes) {
    const int w = sz.first, h = sz.second;
    Data& d = data(w, h);
    const std::string x = size_label(w, h);
    const double xv = double(w) * h;
    const Image& want = reference(d, g3);
    pixelkit::Filter2D f(g3.k, kBorder);

    // Seed-style models: packed device buffers, pixelkit's device kernel between the copies.
    const auto model = [&](bool pinned) {
      return [&, pinned]() -> Meas {
        DeviceBuffer dsrc(d.bytes), ddst(d.bytes);
        std::vector<std::uint8_t> pageable_src, pageable_dst;
        PinnedBuffer pin_src, pin_dst;
        std::uint8_t *hsrc = nullptr, *hdst = nullptr;
        if (pinned) {
          pin_src.reserve(d.bytes);
          pin_dst.reserve(d.bytes);
          hsrc = pin_src.as<std::uint8_t>();
          hdst = pin_dst.as<std::uint8_t>();
        } else {
          pageable_src.resize(d.bytes);
          pageable_dst.assign(d.bytes, kPoison);
          hsrc = pageable_src.data();
          hdst = pageable_dst.data();
        }
        for (int y = 0; y < h; ++y)
          std::memcpy(hsrc + static_cast<std::size_t>(y) * w * 3, d.host.row<std::uint8_t>(y),
                      static_cast<std::size_t>(w) * 3);
        std::memset(hdst, kPoison, d.bytes);
        const ImageView sv = pixelkit::make_view(dsrc.get(), w, h, 3, PixelType::u8, Memory::device);
        const ImageView dv = pixelkit::make_view(ddst.get(), w, h, 3, PixelType::u8, Memory::device);
        pixelkit::Options o;
        o.backend = Backend::cuda;
        const auto run = [&] {
          if (!pinned) {
            PIXELKIT_CUDA_TRY(cudaMemcpy(dsrc.get(), hsrc, d.bytes, cudaMemcpyHostToDevice));
            o.stream = nullptr;  // the legacy default stream, as a synchronous program uses
            f(sv, dv, o);
            PIXELKIT_CUDA_TRY(cudaMemcpy(hdst, ddst.get(), d.bytes, cudaMemcpyDeviceToHost));
          } else {
            o.stream = reinterpret_cast<pixelkit::stream_t>(stream_.get());
            PIXELKIT_CUDA_TRY(cudaMemcpyAsync(dsrc.get(), hsrc, d.bytes, cudaMemcpyHostToDevice, stream_));
            f(sv, dv, o);
            PIXELKIT_CUDA_TRY(cudaMemcpyAsync(hdst, ddst.get(), d.bytes, cudaMemcpyDeviceToHost, stream_));
            PIXELKIT_CUDA_TRY(cudaStreamSynchronize(stream_));
          }
        };
        run();
        const Image got = [&] {
          Image g(w, h, 3, PixelType::u8);
          for (int y = 0; y < h; ++y)
            std::memcpy(g.row<std::uint8_t>(y), hdst + static_cast<std::size_t>(y) * w * 3,
                        static_cast<std::size_t>(w) * 3);
          return g;
        }();
        const Diff diff = compare(got.cview(), want.cview());
        Meas m;
        m.ok = diff.bad == 0;
        if (m.ok) m.ms = bench::time_host(run, reps, 2);
        m.notes = std::string(pinned ? "pinned host buffers; cudaMemcpyAsync H2D + kernel + D2H on one stream"
                                     : "pageable host buffers; synchronous cudaMemcpy H2D + kernel (default stream) + "
                                       "cudaMemcpy D2H") +
                  "; input already in the host buffer; device buffers allocated beforehand; " + check_note(diff) +
                  "; " + tnote;
        return m;
      };
    };
    emit(current_study_, "cuda_sync_pageable", x, xv, memo("sync_pageable|" + x, model(false)));
    emit(current_study_, "cuda_pinned_1stream", x, xv, memo("pinned_1stream|" + x, model(true)));

    for (const bool pinned : {false, true}) {
      const std::string series = pinned ? "pixelkit_cuda_host_pinned" : "pixelkit_cuda_host";
      emit(current_study_, series, x, xv, memo(series + "|" + x, [&]() -> Meas {
             const Memory mem = pinned ? Memory::pinned : Memory::host;
             Image src = pixelkit::clone(d.host.cview(), mem);
             Image dst(w, h, 3, PixelType::u8, mem);
             for (int y = 0; y < h; ++y) std::memset(dst.row<std::uint8_t>(y), kPoison, dst.view().row_bytes());
             pixelkit::RunInfo info;
             pixelkit::Options o;
             o.backend = Backend::cuda;
             o.stream = reinterpret_cast<pixelkit::stream_t>(stream_.get());
             o.info = &info;
             f(src.cview(), dst.view(), o);
             o.info = nullptr;
             const Diff diff = compare(dst.cview(), want.cview());
             Meas m;
             m.ok = diff.bad == 0;
             if (m.ok) m.ms = bench::time_host([&] { f(src.cview(), dst.view(), o); }, reps, 2);
             m.notes = std::string("pixelkit Filter2D on ") + (pinned ? "pinned" : "pageable") +
                       " host images (run_host: strips on 3 streams" + (pinned ? "" : " with pinned staging") +
                       "); path: " + info.path + "; " + check_note(diff) + "; " + tnote;
             return m;
           }));
    }
  }
}

void Study::edge() {
  current_study_ = "s004_edge";
  const KSpec e{"edge", pixelkit::parse_kernel("edge")};
  for (const auto& sz : std::vector<std::pair<int, int>>{{256, 256}, {1920, 1080}, {7680, 4320}}) {
    const int w = sz.first, h = sz.second;
    Data& d = data(w, h);
    const std::string x = size_label(w, h);
    const double xv = double(w) * h;
    seq_row(current_study_, d, e, x, xv);
    emit(current_study_, "cuda_shared", x, xv, seed_aos("shared_ro", d, e));
    emit(current_study_, "pixelkit_cuda", x, xv, pixelkit_aos(d, e));
  }
}

}  // namespace

int main(int argc, char** argv) try {
  std::string csv;
  bool quick = false;
  int reps = -1;
  std::vector<std::string> selected;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--csv") csv = next();
    else if (a == "--quick") quick = true;
    else if (a == "--reps") reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--studies") {
      std::stringstream ss(next());
      std::string item;
      while (std::getline(ss, item, ','))
        if (!item.empty()) selected.push_back(item);
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: study_filter_gpu [--csv FILE] [--quick] [--reps N] [--studies a,b,...]\n"
                  "studies: s002_resolution s002_kernel s002_memory s002_layout s002_transfer s004_edge\n");
      return 0;
    } else {
      throw std::runtime_error("unknown argument " + a + " (see --help)");
    }
  }
  if (reps < 0) reps = quick ? 10 : 40;
  const std::vector<std::string> all = {"s002_resolution", "s002_kernel", "s002_memory",
                                        "s002_layout",     "s002_transfer", "s004_edge"};
  const auto wanted = [&](const std::string& id) {
    if (selected.empty()) return true;
    for (const auto& s : selected)
      if (s == id || id.substr(5) == s) return true;
    return false;
  };
  for (const auto& s : selected) {
    bool known = false;
    for (const auto& id : all) known = known || s == id || id.substr(5) == s;
    if (!known) throw std::runtime_error("unknown study " + s + " (see --help)");
  }
  if (!pixelkit::cuda_available()) {
    std::fprintf(stderr, "study_filter_gpu: no usable CUDA device\n");
    return 2;
  }
  std::ofstream file;
  if (!csv.empty()) {
    file.open(csv);
    if (!file) throw std::runtime_error("cannot write " + csv);
  }
  std::ostream& out = csv.empty() ? std::cout : file;
  Study study(quick, reps, out);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::pair<std::string, void (Study::*)()>> runs = {
      {"s002_resolution", &Study::resolution}, {"s002_kernel", &Study::kernel_size},
      {"s002_memory", &Study::memory},         {"s002_layout", &Study::layout},
      {"s002_transfer", &Study::transfer},     {"s004_edge", &Study::edge}};
  bool failed = false;
  for (const auto& [id, fn] : runs) {
    if (!wanted(id)) continue;
    try {
      (study.*fn)();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "study_filter_gpu: %s stopped: %s\n", id.c_str(), e.what());
      (void)cudaGetLastError();
      failed = true;
    }
  }
  study.print_table();
  std::fprintf(stderr, "\nstudy_filter_gpu: %.1f s%s\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
               quick ? " (--quick)" : "");
  if (!study.all_ok() || failed) {
    std::fprintf(stderr, "study_filter_gpu: some rows disagree with the reference or failed (check != ok)\n");
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "study_filter_gpu: %s\n", e.what());
  return 1;
}
