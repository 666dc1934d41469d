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
//
// On sm_90 (built as sm_90a, see bench/CMakeLists.txt) it also times Hopper's
// warpgroup products, wgmma.mma_async m64nNk16 f16 -> f32 and m64nNk32
// u8.s8 -> s32, for N = 16, 32 and 64, with A from registers (the form a filter
// with its image rows in registers and the Toeplitz factors in shared memory
// would use) and from shared memory, 1 to 3 warpgroups per SM; and prints
// every row's multiply-adds per clock and SM, so that the shapes compare
// (notes-filter-cuda.md, next step 0(b)).
#include <cuda_runtime.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>

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

// ---- Hopper warpgroup products (sm_90a) ----
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PIXELKIT_WGMMA 1
#endif

#if defined(PIXELKIT_WGMMA)
/// Shared-memory matrix descriptor (no swizzle): start, leading and stride
/// byte offsets in 16-byte units. The values the products read are zeros;
/// only the rate is measured. (Only in the sm_90a pass, its one user's.)
__device__ __forceinline__ unsigned long long wgmma_desc(const void* smem, unsigned lbo, unsigned sbo) {
  const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  return static_cast<unsigned long long>((addr >> 4) & 0x3FFF) |
         (static_cast<unsigned long long>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<unsigned long long>((sbo >> 4) & 0x3FFF) << 32);
}
#endif

/// One m64nNk16 f16 product (f32 accumulators, N / 2 a thread) or m64nNk32
/// u8.s8 product (s32 accumulators), A from registers (RS) or shared memory
/// (the descriptor da). The accumulators always add (scale-d true).
template <int N, bool U8, bool RS>
__device__ __forceinline__ void wgmma_one(std::conditional_t<U8, unsigned, float> (&d)[N / 2], const unsigned (&a)[4], unsigned long long da,
                                          unsigned long long db) {
#if defined(PIXELKIT_WGMMA)
  static_assert(N == 16 || N == 32 || N == 64, "the shapes timed");
  (void)a, (void)da;
  if constexpr (N == 16 && !U8 && RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; "
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p, 1, 1, 0; }"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
  else if constexpr (N == 16 && !U8 && !RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; "
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1, 0, 0; }"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "l"(da), "l"(db));
  else if constexpr (N == 16 && U8 && RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; "
                 "wgmma.mma_async.sync.aligned.m64n16k32.s32.u8.s8 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p; }"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
  else if constexpr (N == 16 && U8 && !RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; "
                 "wgmma.mma_async.sync.aligned.m64n16k32.s32.u8.s8 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p; }"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7])
                 : "l"(da), "l"(db));
  else if constexpr (N == 32 && !U8 && RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; "
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, p, 1, 1, 0; }"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
  else if constexpr (N == 32 && !U8 && !RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; "
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0; }"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "l"(da), "l"(db));
  else if constexpr (N == 32 && U8 && RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; "
                 "wgmma.mma_async.sync.aligned.m64n32k32.s32.u8.s8 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, p; }"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
  else if constexpr (N == 32 && U8 && !RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; "
                 "wgmma.mma_async.sync.aligned.m64n32k32.s32.u8.s8 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p; }"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15])
                 : "l"(da), "l"(db));
  else if constexpr (N == 64 && !U8 && RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; "
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0; }"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
  else if constexpr (N == 64 && !U8 && !RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; "
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0; }"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db));
  else if constexpr (N == 64 && U8 && RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; "
                 "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.s8 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p; }"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
  else if constexpr (N == 64 && U8 && !RS)
    asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; "
                 "wgmma.mma_async.sync.aligned.m64n64k32.s32.u8.s8 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p; }"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
                 : "l"(da), "l"(db));
#else
  (void)d, (void)a, (void)da, (void)db;
#endif
}

/// CHAINS independent accumulator sets per warpgroup, one commit group per
/// round of CHAINS products, at most 1 group left in flight.
template <int N, bool U8, bool RS, int CHAINS>
__global__ void wgmma_loop(int iters, unsigned seed, int* out) {
#if defined(PIXELKIT_WGMMA)
  __shared__ __align__(1024) unsigned char smem[2][16384];
  for (int i = threadIdx.x; i < 2 * 16384 / 4; i += blockDim.x) reinterpret_cast<unsigned*>(smem)[i] = 0u;
  __syncthreads();
  const unsigned long long db = wgmma_desc(smem[0], 128, 256), da = wgmma_desc(smem[1], 128, 256);
  const unsigned a[4] = {seed ^ threadIdx.x, seed * 3, seed * 5, seed * 7};
  std::conditional_t<U8, unsigned, float> d[CHAINS][N / 2] = {};
  for (int i = 0; i < iters; ++i) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) wgmma_one<N, U8, RS>(d[c], a, da, db);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  float acc = 0.0f;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c)
#pragma unroll
    for (int e = 0; e < N / 2; ++e) acc += static_cast<float>(d[c][e]);
  if (acc == 12345.0f) out[0] = static_cast<int>(acc);  // keeps the products alive
#else
  (void)iters, (void)seed, (void)out;
#endif
}

template <int N, bool U8, bool RS, int CHAINS>
void measure_wgmma(int warpgroups_per_sm, int sms, int clock_khz, int* out, cudaStream_t s) {
  constexpr int kIters = 2048;
  const dim3 grid(sms * warpgroups_per_sm), block(128);
  const double ms = pixelkit::bench::time_device(
      [&] {
        wgmma_loop<N, U8, RS, CHAINS><<<grid, block, 0, s>>>(kIters, 1, out);
        PIXELKIT_CUDA_TRY(cudaGetLastError());
      },
      s, 11);
  const double per_sm = static_cast<double>(warpgroups_per_sm) * kIters * CHAINS;
  const double rate = per_sm / (ms * 1e-3 * clock_khz * 1e3);
  const double fma = rate * 64.0 * N * (U8 ? 32 : 16);
  std::printf("| wgmma m64n%dk%d %s, A from %s, %d chains | %d | %.3f | %.3f | %.0f |\n", N, U8 ? 32 : 16,
              U8 ? "u8.s8" : "f16", RS ? "registers" : "shared", CHAINS, 4 * warpgroups_per_sm, ms, rate, fma);
}
// ---- end Hopper warpgroup products ----

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
  const double rate = per_sm / (ms * 1e-3 * clock_khz * 1e3);
  constexpr int kFma = KIND == 0 ? 16 * 8 * 16 : KIND == 1 ? 16 * 8 * 8 : KIND == 2 ? 16 * 8 * 32 : 16 * 8 * 16;
  std::printf("| %s | %d | %.3f | %.3f | %.0f |\n", name, kBlocksPerSm * warps_per_block, ms, rate, rate * kFma);
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
  std::printf("| instruction | warps per SM | ms | per clock per SM | multiply-adds per clock per SM |\n"
              "|---|---:|---:|---:|---:|\n");
  for (int w : {2, 4}) {
    measure<0>("m16n8k16 f16, f32 acc", w, sms, clock_khz, out, s);
    measure<1>("m16n8k8 f16, f32 acc", w, sms, clock_khz, out, s);
    measure<2>("m16n8k32 u8.s8, s32 acc", w, sms, clock_khz, out, s);
    measure<3>("m16n8k16 u8.s8, s32 acc", w, sms, clock_khz, out, s);
  }
#if defined(PIXELKIT_BENCH_WGMMA)
  const bool wgmma = major == 9;
#else
  const bool wgmma = false;
  if (major == 9) std::printf("(built without sm_90a: the wgmma rows are left out)\n");
#endif
  if (wgmma) {
    for (int g : {1, 2, 3}) {
      measure_wgmma<16, false, true, 4>(g, sms, clock_khz, out, s);
      measure_wgmma<32, false, true, 4>(g, sms, clock_khz, out, s);
      measure_wgmma<64, false, true, 2>(g, sms, clock_khz, out, s);
      measure_wgmma<16, false, false, 4>(g, sms, clock_khz, out, s);
      measure_wgmma<64, false, false, 2>(g, sms, clock_khz, out, s);
      measure_wgmma<16, true, true, 4>(g, sms, clock_khz, out, s);
      measure_wgmma<32, true, true, 4>(g, sms, clock_khz, out, s);
      measure_wgmma<64, true, true, 2>(g, sms, clock_khz, out, s);
    }
  }
  PIXELKIT_CUDA_TRY(cudaStreamDestroy(s));
  PIXELKIT_CUDA_TRY(cudaFree(out));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_mma_rate_gpu: %s\n", e.what());
  return 1;
}
