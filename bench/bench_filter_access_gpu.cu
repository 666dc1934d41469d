// bench_filter_access_gpu - the memory side of the filter's streaming kernels
// alone: copies of an RGB u8 image that read and write it in the order those
// kernels do, against a plain copy (docs/notes-filter-cuda.md, run 10's and
// run 14's "Next": the streaming kernels stop near 2 TB/s where a copy reaches
// 3 TB/s; which part of the walk costs it?).
//
//   bench_filter_access_gpu [--quick] [--size WxH]... [--runs N] [--blocks-per-sm M]
//                           [--rows-in-flight 4|8|16] [--strip-bytes B]...
//
// Sizes 7680x4320 and 3840x2160 (--quick: 7680x4320 only). --blocks-per-sm:
// the one-wave rows launch M blocks per SM instead of as many as fit (the
// streaming tensor-core kernel runs 3 blocks of 4 warps, i.e. 12 warps per SM;
// with 32-thread blocks, M = 12 puts as many warps in flight).
// Each configuration copies the image (pitch = row bytes, 16-byte aligned) in
// strips of S bytes walked down by blocks: block b owns strip b % strips and
// the segment of R rows b / strips (strip fastest, as the streaming kernels
// number their blocks), each thread 16 bytes of a row, 4 rows loaded before
// they are stored (--rows-in-flight: 8 or 16, so that each warp keeps more
// bytes in flight: run 21's question whether the one-wave walk is bound by
// bytes in flight per SM). S runs from the streaming tensor-core kernel's 192 bytes
// (64 RGB pixels) and the row-streaming kernel's 512 to whole rows; R from
// one wave of blocks (every block resident at once, each a long segment: what
// both kernels launch) down to 16 rows (many short-lived blocks, so the
// blocks in flight cover a narrow band of rows that moves down the image).
// --tma (sm_90 up) adds the same walk with TMA loads (notes, run 22): each
// block's rows arrive in 16-row boxes in a ring of 2, 3, 4 or 6 stages in
// shared memory, and leave by the block's threads or by TMA stores; blocks
// per SM capped at 3, 6, 12 or as many as fit; strips of 192, 384 and 768
// bytes (or --strip-bytes); --tma-only skips the register walk.
// Times: CUDA events around one launch, median of --runs (default 50) after
// warm-up; GB/s counts the image read once and written once; x floor is the
// time over the plain copy kernel's on the same image. The copied image is
// checked against the source after each configuration.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_timing.hpp"
#include "core/cuda_tma.cuh"
#include "core/cuda_tma.hpp"

namespace {

__global__ void flat_copy(const uint4* __restrict__ a, uint4* __restrict__ b, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) b[i] = __ldg(a + i);
}

/// Strip walk: see the header comment. kRowsInFlight rows loaded before they are stored.
template <int kRowsInFlight>
__global__ void strip_copy(const std::uint8_t* __restrict__ src, std::uint8_t* __restrict__ dst, std::size_t pitch,
                           int row_bytes, int height, int strip_bytes, int strips, int seg_rows) {
  const int strip = static_cast<int>(blockIdx.x) % strips, seg = static_cast<int>(blockIdx.x) / strips;
  const int y0 = seg * seg_rows, y1 = min(y0 + seg_rows, height);
  for (int off = 16 * static_cast<int>(threadIdx.x); off < strip_bytes; off += 16 * static_cast<int>(blockDim.x)) {
    const int x = strip * strip_bytes + off;
    if (x >= row_bytes) break;
    for (int y = y0; y < y1; y += kRowsInFlight) {
      uint4 v[kRowsInFlight];
#pragma unroll
      for (int u = 0; u < kRowsInFlight; ++u)
        if (y + u < y1) v[u] = __ldg(reinterpret_cast<const uint4*>(src + (y + u) * pitch + x));
#pragma unroll
      for (int u = 0; u < kRowsInFlight; ++u)
        if (y + u < y1) *reinterpret_cast<uint4*>(dst + (y + u) * pitch + x) = v[u];
    }
  }
}


// ---- TMA walk (notes, run 22): the same strips and segments, but each
// block's rows come in 16-row boxes (cp.async.bulk.tensor.2d) into a ring of
// kStages stages in shared memory, an mbarrier each, issued by one thread:
// the bytes in flight no longer cost registers. kTmaStore: the stage leaves
// by a TMA store too (one thread does everything); else the block's 128
// threads read it from shared memory and store 16 bytes each, with one block
// barrier a step (as the filter kernel would).
constexpr int kBoxRows = 16;

using namespace pixelkit::detail::tma;

template <int kStages, bool kTmaStore>
__global__ void tma_strip_copy(const __grid_constant__ CUtensorMap in, const __grid_constant__ CUtensorMap out,
                               std::uint8_t* __restrict__ dst, std::size_t pitch, int row_bytes, int height,
                               int strip_bytes, int strips, int seg_rows) {
  extern __shared__ __align__(128) std::uint8_t ring[];
  __shared__ std::uint64_t full[kStages];
  const int strip = static_cast<int>(blockIdx.x) % strips, seg = static_cast<int>(blockIdx.x) / strips;
  const int y0 = seg * seg_rows, y1 = min(y0 + seg_rows, height);
  const int steps = (y1 - y0 + kBoxRows - 1) / kBoxRows;
  const int stage_bytes = kBoxRows * strip_bytes, xw = strip * strip_bytes / 4;
  const bool leader = threadIdx.x == 0;
  if (leader) {
    for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 1);
    mbar_init_fence();
  }
  __syncthreads();
  if (leader)
    for (int s = 0; s < kStages && s < steps; ++s) {
      tma_expect_tx(&full[s], stage_bytes);
      tma_load_2d(ring + s * stage_bytes, &in, xw, y0 + s * kBoxRows, &full[s]);
    }
  for (int i = 0; i < steps; ++i) {
    const int st = i % kStages;
    std::uint8_t* stage = ring + st * stage_bytes;
    if (kTmaStore) {
      if (!leader) return;
      mbar_wait(&full[st], (i / kStages) & 1);
      tma_store_2d(&out, xw, y0 + i * kBoxRows, stage);
      tma_store_commit();
      // Reuse the previous step's stage once its store has read it.
      tma_store_wait_read<1>();
      if (i >= 1 && i - 1 + kStages < steps) {
        const int ps = (i - 1) % kStages;
        tma_expect_tx(&full[ps], stage_bytes);
        tma_load_2d(ring + ps * stage_bytes, &in, xw, y0 + (i - 1 + kStages) * kBoxRows, &full[ps]);
      }
    } else {
      mbar_wait(&full[st], (i / kStages) & 1);
      const int units = strip_bytes / 16, rows = min(kBoxRows, y1 - (y0 + i * kBoxRows));
      for (int k = static_cast<int>(threadIdx.x); k < rows * units; k += static_cast<int>(blockDim.x)) {
        const int r = k / units, u = k - r * units;
        if (strip * strip_bytes + 16 * u >= row_bytes) continue;
        const uint4 v = *reinterpret_cast<const uint4*>(stage + r * strip_bytes + 16 * u);
        *reinterpret_cast<uint4*>(dst + static_cast<std::size_t>(y0 + i * kBoxRows + r) * pitch +
                                  strip * strip_bytes + 16 * u) = v;
      }
      __syncthreads();
      if (leader && i + kStages < steps) {
        tma_expect_tx(&full[st], stage_bytes);
        tma_load_2d(stage, &in, xw, y0 + (i + kStages) * kBoxRows, &full[st]);
      }
    }
  }
  if (kTmaStore && leader) tma_store_wait_all();
}

CUtensorMap make_map(void* base, int row_bytes, int height, std::size_t pitch, int strip_bytes) {
  CUtensorMap m{};
  if (!pixelkit::detail::encode_tma_2d_u32(&m, base, static_cast<std::uint64_t>(row_bytes / 4),
                                           static_cast<std::uint64_t>(height), pitch,
                                           static_cast<unsigned>(strip_bytes / 4), kBoxRows))
    throw std::runtime_error("no TMA tensor map for this layout or device");
  return m;
}

struct Size {
  int w, h;
};

}  // namespace

int main(int argc, char** argv) try {
  std::vector<Size> sizes;
  int runs = 50;
  bool quick = false;
  int blocks_per_sm = 0;  // 0: as many as fit
  int rows_in_flight = 4;
  bool tma = false, strips_only = false;
  std::vector<int> strip_list;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--size") {
      Size s{};
      if (std::sscanf(next().c_str(), "%dx%d", &s.w, &s.h) != 2 || s.w < 1 || s.h < 1)
        throw std::runtime_error("--size wants WxH");
      sizes.push_back(s);
    } else if (a == "--blocks-per-sm") {
      blocks_per_sm = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--rows-in-flight") {
      rows_in_flight = std::atoi(next().c_str());
      if (rows_in_flight != 4 && rows_in_flight != 8 && rows_in_flight != 16)
        throw std::runtime_error("--rows-in-flight wants 4, 8 or 16");
    } else if (a == "--strip-bytes") {
      strip_list.push_back(std::max(16, std::atoi(next().c_str()) / 16 * 16));
    } else if (a == "--tma") {
      tma = true;
    } else if (a == "--tma-only") {
      tma = strips_only = true;
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--runs") {
      runs = std::max(1, std::atoi(next().c_str()));
    } else {
      std::printf("usage: bench_filter_access_gpu [--quick] [--size WxH]... [--runs N] [--blocks-per-sm M]\n"
                  "                               [--rows-in-flight 4|8|16] [--strip-bytes B]... [--tma | --tma-only]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  if (sizes.empty()) sizes = quick ? std::vector<Size>{{7680, 4320}} : std::vector<Size>{{7680, 4320}, {3840, 2160}};

  int dev = 0, sms = 0;
  PIXELKIT_CUDA_TRY(cudaGetDevice(&dev));
  PIXELKIT_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop{};
  PIXELKIT_CUDA_TRY(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s, %d SMs; %d rows in flight per thread\n", prop.name, sms, rows_in_flight);
  const auto kernel = rows_in_flight == 16 ? strip_copy<16> : rows_in_flight == 8 ? strip_copy<8> : strip_copy<4>;
  cudaStream_t s = nullptr;
  PIXELKIT_CUDA_TRY(cudaStreamCreate(&s));

  for (const Size& sz : sizes) {
    const int row_bytes = (sz.w * 3 + 15) / 16 * 16;  // RGB u8, rows padded to 16 bytes
    const std::size_t bytes = static_cast<std::size_t>(row_bytes) * sz.h;
    std::uint8_t *src = nullptr, *dst = nullptr;
    PIXELKIT_CUDA_TRY(cudaMalloc(&src, bytes));
    PIXELKIT_CUDA_TRY(cudaMalloc(&dst, bytes));
    std::vector<std::uint8_t> host(bytes), back(bytes);
    for (std::size_t i = 0; i < bytes; ++i) host[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 13);
    PIXELKIT_CUDA_TRY(cudaMemcpy(src, host.data(), bytes, cudaMemcpyHostToDevice));
    auto check = [&](const char* what) {
      PIXELKIT_CUDA_TRY(cudaMemcpy(back.data(), dst, bytes, cudaMemcpyDeviceToHost));
      if (back != host) throw std::runtime_error(std::string(what) + ": the copy differs from the source");
      PIXELKIT_CUDA_TRY(cudaMemset(dst, 0, bytes));
    };

    const std::size_t n16 = bytes / 16;
    const double flat_ms = pixelkit::bench::time_device(
        [&] {
          flat_copy<<<static_cast<unsigned>((n16 + 255) / 256), 256, 0, s>>>(reinterpret_cast<const uint4*>(src),
                                                                              reinterpret_cast<uint4*>(dst), n16);
          PIXELKIT_CUDA_TRY(cudaGetLastError());
        },
        s, runs);
    check("flat copy");
    std::printf("\n== %dx%d RGB u8 (%.1f MB), flat copy %.4f ms, %.0f GB/s ==\n", sz.w, sz.h, bytes / 1e6, flat_ms,
                2.0 * bytes / (flat_ms * 1e6));
    std::printf("| strip bytes | segment rows | blocks | threads | ms | GB/s | x floor |\n|---:|---:|---:|---:|---:|---:|---:|\n");
    std::vector<int> strips_to_try = strip_list;
    if (strips_to_try.empty()) strips_to_try = {192, 512, 2048, 8192, row_bytes};
    if (strips_only) strips_to_try.clear();
    for (int strip_bytes : strips_to_try) {
      const int threads = std::min(1024, (std::min(strip_bytes / 16, 1024) + 31) / 32 * 32);
      int per_sm = 0;
      PIXELKIT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
      const int strips = (row_bytes + strip_bytes - 1) / strip_bytes;
      if (blocks_per_sm > 0) per_sm = std::min(per_sm, blocks_per_sm);
      const long long resident = static_cast<long long>(per_sm) * sms;
      const int one_wave_segs = static_cast<int>(std::max<long long>(1, resident / strips));
      const int one_wave_rows = (sz.h + one_wave_segs - 1) / one_wave_segs;
      for (int seg_rows : {one_wave_rows, 256, 64, 16}) {
        if (seg_rows != one_wave_rows && seg_rows >= one_wave_rows) continue;
        const int segs = (sz.h + seg_rows - 1) / seg_rows;
        const long long blocks = static_cast<long long>(strips) * segs;
        const double ms = pixelkit::bench::time_device(
            [&] {
              kernel<<<static_cast<unsigned>(blocks), threads, 0, s>>>(src, dst, row_bytes, row_bytes, sz.h,
                                                                      strip_bytes, strips, seg_rows);
              PIXELKIT_CUDA_TRY(cudaGetLastError());
            },
            s, runs);
        check("strip copy");
        std::printf("| %d | %d%s | %lld | %d | %.4f | %.0f | %.2f |\n", strip_bytes, seg_rows,
                    seg_rows == one_wave_rows ? " (one wave)" : "", blocks, threads, ms, 2.0 * bytes / (ms * 1e6),
                    ms / flat_ms);
      }
    }

    // TMA walk: strips of S bytes (S <= 1024), the ring's stages, stores by threads or TMA,
    // blocks per SM capped at 3 (the filter kernel's), 6, 12 or as many as fit.
    if (tma) {
      std::printf("\n| TMA: strip bytes | stages | store | blocks/SM | segment rows | blocks | ms | GB/s | x floor |\n"
                  "|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
      std::vector<int> tma_strips = strip_list;
      if (tma_strips.empty()) tma_strips = {192, 384, 768};
      for (int strip_bytes : tma_strips) {
        if (strip_bytes > 1024 || strip_bytes % 16) continue;
        const CUtensorMap min_ = make_map(src, row_bytes, sz.h, row_bytes, strip_bytes);
        const CUtensorMap mout = make_map(dst, row_bytes, sz.h, row_bytes, strip_bytes);
        const int strips = (row_bytes + strip_bytes - 1) / strip_bytes;
        for (int stages : {2, 3, 4, 6}) {
          for (int store_tma = 0; store_tma < 2; ++store_tma) {
            auto kern = store_tma ? (stages == 2   ? tma_strip_copy<2, true>
                                     : stages == 3 ? tma_strip_copy<3, true>
                                     : stages == 4 ? tma_strip_copy<4, true>
                                                   : tma_strip_copy<6, true>)
                                  : (stages == 2   ? tma_strip_copy<2, false>
                                     : stages == 3 ? tma_strip_copy<3, false>
                                     : stages == 4 ? tma_strip_copy<4, false>
                                                   : tma_strip_copy<6, false>);
            const int threads = store_tma ? 32 : 128;
            const int smem = stages * kBoxRows * strip_bytes;
            PIXELKIT_CUDA_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
            int fit = 0;
            PIXELKIT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kern, threads, smem));
            for (int cap : {3, 6, 12, 0}) {
              const int per_sm = cap ? std::min(cap, fit) : fit;
              if (cap && cap > fit) continue;
              if (!cap && (fit == 3 || fit == 6 || fit == 12)) continue;
              const int one_wave_segs = std::max(1, per_sm * sms / strips);
              const int one_wave_rows = ((sz.h + one_wave_segs - 1) / one_wave_segs + kBoxRows - 1) / kBoxRows * kBoxRows;
              for (int seg_rows : {one_wave_rows, 256, 64}) {
                if (seg_rows != one_wave_rows && seg_rows >= one_wave_rows) continue;
                const int segs = (sz.h + seg_rows - 1) / seg_rows;
                const long long blocks = static_cast<long long>(strips) * segs;
                const double ms = pixelkit::bench::time_device(
                    [&] {
                      kern<<<static_cast<unsigned>(blocks), threads, smem, s>>>(min_, mout, dst, row_bytes, row_bytes,
                                                                                sz.h, strip_bytes, strips, seg_rows);
                      PIXELKIT_CUDA_TRY(cudaGetLastError());
                    },
                    s, runs);
                check("TMA strip copy");
                std::printf("| %d | %d | %s | %d | %d%s | %lld | %.4f | %.0f | %.2f |\n", strip_bytes, stages,
                            store_tma ? "TMA" : "threads", per_sm, seg_rows,
                            seg_rows == one_wave_rows ? " (one wave)" : "", blocks, ms, 2.0 * bytes / (ms * 1e6),
                            ms / flat_ms);
              }
            }
          }
        }
      }
    }
    PIXELKIT_CUDA_TRY(cudaFree(src));
    PIXELKIT_CUDA_TRY(cudaFree(dst));
  }
  PIXELKIT_CUDA_TRY(cudaStreamDestroy(s));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_filter_access_gpu: %s\n", e.what());
  return 1;
}
