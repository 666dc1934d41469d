// seed_variants.cuh - the seeds' own GPU methods that pixelkit does not use but
// the benchmarks and the studies time against it, in one place:
//   seed003_row_scan  seed 003's scan step (one block of S threads per row,
//                     CUB's block scan); with a transpose it makes the seed's
//                     scan + transpose integral image;
//   seed000_v1_forward seed 000's "v1" Haar pyramid: a host round trip per level.
// Benchmark-only code: bench_integral_gpu, bench_haar_gpu and study_gpu.
#pragma once

#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>

#include <cstddef>
#include <cstring>
#include <utility>

#include "haar/haar_backends.hpp"
#include "pixelkit/haar.hpp"
#include "pixelkit/image.hpp"

namespace pixelkit::bench {

constexpr int kSeedScanItems = 8;  ///< elements per thread per step of seed003_row_scan

/// One block of S threads per row: inclusive scan of row blockIdx.x of `in`
/// (In) into `out` (i64), n elements, S * kSeedScanItems per step with the
/// running total carried between steps. `in` may equal `out` (i64 rows).
template <int S, typename In>
__global__ void __launch_bounds__(S) seed003_row_scan(const In* in, std::size_t in_pitch, long long* out,
                                                      std::size_t out_pitch, int n) {
  using BlockScan = cub::BlockScan<long long, S>;
  __shared__ typename BlockScan::TempStorage temp;
  const In* row = reinterpret_cast<const In*>(reinterpret_cast<const char*>(in) + blockIdx.x * in_pitch);
  long long* orow = reinterpret_cast<long long*>(reinterpret_cast<char*>(out) + blockIdx.x * out_pitch);
  long long carry = 0;
  for (int base = 0; base < n; base += S * kSeedScanItems) {
    long long v[kSeedScanItems];
    for (int i = 0; i < kSeedScanItems; ++i) {
      const int x = base + threadIdx.x * kSeedScanItems + i;
      v[i] = x < n ? static_cast<long long>(row[x]) : 0;
    }
    long long total;
    BlockScan(temp).InclusiveSum(v, v, total);
    __syncthreads();  // temp is reused by the next step; in == out for the second scan
    for (int i = 0; i < kSeedScanItems; ++i) {
      const int x = base + threadIdx.x * kSeedScanItems + i;
      if (x < n) orow[x] = v[i] + carry;
    }
    carry += total;
  }
}

/// Seed 000's v1: every level uploads the current approximation, runs one
/// level on the device (pixelkit's kernel, `block` threads per block),
/// downloads the four bands and rearranges them on the host; device buffers
/// are allocated per level, as the seed did. `src` and `coeffs` are host f32.
inline void seed000_v1_forward(const ConstImageView& src, const ImageView& coeffs, const HaarLayout& l, int block,
                               HaarNormalize norm) {
  auto cuda = detail::make_cuda_haar();
  cuda->tuning().block_threads = block;
  Image approx(src.width, src.height, 1, PixelType::f32);
  copy(src, approx.view());
  for (int k = 1; k <= l.levels; ++k) {
    const HaarLayout one = haar_layout(approx.width(), approx.height(), 1);
    Image d_in(approx.width(), approx.height(), 1, PixelType::f32, Memory::device);
    Image d_co(one.coeff_width, one.coeff_height, 1, PixelType::f32, Memory::device);
    copy(approx.cview(), d_in.view());
    cuda->forward(d_in.cview(), d_co.view(), one, norm, nullptr);
    Image h_co(one.coeff_width, one.coeff_height, 1, PixelType::f32);
    copy(d_co.cview(), h_co.view());
    synchronize(nullptr);
    const auto& b = l.band[k];
    for (int y = 0; y < b.height; ++y) {
      std::memcpy(coeffs.row<float>(y) + b.x0, h_co.row<float>(y) + b.width, b.width * sizeof(float));
      std::memcpy(coeffs.row<float>(b.y0 + y), h_co.row<float>(b.height + y), b.width * sizeof(float));
      std::memcpy(coeffs.row<float>(b.y0 + y) + b.x0, h_co.row<float>(b.height + y) + b.width,
                  b.width * sizeof(float));
    }
    Image next(b.width, b.height, 1, PixelType::f32);
    for (int y = 0; y < b.height; ++y) std::memcpy(next.row<float>(y), h_co.row<float>(y), b.width * sizeof(float));
    approx = std::move(next);
  }
  for (int y = 0; y < approx.height(); ++y)
    std::memcpy(coeffs.row<float>(y), approx.row<float>(y), approx.width() * sizeof(float));
}

}  // namespace pixelkit::bench
