// integral_cuda.cu - the CUDA backend of the integral.
//
// Sum and squared sum: a 2-D reduce-then-scan over tiles (Nehab et al. 2011,
// "GPU-efficient recursive filtering and summed-area tables", in spirit), all
// tables of one call fused into the same three launches:
//
//  1. tile_totals_kernel: one block per tile of kTileRows x TW pixels (TW =
//     256 pixels for 1 channel, 64 for 3 or 4), each of its 8 warps on 8 of
//     the rows, reads the tile and writes its row totals, its column totals
//     and its grand total (per channel).
//  2. exclusive_scan_lines_kernel (x2): exclusive scans of those aggregates,
//     giving for every tile its row carries (the sum of each of its rows left
//     of the tile), its column carries (the sum of each of its columns above
//     the tile) and its corner (the sum of everything above-left). These are
//     about 1/64 of the table's size.
//  3. tile_scan_kernel: each block re-reads its tile. Every warp first sums
//     the columns of its 8 rows (shared memory tells each warp what the warps
//     above it add), then starts from its own top row (column carries plus
//     those sums, scanned along the row, plus the corner and the row carries
//     above it) and, row by row, scans the row (in-thread scans plus a
//     cub::WarpScan of the lanes' per-channel totals), adds the row carry,
//     accumulates down in registers and stores every table entry exactly once,
//     through shared memory so the stores are coalesced. Short work per warp
//     and ~10 waves of blocks on an 8192^2 image: no long tail.
// So the input is read twice (1 extra byte per u8 pixel) and each table is
// written once and never read back: about 1.1x the bytes of the one-pass floor
// for u8 -> i64. There are no inter-block dependencies, spin-waits or flags,
// any width and height work, and the result does not depend on scheduling.
// (A strict single-pass variant, decoupled look-back between tiles, would save
// the second read of the input; see docs/notes-integral.md.)
//
// Tilted table: P = per-row inclusive prefix (a warp per row, chunked
// WarpScan), then T(X, Y) = D1(X+Y-2, Y) - D2(X-Y-1, Y) with
//   D1(u, Y) = sum_{y<Y} P(y, u-y)   and   D2(w, Y) = sum_{y<Y} P(y, w+y)
// (the cone is the half-plane x+y <= X+Y-2 minus the half-plane
// x-y <= X-Y-1, both cut to rows y < Y; P clamps at the row's ends): one thread
// per diagonal walks down accumulating. Correct for any size, not tuned: it
// reads and writes the table twice.
//
// Accumulators are exact int64 for u8 images and f64 for f32 images; an entry
// is converted to its table's type only when stored.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>

#include "core/cuda_check.hpp"
#include "core/cuda_resources.hpp"
#include "core/view2d.hpp"
#include "integral/integral_backends.hpp"

namespace pixelkit::detail {

namespace {

// ---- tuning (launch sizes as data) -------------------------------------------------

struct IntegralTuning {
  static constexpr int kWarps = 8;         ///< warps per block (= per tile); each owns kTileRows / kWarps rows
  static constexpr int kTileRows = 64;     ///< rows per tile
  static constexpr int kSegments = 8;      ///< threads cooperating on one aggregate line in the scans
  static constexpr int kLineBlock = 256;   ///< block size of the tilted-diagonal, box and query kernels
  /// Elements per lane in a tile row: 8 pixels of 1 channel, 2 of 3 or 4.
  template <int C> static constexpr int items() { return C == 1 ? 8 : (C == 3 ? 6 : 8); }
};

template <typename Tin> struct AccOf;
template <> struct AccOf<std::uint8_t> { using type = std::int64_t; };
template <> struct AccOf<float> { using type = double; };

template <int C> struct Geom {
  static constexpr int E = IntegralTuning::items<C>();  ///< elements per lane
  static constexpr int TW = 32 * E / C;                 ///< tile width, pixels
};

/// A tile configuration: E elements per lane, MINB blocks per SM asked of the
/// compiler (__launch_bounds__). Production uses Cfg<Geom<C>::E, 2>; other
/// configurations of the u8 1-channel case exist for the benchmark's sweep
/// (set_integral_cuda_variant).
template <int E_, int MINB_> struct Cfg {
  static constexpr int E = E_, MINB = MINB_;
};
int g_variant = 0;
const char* const kVariantNames[] = {"E8 minB2 (production)", "E8 minB3", "E4 minB3", "E4 minB4"};

// ---- device helpers ----------------------------------------------------------------

template <typename T, int C> struct Vec {
  T v[C];
};
template <typename T, int C> struct VecAdd {
  __device__ __forceinline__ Vec<T, C> operator()(const Vec<T, C>& a, const Vec<T, C>& b) const {
    Vec<T, C> r;
#pragma unroll
    for (int c = 0; c < C; ++c) r.v[c] = a.v[c] + b.v[c];
    return r;
  }
};
template <typename T, int C> __device__ __forceinline__ Vec<T, C> zero_vec() {
  Vec<T, C> r;
#pragma unroll
  for (int c = 0; c < C; ++c) r.v[c] = T(0);
  return r;
}

/// A table as kernels see it: untyped, the element type chosen at run time
/// (a warp-uniform branch per store; it saves a kernel per output type).
struct TableOut {
  unsigned char* data;
  std::ptrdiff_t pitch;
  TableType type;
  __device__ __forceinline__ unsigned char* row(int y) const { return data + static_cast<std::ptrdiff_t>(y) * pitch; }
};

template <typename Acc>
__device__ __forceinline__ void store_as(unsigned char* row, long long j, TableType t, Acc v) {
  switch (t) {
    case TableType::u32: reinterpret_cast<std::uint32_t*>(row)[j] = static_cast<std::uint32_t>(static_cast<std::int64_t>(v)); break;
    case TableType::i64: reinterpret_cast<std::int64_t*>(row)[j] = static_cast<std::int64_t>(v); break;
    case TableType::u64: reinterpret_cast<std::uint64_t*>(row)[j] = static_cast<std::uint64_t>(v); break;
    case TableType::f32: reinterpret_cast<float*>(row)[j] = static_cast<float>(v); break;
    case TableType::f64: reinterpret_cast<double*>(row)[j] = static_cast<double>(v); break;
    default: break;
  }
}
template <typename Acc>
__device__ __forceinline__ Acc load_as(const unsigned char* row, long long j, TableType t) {
  switch (t) {
    case TableType::u32: return static_cast<Acc>(reinterpret_cast<const std::uint32_t*>(row)[j]);
    case TableType::i64: return static_cast<Acc>(reinterpret_cast<const std::int64_t*>(row)[j]);
    case TableType::u64: return static_cast<Acc>(reinterpret_cast<const std::uint64_t*>(row)[j]);
    case TableType::f32: return static_cast<Acc>(reinterpret_cast<const float*>(row)[j]);
    case TableType::f64: return static_cast<Acc>(reinterpret_cast<const double*>(row)[j]);
    default: return Acc(0);
  }
}

/// Loads nvalid elements of a tile row, striped: register i of lane l holds
/// element i*32 + l (coalesced); elements past nvalid read as 0.
template <typename T, int E>
__device__ __forceinline__ void load_striped(const T* row, int nvalid, int lane, T (&raw)[E]) {
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const int j = i * 32 + lane;
    raw[i] = j < nvalid ? row[j] : T(0);
  }
}

/// Striped registers -> blocked (lane l gets elements l*E .. l*E+E-1) through
/// the warp's shared buffer of 32*(E+1) elements (one pad per lane row: E+1 is
/// odd, so neither side has bank conflicts to speak of).
template <typename T, typename U, int E>
__device__ __forceinline__ void striped_to_blocked(const T (&raw)[E], T* smem, int lane, U (&out)[E]) {
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const int j = i * 32 + lane;
    smem[j + j / E] = raw[i];
  }
  __syncwarp();
#pragma unroll
  for (int e = 0; e < E; ++e) out[e] = static_cast<U>(smem[lane * (E + 1) + e]);
  __syncwarp();
}

/// Blocked registers -> the table row, coalesced: f(j, value) for j < nvalid.
template <typename Acc, int E, typename F>
__device__ __forceinline__ void store_blocked(const Acc (&v)[E], Acc* smem, int lane, int nvalid, F&& f) {
#pragma unroll
  for (int e = 0; e < E; ++e) smem[lane * (E + 1) + e] = v[e];
  __syncwarp();
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const int j = i * 32 + lane;
    if (j < nvalid) f(j, smem[j + j / E]);
  }
  __syncwarp();
}

/// In-thread inclusive scan per channel (elements e and e-C share a channel
/// because E is a multiple of C); returns the lane's per-channel totals.
template <typename Acc, int C, int E>
__device__ __forceinline__ Vec<Acc, C> scan_in_thread(Acc (&v)[E]) {
#pragma unroll
  for (int e = C; e < E; ++e) v[e] += v[e - C];
  Vec<Acc, C> t;
#pragma unroll
  for (int c = 0; c < C; ++c) t.v[c] = v[E - C + c];
  return t;
}

// ---- aggregates ----------------------------------------------------------------------

/// Per table: row totals [H][ntj][C], column totals [nti][W*C], tile totals
/// [nti][ntj][C]; after the scans they are the row carries, column carries
/// and corners.
template <typename Acc> struct Aggregates {
  Acc* rowtot;
  Acc* coltot;
  Acc* tiletot;
};

struct TileGrid {
  int W, H, ntj, nti;  ///< image size, tiles across and down
};

// ---- 1. tile totals --------------------------------------------------------------------

// One block per tile; warp w handles rows r0 + w*R .. r0 + (w+1)*R - 1 of it
// (R = kTileRows / kWarps). Each warp writes its rows' totals; the warps'
// column sums meet in shared memory, where warp 0 adds them up into the
// tile's column totals and its grand total.
template <typename Tin, int C, int E, int MINB, bool S, bool Q>
__global__ void __launch_bounds__(32 * IntegralTuning::kWarps, MINB)
    tile_totals_kernel(View2D<const Tin> src, TileGrid g, Aggregates<typename AccOf<Tin>::type> as,
                       Aggregates<typename AccOf<Tin>::type> aq) {
  using Acc = typename AccOf<Tin>::type;
  constexpr int TW = 32 * E / C, WARPS = IntegralTuning::kWarps;
  constexpr int R = IntegralTuning::kTileRows / WARPS;
  static_assert(E % C == 0 && E % 2 == 0, "E: whole pixels per lane, E + 1 odd");
  using WarpReduce = cub::WarpReduce<Vec<Acc, C>>;
  __shared__ Tin smem_in[WARPS][32 * (E + 1)];
  __shared__ Acc col_s[S ? WARPS : 1][32 * (E + 1)];
  __shared__ Acc col_q[Q ? WARPS : 1][32 * (E + 1)];
  __shared__ typename WarpReduce::TempStorage reduce_temp[WARPS];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int ti = blockIdx.x / g.ntj, tj = blockIdx.x % g.ntj;
  const int x0 = tj * TW, r0 = ti * IntegralTuning::kTileRows;
  const int y0 = min(g.H, r0 + warp * R), y1 = min(g.H, y0 + R);
  const int nvalid = min(TW, g.W - x0) * C;

  Acc cs[E], cq[E];
#pragma unroll
  for (int e = 0; e < E; ++e) cs[e] = cq[e] = Acc(0);
  Tin raw[E];
  if (y0 < y1) load_striped(src.row(y0) + x0 * C, nvalid, lane, raw);
  for (int y = y0; y < y1; ++y) {
    Acc v[E];
    striped_to_blocked(raw, smem_in[warp], lane, v);
    if (y + 1 < y1) load_striped(src.row(y + 1) + x0 * C, nvalid, lane, raw);  // in flight meanwhile
    Vec<Acc, C> ts = zero_vec<Acc, C>(), tq = zero_vec<Acc, C>();
#pragma unroll
    for (int e = 0; e < E; ++e) {
      if (S) {
        cs[e] += v[e];
        ts.v[e % C] += v[e];
      }
      if (Q) {
        const Acc q = v[e] * v[e];
        cq[e] += q;
        tq.v[e % C] += q;
      }
    }
    const long long at = (static_cast<long long>(y) * g.ntj + tj) * C;
    if (S) {
      ts = WarpReduce(reduce_temp[warp]).Reduce(ts, VecAdd<Acc, C>());
      if (lane == 0)
        for (int c = 0; c < C; ++c) as.rowtot[at + c] = ts.v[c];
    }
    if (Q) {
      tq = WarpReduce(reduce_temp[warp]).Reduce(tq, VecAdd<Acc, C>());
      if (lane == 0)
        for (int c = 0; c < C; ++c) aq.rowtot[at + c] = tq.v[c];
    }
  }
#pragma unroll
  for (int e = 0; e < E; ++e) {
    if (S) col_s[warp][lane * (E + 1) + e] = cs[e];
    if (Q) col_q[warp][lane * (E + 1) + e] = cq[e];
  }
  __syncthreads();
  if (warp != 0) return;
  const long long col_at = static_cast<long long>(ti) * g.W * C + static_cast<long long>(x0) * C + lane * E;
  const long long tile_at = (static_cast<long long>(ti) * g.ntj + tj) * C;
  Vec<Acc, C> ts = zero_vec<Acc, C>(), tq = zero_vec<Acc, C>();
#pragma unroll
  for (int e = 0; e < E; ++e) {
    Acc s = Acc(0), q = Acc(0);
    for (int w = 0; w < WARPS; ++w) {
      if (S) s += col_s[w][lane * (E + 1) + e];
      if (Q) q += col_q[w][lane * (E + 1) + e];
    }
    if (lane * E + e < nvalid) {
      if (S) as.coltot[col_at + e] = s;
      if (Q) aq.coltot[col_at + e] = q;
    }
    ts.v[e % C] += s;
    tq.v[e % C] += q;
  }
  if (S) {
    ts = WarpReduce(reduce_temp[0]).Reduce(ts, VecAdd<Acc, C>());
    if (lane == 0)
      for (int c = 0; c < C; ++c) as.tiletot[tile_at + c] = ts.v[c];
  }
  if (Q) {
    tq = WarpReduce(reduce_temp[0]).Reduce(tq, VecAdd<Acc, C>());
    if (lane == 0)
      for (int c = 0; c < C; ++c) aq.tiletot[tile_at + c] = tq.v[c];
  }
}

// ---- 2. exclusive scans of the aggregates ------------------------------------------------

/// An array of A x L x N elements, scanned along L for each (a, n).
template <typename Acc> struct ScanJob {
  Acc* data;
  long long A, L, N;
};
constexpr int kMaxJobs = 6;
template <typename Acc> struct ScanJobs {
  ScanJob<Acc> job[kMaxJobs];
};

// blockDim (32, kSegments); blockIdx.y picks the job. The kSegments threads of
// a line each sum a segment of it, exchange the segment sums, then rescan
// their segment writing exclusive prefixes. Lanes run along the fast axis.
template <typename Acc>
__global__ void __launch_bounds__(32 * IntegralTuning::kSegments) exclusive_scan_lines_kernel(ScanJobs<Acc> jobs) {
  constexpr int SEG = IntegralTuning::kSegments;
  __shared__ Acc seg_sum[SEG][32];
  const ScanJob<Acc> job = jobs.job[blockIdx.y];
  const long long line = static_cast<long long>(blockIdx.x) * 32 + threadIdx.x;
  const bool active = job.data != nullptr && line < job.A * job.N;
  const long long a = active ? line / job.N : 0, n = active ? line % job.N : 0;
  const long long seg_len = (job.L + SEG - 1) / SEG;
  const long long l0 = min(job.L, seg_len * threadIdx.y), l1 = min(job.L, l0 + seg_len);
  Acc* base = active ? job.data + a * job.L * job.N + n : nullptr;
  Acc s = Acc(0);
  if (active)
    for (long long l = l0; l < l1; ++l) s += base[l * job.N];
  seg_sum[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (!active) return;
  Acc run = Acc(0);
  for (int k = 0; k < static_cast<int>(threadIdx.y); ++k) run += seg_sum[k][threadIdx.x];
  for (long long l = l0; l < l1; ++l) {
    const Acc v = base[l * job.N];
    base[l * job.N] = run;
    run += v;
  }
}

// ---- 3. the tables ----------------------------------------------------------------------

/// store_blocked into a table row of run-time type: one switch per row, so
/// each case is a tight loop of one conversion.
template <typename T, typename Acc, int E>
__device__ __forceinline__ void store_row_as(const Acc (&acc)[E], Acc* smem, int lane, int nvalid, unsigned char* out_row,
                                             long long first) {
  T* out = reinterpret_cast<T*>(out_row) + first;
  store_blocked(acc, smem, lane, nvalid, [&](int j, Acc x) {
    if constexpr (std::is_same<T, std::uint32_t>::value) out[j] = static_cast<std::uint32_t>(static_cast<std::int64_t>(x));
    else out[j] = static_cast<T>(x);
  });
}
template <typename Acc, int E>
__device__ __forceinline__ void store_row(const Acc (&acc)[E], Acc* smem, int lane, int nvalid, unsigned char* out_row,
                                          long long first, TableType type) {
  if constexpr (std::is_same<Acc, std::int64_t>::value) {
    switch (type) {
      case TableType::u32: store_row_as<std::uint32_t>(acc, smem, lane, nvalid, out_row, first); break;
      case TableType::u64: store_row_as<std::uint64_t>(acc, smem, lane, nvalid, out_row, first); break;
      case TableType::f64: store_row_as<double>(acc, smem, lane, nvalid, out_row, first); break;
      default: store_row_as<std::int64_t>(acc, smem, lane, nvalid, out_row, first); break;
    }
  } else {
    if (type == TableType::f32) store_row_as<float>(acc, smem, lane, nvalid, out_row, first);
    else store_row_as<double>(acc, smem, lane, nvalid, out_row, first);
  }
}

/// The table row just above a warp's first row, S(y0, x+1), for the warp's
/// elements (blocked): the tile's column carries plus the column sums of the
/// tile's rows above this warp (`above`, from shared memory), scanned along the
/// row and started from the corner plus those rows' row carries.
template <typename Acc, int C, int E>
__device__ __forceinline__ void init_top(const Aggregates<Acc>& ag, const TileGrid& g, int ti, int tj, int x0,
                                         int nvalid, int lane, const Acc (*above)[32 * (E + 1)],
                                         const Acc (*above_rc)[4], int warp, Acc (&acc)[E]) {
  using WarpScan = cub::WarpScan<Vec<Acc, C>>;
  typename WarpScan::TempStorage unused;  // the shuffle implementation needs no storage
  const long long col_at = static_cast<long long>(ti) * g.W * C + static_cast<long long>(x0) * C + lane * E;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    Acc a = lane * E + e < nvalid ? ag.coltot[col_at + e] : Acc(0);
    for (int w = 0; w < warp; ++w) a += above[w][lane * (E + 1) + e];
    acc[e] = a;
  }
  Vec<Acc, C> t = scan_in_thread<Acc, C, E>(acc), ex, start;
  const long long tile_at = (static_cast<long long>(ti) * g.ntj + tj) * C;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    Acc a = ag.tiletot[tile_at + c];
    for (int w = 0; w < warp; ++w) a += above_rc[w][c];
    start.v[c] = a;
  }
  WarpScan(unused).ExclusiveScan(t, ex, start, VecAdd<Acc, C>());
#pragma unroll
  for (int e = 0; e < E; ++e) acc[e] += ex.v[e % C];
}

/// One row of one table: scan `v` along the row, add the row carry, accumulate
/// into `acc` and store.
template <typename Acc, int C, int E>
__device__ __forceinline__ void scan_row(Acc (&v)[E], const Vec<Acc, C>& carry, Acc (&acc)[E], Acc* smem, int lane,
                                         int nvalid, unsigned char* out_row, long long first, TableType type) {
  using WarpScan = cub::WarpScan<Vec<Acc, C>>;
  typename WarpScan::TempStorage unused;
  Vec<Acc, C> t = scan_in_thread<Acc, C, E>(v), ex;
  WarpScan(unused).ExclusiveScan(t, ex, carry, VecAdd<Acc, C>());
#pragma unroll
  for (int e = 0; e < E; ++e) acc[e] += v[e] + ex.v[e % C];
  store_row(acc, smem, lane, nvalid, out_row, first, type);
}

/// Read-only loads through the L1 (phase 2 re-reads rows that phase 1 of the
/// same block has just brought in).
template <typename T, int E>
__device__ __forceinline__ void load_striped_ldg(const T* row, int nvalid, int lane, T (&raw)[E]) {
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const int j = i * 32 + lane;
    raw[i] = j < nvalid ? __ldg(row + j) : T(0);
  }
}

// One block per tile, warp w owns rows r0 + w*R .. r0 + (w+1)*R - 1 (short
// per-warp work, so the grid has many waves and no long tail).
//  phase 1: each warp sums its rows' columns (striped: no exchange) and its
//           rows' row carries; both go to shared memory;
//  phase 2: each warp starts from the tile's top row plus what the warps above
//           it contributed, then scans and stores its rows.
template <typename Tin, int C, int E, int MINB, bool S, bool Q>
__global__ void __launch_bounds__(32 * IntegralTuning::kWarps, MINB)
    tile_scan_kernel(View2D<const Tin> src, TileGrid g, Aggregates<typename AccOf<Tin>::type> as,
                     Aggregates<typename AccOf<Tin>::type> aq, TableOut os, TableOut oq) {
  using Acc = typename AccOf<Tin>::type;
  constexpr int TW = 32 * E / C, WARPS = IntegralTuning::kWarps;
  constexpr int R = IntegralTuning::kTileRows / WARPS;
  static_assert(E % C == 0 && E % 2 == 0, "E: whole pixels per lane, E + 1 odd");
  __shared__ Tin smem_in[WARPS][32 * (E + 1)];
  __shared__ Acc buf_s[WARPS][32 * (E + 1)];          // phase 1: column sums; phase 2: store staging
  __shared__ Acc buf_q[Q ? WARPS : 1][32 * (E + 1)];  // phase 1: squared column sums
  __shared__ Acc rc_s[WARPS][4], rc_q[WARPS][4];      // phase 1: the warps' row-carry sums

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int ti = blockIdx.x / g.ntj, tj = blockIdx.x % g.ntj;
  const int x0 = tj * TW, r0 = ti * IntegralTuning::kTileRows;
  const int y0 = min(g.H, r0 + warp * R), y1 = min(g.H, y0 + R);
  const int nvalid = min(TW, g.W - x0) * C;
  const long long first = static_cast<long long>(x0 + 1) * C;  // this tile's first entry in a table row

  // Row 0 and column 0 of the tables are zero.
  if (ti == 0 && warp == 0) {
    for (int j = lane; j < nvalid; j += 32) {
      if (S) store_as(os.row(0), first + j, os.type, Acc(0));
      if (Q) store_as(oq.row(0), first + j, oq.type, Acc(0));
    }
    if (tj == 0 && lane < C) {
      if (S) store_as(os.row(0), lane, os.type, Acc(0));
      if (Q) store_as(oq.row(0), lane, oq.type, Acc(0));
    }
  }

  // Phase 1.
  {
    Acc cs[E], cq[E];
#pragma unroll
    for (int i = 0; i < E; ++i) cs[i] = cq[i] = Acc(0);
    Vec<Acc, C> rs = zero_vec<Acc, C>(), rq = zero_vec<Acc, C>();
    // Unrolled with predicated rows, so the compiler can have every row's
    // loads in flight at once (this phase is latency-bound otherwise).
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int y = y0 + r;
      if (y < y1) {
        Tin cur[E];
        load_striped(src.row(y) + x0 * C, nvalid, lane, cur);
#pragma unroll
        for (int i = 0; i < E; ++i) {
          const Acc v = static_cast<Acc>(cur[i]);
          if (S) cs[i] += v;
          if (Q) cq[i] += v * v;
        }
        const long long at = (static_cast<long long>(y) * g.ntj + tj) * C;
#pragma unroll
        for (int c = 0; c < C; ++c) {
          if (S) rs.v[c] += as.rowtot[at + c];
          if (Q) rq.v[c] += aq.rowtot[at + c];
        }
      }
    }
    // Striped element j = i*32 + lane goes where the blocked reader expects it.
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const int j = i * 32 + lane;
      if (S) buf_s[warp][j + j / E] = cs[i];
      if (Q) buf_q[warp][j + j / E] = cq[i];
    }
    if (lane < C) {
#pragma unroll
      for (int c = 0; c < C; ++c)
        if (lane == c) {
          if (S) rc_s[warp][c] = rs.v[c];
          if (Q) rc_q[warp][c] = rq.v[c];
        }
    }
  }
  __syncthreads();

  // Phase 2.
  Acc a_s[E], a_q[E];
  if (S) init_top<Acc, C, E>(as, g, ti, tj, x0, nvalid, lane, buf_s, rc_s, warp, a_s);
  if (Q) init_top<Acc, C, E>(aq, g, ti, tj, x0, nvalid, lane, buf_q, rc_q, warp, a_q);
  __syncthreads();  // buf_s becomes the store staging below

  Tin raw[E];
  if (y0 < y1) load_striped_ldg(src.row(y0) + x0 * C, nvalid, lane, raw);
  for (int y = y0; y < y1; ++y) {
    Acc v[E];
    striped_to_blocked(raw, smem_in[warp], lane, v);
    if (y + 1 < y1) load_striped_ldg(src.row(y + 1) + x0 * C, nvalid, lane, raw);  // in flight meanwhile
    const long long at = (static_cast<long long>(y) * g.ntj + tj) * C;
    if (S) {
      Vec<Acc, C> carry;
#pragma unroll
      for (int c = 0; c < C; ++c) carry.v[c] = as.rowtot[at + c];
      Acc s[E];
#pragma unroll
      for (int e = 0; e < E; ++e) s[e] = v[e];
      scan_row<Acc, C, E>(s, carry, a_s, buf_s[warp], lane, nvalid, os.row(y + 1), first, os.type);
      if (tj == 0 && lane < C) store_as(os.row(y + 1), lane, os.type, Acc(0));
    }
    if (Q) {
      Vec<Acc, C> carry;
#pragma unroll
      for (int c = 0; c < C; ++c) carry.v[c] = aq.rowtot[at + c];
      Acc q[E];
#pragma unroll
      for (int e = 0; e < E; ++e) q[e] = v[e] * v[e];
      scan_row<Acc, C, E>(q, carry, a_q, buf_s[warp], lane, nvalid, oq.row(y + 1), first, oq.type);
      if (tj == 0 && lane < C) store_as(oq.row(y + 1), lane, oq.type, Acc(0));
    }
  }
}

// ---- tilted ------------------------------------------------------------------------------

/// P(y, x) = I(0..x, y) per channel, one warp per row, TW pixels at a time.
template <typename Tin, int C>
__global__ void __launch_bounds__(32 * IntegralTuning::kWarps)
    row_prefix_kernel(View2D<const Tin> src, typename AccOf<Tin>::type* P) {
  using Acc = typename AccOf<Tin>::type;
  constexpr int E = Geom<C>::E, TW = Geom<C>::TW, WARPS = IntegralTuning::kWarps;
  using WarpScan = cub::WarpScan<Vec<Acc, C>>;
  __shared__ Tin smem_in[WARPS][32 * (E + 1)];
  __shared__ Acc smem_out[WARPS][32 * (E + 1)];
  typename WarpScan::TempStorage unused;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int y = blockIdx.x * WARPS + warp;
  if (y >= src.height) return;
  Acc* out = P + static_cast<long long>(y) * src.width * C;
  Vec<Acc, C> carry = zero_vec<Acc, C>();
  for (int x0 = 0; x0 < src.width; x0 += TW) {
    const int nvalid = min(TW, src.width - x0) * C;
    Tin raw[E];
    Acc v[E];
    load_striped(src.row(y) + x0 * C, nvalid, lane, raw);
    striped_to_blocked(raw, smem_in[warp], lane, v);
    Vec<Acc, C> t = scan_in_thread<Acc, C, E>(v), ex, total;
    WarpScan(unused).ExclusiveScan(t, ex, carry, VecAdd<Acc, C>(), total);
#pragma unroll
    for (int e = 0; e < E; ++e) v[e] += ex.v[e % C];
    store_blocked(v, smem_out[warp], lane, nvalid, [&](int j, Acc x) { out[static_cast<long long>(x0) * C + j] = x; });
    carry = VecAdd<Acc, C>()(carry, total);
  }
}

/// One thread per diagonal and channel. Pass 1 (u-lines, u = X+Y-2) stores
/// D1; pass 2 (w-lines, w = X-Y-1) subtracts D2. Rows where a diagonal has no
/// pixels left (or no table entry yet) are skipped; P clamps at the row's end.
template <typename Acc>
__global__ void __launch_bounds__(IntegralTuning::kLineBlock)
    tilted_lines_kernel(const Acc* P, int W, int H, int C, TableOut out, bool second) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(W + H) * C) return;
  const int k = static_cast<int>(t / C), c = static_cast<int>(t % C);
  const long long row_len = static_cast<long long>(W) * C;
  Acc d = Acc(0);
  if (!second) {
    const int u = k - 1;  // -1 .. W+H-2
    const int y_end = min(H, u + 2);
    for (int Y = 1; Y <= y_end; ++Y) {
      const int x = u - Y + 1;  // -1 only on the last row, where the diagonal has no pixel
      if (x >= 0) d += P[(Y - 1) * row_len + static_cast<long long>(min(x, W - 1)) * C + c];
      const int X = u - Y + 2;  // >= 0 here
      if (X <= W) store_as(out.row(Y), static_cast<long long>(X) * C + c, out.type, d);
    }
  } else {
    const int w = k - H - 1;  // -H-1 .. W-2
    const int y_begin = max(1, 1 - w), y_end = min(H, W - w - 1);
    for (int Y = y_begin; Y <= y_end; ++Y) {
      const int x = w + Y - 1;  // >= 0 here
      d += P[(Y - 1) * row_len + static_cast<long long>(min(x, W - 1)) * C + c];
      const int X = w + Y + 1;  // 0 .. W here
      unsigned char* row = out.row(Y);
      const long long j = static_cast<long long>(X) * C + c;
      store_as(row, j, out.type, load_as<Acc>(row, j, out.type) - d);
    }
  }
}

/// rows x n f64 entries -> f32, rounding once (grid-stride: any number of rows).
__global__ void __launch_bounds__(IntegralTuning::kLineBlock)
    narrow_rows_kernel(const unsigned char* in, std::ptrdiff_t in_pitch, unsigned char* out, std::ptrdiff_t out_pitch,
                       long long n, long long rows) {
  const long long total = n * rows, step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += step) {
    const long long y = k / n, i = k % n;
    reinterpret_cast<float*>(out + y * out_pitch)[i] = static_cast<float>(reinterpret_cast<const double*>(in + y * in_pitch)[i]);
  }
}

// ---- rectangle queries and the box filter --------------------------------------------------

template <typename T>
__global__ void __launch_bounds__(IntegralTuning::kLineBlock)
    rect_sums_kernel(TableRef<const T> table, const Rect* rects, long long n, int channel, T* out) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Rect r = rects[i];
  out[i] = table.rect_sum(r.x, r.y, r.width, r.height, channel);
}

template <typename T>
__global__ void __launch_bounds__(IntegralTuning::kLineBlock)
    extend_kernel(View2D<const T> src, View2D<T> ext, int rx, int ry, BorderMode mode) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= ext.width) return;
  const T* in = src.row(border_index(y - ry, src.height, mode)) +
                static_cast<long long>(border_index(x - rx, src.width, mode)) * src.channels;
  for (int c = 0; c < src.channels; ++c) ext.at(y, x, c) = in[c];
}

template <typename T, typename Tab>
__global__ void __launch_bounds__(IntegralTuning::kLineBlock)
    box_kernel(TableRef<const Tab> t, View2D<T> dst, int kw, int kh, int rx, int ry, double coef, bool constant,
               double value) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= dst.width) return;
  int x0 = x, x1 = x + kw, y0 = y, y1 = y + kh;
  if (constant) {
    x0 = max(0, x - rx), x1 = min(dst.width, x - rx + kw);
    y0 = max(0, y - ry), y1 = min(dst.height, y - ry + kh);
  }
  const double outside = static_cast<double>(static_cast<long long>(kw) * kh - static_cast<long long>(x1 - x0) * (y1 - y0));
  for (int c = 0; c < dst.channels; ++c) {
    const Tab sum = t.rect_sum(x0, y0, x1 - x0, y1 - y0, c);
    // u32 table: a box sum is below 2^31, so the modular result is the sum.
    double acc = (std::is_same<Tab, std::uint32_t>::value ? static_cast<double>(static_cast<int>(sum))
                                                         : static_cast<double>(sum)) *
                 coef;
    if (constant && outside > 0) acc += coef * value * outside;
    if constexpr (std::is_same<T, std::uint8_t>::value) {
      const double r = rint(acc);  // ties to even, as ref's nearbyint
      dst.at(y, x, c) = static_cast<std::uint8_t>(r < 0 ? 0 : (r > 255 ? 255 : r));
    } else {
      dst.at(y, x, c) = static_cast<float>(acc);
    }
  }
}

// ---- host side -------------------------------------------------------------------------------

TableOut table_out(const IntegralTableView& t) {
  return TableOut{static_cast<unsigned char*>(t.data), t.pitch, t.type};
}

unsigned blocks_for(long long n, int block) { return static_cast<unsigned>((n + block - 1) / block); }

template <typename F>
void with_input(PixelType type, int channels, F&& f) {
  auto by_c = [&](auto tin) {
    switch (channels) {
      case 1: f(tin, std::integral_constant<int, 1>{}); return;
      case 3: f(tin, std::integral_constant<int, 3>{}); return;
      case 4: f(tin, std::integral_constant<int, 4>{}); return;
    }
    throw Error(Status::internal, "integral cuda: unchecked channel count");
  };
  if (type == PixelType::u8) by_c(std::uint8_t{});
  else by_c(float{});
}

class CudaIntegralImpl final : public CudaIntegral {
 public:
  std::string run_device(const ConstImageView& src, const IntegralViews& out, stream_t stream) override {
    std::string path;
    if (!out.sum.empty() || !out.sqsum.empty()) {
      sums(src, out.sum, out.sqsum, stream);
      path = "cuda tiled reduce-then-scan";
      if (!out.sum.empty() && !out.sqsum.empty()) path += ", sum + sqsum fused";
    }
    if (!out.tilted.empty()) {
      tilted(src, out.tilted, stream);
      path += std::string(path.empty() ? "" : "; ") + "tilted: row prefix + diagonal scans";
    }
    return path;
  }

  std::string run_host(const ConstImageView& src, const IntegralViews& out, stream_t stream) override {
    // Upload, compute into device tables, download. Scratch grows only.
    const std::size_t in_pitch = round_up(src.row_bytes());
    src_.reserve(in_pitch * src.height);
    PIXELKIT_CUDA_TRY(cudaMemcpy2DAsync(src_.get(), in_pitch, src.data, static_cast<std::size_t>(src.pitch),
                                        src.row_bytes(), src.height, cudaMemcpyHostToDevice, stream));
    ConstImageView dsrc = src;
    dsrc.data = src_.get();
    dsrc.memory = Memory::device;
    dsrc.pitch = static_cast<std::ptrdiff_t>(in_pitch);
    IntegralViews dev;
    const IntegralTableView* host_tables[3] = {&out.sum, &out.sqsum, &out.tilted};
    IntegralTableView* dev_tables[3] = {&dev.sum, &dev.sqsum, &dev.tilted};
    for (int i = 0; i < 3; ++i) {
      if (host_tables[i]->empty()) continue;
      IntegralTableView d = *host_tables[i];
      d.pitch = static_cast<std::ptrdiff_t>(round_up(d.row_bytes()));
      tables_[i].reserve(static_cast<std::size_t>(d.pitch) * d.height);
      d.data = tables_[i].get();
      d.memory = Memory::device;
      *dev_tables[i] = d;
    }
    std::string path = run_device(dsrc, dev, stream);
    for (int i = 0; i < 3; ++i) {
      if (host_tables[i]->empty()) continue;
      const IntegralTableView& h = *host_tables[i];
      PIXELKIT_CUDA_TRY(cudaMemcpy2DAsync(h.data, static_cast<std::size_t>(h.pitch), dev_tables[i]->data,
                                          static_cast<std::size_t>(dev_tables[i]->pitch), h.row_bytes(), h.height,
                                          cudaMemcpyDeviceToHost, stream));
    }
    PIXELKIT_CUDA_TRY(cudaStreamSynchronize(stream));
    return path + " (host image: upload, device tables, download)";
  }

  void reserve(int width, int height, int channels, PixelType type, const IntegralRequest& r) override {
    if (r.sum || r.sqsum) aggregates_.reserve(aggregate_bytes(width, height, channels));
    if (r.tilted) prefix_.reserve(static_cast<std::size_t>(width) * height * channels * 8);
    const std::size_t in_pitch = round_up(static_cast<std::size_t>(width) * channels * element_size(type));
    src_.reserve(in_pitch * height);
    const TableType types[3] = {r.sum ? r.sum_type : TableType::automatic, r.sqsum ? r.sqsum_type : TableType::automatic,
                                r.tilted ? r.sum_type : TableType::automatic};
    for (int i = 0; i < 3; ++i)
      if (types[i] != TableType::automatic)
        tables_[i].reserve(round_up(static_cast<std::size_t>(width + 1) * channels * element_size(types[i])) *
                           (height + 1));
  }

 private:
  static std::size_t round_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

  static TileGrid grid_for(int W, int H, int tw) {
    TileGrid g;
    g.W = W;
    g.H = H;
    g.ntj = (W + tw - 1) / tw;
    g.nti = (H + IntegralTuning::kTileRows - 1) / IntegralTuning::kTileRows;
    return g;
  }
  static int default_tw(int C) { return C == 1 ? Geom<1>::TW : (C == 3 ? Geom<3>::TW : Geom<4>::TW); }
  /// Elements of one table's aggregates.
  static std::size_t aggregate_elems(const TileGrid& g, int C) {
    return (static_cast<std::size_t>(g.H) * g.ntj + static_cast<std::size_t>(g.nti) * g.W +
            static_cast<std::size_t>(g.nti) * g.ntj) *
           C;
  }
  static std::size_t aggregate_bytes(int W, int H, int C) {
    return 2 * aggregate_elems(grid_for(W, H, default_tw(C)), C) * 8;
  }

  void sums(const ConstImageView& src, const IntegralTableView& sum, const IntegralTableView& sq, stream_t stream) {
    with_input(src.type, src.channels, [&](auto tin, auto cc) {
      using Tin = decltype(tin);
      constexpr int CC = decltype(cc)::value;
      if constexpr (std::is_same<Tin, std::uint8_t>::value && CC == 1) {
        switch (g_variant) {
          case 1: sums_cfg<Tin, CC>(Cfg<8, 3>{}, src, sum, sq, stream); return;
          case 2: sums_cfg<Tin, CC>(Cfg<4, 3>{}, src, sum, sq, stream); return;
          case 3: sums_cfg<Tin, CC>(Cfg<4, 4>{}, src, sum, sq, stream); return;
          default: break;
        }
      }
      sums_cfg<Tin, CC>(Cfg<Geom<CC>::E, 2>{}, src, sum, sq, stream);
    });
  }

  template <typename Tin, int CC, typename CF>
  void sums_cfg(CF, const ConstImageView& src, const IntegralTableView& sum, const IntegralTableView& sq,
                stream_t stream) {
    using Acc = typename AccOf<Tin>::type;
    constexpr int E = CF::E, MINB = CF::MINB;
    const int W = src.width, H = src.height;
    const TileGrid g = grid_for(W, H, 32 * E / CC);
    const std::size_t per = aggregate_elems(g, CC);
    aggregates_.reserve(2 * per * sizeof(Acc));
    const bool S = !sum.empty(), Q = !sq.empty();
    auto make = [&](Acc* base) {
      return Aggregates<Acc>{base, base + static_cast<std::size_t>(H) * g.ntj * CC,
                             base + static_cast<std::size_t>(H) * g.ntj * CC + static_cast<std::size_t>(g.nti) * W * CC};
    };
    const Aggregates<Acc> as = S ? make(aggregates_.as<Acc>()) : Aggregates<Acc>{nullptr, nullptr, nullptr};
    const Aggregates<Acc> aq = Q ? make(aggregates_.as<Acc>() + per) : Aggregates<Acc>{nullptr, nullptr, nullptr};
    const auto view = view2d<Tin>(src);
    const unsigned blocks = static_cast<unsigned>(static_cast<long long>(g.nti) * g.ntj);
    const unsigned threads = 32 * IntegralTuning::kWarps;
    // 1. tile totals
    if (S && Q) tile_totals_kernel<Tin, CC, E, MINB, true, true><<<blocks, threads, 0, stream>>>(view, g, as, aq);
    else if (S) tile_totals_kernel<Tin, CC, E, MINB, true, false><<<blocks, threads, 0, stream>>>(view, g, as, aq);
    else tile_totals_kernel<Tin, CC, E, MINB, false, true><<<blocks, threads, 0, stream>>>(view, g, as, aq);
    PIXELKIT_CUDA_CHECK_LAUNCH("tile_totals_kernel");
    // 2. row carries (along tiles across), column carries (along tiles down),
    //    tile totals along tiles across; then tile totals along tiles down.
    ScanJobs<Acc> first{}, second{};
    int nf = 0, ns = 0;
    for (const Aggregates<Acc>* ag : {&as, &aq}) {
      if (!ag->rowtot) continue;
      first.job[nf++] = {ag->rowtot, H, g.ntj, CC};
      first.job[nf++] = {ag->coltot, 1, g.nti, static_cast<long long>(W) * CC};
      first.job[nf++] = {ag->tiletot, g.nti, g.ntj, CC};
      second.job[ns++] = {ag->tiletot, 1, g.nti, static_cast<long long>(g.ntj) * CC};
    }
    launch_scans(first, nf, stream);
    launch_scans(second, ns, stream);
    // 3. the tables
    const TableOut os = S ? table_out(sum) : TableOut{nullptr, 0, TableType::i64};
    const TableOut oq = Q ? table_out(sq) : TableOut{nullptr, 0, TableType::u64};
    if (S && Q) tile_scan_kernel<Tin, CC, E, MINB, true, true><<<blocks, threads, 0, stream>>>(view, g, as, aq, os, oq);
    else if (S) tile_scan_kernel<Tin, CC, E, MINB, true, false><<<blocks, threads, 0, stream>>>(view, g, as, aq, os, oq);
    else tile_scan_kernel<Tin, CC, E, MINB, false, true><<<blocks, threads, 0, stream>>>(view, g, as, aq, os, oq);
    PIXELKIT_CUDA_CHECK_LAUNCH("tile_scan_kernel");
  }

  template <typename Acc>
  static void launch_scans(const ScanJobs<Acc>& jobs, int n, stream_t stream) {
    long long lines = 0;
    for (int i = 0; i < n; ++i) lines = std::max(lines, jobs.job[i].A * jobs.job[i].N);
    if (n == 0 || lines == 0) return;
    const dim3 block(32, IntegralTuning::kSegments);
    const dim3 grid(blocks_for(lines, 32), static_cast<unsigned>(n));
    exclusive_scan_lines_kernel<Acc><<<grid, block, 0, stream>>>(jobs);
    PIXELKIT_CUDA_CHECK_LAUNCH("exclusive_scan_lines_kernel");
  }

  void tilted(const ConstImageView& src, const IntegralTableView& table, stream_t stream) {
    const int W = src.width, H = src.height, C = src.channels;
    prefix_.reserve(static_cast<std::size_t>(W) * H * C * 8);
    // An f32 table is built in f64 scratch and rounded once at the end:
    // D1 - D2 cancels large partial sums, which f32 intermediates would not
    // survive (an entry of a few hundred from two sums of ~1e6).
    IntegralTableView t = table;
    if (table.type == TableType::f32) {
      t.type = TableType::f64;
      t.pitch = static_cast<std::ptrdiff_t>(round_up(t.row_bytes()));
      tilted_f64_.reserve(static_cast<std::size_t>(t.pitch) * t.height);
      t.data = tilted_f64_.get();
    }
    PIXELKIT_CUDA_TRY(cudaMemsetAsync(t.data, 0, t.row_bytes(), stream));  // row 0
    with_input(src.type, C, [&](auto tin, auto cc) {
      using Tin = decltype(tin);
      using Acc = typename AccOf<Tin>::type;
      constexpr int CC = decltype(cc)::value;
      Acc* P = prefix_.as<Acc>();
      row_prefix_kernel<Tin, CC><<<blocks_for(H, IntegralTuning::kWarps), 32 * IntegralTuning::kWarps, 0, stream>>>(
          view2d<Tin>(src), P);
      PIXELKIT_CUDA_CHECK_LAUNCH("row_prefix_kernel");
      const unsigned blocks = blocks_for(static_cast<long long>(W + H) * C, IntegralTuning::kLineBlock);
      for (bool second : {false, true}) {
        tilted_lines_kernel<Acc><<<blocks, IntegralTuning::kLineBlock, 0, stream>>>(P, W, H, C, table_out(t), second);
        PIXELKIT_CUDA_CHECK_LAUNCH("tilted_lines_kernel");
      }
    });
    if (table.type == TableType::f32) {
      const long long n = static_cast<long long>(table.width) * C, rows = table.height;
      const unsigned blocks = std::min(blocks_for(n * rows, IntegralTuning::kLineBlock), 1u << 20);
      narrow_rows_kernel<<<blocks, IntegralTuning::kLineBlock, 0, stream>>>(
          static_cast<const unsigned char*>(t.data), t.pitch, static_cast<unsigned char*>(table.data), table.pitch, n, rows);
      PIXELKIT_CUDA_CHECK_LAUNCH("narrow_rows_kernel");
    }
  }

  DeviceBuffer aggregates_, prefix_, src_, tables_[3], tilted_f64_;
};

}  // namespace

std::unique_ptr<CudaIntegral> make_cuda_integral() { return std::make_unique<CudaIntegralImpl>(); }

int integral_cuda_variants() { return static_cast<int>(sizeof(kVariantNames) / sizeof(kVariantNames[0])); }
const char* integral_cuda_variant_name(int v) { return v >= 0 && v < integral_cuda_variants() ? kVariantNames[v] : "?"; }
void set_integral_cuda_variant(int v) { g_variant = v >= 0 && v < integral_cuda_variants() ? v : 0; }

template <typename T>
void rect_sums_cuda(const IntegralTableView& table, const Rect* rects, std::size_t n, int channel, T* out,
                    stream_t stream) {
  DeviceBuffer d_rects(n * sizeof(Rect)), d_out(n * sizeof(T));
  PIXELKIT_CUDA_TRY(cudaMemcpyAsync(d_rects.get(), rects, n * sizeof(Rect), cudaMemcpyHostToDevice, stream));
  rect_sums_kernel<T><<<blocks_for(static_cast<long long>(n), IntegralTuning::kLineBlock), IntegralTuning::kLineBlock, 0,
                        stream>>>(table.ref<const T>(), d_rects.as<Rect>(), static_cast<long long>(n), channel,
                                  d_out.as<T>());
  PIXELKIT_CUDA_CHECK_LAUNCH("rect_sums_kernel");
  PIXELKIT_CUDA_TRY(cudaMemcpyAsync(out, d_out.get(), n * sizeof(T), cudaMemcpyDeviceToHost, stream));
  PIXELKIT_CUDA_TRY(cudaStreamSynchronize(stream));
}

template void rect_sums_cuda<std::uint32_t>(const IntegralTableView&, const Rect*, std::size_t, int, std::uint32_t*, stream_t);
template void rect_sums_cuda<std::int64_t>(const IntegralTableView&, const Rect*, std::size_t, int, std::int64_t*, stream_t);
template void rect_sums_cuda<std::uint64_t>(const IntegralTableView&, const Rect*, std::size_t, int, std::uint64_t*, stream_t);
template void rect_sums_cuda<float>(const IntegralTableView&, const Rect*, std::size_t, int, float*, stream_t);
template void rect_sums_cuda<double>(const IntegralTableView&, const Rect*, std::size_t, int, double*, stream_t);

std::string box_filter_via_integral_cuda(const ConstImageView& src, const ImageView& dst, const Kernel& k,
                                         const Border& border, stream_t stream) {
  const int W = src.width, H = src.height, C = src.channels;
  const bool constant = border.mode == BorderMode::constant;
  const int rx = k.radius_x(), ry = k.radius_y();
  const TableType tt = src.type == PixelType::u8 ? TableType::i64 : TableType::f64;
  // Grow-only scratch, one set per host thread (the call synchronises its
  // stream before returning, so the next call may reuse it): the extended
  // image, its table and the integral's own aggregates. A video loop through
  // filter2d allocates only on its first frame.
  struct Scratch {
    DeviceBuffer ext, table;
    CudaIntegralImpl op;
  };
  thread_local Scratch scratch;
  ConstImageView base = src;
  if (!constant) {
    ImageView ext;
    ext.width = W + 2 * rx;
    ext.height = H + 2 * ry;
    ext.channels = C;
    ext.type = src.type;
    ext.memory = Memory::device;
    ext.pitch = static_cast<std::ptrdiff_t>((static_cast<std::size_t>(ext.width) * C * element_size(src.type) + 255) / 256 * 256);
    scratch.ext.reserve(static_cast<std::size_t>(ext.pitch) * ext.height);
    ext.data = scratch.ext.get();
    const dim3 grid(blocks_for(ext.width, IntegralTuning::kLineBlock), static_cast<unsigned>(ext.height));
    if (src.type == PixelType::u8)
      extend_kernel<std::uint8_t><<<grid, IntegralTuning::kLineBlock, 0, stream>>>(view2d<std::uint8_t>(src),
                                                                                  view2d<std::uint8_t>(ext), rx, ry,
                                                                                  border.mode);
    else
      extend_kernel<float><<<grid, IntegralTuning::kLineBlock, 0, stream>>>(view2d<float>(src), view2d<float>(ext),
                                                                           rx, ry, border.mode);
    PIXELKIT_CUDA_CHECK_LAUNCH("extend_kernel");
    base = ext;
  }
  IntegralTableView table;
  table.width = base.width + 1;
  table.height = base.height + 1;
  table.channels = C;
  table.type = tt;
  table.memory = Memory::device;
  table.pitch = static_cast<std::ptrdiff_t>((table.row_bytes() + 255) / 256 * 256);
  scratch.table.reserve(static_cast<std::size_t>(table.pitch) * table.height);
  table.data = scratch.table.get();
  scratch.op.run_device(base, IntegralViews{table, {}, {}}, stream);
  const dim3 grid(blocks_for(W, IntegralTuning::kLineBlock), static_cast<unsigned>(H));
  const double coef = static_cast<double>(k.coeffs[0]);
  if (src.type == PixelType::u8)
    box_kernel<std::uint8_t, std::int64_t><<<grid, IntegralTuning::kLineBlock, 0, stream>>>(
        table.ref<const std::int64_t>(), view2d<std::uint8_t>(dst), k.width, k.height, rx, ry, coef, constant,
        static_cast<double>(border.value));
  else
    box_kernel<float, double><<<grid, IntegralTuning::kLineBlock, 0, stream>>>(table.ref<const double>(), view2d<float>(dst),
                                                                      k.width, k.height, rx, ry, coef, constant,
                                                                      static_cast<double>(border.value));
  PIXELKIT_CUDA_CHECK_LAUNCH("box_kernel");
  // The scratch is freed when this returns: wait for the kernels that use it.
  PIXELKIT_CUDA_TRY(cudaStreamSynchronize(stream));
  return "box " + std::to_string(k.width) + "x" + std::to_string(k.height) + " via summed-area table (" +
         to_string(tt) + ")";
}

}  // namespace pixelkit::detail
