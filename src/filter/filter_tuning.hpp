// Launch sizes of the CUDA filter, in one place (CUB's tuning structs are the
// model): the kernels derive their tile geometry from these constants and the
// host launchers derive grids from them, so no launch has a literal of its own.
// Plain C++ so that host code and notes can quote the numbers.
#pragma once

namespace pixelkit::detail::filter_tuning {

/// Dense (any kernel) shared-memory tiled kernel. A block is kThreadsX x
/// kThreadsY threads; each thread computes kVec consecutive elements (one
/// 16-byte float4 of the shared tile) of `rows` consecutive image rows, so a
/// tile is kTileElems interleaved elements wide and kThreadsY * rows high.
struct Dense {
  static constexpr int kThreadsX = 32;
  static constexpr int kThreadsY = 8;
  static constexpr int kThreads = kThreadsX * kThreadsY;
  static constexpr int kVec = 4;                         // elements per thread along a row
  static constexpr int kTileElems = kThreadsX * kVec;    // 128 elements (42.7 RGB pixels)
  /// Rows per thread and __launch_bounds__ minimum blocks per SM of the
  /// specialised kernels. 3x3 and 5x5 are latency-bound at v3's 8 rows and 3
  /// blocks/SM (run 3's ncu: 24 warps/SM, DRAM 31%); run 4 measured fewer rows
  /// and more resident blocks (notes, "Run 4"):
  ///   3x3: 2 rows, 8 blocks (<= 32 registers, 64 warps/SM, no spill).
  ///        4 rows x 6 blocks spills (the 3x3 tile wants ~60 registers).
  ///   5x5: 4 rows, 6 blocks (<= 40 registers, 48 warps/SM); 2 rows is
  ///        slower (shared loads per output grow with the apron rows).
  ///   7x7, 9x9: FMA-bound, 8 rows (a loaded window row feeds twice the
  ///        FMAs), 2 blocks (<= 128 registers: 32 accumulators + a window
  ///        row of up to 36 floats); the generic kernel likewise.
  static constexpr int kRows3 = 2;
  static constexpr int kMinBlocks3 = 8;
  static constexpr int kRows5 = 4;
  static constexpr int kMinBlocks5 = 6;
  static constexpr int kRowsLarge = 8;
  static constexpr int kMinBlocksLarge = 2;
  static constexpr int rows_specialised(int kw) { return kw <= 3 ? kRows3 : kw <= 5 ? kRows5 : kRowsLarge; }
  static constexpr int min_blocks_per_sm(int kw) {
    return kw <= 0 ? kMinBlocksLarge : kw <= 3 ? kMinBlocks3 : kw <= 5 ? kMinBlocks5 : kMinBlocksLarge;
  }
  static constexpr int kRowsGeneric = 4;                 // any size: smaller tile, smaller apron smem
};

/// Separable kernel, both passes fused. A block owns a strip kTileElems
/// elements wide and sweeps a segment of rows downward kChunkRows at a time:
/// the horizontal pass of each new chunk goes into a ring of 2*kChunkRows rows
/// of shared memory, the vertical pass reads the ring, so every input row's
/// horizontal pass runs once per segment (not once per tile).
struct Separable {
  static constexpr int kThreads = 256;
  static constexpr int kTileElems = 128;
  static constexpr int kChunkRows = 32;                  // rows per step; 2*radius_y must be < this
  static constexpr int kRingRows = 2 * kChunkRows;       // power of two: the ring index is a mask
  static constexpr int kHElems = 16;                     // horizontal pass: elements per thread
  static constexpr int kVElems = 2;                      // vertical pass: elements per thread (float2)
  static constexpr int kVRows = 8;                       // vertical pass: rows per thread
  static constexpr int kMinBlocksPerSM = 3;              // 55-67 KB shared memory per block
  /// Small sizes (n <= kSmallN, 55 KB of shared memory: 4 blocks fit in the
  /// H100's 228 KB) are latency-bound like the small dense kernels: allow a
  /// 4th block by capping registers at 64.
  static constexpr int kSmallN = 5;
  static constexpr int kMinBlocksSmallN = 4;
  static constexpr int min_blocks_per_sm(int n) { return n > 0 && n <= kSmallN ? kMinBlocksSmallN : kMinBlocksPerSM; }
  static constexpr int kTargetWaves = 8;                 // segments so the grid is ~8 full waves
  static constexpr int kPrefetchU8 = 2;                  // chunks whose loads are in flight (registers)
  static constexpr int kPrefetchF32 = 1;
};

/// run_host: horizontal strips through device buffers, upload / compute /
/// download overlapped on kStreams streams with pinned staging.
struct HostStrips {
  static constexpr int kStreams = 3;
  static constexpr long long kTargetStripBytes = 4ll << 20;  // ~4 MB per strip
  static constexpr int kMaxStrips = 32;
  static constexpr int kMinStripRows = 16;                   // >= the largest radius (15)
};

}  // namespace pixelkit::detail::filter_tuning
