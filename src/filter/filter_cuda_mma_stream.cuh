// Separable u8 filter on the tensor cores, streaming down column strips:
// separable_mma_stream_kernel<C, KS1, KS2, HALF, LO> (mma.sync m16n8k16 and,
// for a last k-step that reaches only 8 k, m16n8k8; fp16 operands, fp32
// accumulation). The path for u8 separable kernels from 5x5 up
// (docs/notes-filter-cuda.md, runs 11 to 14).
//
// Why. The tiled tensor-core kernel (filter_cuda_mma.cuh) moves each tile
// through shared memory three times (input, intermediate hi/lo, output),
// waits at three block barriers per tile, and recomputes a 1.5x apron in
// both directions; it spends ~45 instructions per output on that, not on the
// products. Here the intermediate never leaves the registers and every input
// row is converted once per segment.
//
// Pass 1 in transposed form, so that its accumulators are pass 2's operand
// as they stand (the m16n8 C fragment of two adjacent n-tiles is the m16k16
// A fragment, and each n-tile's half of it the k16n8 B fragment):
//   pass 1 (horizontal), 16 pixels x 16 rows of one channel:
//     D1^T[x][r] = sum_s H_s[x][k] * X_s[k][r],
//     H_s[i][k] = row[16 s + k - i - shift]  (Toeplitz, built once per thread),
//     X_s[k][r] = input at tile column 16 s + k, row r (ldmatrix, non-transposed,
//                 from a planar fp16 tile in shared memory);
//   pass 2 (vertical), 16 output rows x the same 16 pixels (two n-tiles of 8):
//     D2[o][x] = sum_s V_s^T[o][k] * D1_{block j+s}[k][x],
//     V_s^T[o][k] = col[16 s + k - o]  (Toeplitz, built once per thread),
//   where D1 block b holds input rows y0 - ry + 16 b .. + 15 of the segment
//   starting at output row y0, so output block j uses D1 blocks j .. j + KS1 - 1.
//   A thread's results are then rows g and g + 8 of pixels 2t, 2t + 1 of an
//   n-tile in every channel: 2 C neighbouring bytes of an output row, rounded
//   and packed two at a time (pack2_u8, one F2IP a pair on sm_90) and staged
//   in 2-byte (1 and 3 channels) or 8-byte (4) stores, where the
//   transposed pass 2 (D2^T[x][o], pixels as M) left each thread one byte of
//   a pixel per store: 1 conversion and 1 byte store an output. Run 50 (H200,
//   RGB): 8K gaussian:11..17 0.0850-0.0856 -> 0.0807-0.0818 ms, 19..31
//   0.0962-0.1007 -> 0.0942-0.0970, 4K -3%, for a fourth k16-equivalent of
//   pass-2 products a channel where the transposed form had three (its two
//   n-tiles of output rows could each leave out half a k-step). The INT
//   instances keep the transposed form (their pass 2 takes pass 1's s32 sums
//   as u8 A fragments).
// Where both bands end within the first 8 k of their last k-step (HALF:
// sides 5..9 and 19..25), that step is m16n8k8 on the first half of the
// same operand registers (A: registers 0, 1; B: register 0).
//
// Accuracy (FP32-class). u8 values are exact in fp16 (as the subnormals
// b * 2^-24, run 17); coefficients are split into fp16 hi + lo (22
// significant bits), the row factors times 2^sh and the column factors times
// 2^(24 - sh), so that the products come out unscaled and no multiply is
// needed per output (MmaStreamCoeffs::row; the host checks what hi + lo miss,
// and what the intermediate's hi + lo miss where it is subnormal, against the
// FP32 kernels' own rounding). Pass 1 forms hi*x + lo*x; its fp32 result is split into hi + lo
// again and pass 2 forms Dhi*Vhi + Dlo*Vhi + Dhi*Vlo. Where every factor is
// exact in fp16 (LO false; built for sides 5..9, such as OpenCV's fixed
// Gaussians 5, 7, 9 and binomials), the lo coefficient parts are zero and
// their products are left out: pass 1 forms hi*x alone, pass 2 Dhi*Vhi +
// Dlo*Vhi, with the same result to the last bit.
//
// fp16 (F16, run 44). Where the host proves every output within 1 grey
// level of ref's (mma_stream_half_error_bound at most kStreamHalfMaxError,
// 0.75: smoothing kernels such as Gaussians with their own sigma, box:N;
// PIXELKIT_CUDA_FILTER_HALF=off: never), the lo parts go everywhere: pass 1
// forms hi*x alone and its fp32 result is rounded to fp16 (one F2F a pair,
// no split), pass 2 forms Dhi*Vhi alone. 24 products a warp and step at 3
// channels for sides 11..17 instead of 60, 36 instead of 90 for 19..31, and
// no window of lo parts, so the three-k-step instances hold 3 blocks per SM
// up to 3 channels.
// Built for both passes on the same k-steps (square kernels), LO kernels only.
//
// Exact (INT, run 20). Kernels that are exactly q[y] * p[x] / 2^a with whole
// numbers p, q in 0..255 (OpenCV's fixed Gaussians 5, 7, 9, binomials; sides
// up to 17, gain at most 1: make_mma_stream_integer) run on u8 x u8 integer
// products instead: the tiles hold the bytes, pass 1 is one m16n8k32 step
// (s32 sums below 2^16), whose lo and hi bytes are pass 2's two A operands
// (two m16n8k32 steps), and the exact sum 256 hi + lo is rounded once, ties
// to even, in floats (1.5 * 2^23 added: no saturation needed at a gain of at
// most 1). The results equal ref's exactly; 8K RGB gaussian:5..9 1.5-2%
// faster than the fp16-exact instances (H100), the same at 4K and 1080p;
// sums started at zero and converted by one I2F (run 21) another 1% at 8K.
//
// Work. A block of kWarps warps owns a strip of 16 * kWarps output pixels
// (all channels) and a segment of output rows (shorter ones in the first and
// last strip, kEdgeSegFactor); warp w owns pixels
// 16 w .. 16 w + 15 of the strip. Per step j of 16 rows:
//   1. the previous output block leaves the warp's staging rows in 16-byte
//      stores;
//   2. the input rows of block b + 1 (loaded into registers kPrefetch steps
//      earlier) are converted to planar fp16 into the other buffer, and the
//      rows of block b + 1 + kPrefetch are loaded into the freed registers;
//   3. pass 1 on the converted tile of D1 block b = j + KS1 - 1 (buffer
//      b % 2), split into the warp's window of KS1 blocks (registers), and
//      pass 2 for output block j from the window, rounded into the staging
//      rows: one stretch of code without branches, so that the scheduler
//      interleaves the two passes' product chains;
//   4. one block barrier.
// The window's slots rotate statically (the step loop is unrolled KS1 times).
// Where every test of a step is known to pass (an interior strip, whole
// blocks, rows inside the image), instances with two k-steps down and lo
// products run a steady-state step with no branches at all, so that the
// conversion and the loads interleave with the product chains (run 17).
// Input bytes enter the tiles as fp16 subnormals b * 2^-24 (one PRMT per
// pair, no subtraction); the factors carry the 2^24 (MmaStreamCoeffs::row).
// Rows and columns beyond the image map through border_index as they are
// loaded (MmaStreamLoads): rows a row at a time, columns byte by byte, which
// each step waits for, so the edge strips' segments are shorter
// (kEdgeSegFactor). Replicate, reflect and reflect101 instead load an
// in-image unit into the lanes beyond the image and, after each conversion,
// copy the tile columns those pixels map to (MmaStreamParams::fix_edges, run
// 35: 1080p gaussian:7 -17%, 8K -7%), with segments kEdgeSegFactorFixed
// times shorter.
//
// Grid. Usually one wave of blocks, one (strip, segment) each, the segments
// as tall as that allows. Large images whose one wave would leave SMs idle
// (walk_bands) walk bands instead: the rows are cut into bands of
// kBandSegRows, and each block takes item after item (strip fastest, band
// after band), keeping its Toeplitz fragments, so that no SM idles while
// others finish (notes, runs 15, 32 and 33). A one wave whose items leave
// some slots empty (8K RGB: 366 items for 396 slots) takes a tail band where
// tail_plan finds one: slightly shorter segments, and below them a short band
// whose items the blocks left over walk in turn (notes, run 40: 8K
// gaussian:7 0.1019 -> 0.0978 ms, gaussian:31 0.165 -> 0.155).
//
// Measured (H100, RGB u8, notes runs 11 to 15): 8K gaussian:9 0.112 ms
// (0.210 on the FP32 separable kernel before), gaussian:17 0.133 (0.258),
// gaussian:25 0.207 (0.358), gaussian:31 0.212 (0.375); 1080p gaussian:9
// 0.0145, gaussian:31 0.0244. Run 12 was the staging stride alone
// (kOutStride: 0.160 -> 0.130 ms at 8K gaussian:9), run 13 the half last
// k-step (HALF: 0.131 -> 0.121), run 14 the exact factors (LO false:
// 0.122 -> 0.117), run 15 the bands (gaussian:21 0.227 -> 0.205). Run 17
// (H200, 8K, same call): flat addresses, subnormal-byte tiles and the
// steady-state step, gaussian:9 0.108 -> 0.107, gaussian:11..17 0.134 ->
// 0.122, gaussian:21 0.204 -> 0.193. Run 32 (H100, 8K RGB): one prefetch set and
// one wave for sides 19..31 (prefetch_sets, walk_bands), gaussian:21 0.188 ->
// 0.156, gaussian:31 0.195 -> 0.164.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "filter/filter_cuda_kernels.cuh"
#include "filter/filter_cuda_mma.cuh"
#include "filter/filter_cuda_mma.hpp"

namespace pixelkit::detail::cuda_filter {

namespace mma_stream_tuning {
constexpr int kWarps = 4;  ///< warps per block, each a 16-pixel column of the strip
constexpr int kThreads = 32 * kWarps;
constexpr int kStripPx = 16 * kWarps;  ///< output pixels per strip
constexpr int kRowsPerWarp = 16 / kWarps;  ///< input rows of a 16-row block each warp loads
/// Output rows of a block's first item whose input rows it prefetches into L2
/// before pdl_begin (MmaStreamParams::prefetch_rows; notes, run 37: H100,
/// 1080p RGB, ms, none / 16 / 32 / 64 / 128 / 256 rows: gaussian:5 0.0108 /
/// 0.0105 / 0.0102 / 0.0100 / 0.0100 / 0.0100, gaussian:11 0.0134 / 0.0132 /
/// 0.0128 / 0.0128 / 0.0128 / 0.0129; 4K gaussian:5 0.0294 / 0.0292 / 0.0288 /
/// 0.0287 / 0.0286 / 0.0295, gaussian:11 0.0355 / 0.0352 / 0.0349 / 0.0348 /
/// 0.0350 / 0.0358).
constexpr int kPrefetchRows = 64;
/// Where the first and last strip load the pixels beyond the image byte by
/// byte through border_index (constant and wrap borders, unaligned sources,
/// PIXELKIT_CUDA_FILTER_EDGES=bytes), and wait for them, their segments are
/// this many times shorter, so that their blocks end with the others (every
/// block's steps otherwise take the same time).
constexpr int kEdgeSegFactor = 4;
/// The same in one wave for kernels of three vertical k-steps (sides
/// 19..31), whose edge steps cost more still (notes, run 28: H100 RGB, ms,
/// factors 4 / 6 / 8: 4K gaussian:21 0.0693-0.0701 / 0.0636-0.0641 /
/// 0.0630-0.0634, gaussian:31 0.0696-0.0708 / 0.0661-0.0667 / 0.0663-0.0668;
/// 1080p gaussian:21 0.0222-0.0223 / 0.0213 / 0.0215; the two-k-step sizes
/// lose 3-5% at 4K and 1080p with 6, and the band walk at 8K with 6 or 8).
constexpr int kEdgeSegFactorThreeDown = 6;
/// The one-wave layout's factor where the edge strips take their columns
/// from shared memory (MmaStreamParams::fix_edges; notes, run 35): their
/// steps then cost little more than the others', and 2 measured best or
/// tied from 720p to 4K against 3, 4 and 6 (H100 RGB, gaussian 7..31; the
/// band walk keeps kEdgeSegFactor, not measured with it).
constexpr int kEdgeSegFactorFixed = 2;
/// MmaStreamParams::fix_edges needs an image at least this wide (a reach of
/// at most 15 pixels then maps every needed column beyond the image onto
/// the tile with one reflection).
constexpr int kMinFixWidth = 32;
/// Band walk (notes, runs 15, 32 and 33): the one-wave layout gives each
/// resident block one (strip, segment) item, and where those items fill less
/// than kOneWaveMinFillPercent of the blocks' slots (the wave's rounds times
/// the resident blocks), the blocks walk bands of kBandSegRows rows instead,
/// item after item, if that makes at least kBandMinRounds items per resident
/// block. Run 32 (H100, one prefetch set, gaussian:21, ms; one wave / bands
/// of 192 / 256; RGB at 2 blocks per SM): 8K (fill 0.98) 0.155 / 0.183 /
/// 0.177; 6144x3456 (0.80) 0.125 / 0.117 / 0.126; 5120x2880 (0.68) 0.105 /
/// 0.086 / 0.087; 4K (0.80) 0.0572 / 0.0542 / 0.0691; 4096x2160 (0.84)
/// 0.0627 / 0.0626 / -; 1440p (0.95) 0.0266 / 0.0350 / 0.0423; 1080p (0.91)
/// 0.0187 / 0.0201 / 0.0200; one channel at 3 blocks per SM, 4K (0.88)
/// 0.0261 / 0.0285 / -. (Run 15, with two prefetch sets, had found bands of
/// 256 faster at 8K; the 2-k-step sizes lose in bands there: gaussian:9
/// 0.112 -> 0.123.) Run 33, the two-k-step instances (sides up to 17; RGB at
/// 3 blocks per SM, four channels at 2), one wave / bands of 192, ms,
/// gaussian:7 (integer factors) and gaussian:13: 8192x4320 (fill 0.68) 0.1421
/// / 0.1199 and 0.1777 / 0.1479; 6000x4000 (0.76) 0.0925 / 0.0882 and 0.1138 /
/// 0.1055; 6144x3456 (0.77) 0.0810 / 0.0754 and 0.1000 / 0.0942; four
/// channels, 8192x4320 (0.51) 0.276 / 0.181 and 0.327 / 0.218, 6000x4000
/// (0.76) 0.143 / 0.122 and 0.165 / 0.148. From a fill of 0.86 up the one wave
/// was as fast or faster (5120x2880 at 0.87: 0.0561 / 0.0590 and 0.0658 /
/// 0.0714; 8K at 0.95: 0.1067 / 0.1139 and 0.1246 / 0.1347; 5472x3648,
/// 4608x3456, 4000x3000, 1600x1200), but for 7000x5000 (0.88: 0.139 / 0.121
/// and 0.159 / 0.150).
constexpr int kBandSegRows = 192;
constexpr int kBandMinRounds = 2;
constexpr int kOneWaveMinFillPercent = 85;
/// Whether to walk bands: `wave_items` in the one-wave layout, `band_items`
/// in bands of kBandSegRows, `resident` blocks at once.
constexpr bool walk_bands(long long wave_items, long long band_items, long long resident) {
  const long long rounds = (wave_items + resident - 1) / resident;
  return 100 * wave_items < kOneWaveMinFillPercent * rounds * resident && band_items >= kBandMinRounds * resident;
}
/// How an edge strip's share of a band of `steps` 16-row steps is cut where
/// its segments are `factor` times shorter (kEdgeSegFactor,
/// kEdgeSegFactorFixed, kEdgeSegFactorThreeDown): pieces of `rows` rows
/// (whole steps), `pieces` of them. tail_plan's model and the host's layout
/// (MmaStreamParams::edge_seg_rows, tail_edge_rows) both cut with it.
struct EdgeCut {
  int rows;
  int pieces;
};
constexpr EdgeCut edge_cut(int steps, int factor) {
  const int e = (steps + factor - 1) / factor;
  return EdgeCut{16 * e, (steps + e - 1) / e};
}
// 85 steps in halves: pieces of 43 steps, 2 of them; 15 steps in quarters: of 4, 4 of them; 5 in quarters: of 2, 3.
static_assert(edge_cut(85, 2).rows == 16 * 43 && edge_cut(85, 2).pieces == 2, "edge_cut");
static_assert(edge_cut(15, 4).rows == 16 * 4 && edge_cut(15, 4).pieces == 4, "edge_cut");
static_assert(edge_cut(5, 4).rows == 16 * 2 && edge_cut(5, 4).pieces == 3, "edge_cut");
/// Steps a block spends on each item it starts beyond the item's own: the
/// prologue's loads and pass 1's warm-up (KS1 - 1 blocks). A model number
/// for tail_plan, not measured alone.
constexpr int restart_steps(int ks1) { return ks1; }
/// The smallest gain, in 32nds of the plain wave's cost, for which tail_plan
/// takes a tail band: the model is rough, and 4K RGB gaussian:21 (37 -> 36
/// steps) was 1% slower with its plan, 4K gaussian:7 (25 -> 24) 3% faster
/// (notes, run 40).
constexpr int kTailMinGain32 = 1;
/// A one-wave layout with a tail band (MmaStreamParams::tail_items): `segs`
/// bands of `seg_steps` steps, one block an item, then a tail band of the
/// remaining `tail_steps` whose items the blocks left over walk in turn.
/// segs = 0: none.
struct TailPlan {
  int segs = 0;
  int seg_steps = 0;
  int tail_steps = 0;
};
/// The one-wave layout cuts every strip at the same rows, so its items
/// seldom fill the resident blocks' slots: 8K RGB has 122 items a band (120
/// strips, the two edge strips in halves) and 3 bands for 396 slots, 366
/// items, so 102 SMs hold three and 30 hold two, and the SMs of three set
/// the time (notes, run 40: 8320x4320, 132 x 3 items, took 2.5% longer than
/// 7680x4320 for 8% more pixels). The plan that ends soonest in the cost
/// model (steps a block, restart_steps(ks1) more an item) among `segs` <=
/// `wave_segs` bands and a tail band, taken only where it beats the plain
/// wave of `wave_segs` segments of `wave_steps` (8K RGB, two k-steps down:
/// 3 bands of 85 steps and a tail of 15 walked by 30 blocks, 87 against 92).
/// `steps`: 16-row steps of the rows; `n_int`, `n_edge`: interior and edge
/// strips; `factor`: the edge strips' segments are that many times shorter.
constexpr TailPlan tail_plan(int steps, int n_int, int n_edge, int factor, long long resident, int restart,
                             int wave_steps, int wave_segs) {
  TailPlan best{};
  // At least kTailMinGain32 / 32 fewer steps than the plain wave.
  long long best_cost = (wave_steps + restart) * (32 - kTailMinGain32) / 32 + 1;
  for (int segs = 1; segs <= wave_segs; ++segs)
    for (int s = steps / (segs + 1); s >= 1 && segs * s < steps; ++s) {
      const long long items = static_cast<long long>(n_int + n_edge * edge_cut(s, factor).pieces) * segs;
      const long long left = resident - items;
      if (left <= 0) break;  // items do not fall as s grows
      const int h = steps - segs * s;
      const long long tail_items = n_int + n_edge * edge_cut(h, factor).pieces;
      const long long rounds = (tail_items + left - 1) / left;
      const long long cost = std::max<long long>(s + restart, rounds * (h + restart));
      if (cost < best_cost) {
        best_cost = cost;
        best = TailPlan{segs, s, h};
      }
    }
  return best;
}
/// Blocks of input rows in flight in registers (1 or 2) while one is used.
constexpr int kPrefetch = 2;
/// The same for kernels of three vertical k-steps (sides 19..31): one set.
/// Their window (3 x C x 8 registers) leaves them at 2 blocks per SM, and
/// the 12 registers of a second set cost more than the loads it hides
/// (notes, run 32; H100 RGB, ms, two sets -> one: 8K gaussian:21 0.188 ->
/// 0.177 in bands, gaussian:31 0.197 -> 0.184; 4K gaussian:21 0.0625 ->
/// 0.0571; 1080p 0.0203 -> 0.0187. For the two-k-step sizes one set was a
/// tie or a loss at 8K: gaussian:11..17 +1-2%, and the INT instances, run 21).
/// The F16 instances too (run 44: two sets at 3 blocks per SM, 168
/// registers, 8K RGB gaussian:21 0.1014 -> 0.1031 ms, 4K 0.0309 -> 0.0356).
/// The lean instances (below) one set.
constexpr int prefetch_sets(int ks1, bool lean = false) { return ks1 == 3 || lean ? 1 : kPrefetch; }
/// __launch_bounds__ minimum blocks per SM: 3 (<= 168 registers) where the
/// window (KS1 x C x 8 registers) is at most 48 registers, else 2 (<= 255).
/// 4 (128 registers) was measured and not kept (run 17): the fp16-exact
/// instances fit it but ran no faster, the others spill; nor for the INT
/// instances (run 20: 32 bytes spilled at 3 channels, 8K 1-2% slower).
/// The F16 instances (no lo window, fragments or split) hold 3 blocks up to
/// 3 channels and three k-steps down (158-163 registers, no spill; notes,
/// run 44; 2 blocks per SM not measured for them).
constexpr int min_blocks_per_sm(int channels, int ks1, bool f16 = false, bool lean = false) {
  return lean ? 4 : channels * ks1 <= 6 || (f16 && channels * ks1 <= 9) ? 3 : 2;
}
/// Lean instances (LEAN): the F16 instances of two k-steps down (sides
/// 11..17, and 5..9 whose factors are no whole numbers) and the INT ones
/// (OpenCV's fixed gaussian:5, 7 and 9, binomials) on 1 and 3 channels with
/// one prefetch set fit 128 registers (F16 with no spill, against 160 and
/// 147 with two sets at RGB; INT with 24 bytes of spill, against 148), so 4
/// blocks a SM (16 warps) where the others hold 3 (one channel F16: 80
/// registers, 6 blocks, against 105-110 and 4). The kernel is bound by its issue latency (ncu,
/// H200, 8K RGB gaussian:11: issue slots 33% busy at 11.3 warps a SM,
/// waits on fixed-latency and shared-memory results 34% of the warps'
/// cycles), so the fourth block pays where the segments are long; where they
/// are short, the extra blocks cut them shorter still and the restarts
/// (restart_steps) cost more than the warps gain. Notes, run 47 (H200, RGB,
/// ms, 3 blocks with two sets / 4 with one; one channel in the notes): 8K gaussian:11 0.0902 / 0.0853,
/// gaussian:17 0.0905 / 0.0858 (one-wave segments of 68 steps); 4K 0.0257 /
/// 0.0252 (17 steps); 1080p 0.0105 / 0.0109, gaussian:17 0.0112 / 0.0116 (5
/// steps); 720p gaussian:17 0.0084 / 0.0087. 4 blocks with two sets (128
/// registers, 8-16 bytes of spill) were slower at 8K (0.0912). INT (run 47,
/// lean / not): 8K RGB gaussian:7 and 9 0.0860 / 0.0924, one channel 0.0405 /
/// 0.0498; 4K RGB 0.0261 / 0.0268, one channel 0.0140 / 0.0152; 1080p equal
/// (not taken). So the host
/// takes the lean instance where its one-wave segments would be at least
/// kLeanMinSegSteps steps long (or the band walk is forced); four channels
/// (window of 32 registers) and three k-steps down have none.
constexpr int kLeanMinSegSteps = 8;
constexpr bool has_lean(int channels, int ks1, bool f16, bool integer = false) {
  return (f16 || integer) && ks1 == 2 && channels <= 3;
}
/// Whether to take the lean instance: `steps` 16-row steps of the rows,
/// `n_int` interior and `n_edge` edge strips whose one-wave segments are
/// `factor` times shorter, `lean_resident` lean blocks at once, and whether
/// the band walk is forced (PIXELKIT_CUDA_FILTER_BANDS).
constexpr bool take_lean(int steps, int n_int, int n_edge, int factor, long long lean_resident, bool forced_bands) {
  const long long per_band = n_int + static_cast<long long>(factor) * n_edge;
  const long long want = lean_resident / per_band > 1 ? lean_resident / per_band : 1;  // bands for one wave
  return forced_bands || (steps + want - 1) / want >= kLeanMinSegSteps;
}
// H200 (132 SMs, 4 lean blocks each), RGB, edge columns from shared memory
// (factor 2): 8K (120 strips, 270 steps) and 4K (60, 135) take it, 1080p
// (30, 68) and 720p (20, 45) not.
static_assert(take_lean(270, 118, 2, 2, 528, false) && take_lean(135, 58, 2, 2, 528, false) &&
                  !take_lean(68, 28, 2, 2, 528, false) && !take_lean(45, 18, 2, 2, 528, false) &&
                  take_lean(45, 18, 2, 2, 528, true),
              "take_lean");
}  // namespace mma_stream_tuning

/// The last k-step of a pass of n taps whose band starts `shift` columns in
/// reaches only its first 8 k (the band covers 16 + n - 1 + shift columns):
/// gaussian 5..9 and 19..25 in both passes.
__host__ __device__ constexpr bool mma_stream_half(int n, int shift) {
  return 15 + n + shift - 16 * (mma_ksteps(n, shift) - 1) <= 8;
}

/// floor(n / 16) for any sign of n.
__host__ __device__ constexpr int floor_div16(int n) { return n >= 0 ? n / 16 : -((15 - n) / 16); }

/// Coefficients (scaled, see row) and the tile's alignment.
struct MmaStreamCoeffs {
  int nx, ny;
  int rx, ry;
  int ral;        ///< rx rounded up to 4: tile column 0 is image pixel x0 - ral
  /// The factors, scaled: the tiles hold each byte b as the fp16 subnormal
  /// b * 2^-24 (one PRMT a pair, no subtraction), so the row factors carry
  /// 2^row_scale and the column factors 2^(24 - row_scale), and the products
  /// come out unscaled. row_scale is as large as keeps the row factors below
  /// 2^15, so that pass 1's result (the input times 2^(row_scale - 24))
  /// stays in fp16's normal range down to a small fraction of a grey level.
  float row[32];  ///< horizontal factors, times 2^row_scale
  float col[32];  ///< vertical factors, times 2^(24 - row_scale)
  int row_scale;
  bool lo;        ///< a factor is not exact in fp16: the lo products run (the LO kernels)
  /// The F16 kernels instead (no lo parts at all; make_mma_stream_half): lo
  /// is set, and mma_stream_half_error_bound is at most kStreamHalfMaxError.
  bool f16;
  /// Integer factors (the INT kernels, notes run 20): row[] and col[] hold
  /// whole numbers 0..255 whose products over 2^int_shift are the kernel's
  /// coefficients exactly (make_mma_stream_integer). Both passes then run on
  /// u8 x u8 products with s32 sums, exactly, and the result is rounded once.
  bool integer;
  int int_shift;
  unsigned border_word;  ///< a constant border's value (a whole grey level) in each byte
};

struct MmaStreamParams {
  FilterArgs<std::uint8_t> a;
  MmaStreamCoeffs k;
  int strips;          ///< strips across the image (16 * kWarps pixels each)
  int segs;            ///< bands down the rows (segments of each interior strip)
  int seg_rows;        ///< output rows per band (an interior strip's segment), a multiple of 16
  int edge_seg_rows;   ///< rows per segment of the first and last strip (shorter: see kEdgeSegFactor)
  int edge_subs;       ///< edge-strip segments per band: ceil(seg_rows / edge_seg_rows)
  /// One wave with a tail band (mma_stream_tuning::tail_plan; 0 items: none).
  /// The segs bands above take one block an item; the rows from tail_y0 on
  /// form one more band of tail_rows, cut as the others are (edge strips in
  /// pieces of tail_edge_rows), whose items the remaining
  /// blocks of the grid walk in turn.
  int tail_items;
  int tail_y0;
  int tail_rows;
  int tail_edge_rows;
  bool vec16_dst; ///< dst base and pitch are 16-byte aligned
  /// Edge columns from shared memory (replicate, reflect or reflect101, a
  /// 4-byte-aligned source at least kMinFixWidth pixels wide; notes, run 35):
  /// lanes whose unit lies wholly outside the image load an in-image unit
  /// with word loads and, after each conversion, copy into their tile columns
  /// those of the pixels they map to. Else their pixels are byte loads
  /// through border_index, which each step waits for.
  bool fix_edges;
  /// Each block prefetches the input rows of its first item's first
  /// prefetch_rows output rows into L2 before pdl_begin (prefetch_rows_l2;
  /// PIXELKIT_CUDA_FILTER_PREFETCH); 0: none.
  int prefetch_rows;
  std::ptrdiff_t src_pitch_warps;  ///< kWarps source rows, in bytes (a warp's next row to load)
};

template <int C, int KS1, int KS2, bool INT = false>
struct MmaStreamGeom {
  static constexpr int out_stride(int s) { return (s / 2) % 32 == 8 || (s / 2) % 32 == 24 ? s : out_stride(s + 16); }
  static constexpr int kSW = mma_stream_tuning::kStripPx;
  static constexpr int kWIn = kSW - 16 + 16 * KS2;  ///< tile columns (pixels) per channel
  /// Bytes per tile element: an fp16 value, or the byte itself (INT).
  static constexpr int kElem = INT ? 1 : 2;
  static constexpr int kPer16 = 16 / kElem;  ///< elements per 16-byte unit
  /// Row stride in elements: an odd number of 16-byte units, so the 8 rows
  /// of an ldmatrix 8x8 land in 8 different bank groups.
  static constexpr int kS = (kWIn / kPer16) % 2 == 0 ? kWIn + kPer16 : kWIn;
  static constexpr int kPlane = 16 * kS;   ///< elements per channel plane of a 16-row block
  static constexpr int kBuf = C * kPlane;  ///< elements per buffer
  /// Bytes per staged output row: a multiple of 16 (16-byte flush loads) at
  /// least 16 C whose even rows 2t (t = 0..3, the lanes of one byte store in
  /// pass 2) start in four different 8-bank groups, so that those stores are
  /// free of bank conflicts: 16, 48, 80 bytes for 1, 3, 4 channels (16 C + 16
  /// put the four rows of C = 3 in one bank: 4-way conflicts). That is the
  /// INT instances' pass 2 (rows 2t); the others store rows g = 0..7 of 2 C
  /// bytes a lane (run 50), which meet some two-way conflicts at these
  /// strides (no stride keeps them all apart; not measured against others).
  static constexpr int kOutStride = out_stride(16 * C);
  static constexpr int kOutBytes = 16 * kOutStride;  ///< one warp's staging
  static constexpr int kSmemBytes = 2 * kBuf * kElem + mma_stream_tuning::kWarps * kOutBytes;
  static_assert(kWIn / 4 <= 32, "one lane per 4-pixel unit of a tile row");
  static_assert(kOutStride % 16 == 0 && kOutStride >= 16 * C, "16-byte flush of 16 C bytes a row");
};

/// Split x, y into fp16 hi + lo pairs by truncation: hi keeps the top 11
/// significant bits of each (exact in fp16 wherever the value is a normal
/// fp16), lo the rest rounded to fp16.
__device__ __forceinline__ void split_trunc_half2(float x, float y, unsigned& hi, unsigned& lo) {
  const float xh = __int_as_float(__float_as_int(x) & 0xFFFFE000);
  const float yh = __int_as_float(__float_as_int(y) & 0xFFFFE000);
  hi = half2_bits(__floats2half2_rn(xh, yh));
  lo = half2_bits(__floats2half2_rn(x - xh, y - yh));
}

// ---- the INT kernels (integer factors; notes, run 20) ------------------------

/// This thread's A fragment of pass 1's Toeplitz matrix in whole numbers:
/// H[i][k] = w[k - i - shift], one m16n8k32 u8 step over the warp's 32 tile
/// columns (register r: row g + 8 (r & 1), columns 4t .. 4t + 3, + 16 for
/// r >= 2, a byte each).
__device__ __forceinline__ void toeplitz_u8_a(unsigned (&a)[4], const float* w, int n, int shift, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int i = g + 8 * (r & 1), k = 4 * t + 16 * (r >> 1);
    unsigned v = 0u;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int idx = k + e - i - shift;
      v |= (idx >= 0 && idx < n ? static_cast<unsigned>(w[idx]) : 0u) << (8 * e);
    }
    a[r] = v;
  }
}

/// This thread's B fragment of pass 2's Toeplitz matrix in whole numbers for
/// n-tile nt (output rows o = 8 nt + g): V[k][o] = w[row(k) - o]. Window
/// position k holds input row row(k) of the 32 (two D1 blocks): pass 1 leaves
/// rows 2t, 2t + 1 (its n-tile 0) and 8 + 2t, 9 + 2t (n-tile 1) of a block
/// in lane t, packed as k = 4t .. 4t + 3, so
/// row(16 r + 4t + e) = 16 r + 8 (e >> 1) + 2t + (e & 1).
__device__ __forceinline__ void toeplitz_u8_b(unsigned (&b)[2], const float* w, int n, int nt, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    unsigned v = 0u;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int idx = 16 * r + 8 * (e >> 1) + 2 * t + (e & 1) - (8 * nt + g);
      v |= (idx >= 0 && idx < n ? static_cast<unsigned>(w[idx]) : 0u) << (8 * e);
    }
    b[r] = v;
  }
}

/// The 4 bytes of channel CH in a 4-pixel unit of C interleaved words (bytes
/// e C + CH, e = 0..3), as one planar word.
template <int C, int CH>
__device__ __forceinline__ unsigned unit_channel_u8(const unsigned (&w)[C]) {
  static_assert(C == 1 || C == 3 || C == 4, "1, 3 or 4 channels");
  if constexpr (C == 1) {
    return w[0];
  } else if constexpr (C == 4) {  // byte CH of each word
    constexpr unsigned sel = CH | ((4 + CH) << 4);
    return __byte_perm(__byte_perm(w[0], w[1], sel), __byte_perm(w[2], w[3], sel), 0x5410u);
  } else {  // bytes CH, CH + 3, CH + 6, CH + 9: those of w0 and w1, then those of w2
    constexpr int j[4] = {CH, CH + 3, CH + 6, CH + 9};
    constexpr unsigned sel1 = (j[0] < 8 ? j[0] : 0) | (j[1] < 8 ? j[1] : 0) << 4 | (j[2] < 8 ? j[2] : 0) << 8 |
                              (j[3] < 8 ? j[3] : 0) << 12;
    constexpr unsigned sel2 = (j[0] < 8 ? 0 : j[0] - 4) | (j[1] < 8 ? 1 : j[1] - 4) << 4 |
                              (j[2] < 8 ? 2 : j[2] - 4) << 8 | (j[3] < 8 ? 3 : j[3] - 4) << 12;
    return __byte_perm(__byte_perm(w[0], w[1], sel1), w[2], sel2);
  }
}

template <int C, int I = 0>
__device__ __forceinline__ void store_unit_u8(std::uint8_t* in, int plane, int off, const unsigned (&w)[C]) {
  if constexpr (I < C) {
    *reinterpret_cast<unsigned*>(in + I * plane + off) = unit_channel_u8<C, I>(w);
    store_unit_u8<C, I + 1>(in, plane, off, w);
  }
}

/// Two fp16 values as one word (a first, in the low half).
__device__ __forceinline__ unsigned pack_half2(__half a, __half b) {
  return static_cast<unsigned>(__half_as_ushort(a)) | static_cast<unsigned>(__half_as_ushort(b)) << 16;
}

/// store_unit<C, 0, true> (the 4-pixel unit of C interleaved words into the
/// C planes as fp16 subnormals), all channels at once: where the two pixels
/// of a pair lie in different words, one PRMT first gathers the bytes of two
/// such pairs into one word (RGB: r2, g2, r3, g3 from w1 and w2, and g0, b0,
/// g1, b1 from w0 and w1; four channels: two channels of pixels 0 and 1, or
/// of 2 and 3), then one PRMT a pair places them under zero bytes. RGB takes
/// 8 PRMT where store_unit takes 10, four channels 12 where it takes 16
/// (notes, session 45 and run 51); the same values (unit_channel's).
template <int C>
__device__ __forceinline__ void store_unit_gather(__half* in, int plane, int off, const unsigned (&w)[C]) {
  auto put = [&](int c, unsigned lo, unsigned hi) {
    *reinterpret_cast<uint2*>(in + c * plane + off) = make_uint2(lo, hi);
  };
  if constexpr (C == 3) {
    const unsigned x = __byte_perm(w[1], w[2], 0x6532u);  // r2 g2 r3 g3
    put(0, word_to_half2<true>(w[0], 0x4340u), word_to_half2<true>(x, 0x4240u));
    const unsigned y = __byte_perm(w[0], w[1], 0x5421u);  // g0 b0 g1 b1
    put(1, word_to_half2<true>(y, 0x4240u), word_to_half2<true>(x, 0x4341u));
    put(2, word_to_half2<true>(y, 0x4341u), word_to_half2<true>(w[2], 0x4340u));
  } else if constexpr (C == 4) {
    const unsigned rg0 = __byte_perm(w[0], w[1], 0x5410u), rg1 = __byte_perm(w[2], w[3], 0x5410u);  // r g, r g
    put(0, word_to_half2<true>(rg0, 0x4240u), word_to_half2<true>(rg1, 0x4240u));
    put(1, word_to_half2<true>(rg0, 0x4341u), word_to_half2<true>(rg1, 0x4341u));
    const unsigned ba0 = __byte_perm(w[0], w[1], 0x7632u), ba1 = __byte_perm(w[2], w[3], 0x7632u);  // b a, b a
    put(2, word_to_half2<true>(ba0, 0x4240u), word_to_half2<true>(ba1, 0x4240u));
    put(3, word_to_half2<true>(ba0, 0x4341u), word_to_half2<true>(ba1, 0x4341u));
  } else {
    store_unit<C, 0, true>(in, plane, off, w);
  }
}

/// Input rows of one 16-row block, loaded into registers before they are
/// converted: warp w loads rows w, w + kWarps, ...; lane q the 4-pixel unit q
/// (C words) of each. Rows beyond the image map through border_index once a
/// row; a unit inside the image is C word loads, one that reaches beyond it
/// (the strips at the left and right edges, or a source not 4-byte aligned)
/// is assembled from byte loads through border_index (those are waited for
/// at once: see kEdgeSegFactor). Word loads are issued kPrefetch blocks
/// ahead of their use.
template <int C>
struct MmaStreamLoads {
  unsigned w[mma_stream_tuning::kRowsPerWarp][C];

  /// The loads of a block whose rows and this lane's unit lie inside the
  /// image (issue's first case; the steady-state step calls it directly).
  __device__ __forceinline__ void issue_inside(const MmaStreamParams& p, std::ptrdiff_t fast, bool active) {
#pragma unroll
    for (int j = 0; j < mma_stream_tuning::kRowsPerWarp; ++j) {
      const unsigned* src = reinterpret_cast<const unsigned*>(p.a.src.data + fast + j * p.src_pitch_warps);
#pragma unroll
      for (int i = 0; i < C; ++i)
        if (active) w[j][i] = ldg_u32_prefetch(src + i);
    }
  }

  /// `cols`: the lane's unit lies inside the image and the source allows
  /// word loads; otherwise `off` holds the byte offset of each of its 4
  /// pixels in a row (-1: a constant border's pixel), worked out once per
  /// block. `rows`: the block's 16 rows lie inside the image (no
  /// border_index).
  /// `fast`: byte offset of the lane's unit in row yb + warp (used where
  /// both `rows` and `cols` hold).
  __device__ __forceinline__ void issue(const MmaStreamParams& p, int yb, bool rows, bool cols, int x,
                                        const int (&off)[4], bool active, int warp, std::ptrdiff_t fast) {
    const FilterArgs<std::uint8_t>& a = p.a;
    // The common case first, with nothing after the loads that writes their
    // registers (a later write would wait for them: the prefetch would stall).
    if (rows && cols) {
      issue_inside(p, fast, active);
      return;
    }
    if (!active) return;
#pragma unroll
    for (int j = 0; j < mma_stream_tuning::kRowsPerWarp; ++j) {
      const int r = warp + mma_stream_tuning::kWarps * j;
      const int sy = rows ? yb + r : border_index(yb + r, a.src.height, a.mode);
      if (sy < 0) {
#pragma unroll
        for (int i = 0; i < C; ++i) w[j][i] = p.k.border_word;
      } else if (cols) {
        const unsigned* src = reinterpret_cast<const unsigned*>(a.src.row(sy) + x * C);
#pragma unroll
        for (int i = 0; i < C; ++i) w[j][i] = __ldg(src + i);
      } else {
        const std::uint8_t* row = a.src.row(sy);
        unsigned v[C];
#pragma unroll
        for (int i = 0; i < C; ++i) v[i] = 0u;
#pragma unroll
        for (int e = 0; e < 4; ++e)
#pragma unroll
          for (int c = 0; c < C; ++c) {
            const unsigned b = off[e] < 0 ? (p.k.border_word & 0xFFu) : __ldg(row + off[e] + c);
            v[(e * C + c) / 4] |= b << (8 * ((e * C + c) % 4));
          }
#pragma unroll
        for (int i = 0; i < C; ++i) w[j][i] = v[i];
      }
    }
  }

  /// Planar fp16 into `buf` (C planes of 16 rows x S halves), each byte b
  /// as the subnormal b * 2^-24 (MmaStreamCoeffs::row_scale); or, for the
  /// INT kernels, planar bytes (C planes of 16 rows x S bytes). GATHER: the
  /// fp16 units through store_unit_gather (fewer PRMT, more registers; the
  /// kernel's choice, notes run 51).
  template <int S, bool GATHER, typename E>
  __device__ __forceinline__ void store(E* buf, int units, int warp, int lane) const {
#pragma unroll
    for (int j = 0; j < mma_stream_tuning::kRowsPerWarp; ++j) {
      const int r = warp + mma_stream_tuning::kWarps * j;
      if (lane < units) {
        if constexpr (sizeof(E) == 1)
          store_unit_u8<C>(buf, 16 * S, r * S + 4 * lane, w[j]);
        else if constexpr (GATHER)
          store_unit_gather<C>(buf, 16 * S, r * S + 4 * lane, w[j]);
        else
          store_unit<C, 0, true>(buf, 16 * S, r * S + 4 * lane, w[j]);
      }
    }
  }
};

/// The separable filter (see the header comment). One block per (strip,
/// segment); blockIdx.x = segment * strips + strip. HALF: in both passes the
/// band of the last k-step ends within its first 8 k (mma_stream_half): that
/// step runs as m16n8k8 products on the first half of its operands. LO: some
/// factor has an fp16 lo part (MmaStreamCoeffs::lo); without it the products
/// with the coefficients' lo parts (all zero) are left out. INT: integer
/// factors (MmaStreamCoeffs::integer; KS1 = KS2 = 2, HALF and LO false):
/// the tiles hold the bytes themselves, each pass is one m16n8k32 u8 x u8
/// step a 16 x 8 block (pass 2 twice: pass 1's s32 result enters it as its
/// lo and hi bytes), and the exact sum is rounded once, ties to even. F16
/// (MmaStreamCoeffs::f16; LO and INT false): pass 1's result rounded to fp16
/// and no lo part anywhere.
template <int C, int KS1, int KS2, bool HALF, bool LO = true, bool INT = false, bool F16 = false, bool LEAN = false>
__global__ void __launch_bounds__(mma_stream_tuning::kThreads, mma_stream_tuning::min_blocks_per_sm(C, KS1, F16, LEAN))
    separable_mma_stream_kernel(const __grid_constant__ MmaStreamParams p) {
#if PIXELKIT_MMA_ENABLED
  static_assert(!LEAN || mma_stream_tuning::has_lean(C, KS1, F16, INT), "LEAN: F16 or INT, two k-steps down, 1 or 3 channels");
  static_assert(!INT || (KS1 == 2 && KS2 == 2 && !HALF && !LO), "INT: one k32 step each way");
  static_assert(!F16 || (!LO && !INT), "F16: hi products alone");
  using G = MmaStreamGeom<C, KS1, KS2, INT>;
  using E = std::conditional_t<INT, std::uint8_t, __half>;  // a tile element
  constexpr int S = G::kS;
  // The input conversion with gathered pairs where it measured faster (H200,
  // notes, run 51: the F16 instances that are not lean, -1% at 8K RGB
  // gaussian:19..31, -1 to -2% at four channels); the lean instances spill
  // with it (24 bytes where 4; +3% at 8K), and the LO ones were not measured.
  constexpr bool kGather = F16 && !LEAN;
  extern __shared__ float4 smem4[];
  E* const buf0 = reinterpret_cast<E*>(smem4);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  std::uint8_t* const stage = reinterpret_cast<std::uint8_t*>(smem4) + 2 * G::kBuf * G::kElem + warp * G::kOutBytes;

  const FilterArgs<std::uint8_t>& a = p.a;
  const MmaStreamCoeffs& k = p.k;
  const int width = a.src.width;
  const int shift = k.ral - k.rx;
  const int units = (G::kSW + k.nx - 1 + shift + 3) / 4;  // 4-pixel units per row that matter

  // Columns no coefficient reaches stay zero in both buffers (ldmatrix reads them).
  for (int i = threadIdx.x; i < 2 * G::kBuf * G::kElem / 4; i += mma_stream_tuning::kThreads)
    reinterpret_cast<unsigned*>(buf0)[i] = 0u;
  __syncthreads();

  // Toeplitz fragments of both passes, once per thread.
  // (Without LO the lo fragments are zero and unused: the compiler drops them.)
  unsigned hh[KS2][4], hl[KS2][4];
  unsigned va[KS1][4], val[KS1][4];  // pass 2's A: V^T[o][k] = col[16 s + k - o] (hi, lo)
  [[maybe_unused]] unsigned hq[4], vq[2][2];  // INT: whole-number factors
  [[maybe_unused]] float int_scale = 0.0f;    // INT: 2^-int_shift
  if constexpr (INT) {
    toeplitz_u8_a(hq, k.row, k.nx, shift, lane);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) toeplitz_u8_b(vq[nt], k.col, k.ny, nt, lane);
    int_scale = __int_as_float((127 - k.int_shift) << 23);
  } else {
#pragma unroll
    for (int s = 0; s < KS2; ++s) toeplitz_fragment(hh[s], hl[s], k.row, k.nx, s, shift, lane);
#pragma unroll
    for (int s = 0; s < KS1; ++s) toeplitz_fragment(va[s], val[s], k.col, k.ny, s, 0, lane);
  }

  // The flush's 16-byte chunks: 16 rows x C chunks of a warp's staging,
  // lane + 32 it -> (row, chunk); a row of 16 marks a lane without one.
  constexpr int kFlushIts = (16 * C + 31) / 32;
  int fl_r[kFlushIts], fl_q[kFlushIts];
#pragma unroll
  for (int it = 0; it < kFlushIts; ++it) {
    const int u = lane + 32 * it;
    fl_r[it] = u < 16 * C ? u / C : 16;
    fl_q[it] = u - (u / C) * C;
  }

  // Work items: the rows are cut into bands of seg_rows; a band holds one
  // item per interior strip, then edge_subs shorter items for each edge
  // strip (kEdgeSegFactor). Items go round-robin to the blocks of the grid,
  // band after band. (One wave of long bands gives each block one item: the
  // layout of every image but those whose wave would leave SMs idle, see
  // mma_stream_tuning::walk_bands.)
  const int n_int = p.strips >= 3 ? p.strips - 2 : 0;
  const int n_edge = min(p.strips, 2);
  const int per_band = n_int + n_edge * p.edge_subs;
  const int n_items = per_band * p.segs;  // the bands' items; the tail band's follow
  // Item `item`'s strip and output rows [y0, y_lim).
  auto item_rows = [&](int item, int& strip, int& y0, int& y_lim) {
    int r, band_y, rows, edge_rows;
    if (item < n_items) {
      const int band = item / per_band;
      r = item - band * per_band;
      band_y = a.y_begin + band * p.seg_rows;
      rows = p.seg_rows;
      edge_rows = p.edge_seg_rows;
    } else {
      r = item - n_items;
      band_y = p.tail_y0;
      rows = p.tail_rows;
      edge_rows = p.tail_edge_rows;
    }
    if (r < n_int) {
      strip = 1 + r;
      y0 = band_y;
      y_lim = min(y0 + rows, a.y_end);
    } else {
      const int e = r - n_int, sub = e / n_edge;
      strip = e - sub * n_edge == 0 ? 0 : p.strips - 1;
      y0 = band_y + sub * edge_rows;
      y_lim = min(min(y0 + edge_rows, band_y + rows), a.y_end);
    }
  };
  // Without a tail band every block takes items blockIdx.x, + gridDim.x, ...;
  // with one, the first n_items blocks take their own item alone and the
  // others the tail band's items in turn.
  const int n_all = n_items + p.tail_items;
  const int item_step = p.tail_items == 0                         ? static_cast<int>(gridDim.x)
                        : static_cast<int>(blockIdx.x) < n_items ? n_all
                                                                  : static_cast<int>(gridDim.x) - n_items;
  if (p.prefetch_rows > 0 && static_cast<int>(blockIdx.x) < n_all) {
    int strip, y0, y_lim;
    item_rows(static_cast<int>(blockIdx.x), strip, y0, y_lim);
    const int xs = strip * G::kSW - k.ral;  // image pixel of tile column 0
    prefetch_rows_l2(a.src, y0 - k.ry, min(y_lim, y0 + p.prefetch_rows) + k.ry, xs * C,
                     (xs + 4 * units) * C, static_cast<int>(threadIdx.x), mma_stream_tuning::kThreads);
  }

  pdl_begin();  // no global memory access before this line

#pragma unroll 1
  for (int item = static_cast<int>(blockIdx.x); item < n_all; item += item_step) {
    int strip, y0, y_lim;
    item_rows(item, strip, y0, y_lim);
    if (y0 >= y_lim) continue;  // uniform over the block
    const int x0 = strip * G::kSW;  // first output pixel of the strip
    const int nsteps = (y_lim - y0 + 15) / 16;
    const int nb = nsteps + KS1 - 1;  // D1 blocks of the segment
    const int xs = x0 - k.ral;                               // image pixel of tile column 0
    const bool cols_inside = a.vec_src && xs >= 0 && xs + 4 * units <= width;
    auto block_row = [&](int b) { return y0 - k.ry + 16 * b; };

    // Block b's rows travel in register set b % PF.
    constexpr int PF = mma_stream_tuning::prefetch_sets(KS1, LEAN);
    static_assert(PF == 1 || PF == 2, "one or two register sets");
    MmaStreamLoads<C> pre[PF];
    auto with_set = [&](int b, auto f) {
      if (PF == 1 || (b & 1) == 0)
        f(pre[0]);
      else
        f(pre[PF - 1]);
    };
    // This lane's unit of a row: whole words where it lies inside the image,
    // else its 4 pixels' byte offsets through border_index (once per block).
    const int lx = xs + 4 * lane;
    const bool lane_active = lane < units;
    // p.fix_edges: a lane whose unit lies wholly outside the image loads the
    // image's first (or last whole) unit instead, as words prefetched like
    // every other lane's, and fix_columns then overwrites its tile columns
    // with those of the pixels they map to: lane_px holds those columns (its
    // own for a pixel that maps outside the tile, which no output inside the
    // image reaches).
    const bool fix_item = p.fix_edges && !cols_inside;  // uniform over the block
    const bool lane_fix = fix_item && lane_active && (lx + 4 <= 0 || lx >= width);
    const bool lane_words = cols_inside || lane_fix || (a.vec_src && lx >= 0 && lx + 4 <= width);
    const int lx_load = !lane_fix ? lx : lx < 0 ? 0 : (width - 4) & ~3;
    int lane_px[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (lane_fix) {
        const int col = border_index(lx + e, width, a.mode) - xs;
        lane_px[e] = col >= 0 && col < 4 * units ? col : 4 * lane + e;  // else its own column: unchanged
      } else {
        const int sx = lane_words ? 0 : border_index(lx + e, width, a.mode);
        lane_px[e] = sx < 0 ? -1 : sx * C;
      }
    }
    // Byte offset of this lane's unit in the warp's first row of a block
    // (rows then advance by kWarps rows: no address is formed from scratch
    // per row).
    const std::ptrdiff_t lane_src = static_cast<std::ptrdiff_t>(warp) * a.src.pitch + lx_load * C;
    auto issue = [&](int b) {
      if (b >= nb) return;
      const int yb = block_row(b);
      const bool rows = yb >= 0 && yb + 16 <= a.src.height;
      const std::ptrdiff_t fast = static_cast<std::ptrdiff_t>(yb) * a.src.pitch + lane_src;
      with_set(b, [&](MmaStreamLoads<C>& l) {
        l.issue(p, yb, rows, lane_words, lx_load, lane_px, lane_active, warp, fast);
      });
    };
    // After a conversion into buf: the fix lanes' columns from the columns of
    // the pixels they map to. A warp converts whole rows (rows warp, warp +
    // kWarps, ...), so the columns it reads are its own lanes' stores.
    // A row's 4 C elements are read first, then stored as one word (bytes)
    // or two (fp16) a channel: the reads do not wait for the stores.
    auto fix_columns = [&](E* buf) {
      __syncwarp();
      if (lane_fix) {
#pragma unroll
        for (int j = 0; j < mma_stream_tuning::kRowsPerWarp; ++j) {
          E* const row = buf + (warp + mma_stream_tuning::kWarps * j) * S;
          if constexpr (INT) {
            unsigned v[C];
#pragma unroll
            for (int c = 0; c < C; ++c) {
              v[c] = 0u;
#pragma unroll
              for (int e = 0; e < 4; ++e) v[c] |= static_cast<unsigned>(row[c * G::kPlane + lane_px[e]]) << (8 * e);
            }
#pragma unroll
            for (int c = 0; c < C; ++c) *reinterpret_cast<unsigned*>(row + c * G::kPlane + 4 * lane) = v[c];
          } else {
            uint2 v[C];
#pragma unroll
            for (int c = 0; c < C; ++c) {
              const E* const src = row + c * G::kPlane;
              v[c].x = pack_half2(src[lane_px[0]], src[lane_px[1]]);
              v[c].y = pack_half2(src[lane_px[2]], src[lane_px[3]]);
            }
#pragma unroll
            for (int c = 0; c < C; ++c) *reinterpret_cast<uint2*>(row + c * G::kPlane + 4 * lane) = v[c];
          }
        }
      }
    };
    auto convert = [&](int b) {
      E* buf = buf0 + (b & 1) * G::kBuf;
      with_set(b, [&](const MmaStreamLoads<C>& l) { l.template store<S, kGather>(buf, units, warp, lane); });
      if (fix_item) fix_columns(buf);
    };

    // ldmatrix x4 row address of this lane: matrices (rows 0-7 | 8-15) x (columns 0-7 | 8-15);
    // x2 (a half step): (rows 0-7, columns 0-7), (rows 8-15, columns 0-7).
    // (INT: bytes, the same matrices: rows 0-7 | 8-15 x bytes 0-15 | 16-31.)
    const int lrow = (lane & 7) + 8 * (lane >> 4), lcol = G::kPer16 * ((lane >> 3) & 1);
    const int lane_off = lrow * S + 16 * warp + lcol;
    [[maybe_unused]] const int lane_off_x2 = ((lane & 7) + 8 * ((lane >> 3) & 1)) * S + 16 * warp;

    // The window: pass 1's result of KS1 consecutive blocks, as pass 2's A fragments.
    unsigned wh[KS1][C][4], wl[KS1][C][4];

    // Pass 1 on block b (buffer b % 2) into window slot SLOT.
    auto pass1 = [&](int b, auto slot_c) {
      constexpr int SLOT = decltype(slot_c)::value;
      const E* base = buf0 + (b & 1) * G::kBuf + lane_off;
      if constexpr (INT) {
        // One k32 step per n-tile; the s32 sums (0..65535) leave as their lo
        // and hi bytes, rows 2t, 2t + 1, 8 + 2t, 9 + 2t of the block packed
        // into one word each (window position k = 4t .. 4t + 3, toeplitz_u8_b):
        // registers 0 / 1 for pixels g / g + 8.
#pragma unroll
        for (int c = 0; c < C; ++c) {
          unsigned b0, b1, b2, b3;
          ldsm_x4(b0, b1, b2, b3, base + c * G::kPlane);
          unsigned d0[4] = {0u, 0u, 0u, 0u}, d1[4] = {0u, 0u, 0u, 0u};
          mma_16832_u8(d0, hq, b0, b1);
          mma_16832_u8(d1, hq, b2, b3);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const unsigned x = __byte_perm(d0[2 * h], d0[2 * h + 1], 0x5140u);  // lo, lo, hi, hi of rows 2t, 2t + 1
            const unsigned y = __byte_perm(d1[2 * h], d1[2 * h + 1], 0x5140u);  // of rows 8 + 2t, 9 + 2t
            wl[SLOT][c][h] = __byte_perm(x, y, 0x5410u);
            wh[SLOT][c][h] = __byte_perm(x, y, 0x7632u);
          }
        }
      } else {
#pragma unroll
        for (int c = 0; c < C; ++c) {
          float d0[4] = {0.0f, 0.0f, 0.0f, 0.0f}, d1[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
          for (int s = 0; s < KS2; ++s) {
            if (HALF && s == KS2 - 1) {  // columns 16 s .. 16 s + 7 only
              unsigned b0, b2;
              ldsm_x2(b0, b2, buf0 + (b & 1) * G::kBuf + lane_off_x2 + c * G::kPlane + 16 * s);
              mma_1688(d0, hh[s][0], hh[s][1], b0);
              mma_1688(d1, hh[s][0], hh[s][1], b2);
              if (LO) {
                mma_1688(d0, hl[s][0], hl[s][1], b0);
                mma_1688(d1, hl[s][0], hl[s][1], b2);
              }
            } else {
              unsigned b0, b1, b2, b3;
              ldsm_x4(b0, b1, b2, b3, base + c * G::kPlane + 16 * s);
              mma_16816(d0, hh[s], b0, b1);
              mma_16816(d1, hh[s], b2, b3);
              if (LO) {
                mma_16816(d0, hl[s], b0, b1);
                mma_16816(d1, hl[s], b2, b3);
              }
            }
          }
          // d0: (pixel g | g + 8, rows 2t, 2t + 1); d1: rows + 8. A fragment of
          // pass 2: (pixel g, rows 2t..), (g + 8, 2t..), (g, 2t + 8..), (g + 8, 2t + 8..).
          if constexpr (F16) {  // rounded to fp16, no lo part
            wh[SLOT][c][0] = half2_bits(__floats2half2_rn(d0[0], d0[1]));
            wh[SLOT][c][1] = half2_bits(__floats2half2_rn(d0[2], d0[3]));
            wh[SLOT][c][2] = half2_bits(__floats2half2_rn(d1[0], d1[1]));
            wh[SLOT][c][3] = half2_bits(__floats2half2_rn(d1[2], d1[3]));
          } else {
            split_trunc_half2(d0[0], d0[1], wh[SLOT][c][0], wl[SLOT][c][0]);
            split_trunc_half2(d0[2], d0[3], wh[SLOT][c][1], wl[SLOT][c][1]);
            split_trunc_half2(d1[0], d1[1], wh[SLOT][c][2], wl[SLOT][c][2]);
            split_trunc_half2(d1[2], d1[3], wh[SLOT][c][3], wl[SLOT][c][3]);
          }
        }
      }
    };

    // Pass 2 for output block j from the window (slot of block j + s: (P + s)
    // % KS1), rounded into the warp's staging rows.
    auto pass2 = [&](auto p_c) {
      constexpr int P = decltype(p_c)::value;
      if constexpr (INT) {
        // acc = 256 acc_hi + acc_lo < 2^24 (one IMAD), exact as a float (one
        // I2F), and acc * 2^-s rounded to the nearest integer (ties to even,
        // as ref) by adding 1.5 * 2^23 (one FFMA): the low byte of its bits is
        // the output (the host takes only kernels whose outputs lie in
        // 0..255: no saturation). The sums start at zero, so the products take
        // RZ as their C operand (sums started at the bits of 2^23, to read as
        // floats without the I2F, cost a move per register: run 20's first
        // version).
        constexpr int P1 = (P + 1) % KS1;
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const unsigned alo[4] = {wl[P][c][0], wl[P][c][1], wl[P1][c][0], wl[P1][c][1]};
          const unsigned ahi[4] = {wh[P][c][0], wh[P][c][1], wh[P1][c][0], wh[P1][c][1]};
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) {
            unsigned dl[4] = {0u, 0u, 0u, 0u}, dh[4] = {0u, 0u, 0u, 0u};
            mma_16832_u8(dh, ahi, vq[nt][0], vq[nt][1]);
            mma_16832_u8(dl, alo, vq[nt][0], vq[nt][1]);
            unsigned o8[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const unsigned acc = dh[i] * 256u + dl[i];  // < 2^24: exact as a float
              o8[i] = __float_as_uint(__fmaf_rn(__uint2float_rn(acc), int_scale, 12582912.0f));
            }
            std::uint8_t* o = stage + (8 * nt + 2 * t) * G::kOutStride + g * C + c;
            o[0] = static_cast<std::uint8_t>(o8[0]);
            o[G::kOutStride] = static_cast<std::uint8_t>(o8[1]);
            o[8 * C] = static_cast<std::uint8_t>(o8[2]);
            o[G::kOutStride + 8 * C] = static_cast<std::uint8_t>(o8[3]);
          }
        }
      } else {
        // Output rows as M, pixels as N (D2[o][x] = sum_s V_s^T[o][k] D1_s[k][x]):
        // the window's registers are the B fragments as they stand (pixels
        // 8 nt + g: registers nt and 2 + nt), and a thread's results are rows
        // g and g + 8 of pixels 8 nt + 2t, + 1 in every channel, 2 C bytes
        // side by side in the output row, packed two by two as they are
        // rounded (pack2_u8: one F2IP a pair) and staged in 2-byte (1 and 3
        // channels) or 8-byte (4 channels) stores. Rows 0..15 together reach
        // every window row but the last k-step's second 8 with HALF, so that
        // step is m16n8k8 there.
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          float d[C][4];
#pragma unroll
          for (int c = 0; c < C; ++c) {
#pragma unroll
            for (int i = 0; i < 4; ++i) d[c][i] = 0.0f;
#pragma unroll
            for (int s = 0; s < KS1; ++s) {
              const int slot = (P + s) % KS1;  // folded: P and s are compile-time after unrolling
              const unsigned bh0 = wh[slot][c][nt], bh1 = wh[slot][c][2 + nt];
              if (HALF && s == KS1 - 1) {  // window rows 16 s .. 16 s + 7 only
                mma_1688(d[c], va[s][0], va[s][1], bh0);
                if (!F16) mma_1688(d[c], va[s][0], va[s][1], wl[slot][c][nt]);
                if (LO) mma_1688(d[c], val[s][0], val[s][1], bh0);
              } else {
                mma_16816(d[c], va[s], bh0, bh1);
                if (!F16) mma_16816(d[c], va[s], wl[slot][c][nt], wl[slot][c][2 + nt]);
                if (LO) mma_16816(d[c], val[s], bh0, bh1);
              }
            }
          }
          // d[c]: (row g, pixels 8 nt + 2t, + 1), (row g + 8, the same pixels).
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            std::uint8_t* const o = stage + (g + 8 * h) * G::kOutStride + (8 * nt + 2 * t) * C;
            // Output byte e of the pair (pixel e / C, channel e % C).
            auto v = [&](int e) { return d[e % C][2 * h + e / C]; };
            if constexpr (C == 1) {
              *reinterpret_cast<unsigned short*>(o) = static_cast<unsigned short>(pack2_u8(v(0), v(1), 0u));
            } else if constexpr (C == 3) {  // 6 bytes at an even offset: three 2-byte stores
#pragma unroll
              for (int i = 0; i < 3; ++i)
                reinterpret_cast<unsigned short*>(o)[i] = static_cast<unsigned short>(pack2_u8(v(2 * i), v(2 * i + 1), 0u));
            } else {  // C == 4: 8 bytes at an 8-byte offset
              uint2 w;
              w.x = pack2_u8(v(0), v(1), pack2_u8(v(2), v(3), 0u));
              w.y = pack2_u8(v(4), v(5), pack2_u8(v(6), v(7), 0u));
              *reinterpret_cast<uint2*>(o) = w;
            }
          }
        }
      }
    };

    // The staged output block j to global memory: 16-byte stores where the
    // warp's 16 pixels lie inside the image, bytes at the right edge.
    const int xw = x0 + 16 * warp;  // first pixel of this warp's column
    const bool vec_out = xw + 16 <= width && p.vec16_dst;
    auto flush = [&](int j) {
      __syncwarp();
      const int oy = y0 + 16 * j;
      if (vec_out) {
        // Lane chunk it: staged row fl_r[it], 16-byte column fl_q[it] (lane constants).
        std::uint8_t* const dst_j = a.dst.row(oy) + xw * C;
#pragma unroll
        for (int it = 0; it < kFlushIts; ++it)
          if (fl_r[it] < 16 && oy + fl_r[it] < y_lim)
            *reinterpret_cast<uint4*>(dst_j + static_cast<std::ptrdiff_t>(fl_r[it]) * a.dst.pitch + 16 * fl_q[it]) =
                *reinterpret_cast<const uint4*>(stage + fl_r[it] * G::kOutStride + 16 * fl_q[it]);
      } else {
        const int bytes = min(width - xw, 16) * C;
        for (int u = lane; u < 16 * 16 * C; u += 32) {
          const int r = u / (16 * C), e = u - r * (16 * C);
          if (oy + r < y_lim && e < bytes) a.dst.row(oy + r)[xw * C + e] = stage[r * G::kOutStride + e];
        }
      }
      __syncwarp();  // the staging rows are read before pass 2 writes them again
    };
    // The same for a whole block of an interior strip (all 16 rows, 16-byte stores).
    [[maybe_unused]] auto flush_whole = [&](int j) {
      __syncwarp();
      std::uint8_t* const dst_j = a.dst.row(y0 + 16 * j) + xw * C;
#pragma unroll
      for (int it = 0; it < kFlushIts; ++it)
        if (fl_r[it] < 16)  // a lane constant: predicated stores
          *reinterpret_cast<uint4*>(dst_j + static_cast<std::ptrdiff_t>(fl_r[it]) * a.dst.pitch + 16 * fl_q[it]) =
              *reinterpret_cast<const uint4*>(stage + fl_r[it] * G::kOutStride + 16 * fl_q[it]);
      __syncwarp();
    };

    // Prologue: block 0 converted, blocks 1 .. kPrefetch in flight (block 1
    // sent before block 0 is waited for, so the warm-up waits no longer).
    issue(0);
    if (PF == 2) issue(1);
    convert(0);
    issue(PF == 2 ? 2 : 1);
    __syncthreads();

    // A step: convert block b + 1 into the other buffer (its register set is
    // then free), send block b + 1 + kPrefetch's loads into that set, then the
    // tensor-core work on block b in one stretch of code without branches, so
    // that the scheduler can interleave the two passes' product chains.
    // Warm-up: blocks 0 .. KS1 - 2 into the window.
    static_for<0, KS1 - 1>([&](auto bc) {
      constexpr int B = decltype(bc)::value;
      if (B + 1 < nb) convert(B + 1);
      issue(B + 1 + PF);
      pass1(B, bc);
      __syncthreads();
    });

    constexpr bool kSteadyStep = KS1 == 2 && PF == 2 && (LO || F16) && !HALF && !INT;
    // The general step (any block: rows beyond the image, the edge strips,
    // the segment's first and last steps).
    auto step = [&](int j, auto pc) {
      constexpr int P = decltype(pc)::value;
      const int b = j + KS1 - 1;
      if (j > 0) flush(j - 1);
      if (b + 1 < nb) convert(b + 1);
      issue(b + 1 + PF);
      pass1(b, std::integral_constant<int, (P + KS1 - 1) % KS1>{});
      pass2(pc);
      __syncthreads();
    };
    // Steps [fast_begin, fast_end) (multiples of KS1) take the steady-state
    // step instead: an interior strip, a step with a previous output block
    // (whole: not the segment's last), a next block to convert and one to
    // load whose rows all lie inside the image. Its flush, conversion, loads
    // and products are one stretch of code without branches (the register set
    // of a block is known at compile time: KS1 = kPrefetch = 2), so the
    // scheduler interleaves the conversion and the loads with the product
    // chains. Built where it was measured faster (notes, run 17): two k-steps
    // down, the lo products, no half step (sides 11..17; 8K RGB gaussian:11..17
    // -8 to -9%); the fp16-exact half-step instances (gaussian:5..9) were 2-10%
    // slower with it, and the INT ones 1-3% (run 20). The F16 instances of
    // sides 11..17 take it too (run 44, H100 RGB, ms, without -> with: 8K
    // gaussian:13 0.0981 -> 0.0968, 4K 0.0282 -> 0.0265); for three k-steps
    // (one register set, so the same code serves) it lost at 4K (+9%) and for
    // 19..25 at 8K (+3%), gaining 2% for 27..31 at 8K only: not built.
    int fast_begin = 0, fast_end = 0;
    if constexpr (kSteadyStep) {
      const bool fast_item = cols_inside && p.vec16_dst && x0 + G::kSW <= width;
      if (fast_item) {
        // Block b' = j + KS1 + PF is loaded at step j: rows y0 - ry + 16 b' .. + 15.
        const int lo_rows = -floor_div16(y0 - k.ry) - KS1 - PF;  // first j with the block's rows >= 0
        const int hi_rows = floor_div16(a.src.height - 16 - y0 + k.ry) - KS1 - PF + 1;  // past the last
        const int lo = max(1, lo_rows), hi = min(nsteps - 1 - PF, hi_rows);
        const int first = (lo + KS1 - 1) / KS1 * KS1;
        if (hi - first >= KS1) {  // else no steady step: the general steps take the whole segment
          fast_begin = first;
          fast_end = first + (hi - first) / KS1 * KS1;
        }
      }
    }
    int j0 = 0;
#pragma unroll 1
    for (int phase = 0; phase < 3; ++phase) {
      if (phase == 1) {
        if constexpr (kSteadyStep) {
#pragma unroll 1
          for (j0 = fast_begin; j0 < fast_end; j0 += KS1) {
            static_for<0, KS1>([&](auto pc) {
              constexpr int P = decltype(pc)::value;  // = the parity of the blocks converted and loaded
              const int j = j0 + P;
              const int b = j + KS1 - 1;
              flush_whole(j - 1);
              pre[P].template store<S, kGather>(buf0 + ((b + 1) & 1) * G::kBuf, units, warp, lane);
              pre[P].issue_inside(p, static_cast<std::ptrdiff_t>(block_row(b + 1 + PF)) * a.src.pitch + lane_src,
                                  lane_active);
              pass1(b, std::integral_constant<int, (P + KS1 - 1) % KS1>{});
              pass2(pc);
              __syncthreads();
            });
          }
          j0 = fast_end;
        }
        continue;
      }
      const int to = phase == 0 ? fast_begin : nsteps;
      for (; j0 < to; j0 += KS1)
        static_for<0, KS1>([&](auto pc) {
          if (j0 + decltype(pc)::value < to) step(j0 + decltype(pc)::value, pc);  // uniform over the block
        });
    }
    flush(nsteps - 1);
  }
#else
  (void)p;
#endif
}

// ---- the instances built, and the table that picks one -----------------------

template <int C, int KS1, int KS2, bool HALF = false, bool LO = true, bool INT = false, bool F16 = false,
          bool LEAN = false>
MmaKernelInfo mma_stream_info() {
  return {reinterpret_cast<const void*>(separable_mma_stream_kernel<C, KS1, KS2, HALF, LO, INT, F16, LEAN>),
          MmaStreamGeom<C, KS1, KS2, INT>::kSmemBytes};
}

// The half-step rule at the sides it is meant for (shift = ral - rx).
static_assert(mma_stream_half(5, 2) && mma_stream_half(7, 1) && mma_stream_half(9, 0) && !mma_stream_half(11, 3) &&
                  !mma_stream_half(17, 0) && mma_stream_half(19, 3) && mma_stream_half(25, 0) &&
                  !mma_stream_half(27, 3) && mma_stream_half(5, 0) && !mma_stream_half(11, 0),
              "gaussian 5..9 and 19..25 end their last k-step within 8 columns, 11..17 and 27..31 do not");

/// separable_mma_stream_kernel<C, KS1, KS2, HALF, LO, INT, F16> for these
/// coefficients (its k-steps, whether the last one is half and whether the lo
/// products run follow from them): the table of the instances built for C
/// channels. Instantiated once per channel count, each in a file of its own
/// (filter_cuda_mma_stream_c1.cu, _c3.cu, _c4.cu, mma_stream_kernel_c1 ...):
/// CUDA's lazy loading loads (and unpacks) a file's whole module on the first
/// launch of any of its kernels, so that a process filtering RGB images loads
/// the RGB instances alone, and the build spreads them over its jobs. H100,
/// the first cuda gaussian:21 of a `pixelkit filter` run: 108.6 ms with every
/// tensor-core instance in one file, 51-59 ms with the streaming ones in one,
/// 15-21 ms with a file per channel count (compressed, as the library's cubins
/// all are; 5-7 ms raw: notes, session 35).
///
/// lean: the lean instance (LEAN, mma_stream_tuning::has_lean) where there is
/// one, else the same as without.
template <int C>
MmaKernelInfo mma_stream_pick(const MmaStreamCoeffs& k, bool lean) {
  const int ks1 = mma_ksteps(k.ny, 0), ks2 = mma_ksteps(k.nx, k.ral - k.rx);
  const bool half = mma_stream_half(k.ny, 0) && mma_stream_half(k.nx, k.ral - k.rx);
  const bool lo = k.lo, integer = k.integer, f16 = k.f16;
  if (integer) {
    if constexpr (mma_stream_tuning::has_lean(C, 2, false, true))
      if (lean) return mma_stream_info<C, 2, 2, false, false, true, false, true>();
    return mma_stream_info<C, 2, 2, false, false, true>();  // make_mma_stream_integer: ks1 = ks2 = 2
  }
  // fp16 products alone (make_mma_stream_half: both passes on the same k-steps).
  if (f16 && ks1 == 2) {
    if constexpr (mma_stream_tuning::has_lean(C, 2, true))
      if (lean)
        return half ? mma_stream_info<C, 2, 2, true, false, false, true, true>()
                    : mma_stream_info<C, 2, 2, false, false, false, true, true>();
    return half ? mma_stream_info<C, 2, 2, true, false, false, true>()
                : mma_stream_info<C, 2, 2, false, false, false, true>();
  }
  if (f16)
    return half ? mma_stream_info<C, 3, 3, true, false, false, true>()
                : mma_stream_info<C, 3, 3, false, false, false, true>();
  // Half last steps only where both passes take the same k-steps (square
  // kernels: gaussian 5..9 and 19..25), and factors exact in fp16 (no lo
  // products) only with those of 5..9 (OpenCV's fixed Gaussians 5, 7, 9 and
  // binomials), to bound the instances built.
  if (half && ks1 == ks2 && ks1 <= 2)
    return lo ? mma_stream_info<C, 2, 2, true>() : mma_stream_info<C, 2, 2, true, false>();
  if (half && ks1 == ks2) return mma_stream_info<C, 3, 3, true>();
  if (ks1 <= 2) return ks2 <= 2 ? mma_stream_info<C, 2, 2>() : mma_stream_info<C, 2, 3>();
  return ks2 <= 2 ? mma_stream_info<C, 3, 2>() : mma_stream_info<C, 3, 3>();
}

}  // namespace pixelkit::detail::cuda_filter
