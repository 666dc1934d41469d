// Separable u8 filter on the tensor cores (mma.sync m16n8k16, fp16 operands,
// fp32 accumulation): the path for large separable kernels, where the FP32
// kernels of filter_cuda_kernels.cuh are bound by FMA issue (a 31x31
// Gaussian needs 62 FFMA per element; see docs/notes-filter-cuda.md, run 8).
//
// Each 1D pass is a product with a banded (Toeplitz) matrix of coefficients.
// For 16 outputs along the filtered axis and 8 along the other,
//   D(16x8) = sum over k-steps s of A_s(16x16) * B_s(16x8),
//   A_s[i][k] = w[16 s + k - i - shift]   (zero outside 0..n-1),
//   B_s[k][j] = input at offset 16 s + k along the filtered axis, j across it,
// so a pass costs ceil((15 + n + shift) / 16) k-steps per 16x8 outputs. The
// A fragments depend only on the kernel: each thread builds them once.
//
// Accuracy (FP32-class, not fp16-class). u8 values are exact in fp16. Each
// coefficient (scaled by a power of two so that its largest is in [0.5, 1))
// is split into hi + lo fp16 parts (22 significant bits). Pass 1 (vertical,
// on exact u8 input) forms hi*x + lo*x; its fp32 result v is split again into
// fp16 hi + lo, and pass 2 (horizontal) forms Ahi*vhi + Alo*vhi + Ahi*vlo. The
// dropped terms are ~2^-22 relative, the level of FP32 rounding: results
// agree with the reference as the FP32 kernels do.
//
// Tile: 64 pixels x 32 rows x C channels of output. Shared memory holds the
// input tile planar (one fp16 plane per channel, so interleaving costs
// nothing in the passes), the intermediate planes (hi, lo), and at the end the
// interleaved u8 output tile, which leaves in 16-byte stores.
//
// The sm_80 wrappers below (ldmatrix, mma.sync, cp.async) also serve the
// dense tensor-core kernel (filter_cuda_mma_dense.cuh) and the row-streaming
// kernel (filter_cuda_stream.cuh).
#pragma once

#include <cstdint>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "filter/filter_cuda_kernels.cuh"

namespace pixelkit::detail::cuda_filter {

namespace mma_tuning {
constexpr int kTilePx = 64;    ///< output pixels per block (along x)
constexpr int kTileRows = 32;  ///< output rows per block
constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
/// Resident blocks per SM the register cap is set for. Three (<= 80
/// registers) where the tile's shared memory allows it and nothing spills
/// (ptxas, sm_90: at most 2 k-steps per pass, i.e. sides up to 17, and up to 3
/// channels); elsewhere two (<= 128 registers; 3 k-steps need ~80 KB of
/// shared memory at 3 channels, so a third block would not fit anyway).
constexpr int min_blocks_per_sm(int channels, int ks1, int ks2) { return channels <= 3 && ks1 <= 2 && ks2 <= 2 ? 3 : 2; }
}  // namespace mma_tuning

/// Coefficients, scaled (see the header comment), and the tile's geometry.
struct MmaSepCoeffs {
  int nx, ny;
  int rx, ry;
  int ral;          ///< rx rounded up to 4: the tile starts 4-pixel aligned at px0 - ral
  float row[32];    ///< horizontal factors * 2^row_exp
  float col[32];    ///< vertical factors * 2^col_exp
  float out_scale;  ///< 2^-(row_exp + col_exp)
};

struct MmaSepParams {
  FilterArgs<std::uint8_t> a;
  MmaSepCoeffs k;
  bool vec16_dst;  ///< dst base and pitch are 16-byte aligned
};

/// k-steps of a pass of n taps whose band starts `shift` columns in.
__host__ __device__ constexpr int mma_ksteps(int n, int shift) { return (15 + n + shift + 15) / 16; }

template <int C, int KS1, int KS2>
struct MmaGeom {
  static constexpr int kTW = mma_tuning::kTilePx;
  static constexpr int kTH = mma_tuning::kTileRows;
  static constexpr int kHIn = kTH - 16 + 16 * KS1;  ///< input rows held (zero beyond TH + ny - 1)
  static constexpr int kWIn = kTW - 16 + 16 * KS2;  ///< pixels per input / intermediate row
  /// Row stride in halves: an odd number of 16-byte units, so the 8 rows of
  /// an ldmatrix 8x8 land in 8 different bank groups.
  static constexpr int kS = (kWIn / 8) % 2 == 0 ? kWIn + 8 : kWIn;
  static constexpr int kInHalves = C * kHIn * kS;
  static constexpr int kMidHalves = C * kTH * kS;
  static constexpr int kOutStride = kTW * C + 16;  ///< bytes; 16-aligned, rows 2 apart in different banks
  static constexpr int kOutBytes = kTH * kOutStride;
  static constexpr int kInBytes = (2 * kInHalves > kOutBytes ? 2 * kInHalves : kOutBytes);
  static constexpr int kSmemBytes = kInBytes + 2 * 2 * kMidHalves;
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define PIXELKIT_MMA_ENABLED 1
#else
#define PIXELKIT_MMA_ENABLED 0
#endif

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldsm_x2_trans(unsigned& r0, unsigned& r1, const void* p) {
#if PIXELKIT_MMA_ENABLED
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r0), "=r"(r1)
               : "r"(smem_addr(p))
               : "memory");
#else
  r0 = r1 = 0;
#endif
}

__device__ __forceinline__ void ldsm_x4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, const void* p) {
#if PIXELKIT_MMA_ENABLED
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(smem_addr(p))
               : "memory");
#else
  r0 = r1 = r2 = r3 = 0;
#endif
}

/// d += a * b (m16n8k16, row.col, f16 x f16 -> f32).
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if PIXELKIT_MMA_ENABLED
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  (void)a, (void)b0, (void)b1;
  d[0] = d[1] = d[2] = d[3] = 0.0f;
#endif
}

/// d += a * b (m16n8k8, row.col, f16 x f16 -> f32): a = rows 0-7 / 8-15 of
/// one 8x8 block of k, b = 8 (k) x 8 (n).
__device__ __forceinline__ void mma_1688(float (&d)[4], unsigned a0, unsigned a1, unsigned b) {
#if PIXELKIT_MMA_ENABLED
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(b));
#else
  (void)a0, (void)a1, (void)b;
  d[0] = d[1] = d[2] = d[3] = 0.0f;
#endif
}

/// d += a * b (m16n8k32, row.col, u8 x u8 -> s32, exact). Fragment layout:
/// a register r of A holds row g + 8 (r & 1), columns 4t .. 4t + 3 (+ 16
/// for r >= 2), one byte each; register r of B holds k = 4t .. 4t + 3 (+ 16
/// for r = 1) at n = g; d as m16n8k16's.
__device__ __forceinline__ void mma_16832_u8(unsigned (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if PIXELKIT_MMA_ENABLED
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  (void)a, (void)b0, (void)b1;
  d[0] = d[1] = d[2] = d[3] = 0u;
#endif
}

__device__ __forceinline__ void ldsm_x2(unsigned& r0, unsigned& r1, const void* p) {
#if PIXELKIT_MMA_ENABLED
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(smem_addr(p)) : "memory");
#else
  r0 = r1 = 0;
#endif
}

/// Two words from shared memory (address from smem_addr), as an asm load so
/// that the compiler keeps it where it stands (a plain load of data that never
/// changes may be hoisted out of the loop into registers, which is what it
/// stands in for).
__device__ __forceinline__ void lds_v2(unsigned& r0, unsigned& r1, unsigned addr) {
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr) : "memory");
}

// cp.async (sm_80 up), shared by the tensor-core and row-streaming kernels.
//
// The copies, and the streaming tensor-core kernel's word loads below, carry
// the L2 prefetch-size hint .L2::256B: a miss brings the whole 256-byte block
// around it from DRAM, so the narrow strips that neighbouring blocks read at
// about the same time arrive in fewer, longer DRAM bursts (notes, run 29;
// H100, 8K RGB, ms: dense 3x3 0.0898 -> 0.0877 and gaussian:5 0.0928 ->
// 0.0903 on the row-streaming kernel, gaussian:9 0.1061 -> 0.1045 and
// gaussian:31 0.2001 -> 0.1957 on the tensor-core one; the dense tensor-core
// kernel, 4K and 1080p within 1%; .L2::128B gained as much on the
// row-streaming kernel and less on the tensor-core one).
#define PIXELKIT_FILTER_L2_PREFETCH ".L2::256B"

/// A read-only word from global memory (ld.global.nc, as __ldg) with the L2
/// prefetch-size hint above.
__device__ __forceinline__ unsigned ldg_u32_prefetch(const unsigned* p) {
#if PIXELKIT_MMA_ENABLED
  unsigned v;
  asm("ld.global.nc" PIXELKIT_FILTER_L2_PREFETCH ".u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
#else
  return __ldg(p);
#endif
}

/// 16 bytes from global to shared memory.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
#if PIXELKIT_MMA_ENABLED
  asm volatile("cp.async.cg.shared.global" PIXELKIT_FILTER_L2_PREFETCH " [%0], [%1], 16;\n" ::"r"(smem_addr(smem)),
               "l"(gmem)
               : "memory");
#else
  *reinterpret_cast<uint4*>(smem) = *reinterpret_cast<const uint4*>(gmem);
#endif
}

/// 16 bytes to shared address `smem`, of which the first `n` (0 < n <= 16)
/// are read and the rest zero-filled.
__device__ __forceinline__ void cp_async16_clip(unsigned smem, const void* gmem, int n) {
#if PIXELKIT_MMA_ENABLED
  asm volatile("cp.async.cg.shared.global" PIXELKIT_FILTER_L2_PREFETCH " [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem),
               "r"(n)
               : "memory");
#else
  (void)smem, (void)gmem, (void)n;
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if PIXELKIT_MMA_ENABLED
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most `PENDING` of this thread's newest groups are in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
#if PIXELKIT_MMA_ENABLED
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
#endif
}

__device__ __forceinline__ unsigned half2_bits(__half2 h) { return *reinterpret_cast<unsigned*>(&h); }

/// Split x, y into fp16 hi + lo pairs (hi = x rounded to fp16, lo = the rest
/// rounded to fp16): 22 significant bits between them.
__device__ __forceinline__ void split_half2(float x, float y, unsigned& hi, unsigned& lo) {
  const __half2 h = __floats2half2_rn(x, y);
  const float2 hf = __half22float2(h);
  hi = half2_bits(h);
  lo = half2_bits(__floats2half2_rn(x - hf.x, y - hf.y));
}

/// This thread's A fragment (hi and lo) of k-step s of the Toeplitz matrix
/// A[i][k] = w[k - i - shift]. Fragment layout of m16n8k16 A (row-major):
/// register r holds rows g + 8 (r & 1), columns 2t, 2t + 1 (+ 8 for r >= 2).
__device__ __forceinline__ void toeplitz_fragment(unsigned (&hi)[4], unsigned (&lo)[4], const float* w, int n,
                                                  int s, int shift, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int i = g + 8 * (r & 1);
    const int k = 16 * s + 2 * t + 8 * (r >> 1);
    float v[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int idx = k + e - i - shift;
      v[e] = idx >= 0 && idx < n ? w[idx] : 0.0f;
    }
    split_half2(v[0], v[1], hi[r], lo[r]);
  }
}

/// The bytes of w that SEL picks (PRMT selector, 0x4 in the high nibbles) as
/// an exact half2: PRMT puts each byte under 0x64 (fp16 1024 + b), one HSUB2
/// removes the 1024s. SUB: each byte b under a zero byte instead, which is
/// the fp16 subnormal b * 2^-24, exactly, in the PRMT alone (the kernel's
/// factors then carry the 2^24: see MmaStreamCoeffs).
template <bool SUB = false>
__device__ __forceinline__ unsigned word_to_half2(unsigned w, unsigned sel) {
  if constexpr (SUB) {
    return __byte_perm(w, 0u, sel);
  } else {
    unsigned bits = __byte_perm(w, 0x64646464u, sel);
    const __half2 h = __hsub2(*reinterpret_cast<__half2*>(&bits), __half2half2(__ushort_as_half(0x6400)));
    return half2_bits(h);
  }
}

/// Bytes J1 and J2 of the C words w[] as the half2 (b[J1], b[J2]).
template <int J1, int J2, int C, bool SUB = false>
__device__ __forceinline__ unsigned bytes_to_half2(const unsigned (&w)[C]) {
  if constexpr (J1 / 4 == J2 / 4) {
    return word_to_half2<SUB>(w[J1 / 4], static_cast<unsigned>(0x4040 | (J1 % 4) | ((J2 % 4) << 8)));
  } else {
    const unsigned t = __byte_perm(w[J1 / 4], w[J2 / 4], static_cast<unsigned>((J1 % 4) | ((4 + J2 % 4) << 8)));
    return word_to_half2<SUB>(t, 0x4240u);
  }
}

/// Four pixels of channel CH from a 4-pixel unit of C interleaved words.
template <int C, int CH, bool SUB = false>
__device__ __forceinline__ uint2 unit_channel(const unsigned (&w)[C]) {
  return make_uint2(bytes_to_half2<0 * C + CH, 1 * C + CH, C, SUB>(w), bytes_to_half2<2 * C + CH, 3 * C + CH, C, SUB>(w));
}

template <int C, int I = 0, bool SUB = false>
__device__ __forceinline__ void store_unit(__half* in, int plane, int off, const unsigned (&w)[C]) {
  if constexpr (I < C) {
    *reinterpret_cast<uint2*>(in + I * plane + off) = unit_channel<C, I, SUB>(w);
    store_unit<C, I + 1, SUB>(in, plane, off, w);
  }
}

__device__ __forceinline__ unsigned float_pair_to_half2(float a, float b) { return half2_bits(__floats2half2_rn(a, b)); }

/// Global loads of one tile's interior input rows, held in registers so that
/// they stay in flight while the previous tile is computed. Warp w loads rows
/// w, w + 8, ...; lane q loads 4-pixel unit q (C words) of each.
template <int C, int ROWS>
struct MmaTileLoads {
  unsigned w[ROWS][C];

  __device__ __forceinline__ void issue(const FilterArgs<std::uint8_t>& a, int xs, int ys, int h_valid, int units,
                                        int warp, int lane) {
#pragma unroll
    for (int j = 0; j < ROWS; ++j) {
      const int r = warp + mma_tuning::kWarps * j;
      if (r < h_valid && lane < units) {
        const unsigned* src = reinterpret_cast<const unsigned*>(a.src.row(ys + r) + (xs + 4 * lane) * C);
#pragma unroll
        for (int i = 0; i < C; ++i) w[j][i] = __ldg(src + i);
      }
    }
  }
};

/// The separable filter (see the header comment). A persistent grid: each
/// block builds the Toeplitz fragments once, then walks tiles of 64 pixels x
/// 32 rows (blockIdx.x, + gridDim.x, ...), the next tile's interior rows
/// loading into registers while the current one is computed.
/// KS1 / KS2: k-steps of the vertical / horizontal pass (1..3).
template <int C, int KS1, int KS2>
__global__ void __launch_bounds__(mma_tuning::kThreads, mma_tuning::min_blocks_per_sm(C, KS1, KS2))
    separable_mma_kernel(const __grid_constant__ MmaSepParams p) {
#if PIXELKIT_MMA_ENABLED
  using G = MmaGeom<C, KS1, KS2>;
  constexpr int TW = G::kTW, TH = G::kTH, S = G::kS;
  constexpr int kPlane = G::kHIn * S;
  constexpr int kMidPlane = TH * S;
  constexpr int kUnitsRow = G::kWIn / 4;
  constexpr int kLoadRows = G::kHIn / mma_tuning::kWarps;
  static_assert(kUnitsRow <= 32, "one warp per tile row");
  static_assert(G::kHIn % mma_tuning::kWarps == 0, "rows spread evenly over the warps");
  extern __shared__ float4 smem4[];
  __half* const in = reinterpret_cast<__half*>(smem4);
  std::uint8_t* const out_s = reinterpret_cast<std::uint8_t*>(smem4);  // reuses `in` after pass 1
  __half* const mid_hi = reinterpret_cast<__half*>(reinterpret_cast<char*>(smem4) + G::kInBytes);
  __half* const mid_lo = mid_hi + G::kMidHalves;

  const FilterArgs<std::uint8_t>& a = p.a;
  const MmaSepCoeffs& k = p.k;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int shift = k.ral - k.rx;
  const int h_valid = TH + k.ny - 1;                  // input rows that matter
  const int units = (TW + k.nx - 1 + shift + 3) / 4;  // 4-pixel units per input row that matter
  const int width = a.src.width, height = a.src.height;
  const int tiles_x = (width + TW - 1) / TW;
  const int n_tiles = tiles_x * ((a.y_end - a.y_begin + TH - 1) / TH);
  auto origin = [&](int tile, int& px0, int& y0) {
    const int ty = tile / tiles_x;
    px0 = (tile - ty * tiles_x) * TW;
    y0 = a.y_begin + ty * TH;
  };
  auto interior = [&](int px0, int y0) {
    const int xs = px0 - k.ral, ys = y0 - k.ry;
    return a.vec_src && xs >= 0 && xs + 4 * units <= width && ys >= 0 && ys + h_valid <= height;
  };

  // The A fragments of both passes, once per block.
  unsigned a1h[KS1][4], a1l[KS1][4], a2h[KS2][4], a2l[KS2][4];
#pragma unroll
  for (int s = 0; s < KS1; ++s) toeplitz_fragment(a1h[s], a1l[s], k.col, k.ny, s, 0, lane);
#pragma unroll
  for (int s = 0; s < KS2; ++s) toeplitz_fragment(a2h[s], a2l[s], k.row, k.nx, s, shift, lane);

  pdl_begin();  // no global memory access before this line
  MmaTileLoads<C, kLoadRows> pre;
  if (blockIdx.x < n_tiles) {
    int px0, y0;
    origin(blockIdx.x, px0, y0);
    if (interior(px0, y0)) pre.issue(a, px0 - k.ral, y0 - k.ry, h_valid, units, warp, lane);
  }

  for (int tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
    int px0, y0;
    origin(tile, px0, y0);
    const int xs = px0 - k.ral;  // image pixel of tile column 0
    const int ys = y0 - k.ry;    // image row of tile row 0

    // ---- 1. input tile -> planar fp16 (zeros where no coefficient reaches) ----
    if (lane < kUnitsRow) {
      if (interior(px0, y0)) {
#pragma unroll
        for (int j = 0; j < kLoadRows; ++j) {
          const int r = warp + mma_tuning::kWarps * j;
          const int off = r * S + 4 * lane;
          if (r < h_valid && lane < units) {
            store_unit<C>(in, kPlane, off, pre.w[j]);
          } else {
#pragma unroll
            for (int c = 0; c < C; ++c) *reinterpret_cast<uint2*>(in + c * kPlane + off) = make_uint2(0u, 0u);
          }
        }
      } else {
        for (int r = warp; r < G::kHIn; r += mma_tuning::kWarps) {
          const int off = r * S + 4 * lane;
          if (r >= h_valid || lane >= units) {
#pragma unroll
            for (int c = 0; c < C; ++c) *reinterpret_cast<uint2*>(in + c * kPlane + off) = make_uint2(0u, 0u);
            continue;
          }
          const int sy = border_index(ys + r, height, a.mode);
          float v[4][C];
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int sx = sy < 0 ? -1 : border_index(xs + 4 * lane + j, width, a.mode);
            const std::uint8_t* px = sx < 0 ? nullptr : a.src.row(sy) + sx * C;
#pragma unroll
            for (int c = 0; c < C; ++c) v[j][c] = px ? static_cast<float>(px[c]) : a.border_value;
          }
#pragma unroll
          for (int c = 0; c < C; ++c)
            *reinterpret_cast<uint2*>(in + c * kPlane + off) =
                make_uint2(float_pair_to_half2(v[0][c], v[1][c]), float_pair_to_half2(v[2][c], v[3][c]));
        }
      }
    }
    // The next tile's loads fly while this one is computed.
    {
      const int next = tile + gridDim.x;
      if (next < n_tiles) {
        int nx0, ny0;
        origin(next, nx0, ny0);
        if (interior(nx0, ny0)) pre.issue(a, nx0 - k.ral, ny0 - k.ry, h_valid, units, warp, lane);
      }
    }
    __syncthreads();

    // ---- 2. vertical pass: mid[c][i][j] = sum_ky col[ky] * in[c][i + ky][j] ----
    {
      constexpr int kMB = TH / 16, kNG = G::kWIn / 8;
      constexpr int kTiles = C * kMB * kNG;
#pragma unroll 2
      for (int f = warp; f < kTiles; f += mma_tuning::kWarps) {
        const int c = f / (kMB * kNG);
        const int rem = f - c * (kMB * kNG);
        const int mb = rem / kNG, ng = rem - mb * kNG;
        const __half* base = in + c * kPlane + (16 * mb + (lane & 15)) * S + 8 * ng;
        float dh[4] = {0.0f, 0.0f, 0.0f, 0.0f}, dl[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int s = 0; s < KS1; ++s) {
          unsigned b0, b1;
          ldsm_x2_trans(b0, b1, base + 16 * s * S);
          mma_16816(dh, a1h[s], b0, b1);
          mma_16816(dl, a1l[s], b0, b1);
        }
        const int o = c * kMidPlane + (16 * mb + g) * S + 8 * ng + 2 * t;
        unsigned hi, lo;
        split_half2(dh[0] + dl[0], dh[1] + dl[1], hi, lo);
        *reinterpret_cast<unsigned*>(mid_hi + o) = hi;
        *reinterpret_cast<unsigned*>(mid_lo + o) = lo;
        split_half2(dh[2] + dl[2], dh[3] + dl[3], hi, lo);
        *reinterpret_cast<unsigned*>(mid_hi + o + 8 * S) = hi;
        *reinterpret_cast<unsigned*>(mid_lo + o + 8 * S) = lo;
      }
    }
    __syncthreads();

    // ---- 3. horizontal pass: out[c][n][i] = sum_kx row[kx] * mid[c][n][i + shift + kx] ----
    {
      constexpr int kMB = TW / 16, kNG = TH / 8;
      constexpr int kTiles = C * kMB * kNG;
      const __half* mid_lane = (lane < 16 ? mid_hi : mid_lo) + (lane & 7) * S + 8 * ((lane >> 3) & 1);
#pragma unroll 2
      for (int f = warp; f < kTiles; f += mma_tuning::kWarps) {
        const int c = f / (kMB * kNG);
        const int rem = f - c * (kMB * kNG);
        const int mb = rem / kNG, ng = rem - mb * kNG;
        const __half* base = mid_lane + c * kMidPlane + 8 * ng * S + 16 * mb;
        float d1[4] = {0.0f, 0.0f, 0.0f, 0.0f}, d2[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int s = 0; s < KS2; ++s) {
          unsigned bh0, bh1, bl0, bl1;
          ldsm_x4(bh0, bh1, bl0, bl1, base + 16 * s);
          mma_16816(d1, a2h[s], bh0, bh1);
          mma_16816(d2, a2l[s], bh0, bh1);
          mma_16816(d2, a2h[s], bl0, bl1);
        }
        // d[0]: (px g, row 2t), d[1]: (px g, row 2t+1), d[2], d[3]: px g + 8.
        const int px = 16 * mb + g, row = 8 * ng + 2 * t;
        std::uint8_t* o = out_s + row * G::kOutStride + px * C + c;
        o[0] = static_cast<std::uint8_t>(float_to_u8((d1[0] + d2[0]) * k.out_scale));
        o[G::kOutStride] = static_cast<std::uint8_t>(float_to_u8((d1[1] + d2[1]) * k.out_scale));
        o[8 * C] = static_cast<std::uint8_t>(float_to_u8((d1[2] + d2[2]) * k.out_scale));
        o[G::kOutStride + 8 * C] = static_cast<std::uint8_t>(float_to_u8((d1[3] + d2[3]) * k.out_scale));
      }
    }
    __syncthreads();

    // ---- 4. output tile -> global ----
    constexpr int kRowBytes = TW * C;
    const int e0 = px0 * C;
    const int wc = width * C;
    // Rows past y_end are left out row by row: 16-byte stores need whole
    // columns only (as in the dense tensor-core kernel; notes, run 40).
    const int rows_out = min(TH, a.y_end - y0);
    if (e0 + kRowBytes <= wc && p.vec16_dst) {
      constexpr int kVecRow = kRowBytes / 16;
      for (int u = threadIdx.x; u < rows_out * kVecRow; u += mma_tuning::kThreads) {
        const int r = u / kVecRow, q = u - r * kVecRow;
        *reinterpret_cast<uint4*>(a.dst.row(y0 + r) + e0 + 16 * q) =
            *reinterpret_cast<const uint4*>(out_s + r * G::kOutStride + 16 * q);
      }
    } else {
      for (int u = threadIdx.x; u < rows_out * kRowBytes; u += mma_tuning::kThreads) {
        const int r = u / kRowBytes, e = u - r * kRowBytes;
        if (e0 + e < wc) a.dst.row(y0 + r)[e0 + e] = out_s[r * G::kOutStride + e];
      }
    }
    __syncthreads();  // out_s (= in) is read before the next tile overwrites it
  }
#else
  (void)p;
#endif
}

}  // namespace pixelkit::detail::cuda_filter
