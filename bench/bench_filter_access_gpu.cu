// bench_filter_access_gpu - the memory side of the filter's streaming kernels
// alone: copies of an RGB u8 image that read and write it in the order those
// kernels do, against a plain copy (docs/notes-filter-cuda.md, run 10's and
// run 14's "Next": the streaming kernels stop near 2 TB/s where a copy reaches
// 3 TB/s; which part of the walk costs it?).
//
//   bench_filter_access_gpu [--quick] [--size WxH]... [--runs N] [--blocks-per-sm M]
//
// Sizes 7680x4320 and 3840x2160 (--quick: 7680x4320 only). --blocks-per-sm:
// the one-wave rows launch M blocks per SM instead of as many as fit (the
// streaming tensor-core kernel runs 3 blocks of 4 warps, i.e. 12 warps per SM;
// with 32-thread blocks, M = 12 puts as many warps in flight).
// Each configuration copies the image (pitch = row bytes, 16-byte aligned) in
// strips of S bytes walked down by blocks: block b owns strip b % strips and
// the segment of R rows b / strips (strip fastest, as the streaming kernels
// number their blocks), each thread 16 bytes of a row, 4 rows loaded before
// they are stored. S runs from the streaming tensor-core kernel's 192 bytes
// (64 RGB pixels) and the row-streaming kernel's 512 to whole rows; R from
// one wave of blocks (every block resident at once, each a long segment: what
// both kernels launch) down to 16 rows (many short-lived blocks, so the
// blocks in flight cover a narrow band of rows that moves down the image).
// Times: CUDA events around one launch, median of --runs (default 50) after
// warm-up; GB/s counts the image read once and written once; x floor is the
// time over the plain copy kernel's on the same image. The copied image is
// checked against the source after each configuration.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_timing.hpp"

namespace {

constexpr int kRowsInFlight = 4;

__global__ void flat_copy(const uint4* __restrict__ a, uint4* __restrict__ b, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) b[i] = __ldg(a + i);
}

/// Strip walk: see the header comment.
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

struct Size {
  int w, h;
};

}  // namespace

int main(int argc, char** argv) try {
  std::vector<Size> sizes;
  int runs = 50;
  bool quick = false;
  int blocks_per_sm = 0;  // 0: as many as fit
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
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--runs") {
      runs = std::max(1, std::atoi(next().c_str()));
    } else {
      std::printf("usage: bench_filter_access_gpu [--quick] [--size WxH]... [--runs N] [--blocks-per-sm M]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  if (sizes.empty()) sizes = quick ? std::vector<Size>{{7680, 4320}} : std::vector<Size>{{7680, 4320}, {3840, 2160}};

  int dev = 0, sms = 0;
  PIXELKIT_CUDA_TRY(cudaGetDevice(&dev));
  PIXELKIT_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop{};
  PIXELKIT_CUDA_TRY(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s, %d SMs\n", prop.name, sms);
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
    for (int strip_bytes : {192, 512, 2048, 8192, row_bytes}) {
      const int threads = std::min(1024, (std::min(strip_bytes / 16, 1024) + 31) / 32 * 32);
      int per_sm = 0;
      PIXELKIT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, strip_copy, threads, 0));
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
              strip_copy<<<static_cast<unsigned>(blocks), threads, 0, s>>>(src, dst, row_bytes, row_bytes, sz.h,
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
    PIXELKIT_CUDA_TRY(cudaFree(src));
    PIXELKIT_CUDA_TRY(cudaFree(dst));
  }
  PIXELKIT_CUDA_TRY(cudaStreamDestroy(s));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_filter_access_gpu: %s\n", e.what());
  return 1;
}
