// Dense u8 filter on the tensor cores (mma.sync m16n8k16, fp16 operands, fp32
// accumulation): kernels up to 9x9, any coefficients, FP32-accurate. The
// FP32 dense kernel (filter_cuda_kernels.cuh) spends ~17 instructions per
// output on a 3x3 and 81 FFMA on a 9x9; this one spends a few, most of them
// on moving bytes (docs/notes-filter-cuda.md, run 9).
//
// Formulation. For kernel row ky, the 16 x 8 outputs of image rows y..y+15
// and columns n0..n0+7 are
//   D += A_ky(16x16) * B_ky(16x8),
//   A_ky[m][k] = input[y + m + ky][n0 - 4 + k]       (the data, from shared memory)
//   B_ky[k][n] = c[ky][kx]  where k = n + 4 + (kx - rx) * Q   (zero elsewhere),
// so one k-step covers every kernel whose horizontal reach rx*Q is at most 4.
// The data operand of row ky is the tile read ky rows lower: ldmatrix takes
// any row address, so the shift costs nothing. Q is the distance between
// taps in the tile's columns:
// - element domain (Q = C): the tile keeps the image's interleaved layout;
//   used when rx * C <= 4 (3x3 on 1..4 channels, any kernel on 1 channel);
// - planar (Q = 1): one fp16 plane per channel; used otherwise (rx <= 4).
// A warp computes 16 rows x 32 columns (4 n-tiles); a kernel row costs 4
// ldmatrix.x4 and 4 (8 with lo) m16n8k16 mma per 512 outputs, or, from 5
// rows up, where shared-memory bandwidth binds, 2 x4 and an x2 (two n-tiles
// multiplied from their neighbours' halves; mma_dense_tuning::load_scheme).
//
// Accuracy: u8 values are exact in fp16; each coefficient is split into fp16
// hi + lo (22 significant bits, less where lo is subnormal: the host checks
// that what hi + lo miss stays below the FP32 kernels' own rounding), and D
// accumulates hi*x + lo*x in fp32 (the products are exact). Kernels whose
// coefficients are all exact in fp16 (integer kernels, gaussian:3, ...) run
// the LO = false instance, without the lo products.
//
// Pipeline. A persistent grid; each block walks tiles of 64 pixels x 64 rows
// (16 to 48 rows on small grids: mma_dense_tuning::tile_rows; the edge
// columns' tiles first, then row-major).
// The raw u8 rows of the next tile (16 pixels of margin each side, so every
// 16-byte copy is aligned) travel by cp.async into one of two raw buffers
// while the current tile is converted to fp16, multiplied and stored; the
// u8 output tile is staged in the current raw buffer and leaves in 16-byte
// stores. Tiles within 16 pixels of the left or right edge map every column
// through border_index instead (a few per tile row); rows above and below
// the image are mapped row by row on the fast path.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "filter/filter_cuda_kernels.cuh"
#include "filter/filter_cuda_mma.cuh"

namespace pixelkit::detail::cuda_filter {

namespace mma_dense_tuning {
constexpr int kTilePx = 64;    ///< output pixels per tile (along x)
constexpr int kTileRows = 64;  ///< output rows per tile
constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kMarginPx = 16;  ///< raw rows hold pixels [px0 - 16, px0 + 80): 16-byte aligned for any C
constexpr int kMaxSide = 9;    ///< one k-step: horizontal reach at most 4 columns
/// How a kernel row's A operands are loaded (per warp unit of 4 n-tiles,
/// input columns 0..39 of the unit):
/// 0: one ldmatrix.x4 per n-tile (4 x4, 16 wavefronts, no register copies);
/// 1: x4 for n-tiles 0, 2 and 3; n-tile 1 takes the halves of 0 and 2 in
///    two m16n8k8 products (12 wavefronts, 5 mma for 4);
/// 2: x4 for n-tiles 0 and 2 and an x2 of columns 32..39; n-tiles 1 and 3
///    take the halves of their neighbours in two m16n8k8 products each
///    (10 wavefronts, 6 mma for 4: the tensor pipe's work is the same).
/// Measured: at KH = 9 scheme 0 -> 1 (x4 for n-tiles 0, 2 and 3, n-tile 1
/// from halves: 12 wavefronts, 5 mma) 0.222 -> 0.208-0.215 ms (H100, 8K RGB,
/// session 4); at KH = 5 0.1475 -> 0.1302 and at KH = 7, against a scheme
/// of each 8x8 block loaded once (x4 x4 x2, 8 m16n8k8), 0.1682 -> 0.1570
/// (H100, notes, run 39); scheme 1 -> 2 (H200, 8K RGB, fp16 coefficients,
/// two calls: notes, run 48) dense 5x5 0.1222 -> 0.1149, 7x7 0.1420 ->
/// 0.1310, 9x9 0.1632 -> 0.1489; 4K 9x9 0.0470 -> 0.0430; 1080p 2-3%. ncu
/// put dense 9x9 at 87% of the L1 data pipe, 80% of its wavefronts the
/// ldmatrix. The element-domain tile (1 channel; 3 and 4 channels with
/// one-column kernels) keeps scheme 1: with 2, ptxas spilled 4-68 bytes in
/// its 3-channel instances at the 80-register bound (not measured). 3x3 and
/// 1-row kernels keep scheme 0 (not measured with 1 or 2).
constexpr int load_scheme(int kh, bool planar) { return kh < 5 ? 0 : planar ? 2 : 1; }
/// Whether a warp packs the u8 results of the planes of its column half in
/// registers and stages them interleaved instead of storing each plane's
/// bytes as it ends (two byte stores a pixel pair and row a plane): planar,
/// 64-row tiles, where a warp's units are the C planes of one column half
/// (row block w % 4, groups w / 4 + 2 i). 3 channels: a pixel pair's 6 bytes
/// as a word and a half; 4 channels: its 8 bytes in one store.
/// Notes, run 48 (H200, 8K RGB, scheme 2 before): dense 5x5 0.1149 ->
/// 0.1064 ms, 7x7 0.1310 -> 0.1221, 9x9 0.1489 -> 0.1385 (three two-byte
/// stores first: 0.1107, 0.1279, 0.1428); ncu, 9x9: shared-memory store
/// wavefronts 8.0 M -> 5.4 M with the two-byte stores, the L1 data pipe 87%
/// -> 83%. 8K RGBA 0.1650 -> 0.1501, 0.1880 -> 0.1744, 0.2111 -> 0.2084; 4K
/// RGBA -9%, -7%, -1%. The short tiles' units do not line up that way (mbs row blocks,
/// groups by rounds). Not the hi + lo instances (LO), where the packed bytes
/// cost ptxas 140 bytes of spill at 9x9 RGB (8 at fp16).
constexpr bool packs_planes(int c, bool planar, bool rt, bool lo) { return c >= 3 && planar && !rt && !lo; }
/// Three blocks per SM where three fit in shared memory (up to 3 channels,
/// <= 73 KB each); two at 4 channels.
constexpr int min_blocks_per_sm(int channels) { return channels <= 3 ? 3 : 2; }
/// Kernel heights whose lo B fragments are read from shared memory, one
/// 8-byte load per kernel row, instead of held in 2 KH registers: 9, where at
/// the 80-register bound of 3 blocks the compiler ran one n-tile's 18
/// products as a chain after the others (notes, run 18; H100, 8K RGB dense
/// 9x9, two calls: 0.214 -> 0.206 ms, then 0.2076 -> 0.2063, medians of 5).
/// The hi ones too (16 bytes a row, raw rows narrowed to make room) were 7%
/// slower than neither.
constexpr bool lo_b_in_smem(int kh) { return kh == 9; }
/// Blocks take their tiles from a counter (MmaDenseParams::dynamic) where
/// there are at least this many tiles per block. Each block asks for its next
/// tile when it starts the current one, so in a short run the blocks that
/// started first, not those that end first, take the extra tiles (notes, run
/// 19; H100, RGB, ms: 8K, 20.6 tiles a block, dense 9x9 0.1999 -> 0.1891,
/// 7x7 0.1835 -> 0.1738, 5x5 0.1497 -> 0.1437; 1080p, 1.3 tiles a block,
/// 9x9 0.0326 -> 0.0354, 7x7 0.0294 -> 0.0316).
constexpr int kDynamicMinRounds = 4;
/// The automatic rule for square u8 kernels that the FP32 kernels also run
/// well (filter_cuda.cu): this kernel from this many waves of 64-row tiles
/// (tiles over resident blocks), the FP32 tiled kernel below. 5x5 with
/// short tiles (has_short_tiles: 3 and 4 channels): at every size, since
/// tiles of fewer rows shortened small grids' tails (tile_rows; notes, run
/// 38; H100, dense 5x5, ms, FP32 tiled / tensor cores, RGB: 640x480 0.0074 /
/// 0.0061, 720p 0.0117 / 0.0099, 1080p 0.0179 / 0.0162, 1440p 0.0263 /
/// 0.0231; 4 channels: 640x480 0.0091 / 0.0062, 720p 0.0135 / 0.0120, 1080p
/// 0.0215 / 0.0213). 5x5 with 64-row tiles only (1 channel): from 4 waves,
/// where the tile counter balances the tail away (run 30: RGB 4K 0.0499 ->
/// 0.0472; run 38, 1 channel with the tensor cores at every size: 640x480
/// 0.0052 -> 0.0086, 1080p 0.0102 -> 0.0110). 3x3 (which the row-streaming
/// kernel takes wherever it fits) keeps run 9's 12 waves.
constexpr int auto_min_waves(int side, bool short_tiles) {
  return side == 5 ? (short_tiles ? 0 : kDynamicMinRounds) : 12;
}
/// The instances that take tile heights at run time (RT; their shorter tiles
/// are what tile_rows picks below 4 waves): 3 and 4 channels, planar, 5 to 9
/// rows. Elsewhere tiles have kTileRows rows: 1 channel has too few warp
/// units for short tiles (2 column groups: a 16-row tile would leave 6 of 8
/// warps idle), 3x3 and 1-row kernels take other paths. Kept to these
/// because the run-time height costs the 64-row tiles 2-4% at 8K (3
/// channels) and 13-24% (1 channel: spills at 80 registers) where it is
/// compiled in (notes, run 38).
constexpr bool has_short_tiles(int c, int kh, bool planar) { return c >= 3 && kh >= 5 && planar; }
/// Output rows per tile for a launch of `tiles64` tiles of 64 rows (or
/// `tiles16` of 16) on `resident` blocks, kernel height `kh`. A grid of few
/// tiles a block ends on a long tail, and below a wave leaves slots empty;
/// shorter tiles cut both, at the cost of more input rows per output row
/// (kh - 1 a tile). 64 rows from kDynamicMinRounds waves (the tile counter
/// then evens the tail out), and for 9-row kernels where 64-row tiles make at
/// most 1.5 rounds; 48 from one wave; below one wave 16 rows where 16-row
/// tiles make at most two rounds (up to 7 rows), else 32. Measured on an H100,
/// u8, ms, dense 5x5 / 7x7 / 9x9 by tile rows 64, 48, 32, 16 (notes, run 40,
/// since a partial last band stores by 16 bytes; before, it stored bytes, and
/// the heights whose last band was partial lost: runs 38-39 had 48 at 4K and
/// 16 at 720p). RGB (3 blocks per SM): 4K (5.2 waves of 64) 0.0367 0.0398
/// 0.0450 0.0627 / 0.0445 0.0462 0.0515 0.0695 / 0.0522 0.0562 0.0629 0.0866;
/// 1440p (2.3) 0.0215 0.0206 0.0228 0.0305 / 0.0245 0.0236 0.0264 0.0345 /
/// 0.0278 0.0280 0.0326 0.0434; 1080p (1.3) 0.0146 0.0134 0.0147 0.0191 /
/// 0.0164 0.0157 0.0173 0.0221 / 0.0177 0.0189 0.0214 0.0275; 720p (0.6)
/// 0.0127 0.0112 0.0093 0.0102 / 0.0142 0.0122 0.0104 0.0124 / 0.0150 0.0133
/// 0.0127 0.0159; 640x480 (0.2; run 38, no partial band at any height) 0.0124
/// 0.0098 0.0083 0.0061 / 0.0128 0.0104 0.0086 0.0076 / 0.0137 0.0110 0.0094
/// 0.0102; 8K (20.6, run 38) 64 / 48: 0.1493 / 0.1516, 0.1745 / 0.1763,
/// 0.1915 / 0.1931. Four channels (2 blocks per SM): 4K (7.7) 0.0507 0.0547
/// 0.0582 0.0761 / 0.0588 0.0622 0.0647 0.0826 / 0.0710 0.0737 0.0769 0.0938;
/// 1440p (3.5) 0.0278 0.0281 0.0290 0.0376 / 0.0325 0.0318 0.0323 0.0402 /
/// 0.0377 0.0373 0.0382 0.0456; 1080p (1.9) 0.0220 0.0189 0.0198 0.0232 /
/// 0.0235 0.0213 0.0221 0.0254 / 0.0263 0.0243 0.0253 0.0290; 720p (0.9)
/// 0.0137 0.0118 0.0100 0.0117 / 0.0147 0.0130 0.0116 0.0135 / 0.0157 0.0151
/// 0.0133 0.0159; 640x480 (0.3) 0.0116 0.0103 0.0082 0.0061 / 0.0126 0.0115
/// 0.0088 0.0073 / 0.0137 0.0121 0.0098 0.0087.
constexpr int tile_rows(long long tiles64, long long tiles16, long long resident, int kh) {
  if (tiles64 >= kDynamicMinRounds * resident) return 64;
  if (tiles64 >= resident) return kh >= 9 && 2 * tiles64 <= 3 * resident ? 64 : 48;
  if (kh <= 7 && tiles16 <= 2 * resident) return 16;
  return 32;
}
}  // namespace mma_dense_tuning

struct MmaDenseCoeffs {
  int kw, kh;
  int rx, ry;
  bool has_lo;  ///< some coefficient is not exact in fp16: the LO instance
  /// Coefficients rounded to fp16 and no lo products, where
  /// mma_dense_half_error_bound allows (has_lo is then false).
  bool half;
  float c[mma_dense_tuning::kMaxSide * mma_dense_tuning::kMaxSide];  ///< row-major kh x kw
};

/// A launch's tiles and the order blocks take them in (the kernel's "Tile
/// order" comment).
struct MmaDenseWalk {
  int tile_rows;  ///< output rows per tile: 16, 32, 48 or 64 (kTileRows, what shared memory is sized for)
  int tiles_x;    ///< tiles across
  int n_tiles;
  int n_edge;     ///< tiles of the first and last column, taken first (0 when tiles_x <= 2)
  int rot;        ///< static launches: the order starts at tile rot (n_tiles - n_tiles % grid, or 0)
};

/// The walk of a launch over `width` x `rows` in tiles of `tile_rows` rows on
/// `grid` blocks.
inline MmaDenseWalk mma_dense_walk(int width, int rows, int tile_rows, long long grid, bool dynamic) {
  MmaDenseWalk w{};
  w.tile_rows = tile_rows;
  w.tiles_x = (width + mma_dense_tuning::kTilePx - 1) / mma_dense_tuning::kTilePx;
  const int tiles_y = (rows + tile_rows - 1) / tile_rows;
  w.n_tiles = w.tiles_x * tiles_y;
  w.n_edge = w.tiles_x > 2 ? 2 * tiles_y : 0;
  const int extra = dynamic || grid <= 0 ? 0 : static_cast<int>(w.n_tiles % grid);
  w.rot = extra > 0 ? w.n_tiles - extra : 0;
  return w;
}

struct MmaDenseParams {
  FilterArgs<std::uint8_t> a;
  MmaDenseCoeffs k;
  bool vec16_dst;  ///< dst base and pitch are 16-byte aligned
  /// Two words, zero between launches: the next tile to hand out (beyond the
  /// first gridDim.x) and the blocks done. A dynamic launch's last block
  /// zeroes them again, so dynamic launches that share them must be
  /// stream-ordered (static launches do not touch them).
  unsigned* tile_counter;
  /// Tiles after the first come from tile_counter (else block b takes tiles
  /// b, b + gridDim.x, ...): mma_dense_tuning::kDynamicMinRounds.
  bool dynamic;
  /// The tile walk, from mma_dense_walk on the host: read from the
  /// parameters rather than derived in the kernel, where they would hold
  /// registers through the tile loop (each one it saves shortens spills at
  /// the 80 registers of 3 blocks per SM; notes, run 38).
  MmaDenseWalk w;
  /// Prefetch the first tile's input rows into L2 before pdl_begin
  /// (prefetch_rows_l2).
  bool prefetch;
};

/// Planar tile when the horizontal reach in interleaved elements exceeds 4.
__host__ __device__ constexpr bool mma_dense_planar(int channels, int kw) { return (kw / 2) * channels > 4; }

template <int C, int KH, bool P>
struct MmaDenseGeom {
  static constexpr int kTW = mma_dense_tuning::kTilePx;
  static constexpr int kTH = mma_dense_tuning::kTileRows;
  static constexpr int kHIn = kTH + KH - 1;                  ///< input rows of a tile
  static constexpr int kPlanes = P ? C : 1;
  static constexpr int kCols = P ? kTW + 8 : kTW * C + 8;    ///< fp16 columns: from 4 before the tile to 4 after
  static constexpr int kS = kCols;                           ///< row stride (halves): an odd number of 16-byte units
  static constexpr int kPlane = kHIn * kS;
  static constexpr int kTileBytes = 2 * kPlanes * kPlane;
  static constexpr int kRawRow = (kTW + 2 * mma_dense_tuning::kMarginPx) * C;  ///< bytes
  static constexpr int kRawChunks = kRawRow / 16;
  static constexpr int kRawBytes = kHIn * kRawRow;
  static constexpr int kOutStride = kTW * C + 16;            ///< bytes per staged output row
  static constexpr int kGroups = 2 * C;                      ///< 32-column groups (per tile row block)
  /// lo B fragments (mma_dense_tuning::lo_b_in_smem): KH x 32 lanes x 8 bytes.
  static constexpr int kLoBBytes = mma_dense_tuning::lo_b_in_smem(KH) ? KH * 32 * 8 : 0;
  static constexpr int kSmemBytes = kTileBytes + 2 * kRawBytes + kLoBBytes;
  static_assert((kS / 8) % 2 == 1, "ldmatrix rows must fall in different bank groups");
  static_assert(kTH * kOutStride <= kRawBytes, "the output tile is staged in a raw buffer");
};

/// The dense filter (see the header comment). KH: kernel height (1..9, odd);
/// the width is a run-time value (its taps live in the B fragments). P:
/// planar tile (mma_dense_planar). LO: the lo products are needed. RT: the
/// tile height is p.w.tile_rows (mma_dense_tuning::has_short_tiles), else
/// kTileRows.
template <int C, int KH, bool P, bool LO, bool RT = false>
__global__ void __launch_bounds__(mma_dense_tuning::kThreads, mma_dense_tuning::min_blocks_per_sm(C))
    dense_mma_kernel(const __grid_constant__ MmaDenseParams p) {
#if PIXELKIT_MMA_ENABLED
  using G = MmaDenseGeom<C, KH, P>;
  using namespace mma_dense_tuning;
  constexpr int S = G::kS;
  constexpr int Q = P ? 1 : C;
  constexpr int kLoads = mma_dense_tuning::load_scheme(KH, P);
  extern __shared__ float4 smem4[];
  __half* const tile = reinterpret_cast<__half*>(smem4);
  std::uint8_t* const raw_base = reinterpret_cast<std::uint8_t*>(smem4) + G::kTileBytes;

  const FilterArgs<std::uint8_t>& a = p.a;
  const MmaDenseCoeffs& k = p.k;
  const int tid = threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int width = a.src.width, height = a.src.height;
  static_assert(!RT || mma_dense_tuning::has_short_tiles(C, KH, P), "an instance without short tiles");
  const int th = RT ? p.w.tile_rows : kTileRows;  // output rows per tile (a multiple of 16, at most kTileRows)
  const int hin = th + KH - 1;   // its input rows (at most G::kHIn)
  const int n_tiles = p.w.n_tiles;
  const bool const_rows = a.mode == BorderMode::constant;
  const unsigned bvw = half2_bits(__float2half2_rn(a.border_value));

  // B fragments of every kernel row, once per block: b0 holds k = 2t, 2t+1,
  // b1 holds k = 2t+8, 2t+9, both for n = g.
  unsigned bh[KH][2], bl[KH][2];
#pragma unroll
  for (int ky = 0; ky < KH; ++ky)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float v[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int d = 2 * t + 8 * r + e - g - 4 + k.rx * Q;  // = kx * Q
        v[e] = d >= 0 && d % Q == 0 && d / Q < k.kw ? k.c[ky * k.kw + d / Q] : 0.0f;
      }
      split_half2(v[0], v[1], bh[ky][r], bl[ky][r]);
    }
  // lo_b_in_smem: the lo fragments go to shared memory, lane-major per kernel
  // row (warp 0 writes them, the first tile's barrier publishes them), and
  // the products read them back row by row.
  constexpr bool kLoSmem = LO && lo_b_in_smem(KH);
  static_assert(!kLoSmem || kLoads >= 1, "only load schemes 1 and 2 read the lo fragments back");
  std::uint8_t* const lo_b = raw_base + 2 * G::kRawBytes;
  [[maybe_unused]] const unsigned lo_b_s = smem_addr(lo_b) + 8 * lane;
  if constexpr (kLoSmem) {
    if (warp == 0)
#pragma unroll
      for (int ky = 0; ky < KH; ++ky) reinterpret_cast<uint2*>(lo_b)[ky * 32 + lane] = make_uint2(bl[ky][0], bl[ky][1]);
  }

  // Tile order: edge tiles (the first and last column, which take the slow
  // border path of the conversion) first, then the interior row-major.
  // Block b takes tile b first; with p.dynamic every
  // later tile comes from p.tile_counter, so blocks that run faster take more
  // tiles and the SMs end together (a fixed round-robin left the busiest SM
  // of an H100 7% above the mean at 8K: notes, run 19).
  // Static launches rotate that order so that the edge tiles go to blocks
  // with one tile fewer than others (the last n_tiles % gridDim.x blocks of
  // the order, rotated to its front, take the extra round): at 1080p (1.3
  // tiles a block) a block's edge tile and extra tile no longer add up
  // (notes, run 33).
  // (mma_dense_walk computes the walk's numbers on the host.)
  auto tile_at = [&](int q, int& tx, int& ty) {
    const int tl = q + p.w.rot < n_tiles ? q + p.w.rot : q + p.w.rot - n_tiles;
    if (tl < p.w.n_edge) {
      ty = tl >> 1;
      tx = (tl & 1) ? p.w.tiles_x - 1 : 0;
    } else {
      const int w = p.w.n_edge ? p.w.tiles_x - 2 : p.w.tiles_x, j = tl - p.w.n_edge;
      ty = j / w;
      tx = j - ty * w + (p.w.n_edge ? 1 : 0);
    }
  };
  int tx, ty;
  tile_at(blockIdx.x, tx, ty);
  auto x_inside = [&](int px0) { return px0 - kMarginPx >= 0 && px0 + kTilePx + kMarginPx <= width; };

  // The first tile's input rows travel into L2 while the kernel before this
  // one on the stream drains (notes, run 38). A prefetch fills no L1, and
  // that kernel's writes land in L2, so the loads after pdl_begin see them.
  if (p.prefetch && blockIdx.x < n_tiles) {
    const int ys0 = a.y_begin + ty * th - k.ry;
    const int e0 = (tx * kTilePx - kMarginPx) * C;
    prefetch_rows_l2(a.src, ys0, ys0 + hin, e0, e0 + G::kRawRow, tid, kThreads);
  }

  pdl_begin();  // no global memory access before this line

  // Fixed thread -> (row, column unit) maps for the row loops below: thread
  // tid serves unit tid % N of rows tid / N, + 256 / N, ... (no division in
  // the loops; threads past the last whole row of units idle).
  constexpr int kChunkRowsStep = kThreads / G::kRawChunks;  // raw rows per step of the copy
  const int chunk_q = tid % G::kRawChunks, chunk_r = tid / G::kRawChunks;
  constexpr int kConvUnits = P ? G::kCols / 4 : G::kCols / 8;  // 4 pixels x C planes / 8 columns
  constexpr int kConvRowsStep = kThreads / kConvUnits;
  const int conv_q = tid % kConvUnits, conv_r = tid / kConvUnits;
  constexpr int kVecRow = kTilePx * C / 16;  // 16-byte units per output row
  constexpr int kOutRowsStep = kThreads / kVecRow;
  const int out_q = tid % kVecRow, out_r = tid / kVecRow;

  // Raw rows of the tile at (px0, y0) -> raw buffer, by cp.async. Rows past
  // the top or bottom are mapped through the border (constant-border rows are
  // left for the conversion to fill).
  auto issue_raw = [&](int px0, int y0, std::uint8_t* raw) {
    const int ys = y0 - k.ry;
    const char* const base = reinterpret_cast<const char*>(a.src.data) + (px0 - kMarginPx) * C + 16 * chunk_q;
    std::uint8_t* const dst = raw + chunk_r * G::kRawRow + 16 * chunk_q;
    if (chunk_r >= kChunkRowsStep) return;
    if (ys >= 0 && ys + hin <= height) {
      const char* src = base + static_cast<std::ptrdiff_t>(ys + chunk_r) * a.src.pitch;
      const std::ptrdiff_t src_step = static_cast<std::ptrdiff_t>(kChunkRowsStep) * a.src.pitch;
#pragma unroll
      for (int i = 0; i < (G::kHIn + kChunkRowsStep - 1) / kChunkRowsStep; ++i)
        if (chunk_r + i * kChunkRowsStep < hin) cp_async16(dst + i * kChunkRowsStep * G::kRawRow, src + i * src_step);
    } else {
#pragma unroll 1
      for (int r = chunk_r; r < hin; r += kChunkRowsStep) {
        const int sy = border_index(ys + r, height, a.mode);
        if (sy >= 0) cp_async16(dst + (r - chunk_r) * G::kRawRow, base + static_cast<std::ptrdiff_t>(sy) * a.src.pitch);
      }
    }
  };

  if (blockIdx.x < n_tiles && x_inside(tx * kTilePx)) issue_raw(tx * kTilePx, a.y_begin + ty * th, raw_base);
  cp_async_commit();
  // The next tile, handed out by thread 0 one tile ahead and published by the
  // barriers (read after the top one, rewritten after the second one).
  __shared__ int next_tile;
  auto grab = [&]() {
    if (p.dynamic) next_tile = static_cast<int>(gridDim.x + atomicAdd(p.tile_counter, 1u));
    else next_tile += gridDim.x;
  };
  if (tid == 0) {
    next_tile = blockIdx.x;
    grab();
  }

  for (int tl = blockIdx.x, it = 0; tl < n_tiles; ++it) {
    std::uint8_t* const raw = raw_base + (it & 1) * G::kRawBytes;
    std::uint8_t* const raw_next = raw_base + ((it + 1) & 1) * G::kRawBytes;
    const int px0 = tx * kTilePx, y0 = a.y_begin + ty * th;
    const int ys = y0 - k.ry;

    cp_async_wait<0>();
    __syncthreads();  // this tile's raw rows are in; the previous tile's output has left raw_next
    const int nxt = next_tile;
    tile_at(nxt, tx, ty);
    if (nxt < n_tiles && x_inside(tx * kTilePx)) issue_raw(tx * kTilePx, a.y_begin + ty * th, raw_next);
    cp_async_commit();

    // ---- 1. raw u8 -> fp16 tile ----
    if (x_inside(px0)) {
      // Rows outside the image under a constant border hold its value.
      const bool check_rows = const_rows && (ys < 0 || ys + hin > height);
      if (conv_r < kConvRowsStep) {
#pragma unroll 4
        for (int i = 0; i < (G::kHIn + kConvRowsStep - 1) / kConvRowsStep; ++i) {
          const int r = conv_r + i * kConvRowsStep;
          if (r >= hin) break;
          const bool constant_row = check_rows && (ys + r < 0 || ys + r >= height);
          if constexpr (!P) {
            // Column j of the tile is element px0*C - 4 + j, raw byte j + 16C - 4.
            uint4 h = make_uint4(bvw, bvw, bvw, bvw);
            if (!constant_row) {
              const std::uint8_t* src = raw + r * G::kRawRow + 16 * C - 4 + 8 * conv_q;
              const unsigned w0 = *reinterpret_cast<const unsigned*>(src);
              const unsigned w1 = *reinterpret_cast<const unsigned*>(src + 4);
              h = make_uint4(word_to_half2(w0, 0x4140u), word_to_half2(w0, 0x4342u), word_to_half2(w1, 0x4140u),
                             word_to_half2(w1, 0x4342u));
            }
            *reinterpret_cast<uint4*>(tile + r * S + 8 * conv_q) = h;
          } else {
            // Plane c, column j is pixel px0 - 4 + j: raw bytes (j + 12) * C + c.
            const int off = r * S + 4 * conv_q;
            if (constant_row) {
#pragma unroll
              for (int c = 0; c < C; ++c) *reinterpret_cast<uint2*>(tile + c * G::kPlane + off) = make_uint2(bvw, bvw);
            } else {
              const unsigned* src = reinterpret_cast<const unsigned*>(raw + r * G::kRawRow + (4 * conv_q + 12) * C);
              unsigned w[C];
#pragma unroll
              for (int c = 0; c < C; ++c) w[c] = src[c];
              store_unit<C>(tile, G::kPlane, off, w);
            }
          }
        }
      }
    } else {
      // Left / right edge tiles: pixels px0 - 4 .. px0 + 67 through the
      // border, C channels each (loads batched: no cp.async here).
      constexpr int kPx = kTilePx + 8;
      constexpr int kTasks = G::kHIn * kPx;
      const int tasks = hin * kPx;
#pragma unroll 8
      for (int i = 0; i < (kTasks + kThreads - 1) / kThreads; ++i) {
        const int u = tid + i * kThreads;
        if (u < tasks) {
          const int r = u / kPx, x = u - r * kPx;
          const int sy = border_index(ys + r, height, a.mode);
          const int sx = sy < 0 ? -1 : detail::border_index_near(px0 - 4 + x, width, a.mode);
          const std::uint8_t* px = sx < 0 ? nullptr : a.src.row(sy) + sx * C;
#pragma unroll
          for (int c = 0; c < C; ++c) {
            const __half h = __float2half_rn(px ? static_cast<float>(__ldg(px + c)) : a.border_value);
            if constexpr (P) {
              tile[c * G::kPlane + r * S + x] = h;
            } else {
              const int j = (x - 4) * C + c + 4;  // column of element (px0 - 4 + x) * C + c
              if (j >= 0 && j < G::kCols) tile[r * S + j] = h;
            }
          }
        }
      }
    }
    __syncthreads();
    if (tid == 0 && nxt < n_tiles) grab();  // every thread read next_tile before this barrier

    // ---- 2. products; the u8 results are staged in `raw` ----
    std::uint8_t* const out_s = raw;
    // One warp's products for row block mb, column group grp: NT = 4 n-tiles
    // (a whole unit of 16 rows x 32 columns, with the load scheme's sharing
    // between n-tiles), or NT = 1, n-tile j0 alone (one ldmatrix.x4 per
    // kernel row, as scheme 0), for the quarters of the remainder below.
    // Pack (std::true_type): the results go to pk, packed (packs_planes), not
    // to the staging rows.
    auto unit = [&](auto nt, int mb, int grp, int j0, auto pack, unsigned (&pk)[4]) {
      constexpr int NT = decltype(nt)::value;
      constexpr bool kPack = decltype(pack)::value;
      const __half* const plane = P ? tile + (grp >> 1) * G::kPlane : tile;
      const int col0 = P ? 32 * (grp & 1) : 32 * grp;
      const __half* const base = plane + (16 * mb + (lane & 15)) * S + col0 + 8 * (lane >> 4);
      float acc[NT][4];
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][e] = 0.0f;
      if constexpr (NT == 1) {
#pragma unroll
        for (int ky = 0; ky < KH; ++ky) {
          unsigned af[4];
          ldsm_x4(af[0], af[1], af[2], af[3], base + ky * S + 8 * j0);
          mma_16816(acc[0], af, bh[ky][0], bh[ky][1]);
          if constexpr (LO) {
            unsigned l0 = bl[ky][0], l1 = bl[ky][1];
            if constexpr (kLoSmem) lds_v2(l0, l1, lo_b_s + 256 * ky);
            mma_16816(acc[0], af, l0, l1);
          }
        }
      } else {
#pragma unroll
        for (int ky = 0; ky < KH; ++ky) {
          if constexpr (kLoads >= 1) {
            // n-tiles 0 and 2 by their own x4 (each lands in the register quad
            // the mma reads); n-tile 1 is the right half of 0 and the left
            // half of 2: two m16n8k8 products on those register pairs (an
            // m16n8k16 operand would have to be copied into a new quad).
            // n-tile 3: scheme 1 its own x4 (columns 24..39), scheme 2 the
            // right half of 2 and an x2 of columns 32..39 (lanes 0..15's
            // addresses: rows 0..15), two m16n8k8 again.
            unsigned a0[4], a2[4], a3[4];
            ldsm_x4(a0[0], a0[1], a0[2], a0[3], base + ky * S);
            ldsm_x4(a2[0], a2[1], a2[2], a2[3], base + ky * S + 16);
            if constexpr (kLoads == 2) ldsm_x2(a3[0], a3[1], base + ky * S + 32);
            else ldsm_x4(a3[0], a3[1], a3[2], a3[3], base + ky * S + 24);
            // This row's lo B fragments: registers, or shared memory (kLoSmem).
            [[maybe_unused]] unsigned l0 = bl[ky][0], l1 = bl[ky][1];  // (unused without LO)
            if constexpr (kLoSmem) lds_v2(l0, l1, lo_b_s + 256 * ky);
            auto products = [&](unsigned b0, unsigned b1) {
              mma_16816(acc[0], a0, b0, b1);
              mma_1688(acc[1], a0[2], a0[3], b0);
              mma_1688(acc[1], a2[0], a2[1], b1);
              mma_16816(acc[2], a2, b0, b1);
              if constexpr (kLoads == 2) {
                mma_1688(acc[3], a2[2], a2[3], b0);
                mma_1688(acc[3], a3[0], a3[1], b1);
              } else {
                mma_16816(acc[3], a3, b0, b1);
              }
            };
            products(bh[ky][0], bh[ky][1]);
            if constexpr (LO) products(l0, l1);
          } else {
            // One ldmatrix.x4 per n-tile: its A operand (16 rows x 16 columns
            // from column 8j) lands in the register quad the mma reads, with
            // no copies (sharing 8x8 blocks between n-tiles would need them).
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              unsigned af[4];
              ldsm_x4(af[0], af[1], af[2], af[3], base + ky * S + 8 * j);
              mma_16816(acc[j], af, bh[ky][0], bh[ky][1]);
              if constexpr (LO) mma_16816(acc[j], af, bl[ky][0], bl[ky][1]);
            }
          }
        }
      }
      // acc[j][0..1]: row g, columns 2t, 2t+1 of n-tile j0 + j; [2..3]: row g + 8.
      if constexpr (kPack) {
        // pk[j]: the bytes of row g, columns 2t, 2t + 1, then row g + 8's.
        static_assert(NT == 4, "whole units");
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const unsigned p0 = __byte_perm(float_to_u8(acc[j][0]), float_to_u8(acc[j][1]), 0x0040u);
          const unsigned p1 = __byte_perm(float_to_u8(acc[j][2]), float_to_u8(acc[j][3]), 0x0040u);
          pk[j] = __byte_perm(p0, p1, 0x5410u);
        }
      } else {
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = 16 * mb + g + 8 * h;
            const unsigned v0 = float_to_u8(acc[j][2 * h]);
            const unsigned v1 = float_to_u8(acc[j][2 * h + 1]);
            const int col = col0 + 8 * (j0 + j) + 2 * t;
            if constexpr (!P) {
              *reinterpret_cast<unsigned short*>(out_s + row * G::kOutStride + col) =
                  static_cast<unsigned short>(__byte_perm(v0, v1, 0x0040u));
            } else {
              std::uint8_t* o = out_s + row * G::kOutStride + col * C + (grp >> 1);
              o[0] = static_cast<std::uint8_t>(v0);
              o[C] = static_cast<std::uint8_t>(v1);
            }
          }
      }
    };
    using Whole = std::integral_constant<int, 4>;
    using Store = std::false_type;
    [[maybe_unused]] unsigned pk_none[4];  // (Store: unused)
    // Warp units of 16 rows x 32 columns: a tile has mbs row blocks of 16 and
    // G::kGroups column groups.
    const int mbs = th >> 4;
    if constexpr (RT && G::kGroups % kWarps != 0) {
      // Short tiles of 3 channels: mbs * 6 units do not share out evenly over
      // 8 warps (48 rows: 18 units, so two warps took 3 and the schedulers
      // serving them 5 where the others had 4; 16 rows: 6 units, 2 warps
      // idle). Whole units go round by round (unit u: row block u % mbs,
      // group u / mbs), and the units of the last, partial round are cut
      // into n-tiles, one a warp in turn, so that every warp ends within a
      // quarter unit of the others.
      const int units = mbs * G::kGroups;
      const int rounds = units / kWarps;
#pragma unroll 1
      for (int i = 0; i < rounds; ++i) {
        const int u = warp + kWarps * i;
        unit(Whole{}, u % mbs, u / mbs, 0, Store{}, pk_none);
      }
      const int quarters = 4 * (units - kWarps * rounds);
#pragma unroll 1
      for (int q = warp; q < quarters; q += kWarps) {
        const int u = kWarps * rounds + (q >> 2);
        unit(std::integral_constant<int, 1>{}, u % mbs, u / mbs, q & 3, Store{}, pk_none);
      }
    } else {
      // Warp w keeps row block mb = w % mbs and takes every grp_step-th group
      // from w / mbs (grp_step: the warps of its row block), so that its row
      // offset stays fixed across units, as with mbs = 4 before tile heights
      // were chosen at run time (a varying one cost 2-4% at 8K; notes, run
      // 38). Computed here, where they are used, so that they hold no
      // registers through the rest of the tile.
      const int mb = warp % mbs;
      const int grp0 = warp / mbs, grp_step = (kWarps - 1 - mb) / mbs + 1;
      // (A constant trip count where th is kTileRows: a loop on grp < kGroups
      // cost the 1-channel 7x7 instance 60 bytes of spills.)
      const int n_units = RT ? (G::kGroups - grp0 + grp_step - 1) / grp_step : G::kGroups / 2;
      if constexpr (mma_dense_tuning::packs_planes(C, P, RT, LO)) {
        // The C planes of one column half (mbs = 4: grp_step 2, groups
        // grp0, grp0 + 2, ...), packed in registers, then staged
        // interleaved (mma_dense_tuning::packs_planes).
        static_assert(kTileRows == 64 && kWarps == 8 && G::kGroups == 2 * C, "a warp's units: the planes of one half");
        unsigned pr[4], pg[4], pb[4];
        unit(Whole{}, mb, grp0, 0, std::true_type{}, pr);
        unit(Whole{}, mb, grp0 + 2, 0, std::true_type{}, pg);
        unit(Whole{}, mb, grp0 + 4, 0, std::true_type{}, pb);
        const int col0 = 32 * grp0;
        if constexpr (C == 4) {
          // A pixel pair's 8 bytes R0 G0 B0 A0 R1 G1 B1 A1 at 8t: one 8-byte store.
          unsigned pa[4];
          unit(Whole{}, mb, grp0 + 6, 0, std::true_type{}, pa);
          std::uint8_t* const o_row = out_s + (16 * mb + g) * G::kOutStride + (col0 + 2 * t) * 4;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const unsigned xs = (2 * h) | (4 + 2 * h) << 4 | (2 * h + 1) << 8 | (5 + 2 * h) << 12;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const unsigned rg = __byte_perm(pr[j], pg[j], xs);  // R0 G0 R1 G1
              const unsigned ba = __byte_perm(pb[j], pa[j], xs);  // B0 A0 B1 A1
              *reinterpret_cast<uint2*>(o_row + 8 * h * G::kOutStride + 32 * j) =
                  make_uint2(__byte_perm(rg, ba, 0x5410u), __byte_perm(rg, ba, 0x7632u));
            }
          }
        } else {
          // A pixel pair's 6 bytes R0 G0 B0 R1 G1 B1 start at 6t: 4-byte
          // aligned for even t, so even lanes store R0 G0 B0 R1 as a word and
          // G1 B1 as a half, odd lanes R0 G0 as a half and B0 R1 G1 B1 as a
          // word at 6t + 2. Two stores a pixel pair and row, each free of bank
          // conflicts at kOutStride 208 (three two-byte ones had two-way
          // conflicts on two of them).
          static_assert(G::kOutStride == 208, "the two stores' lanes fall in different banks");
          const unsigned odd = t & 1;
          std::uint8_t* const o_row = out_s + (16 * mb + g) * G::kOutStride + (col0 + 2 * t) * 3;
          std::uint8_t* const o32 = o_row + 2 * odd;
          std::uint8_t* const o16 = o_row + 4 - 4 * odd;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            // x = R0 G0 R1 G1 (bytes 0..3), pb's B0 and B1 are bytes 4 + 2h, 5 + 2h.
            const unsigned xs = (2 * h) | (4 + 2 * h) << 4 | (2 * h + 1) << 8 | (5 + 2 * h) << 12;
            const unsigned s32 = odd ? (4 + 2 * h) | 2u << 4 | 3u << 8 | (5 + 2 * h) << 12  // B0 R1 G1 B1
                                     : 0u | 1u << 4 | (4 + 2 * h) << 8 | 2u << 12;          // R0 G0 B0 R1
            const unsigned s16 = odd ? 0u | 1u << 4                                        // R0 G0
                                     : 3u | (5 + 2 * h) << 4;                              // G1 B1
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const unsigned x = __byte_perm(pr[j], pg[j], xs);
              const int off = 8 * h * G::kOutStride + 24 * j;
              *reinterpret_cast<unsigned*>(o32 + off) = __byte_perm(x, pb[j], s32);
              *reinterpret_cast<unsigned short*>(o16 + off) = static_cast<unsigned short>(__byte_perm(x, pb[j], s16));
            }
          }
        }
      } else {
#pragma unroll 1
        for (int uu = 0; uu < n_units; ++uu) unit(Whole{}, mb, grp0 + grp_step * uu, 0, Store{}, pk_none);
      }
    }
    __syncthreads();

    // ---- 3. output tile -> global ----
    {
      constexpr int kRowBytes = kTilePx * C;
      const int e0 = px0 * C;
      const int wc = width * C;
      // Rows past y_end (a tile of the last band) are left out row by row; the
      // 16-byte stores need only whole columns (they once needed whole rows
      // too, and the last band's tiles stored byte by byte: 1080p dense 7x7
      // 0.0180 ms against 0.0153 at 1056 rows; notes, run 40).
      const int rows_out = min(th, a.y_end - y0);
      if (e0 + kRowBytes <= wc && p.vec16_dst) {
        if (out_r < kOutRowsStep) {
          std::uint8_t* dst = a.dst.row(y0 + out_r) + e0 + 16 * out_q;
          const std::ptrdiff_t dst_step = static_cast<std::ptrdiff_t>(kOutRowsStep) * a.dst.pitch;
#pragma unroll
          for (int i = 0; i < (kTileRows + kOutRowsStep - 1) / kOutRowsStep; ++i)
            if (out_r + i * kOutRowsStep < rows_out)
              *reinterpret_cast<uint4*>(dst + i * dst_step) =
                  *reinterpret_cast<const uint4*>(out_s + (out_r + i * kOutRowsStep) * G::kOutStride + 16 * out_q);
        }
      } else {
        for (int u = tid; u < rows_out * kRowBytes; u += kThreads) {
          const int r = u / kRowBytes, e = u - r * kRowBytes;
          if (e0 + e < wc) a.dst.row(y0 + r)[e0 + e] = out_s[r * G::kOutStride + e];
        }
      }
    }
    tl = nxt;
  }
  cp_async_wait<0>();
  // A dynamic launch's last block zeroes the counter for the next launch.
  // Static launches leave it alone: the fence and the atomic would sit at the
  // end of every block's last tile (notes, run 33).
  if (tid == 0 && p.dynamic) {
    __threadfence();
    if (atomicAdd(p.tile_counter + 1, 1u) == gridDim.x - 1) {
      p.tile_counter[0] = 0;
      p.tile_counter[1] = 0;
      __threadfence();
    }
  }
#else
  (void)p;
#endif
}

}  // namespace pixelkit::detail::cuda_filter
