// bench_mma_rate_gpu - issue rate of the warp-level matrix instructions the
// filter's tensor-core kernels use or could use (docs/notes-filter-cuda.md,
// run 15): mma.sync m16n8k16 and m16n8k8 on fp16 with fp32 accumulation, and
// m16n8k32 and m16n8k16 on u8 x s8 with s32 accumulation. No memory traffic:
// each warp runs 4 independent accumulator chains on register operands.
//
//   bench_mma_rate_gpu [--quick]
//
// Prints instructions per clock per SM (at the SM clock the device reports)
// for 8 and 16 warps per SM; times are CUDA-event medians of 11 launches
// after warm-up (bench_timing.hpp). Measured on an H100 (2026-11-25): 0.58-0.60 for
// both m16n8k16 f16 and m16n8k32 u8.s8, 0.83-0.88 for both k8/k16 halves:
// the u8 product does twice the multiply-adds per instruction time.
#include <cuda_runtime.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "bench_timing.hpp"

namespace {

constexpr int kChains = 4;

/// KIND 0: m16n8k16 f16/f32; 1: m16n8k8 f16/f32; 2: m16n8k32 u8.s8/s32;
/// 3: m16n8k16 u8.s8/s32.
template <int KIND>
__global__ void mma_loop(int iters, unsigned seed, int* out) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  const unsigned a0 = seed ^ threadIdx.x, a1 = a0 * 3, a2 = a0 * 5, a3 = a0 * 7, b0 = seed * 11, b1 = seed * 13;
  float f[kChains][4] = {};
  int s[kChains][4] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      if constexpr (KIND == 0)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3},{%4,%5,%6,%7},{%8,%9},{%0,%1,%2,%3};"
            : "+f"(f[c][0]), "+f"(f[c][1]), "+f"(f[c][2]), "+f"(f[c][3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      else if constexpr (KIND == 1)
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3},{%4,%5},{%6},{%0,%1,%2,%3};"
                     : "+f"(f[c][0]), "+f"(f[c][1]), "+f"(f[c][2]), "+f"(f[c][3])
                     : "r"(a0), "r"(a1), "r"(b0));
      else if constexpr (KIND == 2)
        asm volatile(
            "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3},{%4,%5,%6,%7},{%8,%9},{%0,%1,%2,%3};"
            : "+r"(s[c][0]), "+r"(s[c][1]), "+r"(s[c][2]), "+r"(s[c][3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%0,%1,%2,%3},{%4,%5},{%6},{%0,%1,%2,%3};"
                     : "+r"(s[c][0]), "+r"(s[c][1]), "+r"(s[c][2]), "+r"(s[c][3])
                     : "r"(a0), "r"(a1), "r"(b0));
    }
  }
  int acc = 0;
  for (int c = 0; c < kChains; ++c)
    for (int e = 0; e < 4; ++e) acc += s[c][e] + static_cast<int>(f[c][e]);
  if (acc == 0x12345) out[0] = acc;  // keeps the chains alive
#else
  (void)iters, (void)seed, (void)out;
#endif
}

template <int KIND>
void measure(const char* name, int warps_per_block, int sms, int clock_khz, int* out, cudaStream_t s) {
  constexpr int kBlocksPerSm = 4, kIters = 4096;
  const dim3 grid(sms * kBlocksPerSm), block(32 * warps_per_block);
  const double ms = pixelkit::bench::time_device(
      [&] {
        mma_loop<KIND><<<grid, block, 0, s>>>(kIters, 1, out);
        PIXELKIT_CUDA_TRY(cudaGetLastError());
      },
      s, 11);
  const double per_sm = static_cast<double>(kBlocksPerSm) * warps_per_block * kIters * kChains;
  std::printf("| %s | %d | %.3f | %.3f |\n", name, kBlocksPerSm * warps_per_block, ms,
              per_sm / (ms * 1e-3 * clock_khz * 1e3));
}

}  // namespace

int main(int argc, char** argv) try {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a != "--quick") {
      std::printf("usage: bench_mma_rate_gpu [--quick]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  int dev = 0, sms = 0, clock_khz = 0, major = 0;
  PIXELKIT_CUDA_TRY(cudaGetDevice(&dev));
  PIXELKIT_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  PIXELKIT_CUDA_TRY(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  PIXELKIT_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  cudaDeviceProp prop{};
  PIXELKIT_CUDA_TRY(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s, %d SMs, SM clock %d MHz\n", prop.name, sms, clock_khz / 1000);
  if (major < 8) {
    std::printf("these mma shapes need sm_80 or newer: nothing measured\n");
    return 0;
  }
  int* out = nullptr;
  PIXELKIT_CUDA_TRY(cudaMalloc(&out, sizeof(int)));
  cudaStream_t s = nullptr;
  PIXELKIT_CUDA_TRY(cudaStreamCreate(&s));
  std::printf("| instruction | warps per SM | ms | per clock per SM |\n|---|---:|---:|---:|\n");
  for (int w : {2, 4}) {
    measure<0>("m16n8k16 f16, f32 acc", w, sms, clock_khz, out, s);
    measure<1>("m16n8k8 f16, f32 acc", w, sms, clock_khz, out, s);
    measure<2>("m16n8k32 u8.s8, s32 acc", w, sms, clock_khz, out, s);
    measure<3>("m16n8k16 u8.s8, s32 acc", w, sms, clock_khz, out, s);
  }
  PIXELKIT_CUDA_TRY(cudaStreamDestroy(s));
  PIXELKIT_CUDA_TRY(cudaFree(out));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_mma_rate_gpu: %s\n", e.what());
  return 1;
}
