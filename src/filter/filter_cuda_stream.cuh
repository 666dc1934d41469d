// Row-streaming u8 filter for 3x3 kernels: stream_kernel<C, SEP>, dense
// (9 products per output) or separable (3 + 3), FP32 arithmetic; for
// separable 3x3 and 5x5 kernels of whole-number factors over 2^8 at most
// (gaussian:3 and 5, binomials): stream_kernel<C, true, BAND, K, true>, exact
// integer sums on packed 16-bit lanes (products5 below; notes, runs 26 and
// 37); and for dense 3x3 kernels whose fp16 error bound proves every output
// within 1 grey level (smoothing kernels; stream_half_error_bound):
// stream_kernel<C, false, BAND, 3, false, true>, products and sums on packed
// fp16 pairs, half the FP32 instance's multiply-adds (products_h below;
// notes, run 43: 4K RGB 0.0286 -> 0.0243 ms).
//
// Why. The tiled kernels (filter_cuda_kernels.cuh, filter_cuda_mma_dense.cuh)
// stage a 2D tile with its apron in shared memory, synchronise the block and
// then compute; at 3x3 they sit near 1.9x the memory floor at 8K
// (docs/notes-filter-cuda.md, runs 4 and 9). Here nothing waits on a block
// barrier: each warp walks down its own strip of the image one row at a time,
// the rows it needs next already in flight, and reads every input row once.
//
// Work. A warp owns a strip 512 bytes wide (32 lanes x 16 interleaved u8
// elements) and output rows [y0, y1) of it (a segment). It reads input rows
// y0 - 1 .. y1 once each, in order:
//   1. Load: row t + kRing - 1 goes by cp.async (16 bytes a lane, plus the
//      strip's 16-byte left and right halo from lanes 0 and 1) into one of
//      kRing row slots of the warp's shared ring. Copies are clipped to the
//      row (cp.async's src-size zero-fills the rest), so nothing beyond the
//      image is read.
//   2. Borders: rows above and below map through border_index (one uniform
//      test per row; a constant row is filled with the value); only the
//      warps whose strip touches the left or right edge patch the R bytes
//      beyond it, so interior strips pay nothing. The patch copies the bytes
//      it maps to from the slot where they already are (replicate, reflect,
//      reflect101), from global memory only where they are not (wrap): a
//      load on every row that the warp waits for (notes, run 27).
//   3. Window: each lane reads its 16 bytes and 16 each side from the slot
//      (three conflict-free 16-byte shared loads) and converts the 16 + 2R
//      it needs to floats (PRMT + FADD).
//   4. Products: the row feeds the 3 output rows it touches. Dense: output
//      row o = t - ky gets sum_kx c[ky][kx] * in[t][x + (kx - 1) C]. The 3
//      accumulator rows rotate statically (the row loop is unrolled 3 times),
//      ky = 0 starts an output row and ky = 2 finishes it, so every sum is
//      taken in the reference's row-major order. Separable: the row's
//      horizontal pass first, then one product per output row it touches.
//   5. Store: a finished row is rounded, saturated and written as one
//      16-byte store per lane.
//
// Grid. One segment per warp, in one of two layouts:
// - large images (at least kBandMinWaves waves of 16-row segments, 8K RGB;
//   1.5 waves for the 5x5 integer instances; on GPUs with fast DRAM such as
//   the H200 the 3x3 instances from 1.65 waves, or 0.9 to 1: 4K and 5K RGB;
//   bands_by_rule):
//   segments of kBandSegRows = 16 rows, strip fastest, several waves of
//   warps. The warps in flight then cover a narrow band of rows that moves
//   down the image; DRAM serves that far better than one wave spread over
//   the whole image (notes, run 15: 8K dense 3x3 0.116 -> 0.098 ms). This
//   layout runs its own instance (BAND), in which the dense kernels'
//   interior segments skip every border test in one short loop (run 24:
//   8K dense 3x3 0.099 -> 0.092 ms);
// - otherwise as many warps as fit on the GPU at once (the host chooses the
//   segment height so that strips x segments is one wave), consecutive
//   warps on consecutive segments of one strip: every warp's pipeline runs
//   from its first row to its last without a restart.
//
// Coefficients sit in the parameter block (`__grid_constant__`, a constant
// bank), so every FFMA reads its coefficient from there.
//
// Measured (H100, RGB, notes run 10): 8K dense 3x3 0.1147 ms and gaussian:3
// 0.1141 against 0.1229 / 0.1222 for the tensor-core kernel, 4K 8-11% faster
// than the tiled kernel, 720p a tie. A copy through the same pipeline (no
// products) took 1.47x the floor at 8K in one wave, and more rows in flight
// made it slower; run 15's bands took 8K to 0.098 / 0.089 ms (1.50x and
// 1.36x the floor), run 24's interior path dense 3x3 to 0.092 (1.40x), run
// 27's edge patch from the slot to 0.090 / 0.087 (1.37x and 1.32x; 4K
// 0.033 -> 0.030 / 0.032 -> 0.028).
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "filter/filter_cuda_kernels.cuh"
#include "filter/filter_cuda_stream.hpp"
#include "filter/filter_cuda_mma.cuh"  // the cp.async wrappers (sm_80 up), smem_addr

namespace pixelkit::detail::cuda_filter {

namespace stream_tuning {
constexpr int kWarps = 4;  ///< warps per block (independent: no block barrier)
constexpr int kThreads = 32 * kWarps;
constexpr int kLaneBytes = 16;                  ///< elements a lane owns across a row
constexpr int kStripBytes = 32 * kLaneBytes;    ///< elements a warp owns across a row
constexpr int kHaloBytes = 16;                  ///< each side; >= R = C, and 16 keeps copies aligned
constexpr int kSlotBytes = kStripBytes + 2 * kHaloBytes;
/// Row slots in a warp's ring: kRing - 1 rows are in flight while one is
/// used. Fewer rows in flight were faster (notes, run 10; 8K dense 3x3, ms:
/// 16 slots 0.1229, 8 slots 0.1174-0.1178, 4 slots 0.1142; 4K 0.0352 with 8,
/// 0.0322 with 4; 1080p equal within noise).
constexpr int kRing = 4;
constexpr int kSmemBytes = kWarps * kRing * kSlotBytes;
/// Shortest segment (rows) the host plans, so that the two apron rows stay a
/// small part of a segment's reads (chosen, not measured: 1080p RGB plans 5
/// rows on an H100 anyway).
constexpr int kMinSegRows = 4;
/// Input rows of a warp's segment that it prefetches into L2 before
/// pdl_begin in the one-wave layout (StreamParams::prefetch_rows): those the
/// ring's first copies load. More did not help at 720p and 1080p and made 4K
/// slower (notes, run 37: H100, RGB, ms, none / 3 / 5 / 8 / all rows: 1080p
/// gaussian:3 0.0100 / 0.0093 / 0.0094 / 0.0094 / 0.0094, 4K 0.0269 / 0.0265
/// / 0.0265 / 0.0266 / 0.0293).
constexpr int kPrefetchRows = kRing - 1;
/// Large images are walked in segments of kBandSegRows rows, strip fastest,
/// where that gives at least kBandMinWaves waves of warps: the warps in
/// flight then cover a narrow band of rows, which DRAM serves faster than
/// one wave spread over the whole image (notes, run 15; H100, 8K RGB, ms:
/// dense 3x3 0.1164 -> 0.1011, gaussian:3 0.1149 -> 0.0924; segments of 24,
/// 32, 48 rows: 0.1026, 0.1056, 0.1123 for dense 3x3). At 4K the 16-row
/// segments make 1.2 waves, whose tail loses (0.0333 -> 0.0371).
constexpr int kBandSegRows = 16;
constexpr int kBandMinWaves = 3;
/// The 5x5 integer instances run only in bands (in one wave the tensor-core
/// INT kernel is faster), from 1.5 waves of 16-row segments rather than 3:
/// the tensor-core kernel they displace is weakest at 1 and 4 channels (notes,
/// run 30; H100, gaussian:5, ms, tensor cores / bands of 16 rows: 1.53 waves,
/// 8K one channel 0.0488 / 0.0410 and 4K four channels 0.0558 / 0.0399; 1.18
/// waves, 4K RGB 0.0325 / 0.0400; 0.41, 4K one channel 0.0172 / 0.0210).
/// Twice the waves, so that 1.5 stays whole.
constexpr int kBandMinHalfWaves5 = 3;
/// On a GPU whose DRAM is fast for its SM count (`fast_memory`: a peak of at
/// least kStreamFastMemoryGBpsPerSM a SM, filter_cuda_stream.hpp) the 3x3
/// instances take the bands from fewer waves: from kBandMinCentiWavesFast /
/// 100 waves, and where the 16-row segments fill between 0.9 and 1 wave.
/// Waves are counted at the band instance's own occupancy (its registers
/// differ from the one-wave instance's: fp16 RGB 80 against 83, 6 blocks a
/// SM against 5). Notes, run 45 (H200, RGB unless marked, ms, one wave /
/// bands): fp16 dense 3x3 at 0.98 waves (4K) 0.0245 / 0.0232, 1.10 (4K four
/// channels) 0.0283 / 0.0318, 1.28 (8K one channel) 0.0279 / 0.0312, 1.70 (5K)
/// 0.0384 / 0.0345, 1.95 (5K four channels) 0.0477 / 0.0422; FP32 at 1.18
/// (4K) 0.0285 / 0.0332, 1.53 +6%, 2.05 a tie, 2.73 -7%; the integer
/// gaussian:3 at 0.98 (4K) 0.0215 / 0.0219, 1.70 and 1.95 -1 to -2%. On the
/// H100 the fp16 bands lost at 4K (run 43: 0.0243 / 0.0266), so its rule
/// stays kBandMinWaves.
constexpr int kBandMinCentiWavesFast = 165;
/// On fast memory the 5x5 instances of 1 and 4 channels (int5sym for
/// gaussian:5) take the bands from kBandMinCentiWaves5Fast / 100 waves: the
/// tensor-core kernel they displace is weakest there. Notes, run 46 (H200,
/// gaussian:5, ms, tensor cores / bands): one channel 0.41 waves 0.0148 /
/// 0.0187, 0.55 0.0214 / 0.0204, 0.68 0.0239 / 0.0202, 0.89 0.0295 / 0.0218,
/// 0.92 0.0315 / 0.0223, 1.23 0.0407 / 0.0303; four channels 0.58 0.0191 /
/// 0.0198, 0.68 0.0208 / 0.0197, 0.89 0.0311 / 0.0204, 1.07 0.0311 / 0.0272,
/// 1.23 0.0350 / 0.0295. Three channels keep 1.5 waves (0.66 0.0181 /
/// 0.0211, 0.81 0.0206 / 0.0211, 0.97 0.0227 / 0.0220, 1.18 0.0265 /
/// 0.0300, 1.62 0.0360 / 0.0331).
constexpr int kBandMinCentiWaves5Fast = 65;
/// Whether the rule walks an image of `segs16` 16-row segments in bands, for
/// a kernel of this side on `channels` channels, with `wave` warps resident
/// at once.
constexpr bool bands_by_rule(int side, long long segs16, long long wave, bool fast_memory = false, int channels = 3) {
  if (side == 5 && fast_memory && channels != 3) return 100 * segs16 >= kBandMinCentiWaves5Fast * wave;
  if (side == 5) return 2 * segs16 >= kBandMinHalfWaves5 * wave;
  if (!fast_memory) return segs16 >= kBandMinWaves * wave;
  return 100 * segs16 >= kBandMinCentiWavesFast * wave || (10 * segs16 >= 9 * wave && segs16 <= wave);
}
/// __launch_bounds__ minimum blocks per SM: 5 (96 registers, 20 warps).
constexpr int kMinBlocksPerSM = 5;
}  // namespace stream_tuning

/// Packed fp16 pairs held in 32-bit words (the fp16 instance, products_h).
__device__ __forceinline__ unsigned hfma2_u32(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
/// max(0, a * b + c) on both halves (sm_80 up).
__device__ __forceinline__ unsigned hfma2_relu_u32(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("fma.rn.relu.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ unsigned hmul2_u32(unsigned a, unsigned b) {
  unsigned d;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
/// min(a, b) on both halves (sm_80 up).
__device__ __forceinline__ unsigned hmin2_u32(unsigned a, unsigned b) {
  unsigned d;
  asm("min.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

/// A lane's 16 output bytes q at d: one 16-byte store, or the first n bytes
/// one at a time where the row ends inside the chunk (n < 16).
__device__ __forceinline__ void store_chunk16(std::uint8_t* d, const uint4 q, int n) {
  if (n == 16) {
    *reinterpret_cast<uint4*>(d) = q;
  } else {
#pragma unroll
    for (int j = 0; j < 16; ++j)
      if (j < n) d[j] = static_cast<std::uint8_t>((j < 4 ? q.x : j < 8 ? q.y : j < 12 ? q.z : q.w) >> (8 * (j % 4)));
  }
}

struct StreamParams {
  FilterArgs<std::uint8_t> a;
  float c[9];            ///< dense: 3 x 3, row-major
  float row[3];          ///< separable: horizontal factors
  float col[3];          ///< separable: vertical factors
  int strips;            ///< strips across a row: ceil(width * C / kStripBytes)
  int seg_rows;          ///< output rows per warp
  int segs;              ///< segments down the rows [y_begin, y_end)
  unsigned border_word;  ///< constant border value (an integer 0..255) in every byte
  bool strip_major;      ///< warp gw takes strip gw % strips (else segment gw % segs)
  /// The one-wave layout: each warp prefetches the first prefetch_rows input
  /// rows of its segment into L2 before pdl_begin (prefetch_rows_l2;
  /// PIXELKIT_CUDA_FILTER_PREFETCH); 0: none.
  int prefetch_rows;
  /// The integer instances (IQ: 3x3 and 5x5): the kernel is exactly
  /// iq[y] * ip[x] / 2^8 with whole numbers, sum ip * sum iq <= 2^8
  /// (make_stream_coeffs), so every sum times 255 fits 16 bits. (3x3 uses
  /// the first 3 of each.)
  int ip[5];
  int iq[5];
  /// The fp16 instance (HF: dense 3x3): c[] times 2^14 rounded to fp16, each
  /// in both halves of a word (make_stream_coeffs; taken only where
  /// stream_half_error_bound allows).
  unsigned hc[9];
  /// The same for dense 5x5 (stream_regs_kernel<C, 5, NR>; taken only where
  /// stream_regs5_half_error_bound allows).
  unsigned hc5[25];
};

/// BAND: the instance for the band layout (strip_major), with the interior
/// path for dense kernels below; a separate instance, so that the code of the
/// one-wave layout's walk stays as it was (the path, in the same kernel, made
/// 4K and 1080p 3-6% slower).
///
/// K: the kernel's side, 3 or 5. IQ (SEP only; always for K = 5):
/// whole-number factors on packed 16-bit lanes, two elements a register
/// (products5 below); HF (dense 3x3 only): products and sums in fp16, two
/// elements a register (products_h below); else FP32 arithmetic, dense or
/// separable.
///
/// SYM (5x5 whole numbers only): symmetric factors whose outer ones are 1
/// (gaussian:5, any [1 a b a 1] pair; make_stream_coeffs), summed as
/// (t0 + t4) + a (t1 + t3) + b t2 each way: 2 adds and 2 multiply-adds a
/// pair and pass where the general instance takes 5 multiply-adds, and the
/// taps at an odd distance added before they are realigned (products5).
template <int C, bool SEP, bool BAND = false, int K = 3, bool IQ = (K == 5), bool HF = false, bool SYM = false>
__global__ void __launch_bounds__(stream_tuning::kThreads, stream_tuning::kMinBlocksPerSM)
    stream_kernel(const __grid_constant__ StreamParams p) {
#if PIXELKIT_MMA_ENABLED
  using namespace stream_tuning;
  static_assert((K == 3 || (K == 5 && IQ)) && (!IQ || SEP) && (!HF || (K == 3 && !SEP && !IQ)) &&
                    (!SYM || (K == 5 && IQ)),
                "3x3 dense or separable, 3x3 and 5x5 separable in whole numbers (5x5 also symmetric), 3x3 dense "
                "in fp16");
  constexpr int KW = K, KH = K, RY = K / 2;
  constexpr int R = RY * C;  // horizontal reach in bytes
  constexpr int LB = kLaneBytes, HB = kHaloBytes, SB = kStripBytes, SLOT = kSlotBytes;
  constexpr int NW = (LB + 2 * HB) / 4;  // window words
  constexpr int NF = LB + 2 * R;         // window elements used
  static_assert(R <= HB && SLOT % 16 == 0 && HB % 16 == 0, "halo geometry");
  static_assert((kRing & (kRing - 1)) == 0, "the ring index is a mask");

  extern __shared__ uint4 stream_smem[];
  const FilterArgs<std::uint8_t>& a = p.a;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  std::uint8_t* const ring = reinterpret_cast<std::uint8_t*>(stream_smem) + warp * (kRing * SLOT);

  const int gw = blockIdx.x * kWarps + warp;
  int strip, seg;
  if (p.strip_major) {
    seg = gw / p.strips;
    strip = gw - seg * p.strips;
  } else {
    strip = gw / p.segs;
    seg = gw - strip * p.segs;
  }
  const int y0 = a.y_begin + seg * p.seg_rows;
  if (p.prefetch_rows > 0 && strip < p.strips && y0 < a.y_end)
    prefetch_rows_l2(a.src, y0 - RY, min(min(y0 + p.seg_rows, a.y_end) + RY, y0 - RY + p.prefetch_rows), strip * SB - R,
                     (strip + 1) * SB + R, lane, 32);
  pdl_begin();  // no global memory access before this line
  if (strip >= p.strips || y0 >= a.y_end) return;  // whole warp: nothing below uses a block barrier
  const int ny = min(p.seg_rows, a.y_end - y0);
  const int nin = ny + KH - 1;
  const int width = a.src.width, height = a.src.height;
  const int rb = width * C;  // row bytes
  const int x0 = strip * SB;
  const int x = x0 + LB * lane;
  const int n_chunk = min(max(rb - x, 0), LB);
  const int n_right = min(max(rb - (x0 + SB), 0), HB);
  const bool edge_strip = x0 == 0 || rb < x0 + SB + R;  // warp-uniform
  // Row bytes [in_lo, in_hi) are in a row's slot once its copies landed
  // (the left halo, the chunks and the right halo, clipped to the row).
  const int in_lo = x0 > 0 ? x0 - HB : 0, in_hi = min(rb, x0 + SB + HB);
  const std::uint8_t border_byte = static_cast<std::uint8_t>(p.border_word & 0xffu);

  // Per-lane copy plan, fixed for the segment: the lane's chunk, and for
  // lanes 0 and 1 the strip's left and right halo (clipped to the row).
  const int n_halo = lane == 0 ? (x0 > 0 ? HB : 0) : lane == 1 ? n_right : 0;  // lanes 0, 1
  const std::uint8_t* const src_chunk = a.src.data + x;
  const std::uint8_t* const src_halo = a.src.data + (lane == 0 ? x0 - HB : x0 + SB);
  const unsigned ring_s = smem_addr(ring);
  const unsigned d_chunk = HB + LB * lane;
  const unsigned d_halo = lane == 0 ? 0u : static_cast<unsigned>(HB + SB);
  std::uint8_t* const dst_lane = a.dst.data + x;

  // Source row of input row t (-1: a constant-border row).
  auto source_row = [&](int t) {
    const int iy = y0 - RY + t;
    return static_cast<unsigned>(iy) < static_cast<unsigned>(height) ? iy : border_index(iy, height, a.mode);
  };
  auto slot = [&](int t) { return ring + (t & (kRing - 1)) * SLOT; };
  auto issue = [&](int t) {
    if (t < nin) {
      const int sy = source_row(t);
      if (sy >= 0) {
        const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(sy) * a.src.pitch;
        const unsigned s = ring_s + static_cast<unsigned>((t & (kRing - 1)) * SLOT);
        if (n_chunk > 0) cp_async16_clip(s + d_chunk, src_chunk + off, n_chunk);
        if (n_halo > 0) cp_async16_clip(s + d_halo, src_halo + off, n_halo);
      }
    }
    cp_async_commit();  // one group per row, empty or not, keeps the wait count fixed
  };

  // This lane's window words of a row slot: its 16 bytes and 16 each side
  // (three conflict-free 16-byte shared loads).
  auto load_window = [&](const std::uint8_t* s, unsigned(&w)[NW]) {
    const uint4* q = reinterpret_cast<const uint4*>(s + LB * lane);
#pragma unroll
    for (int i = 0; i < NW / 4; ++i) {
      const uint4 v = q[i];
      w[4 * i] = v.x;
      w[4 * i + 1] = v.y;
      w[4 * i + 2] = v.z;
      w[4 * i + 3] = v.w;
    }
  };

  // Row t's window (after its copies landed and the borders were patched),
  // then the copy of row t + kRing - 1 into the slot row t - 1 used.
  auto window = [&](int t, unsigned (&w)[NW]) {
    cp_async_wait<kRing - 2>();
    __syncwarp();
    std::uint8_t* s = slot(t);
    const int sy = source_row(t);
    if (sy < 0) {  // constant-border row
      const unsigned v = p.border_word;
      unsigned* const c = reinterpret_cast<unsigned*>(s + HB + LB * lane);
#pragma unroll
      for (int i = 0; i < LB / 4; ++i) c[i] = v;
      if (lane < HB / 4) {
        reinterpret_cast<unsigned*>(s)[lane] = v;
        reinterpret_cast<unsigned*>(s + HB + SB)[lane] = v;
      }
      __syncwarp();
    } else if (edge_strip) {
      if (lane < R) {
        // A source byte from the slot where this row's copies put it (replicate,
        // reflect and reflect101 take pixels next to the edge), else from the
        // row in global memory (wrap, or images narrower than the reach): a
        // load the warp would wait for on every row.
        const std::uint8_t* const row = a.src.row(sy);
        auto source = [&](int b) { return b >= in_lo && b < in_hi ? s[HB + b - x0] : row[b]; };
        if (x0 == 0) {  // element lane - R, left of the image
          const int e = lane - R;
          const int px = (e + C * 16) / C - 16;  // floor(e / C) for e >= -16
          const int sx = detail::border_index_near(px, width, a.mode);
          s[HB + e] = sx < 0 ? border_byte : source(sx * C + (e - px * C));
        }
        const int e = rb + lane;  // right of the image
        if (e < x0 + SB + HB) {
          const int sx = detail::border_index_near(width + lane / C, width, a.mode);
          s[HB + e - x0] = sx < 0 ? border_byte : source(sx * C + lane % C);
        }
      }
      __syncwarp();
    }
    load_window(s, w);
    issue(t + kRing - 1);
  };

  // A finished row's 16 values, rounded and saturated, as 16 bytes.
  auto pack16 = [](const float(&v)[LB]) {
    unsigned q[LB / 4];
#pragma unroll
    for (int k = 0; k < LB / 4; ++k) {
      const unsigned lo = __byte_perm(float_to_u8(v[4 * k]), float_to_u8(v[4 * k + 1]), 0x0040u);
      const unsigned hi = __byte_perm(float_to_u8(v[4 * k + 2]), float_to_u8(v[4 * k + 3]), 0x0040u);
      q[k] = __byte_perm(lo, hi, 0x5410u);
    }
    return make_uint4(q[0], q[1], q[2], q[3]);
  };
  auto store = [&](int y, const uint4 q) {
    store_chunk16(dst_lane + static_cast<std::ptrdiff_t>(y) * a.dst.pitch, q, n_chunk);
  };

  [[maybe_unused]] float acc[IQ || HF ? 1 : KH][LB];

  // Input row t's products, from its window words w: the row feeds output
  // rows o = t - ky for which valid(ky) holds; put(v) gets a finished row.
  // S = t mod KH, so the accumulator row of output o = t - ky is
  // (S - ky) mod KH at compile time.
  auto products = [&](auto s_const, const unsigned (&w)[NW], auto valid, auto put) {
    constexpr int S = decltype(s_const)::value;
    float f[NF];
    static_for<0, NF>([&](auto i_const) {
      constexpr int b = HB - R + decltype(i_const)::value;
      f[decltype(i_const)::value] = byte_as_float<b % 4>(w[b / 4]);
    });
    [[maybe_unused]] float h[SEP ? LB : 1];  // the separable kernel's horizontal pass
    if constexpr (SEP) {
#pragma unroll
      for (int j = 0; j < LB; ++j) {
        float v = p.row[0] * f[j];
#pragma unroll
        for (int kx = 1; kx < KW; ++kx) v = fmaf(p.row[kx], f[j + kx * C], v);
        h[j] = v;
      }
    }
    static_for<0, KH>([&](auto ky_const) {
      constexpr int ky = decltype(ky_const)::value;
      constexpr int A = ((S - ky) % KH + KH) % KH;
      if (valid(ky_const)) {
#pragma unroll
        for (int j = 0; j < LB; ++j) {
          if constexpr (SEP) {
            acc[A][j] = ky == 0 ? p.col[0] * h[j] : fmaf(p.col[ky], h[j], acc[A][j]);
          } else {
            float v = ky == 0 ? p.c[0] * f[j] : fmaf(p.c[ky * KW], f[j], acc[A][j]);
#pragma unroll
            for (int kx = 1; kx < KW; ++kx) v = fmaf(p.c[ky * KW + kx], f[j + kx * C], v);
            acc[A][j] = v;
          }
        }
        if constexpr (ky == KH - 1) put(acc[A]);
      }
    });
  };

  // The integer instances (3x3 and 5x5): row t's products in whole numbers
  // on 16-bit lanes.
  // Every sum fits its lane (255 * sum ip * sum iq + 128 < 2^16,
  // make_stream_coeffs), so one IMAD multiplies and adds both lanes of a
  // register at once. The window's elements -8 .. 23 (relative to the lane's
  // 16) are unpacked into pairs pp[i] = (e, e + 1), e = 2 i - 8 (one PRMT
  // each); for output pair j (elements 2 j, 2 j + 1) the tap d = (k - 2) C
  // elements away is pp[j + 4 + d / 2] where d is even, else the halves of
  // the two pairs around it (one PRMT). The vertical pass accumulates into KH
  // rotating rows of pairs, as the FP32 kernel's rows rotate.
  //
  // SYM: the kernel's factors are symmetric with outer ones 1, so each pass
  // adds the taps that share a factor first. Horizontally, the two taps
  // m = (RY - k) C elements either side of pair j are pp[i] + pp[i + m]
  // (i = j + 4 - m / 2) for an even m; for an odd m, the two pairs around
  // each are added first and realigned once, PRMT(pp[i0] + pp[i0 + m],
  // pp[i0 + 1] + pp[i0 + 1 + m]) (i0 = j + 4 + (-m - 1) / 2; both lanes'
  // sums stay below 2^9, so the adds carry nothing across), and those sums
  // serve neighbouring pairs too. Vertically, the horizontal results of the
  // last KH rows stay in a ring (hring, rotating as iacc does) and each
  // output row sums them in the same way.
  [[maybe_unused]] unsigned iacc[IQ && !SYM ? KH : 1][LB / 2];
  [[maybe_unused]] unsigned hring[SYM ? KH : 1][LB / 2];
  // A finished row of pair sums, rounded and packed as 16 bytes. The sums
  // are the outputs times 2^8 (the host scales iq so) plus 127 on both lanes
  // (kRoundBias, added with the first product): rounded half to even, s +
  // 127 + bit 8 of s, whose bytes 1 and 3 are the two outputs. With v = s +
  // 127 already summed, bit 8 of v is bit 8 of s wherever it matters (where
  // s's low byte is 129 or more, v has carried, and adding bit 8 of v then
  // carries nothing), so v + bit 8 of v: one AND and one shift-add a pair.
  // Every lane stays below 2^16 (255 * 2^8 + 128), so no carry crosses
  // between the lanes.
  constexpr unsigned kRoundBias = 0x007F007Fu;
  [[maybe_unused]] auto round_pairs = [](const unsigned (&v)[LB / 2]) {
    unsigned r[LB / 2];
#pragma unroll
    for (int j = 0; j < LB / 2; ++j) r[j] = v[j] + ((v[j] & 0x01000100u) >> 8);
    return make_uint4(__byte_perm(r[0], r[1], 0x7531u), __byte_perm(r[2], r[3], 0x7531u),
                      __byte_perm(r[4], r[5], 0x7531u), __byte_perm(r[6], r[7], 0x7531u));
  };
  // The pair of elements d away from output pair j (elements 2 j, 2 j + 1),
  // from pairs q(i) (pp[i] or sums of them, i at compile time): q(j + 4 +
  // d / 2) where d is even, else the halves of the two pairs around it.
  [[maybe_unused]] auto pair_at = [](auto j_const, auto d_const, auto q) {
    constexpr int j = decltype(j_const)::value, d = decltype(d_const)::value;
    if constexpr (d % 2 == 0) {
      return q(std::integral_constant<int, j + 4 + d / 2>{});
    } else {
      constexpr int i0 = j + 4 + (d - 1) / 2;
      return __byte_perm(q(std::integral_constant<int, i0>{}), q(std::integral_constant<int, i0 + 1>{}), 0x5432u);
    }
  };
  [[maybe_unused]] auto products5 = [&](auto s_const, const unsigned (&w)[NW], auto valid, auto put) {
    constexpr int S = decltype(s_const)::value;
    unsigned pp[16];
    static_for<0, 16>([&](auto i_const) {
      constexpr int i = decltype(i_const)::value;
      pp[i] = __byte_perm(w[2 + i / 2], 0u, (i & 1) ? 0x4342u : 0x4140u);
    });
    if constexpr (SYM) {
      static_for<0, LB / 2>([&](auto j_const) {
        constexpr int j = decltype(j_const)::value;
        unsigned v = 0u;
        static_for<0, RY>([&](auto k_const) {
          constexpr int k = decltype(k_const)::value;
          constexpr int m = (RY - k) * C;
          // The taps m either side: the pairs around each summed, then realigned once.
          const unsigned s = pair_at(j_const, std::integral_constant<int, -m>{}, [&](auto i_const) {
            return pp[decltype(i_const)::value] + pp[decltype(i_const)::value + m];
          });
          v = k == 0 ? s : s * static_cast<unsigned>(p.ip[k]) + v;  // ip[0] == 1
        });
        hring[S][j] = pp[j + 4] * static_cast<unsigned>(p.ip[RY]) + v;
      });
      if (valid(std::integral_constant<int, KH - 1>{})) {  // output row t - (KH - 1)
        unsigned o[LB / 2];
#pragma unroll
        for (int j = 0; j < LB / 2; ++j) {
          unsigned v = 0u;
          static_for<0, RY>([&](auto k_const) {
            constexpr int k = decltype(k_const)::value;
            constexpr int r0 = ((S - k) % KH + KH) % KH, r1 = ((S - (KH - 1 - k)) % KH + KH) % KH;
            v = k == 0 ? hring[r0][j] + hring[r1][j] + kRoundBias  // iq[0] == 1; one 3-input add
                       : (hring[r0][j] + hring[r1][j]) * static_cast<unsigned>(p.iq[k]) + v;
          });
          constexpr int rc = ((S - RY) % KH + KH) % KH;
          o[j] = hring[rc][j] * static_cast<unsigned>(p.iq[RY]) + v;
        }
        put(round_pairs(o));
      }
      return;
    }
    unsigned h[LB / 2];
    static_for<0, LB / 2>([&](auto j_const) {
      constexpr int j = decltype(j_const)::value;
      unsigned v = 0u;
      static_for<0, KW>([&](auto k_const) {
        constexpr int k = decltype(k_const)::value;
        const unsigned tap = pair_at(j_const, std::integral_constant<int, (k - RY) * C>{},
                                     [&](auto i_const) { return pp[decltype(i_const)::value]; });
        v = k == 0 ? tap * static_cast<unsigned>(p.ip[0]) : tap * static_cast<unsigned>(p.ip[k]) + v;
      });
      h[j] = v;
    });
    static_for<0, KH>([&](auto ky_const) {
      constexpr int ky = decltype(ky_const)::value;
      constexpr int A = ((S - ky) % KH + KH) % KH;
      if (valid(ky_const)) {
#pragma unroll
        for (int j = 0; j < LB / 2; ++j)
          iacc[A][j] = ky == 0 ? h[j] * static_cast<unsigned>(p.iq[0]) + kRoundBias
                               : h[j] * static_cast<unsigned>(p.iq[ky]) + iacc[A][j];
        if constexpr (ky == KH - 1) put(round_pairs(iacc[A]));
      }
    });
  };
  // The fp16 instance (dense 3x3; the host takes it only where
  // stream_half_error_bound proves every output within 1 of the exact sum's
  // rounding): row t's products on packed fp16 pairs, half the FP32
  // instance's multiply-adds. The window's elements -8 .. 23 become pairs
  // pe[i] = (e, e + 1), e = 2 i - 8, with one PRMT each and no conversion:
  // a 16-bit half whose bits are a byte b is the subnormal b * 2^-24, exact,
  // and the coefficients are held times 2^14 (make_stream_coeffs), so every
  // product and sum is the true one times 2^-10, inside fp16's normal range
  // for sums from 1/16 up. Taps at an odd distance are the halves of the two
  // pairs around them (one PRMT), as in products5; every tap is formed once a
  // row and serves the 3 output rows the row touches. The sums are taken in
  // the FP32 instance's (the reference's) order, each product and sum rounded
  // to fp16; the last multiply-add clamps at 0 (.relu). A finished pair s is
  // rounded to whole numbers by s * 2^10 + 1024 in one multiply-add (round
  // to nearest even at fp16's spacing of 1 there), clamped at 1279 (255) and
  // its low bytes are the outputs.
  [[maybe_unused]] unsigned hacc[HF ? KH : 1][LB / 2];
  [[maybe_unused]] auto products_h = [&](auto s_const, const unsigned (&w)[NW], auto valid, auto put) {
    constexpr int S = decltype(s_const)::value;
    constexpr unsigned k1024 = 0x64006400u, k1279 = 0x64ff64ffu;
    unsigned pe[16];
    static_for<0, 16>([&](auto i_const) {
      constexpr int i = decltype(i_const)::value;
      pe[i] = __byte_perm(w[2 + i / 2], 0u, (i & 1) ? 0x4342u : 0x4140u);
    });
    unsigned tp[KW][LB / 2];
    static_for<0, LB / 2>([&](auto j_const) {
      constexpr int j = decltype(j_const)::value;
      static_for<0, KW>([&](auto k_const) {
        constexpr int k = decltype(k_const)::value;
        constexpr int d = (k - RY) * C;
        if constexpr (d % 2 == 0) {
          tp[k][j] = pe[j + 4 + d / 2];
        } else {
          constexpr int i0 = j + 4 + (d - 1) / 2;
          tp[k][j] = __byte_perm(pe[i0], pe[i0 + 1], 0x5432u);
        }
      });
    });
    static_for<0, KH>([&](auto ky_const) {
      constexpr int ky = decltype(ky_const)::value;
      constexpr int A = ((S - ky) % KH + KH) % KH;
      if (valid(ky_const)) {
#pragma unroll
        for (int j = 0; j < LB / 2; ++j) {
          unsigned v = ky == 0 ? hmul2_u32(p.hc[0], tp[0][j]) : hfma2_u32(p.hc[ky * KW], tp[0][j], hacc[A][j]);
#pragma unroll
          for (int kx = 1; kx < KW - 1; ++kx) v = hfma2_u32(p.hc[ky * KW + kx], tp[kx][j], v);
          constexpr int kl = ky * KW + KW - 1;
          hacc[A][j] = ky == KH - 1 ? hfma2_relu_u32(p.hc[kl], tp[KW - 1][j], v) : hfma2_u32(p.hc[kl], tp[KW - 1][j], v);
        }
        if constexpr (ky == KH - 1) {
          unsigned r[LB / 2];
#pragma unroll
          for (int j = 0; j < LB / 2; ++j) r[j] = hmin2_u32(hfma2_u32(hacc[A][j], k1024, k1024), k1279);
          put(make_uint4(__byte_perm(r[0], r[1], 0x6420u), __byte_perm(r[2], r[3], 0x6420u),
                         __byte_perm(r[4], r[5], 0x6420u), __byte_perm(r[6], r[7], 0x6420u)));
        }
      }
    });
  };
  // Row t's products for any kind (FP32, integer or fp16); put(q) gets a
  // finished row as bytes.
  auto row_products = [&](auto s_const, const unsigned (&w)[NW], auto valid, auto put) {
    if constexpr (IQ)
      products5(s_const, w, valid, put);
    else if constexpr (HF)
      products_h(s_const, w, valid, put);
    else
      products(s_const, w, valid, [&](const float(&v)[LB]) { put(pack16(v)); });
  };

  // Interior segments of the dense kernels (8K: all but the top and bottom
  // rows of segments and the two edge strips): every input row lies inside
  // the image and every lane's chunk inside the row, so none of the general
  // walk's border tests, constant rows, edge patches or clipped stores
  // remain. The rows go through one loop of KH steps whose only tests are
  // uniform ones on the output rows a row touches: code as short as that
  // loop matters more than the tests (notes, run 24: 8K dense 3x3 0.0992 ->
  // 0.0923 ms; the same path fully unrolled, 0.1157, and a loop with its
  // first and last rows peeled, 0.1000, spent their saving in instruction
  // fetch stalls). The separable 3x3 kernel, with half the products a row,
  // lost 1% on it (0.0897 -> 0.0906) and keeps the general walk; the integer
  // instances take it (5x5: run 26; 3x3: run 37, 8K gaussian:3 0.0812 ms).
  if constexpr (BAND && (!SEP || IQ)) {
    if (ny == kBandSegRows && !edge_strip && y0 >= RY && y0 + kBandSegRows + RY <= height) {
      constexpr int kRows = kBandSegRows, kIn = kRows + KH - 1;
      const std::ptrdiff_t spitch = a.src.pitch, dpitch = a.dst.pitch;
      // Row pointers walk down by a pitch a row (no row-times-pitch product a
      // row): the next row to copy (the halo's at a fixed distance from the
      // chunk's) and the next output row (put is called once an output row,
      // in order).
      const std::uint8_t* src_next = src_chunk + static_cast<std::ptrdiff_t>(y0 - RY) * spitch;
      const std::ptrdiff_t halo_delta = src_halo - src_chunk;
      std::uint8_t* dst_next = dst_lane + static_cast<std::ptrdiff_t>(y0) * dpitch;
      auto copy_row = [&](int t) {
        if (t < kIn) {
          const unsigned s = ring_s + static_cast<unsigned>((t & (kRing - 1)) * SLOT);
          cp_async16_clip(s + d_chunk, src_next, LB);
          if (n_halo > 0) cp_async16_clip(s + d_halo, src_next + halo_delta, n_halo);
        }
        cp_async_commit();
        src_next += spitch;
      };
#pragma unroll
      for (int t = 0; t < kRing - 1; ++t) copy_row(t);
#pragma unroll 1
      for (int t0 = 0; t0 < kIn; t0 += KH) {
        static_for<0, KH>([&](auto s_const) {
          const int t = t0 + decltype(s_const)::value;
          if (t >= kIn) return;
          cp_async_wait<kRing - 2>();
          __syncwarp();
          unsigned w[NW];
          load_window(ring + (t & (kRing - 1)) * SLOT, w);
          copy_row(t + kRing - 1);
          row_products(
              s_const, w,
              [&](auto ky_const) {
                const int o = t - decltype(ky_const)::value;
                return o >= 0 && o < kRows;
              },
              [&](const uint4 q) {
                *reinterpret_cast<uint4*>(dst_next) = q;
                dst_next += dpitch;
              });
        });
      }
      cp_async_wait<0>();
      return;
    }
  }

  // One input row of the general walk.
  auto step = [&](auto s_const, int t) {
    unsigned w[NW];
    window(t, w);
    row_products(s_const, w, [&](auto ky_const) {
      const int o = t - decltype(ky_const)::value;
      return o >= 0 && o < ny;
    }, [&](const uint4 q) { store(y0 + t - (KH - 1), q); });
  };

#pragma unroll
  for (int t = 0; t < kRing - 1; ++t) issue(t);
  for (int t0 = 0; t0 < nin; t0 += KH) {
    static_for<0, KH>([&](auto s_const) {
      const int t = t0 + decltype(s_const)::value;
      if (t < nin) step(s_const, t);
    });
  }
  cp_async_wait<0>();
#endif
}

/// Dense 3x3 and 5x5 kernels on fp16 pairs without the ring, for images that
/// fit one wave or a few (stream_regs_kernel<C, K, NR>; notes, run 54). In
/// the one-wave layout a 1080p RGB image gives each warp of the ring walk a
/// segment of 5 rows, and its per-row bookkeeping (copies, waits, border
/// tests, shared loads) cost more than the row's products (run 52: 23
/// instructions an output, 5 of them products). Here each thread owns one
/// 16-byte chunk of a row and NR output rows below it: it loads its NR + K -
/// 1 input rows at once (its 16 bytes and the 4 or 8 either side, all from
/// global memory, so that a warp may span rows and no lane waits on another)
/// and forms every sum in registers.
///
/// K = 3: products_h's pairs and sums in products_h's order, so the outputs
/// equal the ring walk's bit for bit (stream_half_error_bound).
/// K = 5: each kernel row's 5 products summed first (a product and four
/// multiply-adds), then the 5 row sums in order, the last clamped at 0
/// (stream_regs5_half_error_bound: 0.54 grey levels for the benchmark's
/// random dense 5x5, which row-major order would take to 0.99).
///
/// Rows must be whole 16-byte chunks (the host takes the ring walk or the
/// tensor cores for other widths). The threads at a row's ends and in the
/// top and bottom segments make the interior's loads from other addresses
/// (the body says how) and no load of their own, so that no thread waits on
/// memory more than once: a first version that tested every row ran 0.0181
/// ms at 1080p RGB on an H100 where the probe without edges took 0.0062, and
/// two with a separate path for the row ends 0.0198 and (an H200) 0.0256.
namespace stream_tuning {
/// The fixed-border instances (replicate, reflect, reflect101) run at every
/// size by default; the general one (constant, wrap), with
/// PIXELKIT_CUDA_FILTER_REGS=on (filter_cuda.cu, regs_policy), where the ring
/// walk would take its one-wave layout (3x3) or where its threads fit one
/// wave at 2 rows each (5x5). 2 output rows a thread where those threads fit
/// one wave, else 4 (probe, run 54: H100, RGB dense 3x3, ms, NR = 2 / 4:
/// 1080p 0.0062 / 0.0067, 4K 0.0200 / 0.0194).
constexpr int kRegsRowsWave = 2;
constexpr int kRegsRows = 4;
static_assert(kRegsMirrorMinHeight >= kRegsRows + 2, "reflect's and reflect101's instances mirror a row once");
/// Dense 5x5 takes stream_regs_kernel where its 4-row threads make at most
/// this many waves (4K RGB: 4.6 on an H100, where the probe took 0.0270 ms
/// against the tensor cores' 0.0319; 8K not measured).
constexpr int kRegs5MaxWaves = 5;
struct RegsPlan {
  bool take;      ///< the rule takes stream_regs_kernel
  bool two_rows;  ///< kRegsRowsWave rows a thread (else kRegsRows)
};
/// The rule, for a kernel of side 3 or 5: 3x3 where the ring would walk one
/// wave (not `bands`), 2 rows a thread where those threads fit one wave;
/// 5x5 where its 4-row threads make at most kRegs5MaxWaves waves, 2 rows a
/// thread where those make at most 2 (probe, run 54, H100, RGB dense 5x5, ms,
/// R = 2 / 4: 1080p, 1.44 waves at 2 rows, 0.0093 / 0.0096; 4K 0.0286 /
/// 0.0270; 720p 0.0063 / 0.0066). Waves count `threads` against `wave`
/// threads resident at once.
constexpr RegsPlan regs_plan(int side, bool bands, long long threads2, long long wave2, long long threads4,
                             long long wave4) {
  if (side == 3) return {!bands, threads2 <= wave2};
  return {threads4 <= kRegs5MaxWaves * wave4, threads2 <= 2 * wave2};
}
/// stream_regs_kernel's __launch_bounds__ minimum blocks per SM: the
/// registers the probe's kernels took without the general path (3x3: 40 and
/// 64; 5x5: 61 and 96), which the general path would otherwise raise (to 56
/// and 68; 80 and 127).
/// (sm_75, whose SMs hold 1024 threads and which runs no body of this kernel
/// (PIXELKIT_MMA_ENABLED): 1, so that ptxas has no bound to ignore.)
constexpr int regs_min_blocks(int k, int nr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  return (void)k, (void)nr, 1;
#elif PIXELKIT_REGS_LOOSE
  // A build flag for a measurement (notes, run 55): bounds at which
  // version 4 spills nothing (ptxas, sm_90: 48, 64, 80 and 128 registers),
  // at the cost of fewer threads a wave (1080p RGB 3x3 at 2 rows: 1.15 waves
  // of an H200).
  return k == 3 ? (nr == 2 ? 10 : 8) : (nr == 2 ? 6 : 4);
#else
  return k == 3 ? (nr == 2 ? 12 : 8) : (nr == 2 ? 8 : 5);
#endif
}
}  // namespace stream_tuning

/// A fixed instance's side word from its chunk's words cw, by the plan
/// regs_fixed_side_word gives (its fields as the arguments).
template <int W0, int W1, int W2, unsigned SEL, unsigned SEL2>
__device__ __forceinline__ unsigned regs_side_word(const unsigned (&cw)[4]) {
  static_assert(W0 >= 0 && W1 >= 0, "a side word's bytes lie in at most 3 of the chunk's words");
  const unsigned v = __byte_perm(cw[W0], cw[W1], SEL);
  if constexpr (W2 >= 0) return __byte_perm(v, cw[W2], SEL2);
  return v;
}

/// RB: one border mode alone, replicate, reflect or reflect101 (the host
/// takes these instances for those modes), or every mode at run time
/// (general). A fixed instance takes its rows through its mode alone (clamped,
/// or mirrored where they leave the image), forms the row ends' side words by
/// one or two constant byte permutations each (regs_fixed_side_word) and
/// stores 16 bytes at a time; none of the other modes' code (border_index, the
/// run-time selectors, the border value), which made version 4 four times the
/// probe's PTX (notes, runs 56 and 57).
template <int C, int K, int NR, RegsBorder RB = RegsBorder::general>
__global__ void __launch_bounds__(stream_tuning::kThreads, stream_tuning::regs_min_blocks(K, NR))
    stream_regs_kernel(const __grid_constant__ StreamParams p) {
#if PIXELKIT_MMA_ENABLED
  constexpr int LB = stream_tuning::kLaneBytes, RY = K / 2, NIN = NR + K - 1;
  constexpr int SW = K == 3 ? 1 : 2;  // window words either side of the chunk
  constexpr int NWW = 4 + 2 * SW;     // window words: bytes -4 SW .. 15 + 4 SW
  static_assert((K == 3 || K == 5) && RY * C <= 4 * SW, "the window holds the reach");
  const FilterArgs<std::uint8_t>& a = p.a;
  const int rb = a.src.width * C, height = a.src.height;
  // p.strips counts 16-byte chunks across a row here; p.segs segments of NR rows.
  const int tid = blockIdx.x * stream_tuning::kThreads + threadIdx.x;
  const int seg = tid / p.strips, chunk = tid - seg * p.strips;
  const int y0 = a.y_begin + seg * NR;
  pdl_begin();  // no global memory access before this line
  if (seg >= p.segs) return;
  const int x = chunk * LB;
  [[maybe_unused]] const int n_chunk = min(rb - x, LB);

  // The sums of a window w.
  auto sums = [&](const unsigned (&w)[NIN][NWW]) {
    // Pairs (e, e + 1) of window elements as fp16 subnormals (products_h's pe
    // and taps), sums as the doc comment above says.
    constexpr unsigned k1024 = 0x64006400u, k1279 = 0x64ff64ffu, kOne = 0x3c003c00u;
    constexpr int NACC = K == 3 ? 3 : NR;  // 3x3: rotating rows (products_h); 5x5: one per output row
    unsigned acc[NACC][LB / 2];
    std::uint8_t* const out = a.dst.data + x;
    static_for<0, NIN>([&](auto t_const) {
      constexpr int t = decltype(t_const)::value;
      // The pair at element e: one PRMT from its word where both bytes share
      // one, else the halves of the two even pairs around it (the compiler
      // forms each distinct pair once).
      auto pair = [&](auto e_const) -> unsigned {
        constexpr int e = decltype(e_const)::value, q = (e + 4 * SW) % 4, i = (e + 4 * SW) / 4;
        if constexpr (q == 0) return __byte_perm(w[t][i], 0u, 0x4140u);
        if constexpr (q == 1) return __byte_perm(w[t][i], 0u, 0x4241u);
        if constexpr (q == 2) return __byte_perm(w[t][i], 0u, 0x4342u);
        if constexpr (q == 3)
          return __byte_perm(__byte_perm(w[t][i], 0u, 0x4342u), __byte_perm(w[t][i + 1], 0u, 0x4140u), 0x5432u);
      };
      unsigned tp[K][LB / 2];
      static_for<0, LB / 2>([&](auto j_const) {
        constexpr int j = decltype(j_const)::value;
        static_for<0, K>([&](auto k_const) {
          constexpr int k = decltype(k_const)::value;
          tp[k][j] = pair(std::integral_constant<int, 2 * j + (k - RY) * C>{});
        });
      });
      static_for<0, K>([&](auto ky_const) {
        constexpr int ky = decltype(ky_const)::value, o = t - ky;
        constexpr int A = K == 3 ? (o % 3 + 3) % 3 : (o >= 0 && o < NR ? o : 0);
        if constexpr (o >= 0 && o < NR) {
#pragma unroll
          for (int j = 0; j < LB / 2; ++j) {
            if constexpr (K == 3) {
              unsigned v = ky == 0 ? hmul2_u32(p.hc[0], tp[0][j]) : hfma2_u32(p.hc[3 * ky], tp[0][j], acc[A][j]);
              v = hfma2_u32(p.hc[3 * ky + 1], tp[1][j], v);
              acc[A][j] = ky == 2 ? hfma2_relu_u32(p.hc[3 * ky + 2], tp[2][j], v)
                                  : hfma2_u32(p.hc[3 * ky + 2], tp[2][j], v);
            } else {
              unsigned s = hmul2_u32(p.hc5[5 * ky], tp[0][j]);
#pragma unroll
              for (int kx = 1; kx < 5; ++kx) s = hfma2_u32(p.hc5[5 * ky + kx], tp[kx][j], s);
              acc[A][j] = ky == 0 ? s : ky == 4 ? hfma2_relu_u32(acc[A][j], kOne, s) : hfma2_u32(acc[A][j], kOne, s);
            }
          }
          if constexpr (ky == K - 1) {
            unsigned r[LB / 2];
#pragma unroll
            for (int j = 0; j < LB / 2; ++j) r[j] = hmin2_u32(hfma2_u32(acc[A][j], k1024, k1024), k1279);
            const uint4 q = make_uint4(__byte_perm(r[0], r[1], 0x6420u), __byte_perm(r[2], r[3], 0x6420u),
                                       __byte_perm(r[4], r[5], 0x6420u), __byte_perm(r[6], r[7], 0x6420u));
            const int y = y0 + o;
            if (y < a.y_end) {
              if constexpr (RB != RegsBorder::general)
                *reinterpret_cast<uint4*>(out + static_cast<std::ptrdiff_t>(y) * a.dst.pitch) = q;
              else
                store_chunk16(out + static_cast<std::ptrdiff_t>(y) * a.dst.pitch, q, n_chunk);
            }
          }
        }
      });
    });
  };
  // Row `row`'s words into wt: the thread's chunk (returned too) and the side
  // words at byte offsets loff and roff.
  auto load_row = [&](unsigned (&wt)[NWW], const std::uint8_t* row, int loff, int roff) {
    const uint4 c = __ldg(reinterpret_cast<const uint4*>(row + x));
    if constexpr (SW == 1) {
      wt[0] = __ldg(reinterpret_cast<const unsigned*>(row + loff));
      wt[5] = __ldg(reinterpret_cast<const unsigned*>(row + roff));
    } else {
      const uint2 l = __ldg(reinterpret_cast<const uint2*>(row + loff));
      const uint2 r = __ldg(reinterpret_cast<const uint2*>(row + roff));
      wt[0] = l.x;
      wt[1] = l.y;
      wt[6] = r.x;
      wt[7] = r.y;
    }
    wt[SW] = c.x;
    wt[SW + 1] = c.y;
    wt[SW + 2] = c.z;
    wt[SW + 3] = c.w;
    return c;
  };
  if constexpr (RB != RegsBorder::general) {
    const bool at_left = x == 0, at_right = x + LB == rb;
    const int loff = at_left ? x : x - 4 * SW, roff = at_right ? x : x + LB;
    unsigned w[NIN][NWW];
#pragma unroll
    for (int t = 0; t < NIN; ++t) {
      const int iy = y0 - RY + t;
      // One reflection maps every row a thread reads into the image, those
      // of its rows past the last output (NR - 1 at most, not stored)
      // included, from images of NR + RY rows: the host takes reflect's and
      // reflect101's instances from kRegsMirrorMinHeight = 6. (Holding those
      // rows at 0 instead, with a max, made ptxas spill 30-120 bytes in most
      // of these instances.)
      const int sy = regs_fixed_row(RB, iy, height);
      const uint4 c = load_row(w[t], a.src.row(sy), loff, roff);
      const unsigned cw[4] = {c.x, c.y, c.z, c.w};
      static_for<0, SW>([&](auto i_const) {
        constexpr int i = decltype(i_const)::value;
        constexpr RegsSideWord l = regs_fixed_side_word<C, SW>(RB, false, i);
        constexpr RegsSideWord r = regs_fixed_side_word<C, SW>(RB, true, i);
        if (at_left) w[t][i] = regs_side_word<l.w0, l.w1, l.w2, l.sel, l.sel2>(cw);
        if (at_right) w[t][SW + 4 + i] = regs_side_word<r.w0, r.w1, r.w2, r.sel, r.sel2>(cw);
      });
    }
    sums(w);
  } else {
    // Every thread loads the same words: its chunk and the words either side,
    // NIN rows of them, all at once. Rows beyond the image come through
    // border_index (a constant border's hold its value). At a row's ends
    // (rows are whole chunks: the host) the side words come from the row's
    // other end (wrap), hold the border value (constant), or copy bytes of the
    // chunk itself (the other modes: the reach's pixels mirror or repeat
    // pixels within its first or last 3 C <= 12 bytes). So the row-end threads
    // do the interior's loads and a few byte permutations, and no thread waits
    // on memory twice (sessions 50 and 51: row-end threads that gathered their
    // bytes one load at a time, or each by its own load, held the one-wave
    // kernel to 0.018-0.026 ms at 1080p RGB where the probe took 0.0054-0.0062).
    const bool at_left = x == 0, at_right = x + LB == rb;
    const bool wrap = a.mode == BorderMode::wrap, constant = a.mode == BorderMode::constant;
    const bool fix_l = at_left && !wrap, fix_r = at_right && !wrap;
    const int loff = !at_left ? x - 4 * SW : wrap ? rb - 4 * SW : x;
    const int roff = !at_right ? x + LB : wrap ? 0 : x;
    // For the mirrored or repeated modes, a nibble a side byte (SW words of 4):
    // the byte of the chunk it copies.
    unsigned sel_l = 0u, sel_r = 0u;
    if ((fix_l || fix_r) && !constant) {
      sel_l = regs_side_selectors<C, SW>(false, x, a.src.width, a.mode);
      sel_r = regs_side_selectors<C, SW>(true, x, a.src.width, a.mode);
    }
    // The 4 bytes of chunk c that nibbles sel name.
    auto pick = [](const uint4& c, unsigned sel) {
      unsigned v = 0u;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const unsigned n = (sel >> (4 * k)) & 15u;
        const unsigned lo = n & 8u ? c.z : c.x, hi = n & 8u ? c.w : c.y;
        v |= (__byte_perm(lo, hi, n & 7u) & 0xffu) << (8 * k);
      }
      return v;
    };
    // Edge (the row-end threads and those of the top and bottom segments):
    // rows through border_index and the side words as above; else plain loads.
    auto load_and_sum = [&](auto edge_const) {
      constexpr bool Edge = decltype(edge_const)::value;
      unsigned w[NIN][NWW];
#pragma unroll
      for (int t = 0; t < NIN; ++t) {
        const int iy = y0 - RY + t;
        const int sy =
            !Edge || static_cast<unsigned>(iy) < static_cast<unsigned>(height) ? iy : border_index(iy, height, a.mode);
        const std::uint8_t* const row = a.src.row(max(sy, 0));
        const uint4 c = load_row(w[t], row, loff, roff);
        if constexpr (Edge) {
          if (sy < 0) {
#pragma unroll
            for (int i = 0; i < NWW; ++i) w[t][i] = p.border_word;
          } else if (fix_l || fix_r) {
#pragma unroll
            for (int i = 0; i < SW; ++i) {
              if (fix_l) w[t][i] = constant ? p.border_word : pick(c, sel_l >> (16 * i));
              if (fix_r) w[t][SW + 4 + i] = constant ? p.border_word : pick(c, sel_r >> (16 * i));
            }
          }
        }
      }
      sums(w);
    };
    // (Tried and slower: a separate interior path, session 51's
    // PIXELKIT_REGS_SPLIT=1, 1080p RGB dense 3x3 0.0097 ms against 0.0090, H100;
    // every load first and each row's fixes as the sums take it, 0.0102. Notes,
    // run 56.)
    load_and_sum(std::true_type{});
  }
#endif
}

/// The fixed-border instances of stream_regs_kernel<C, K, ...> into info.
template <int C, int K>
void set_fixed_regs(StreamKernelInfo& info) {
  constexpr int NR = stream_tuning::kRegsRows, NRW = stream_tuning::kRegsRowsWave;
  auto fn = [](auto kernel) { return reinterpret_cast<const void*>(kernel); };
  info.regs_fixed_fn[0] = fn(stream_regs_kernel<C, K, NR, RegsBorder::replicate>);
  info.regs_fixed_fn[1] = fn(stream_regs_kernel<C, K, NR, RegsBorder::reflect>);
  info.regs_fixed_fn[2] = fn(stream_regs_kernel<C, K, NR, RegsBorder::reflect101>);
  info.regs_fixed_wave_fn[0] = fn(stream_regs_kernel<C, K, NRW, RegsBorder::replicate>);
  info.regs_fixed_wave_fn[1] = fn(stream_regs_kernel<C, K, NRW, RegsBorder::reflect>);
  info.regs_fixed_wave_fn[2] = fn(stream_regs_kernel<C, K, NRW, RegsBorder::reflect101>);
}

/// The instance `which` for C channels (one file per C: filter_cuda_stream.hpp
/// says why). Each comes with its band-layout instance (the dense kernels'
/// interior path; the FP32 separable one has none; the 5x5 ones have only
/// that).
template <int C>
StreamKernelInfo stream_pick(StreamInstance which) {
  const int smem = stream_tuning::kSmemBytes, strip = stream_tuning::kStripBytes;
  auto fn = [](auto kernel) { return reinterpret_cast<const void*>(kernel); };
  switch (which) {
    case StreamInstance::dense:
      return {fn(stream_kernel<C, false>), fn(stream_kernel<C, false, true>), smem, false, strip, 3, false};
    case StreamInstance::separable:
      return {fn(stream_kernel<C, true>), fn(stream_kernel<C, true>), smem, true, strip, 3, false};
    case StreamInstance::half: {
      StreamKernelInfo info{fn(stream_kernel<C, false, false, 3, false, true>),
                            fn(stream_kernel<C, false, true, 3, false, true>), smem, false, strip, 3, false, true};
      info.regs_fn = fn(stream_regs_kernel<C, 3, stream_tuning::kRegsRows>);
      info.regs_wave_fn = fn(stream_regs_kernel<C, 3, stream_tuning::kRegsRowsWave>);
      set_fixed_regs<C, 3>(info);
      return info;
    }
    case StreamInstance::half5: {
      // Dense 5x5: stream_regs_kernel only (no ring instance).
      StreamKernelInfo info{nullptr, nullptr, 0, false, stream_tuning::kLaneBytes, 5, false, true};
      info.regs_fn = fn(stream_regs_kernel<C, 5, stream_tuning::kRegsRows>);
      info.regs_wave_fn = fn(stream_regs_kernel<C, 5, stream_tuning::kRegsRowsWave>);
      set_fixed_regs<C, 5>(info);
      return info;
    }
    case StreamInstance::int3:
      return {fn(stream_kernel<C, true, false, 3, true>), fn(stream_kernel<C, true, true, 3, true>), smem, true, strip,
              3, true};
    case StreamInstance::int5:
    case StreamInstance::int5sym: {
      // The 5x5 instances run only in bands (filter_cuda.cu), so their band
      // instance serves both fields and no one-wave instance is built.
      const bool sym = which == StreamInstance::int5sym;
      const void* k =
          sym ? fn(stream_kernel<C, true, true, 5, true, false, true>) : fn(stream_kernel<C, true, true, 5, true>);
      StreamKernelInfo info{k, k, smem, true, strip, 5, true};
      info.symmetric = sym;
      return info;
    }
  }
  return {};
}

}  // namespace pixelkit::detail::cuda_filter
