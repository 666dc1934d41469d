// integral_cuda.cu - the CUDA backend of the integral.
//
// Sum and squared sum, production: one launch, a single-pass tiled scan with
// decoupled look-back between tiles (single_pass_kernel; Merrill & Garland's
// decoupled look-back, applied along both axes). Tiles of TH rows x 32*E/C
// pixels (u8: 128 rows x 256 pixels for 1 channel, x 64 pixels for 3/4; f32:
// 32 rows), one block of 4 warps per tile, tile ids from a ticket counter in
// row-major order, so a tile only ever waits on tiles with smaller tickets
// (already running or done): no deadlock whatever the scheduling. Each tile
//  1. loads its pixels once into shared memory and forms its row totals, its
//     column totals (per warp) and its total, all tables of the call fused;
//  2. publishes its horizontal aggregate (row totals + tile total) and looks
//     back along its tile row: row carries, and in the extra element the sum
//     of everything left of the tile in its rows;
//  3. publishes its horizontal prefix and its vertical aggregate (column totals
//     + that extra element) and looks back up its tile column: column carries,
//     and in the extra element the corner (everything above-left);
//  4. each warp builds the table row above its first row (corner + row carries
//     above it + column carries scanned along x), then scans its rows
//     (in-thread scan + cub::WarpScan + row carry), accumulates down in
//     registers and stores every entry exactly once, coalesced through shared
//     memory.
// u8 images of one channel (the commonest request) take single_pass_u8c1_kernel:
// the same tiles and look-back, but 8-byte loads per lane, dp4a row totals
// and 32-bit arithmetic inside the tile (a tile's sums fit u32); 128-row
// tiles of 4 warps for one table, 256-row tiles of 8 warps for both.
// Flags are one word per tile and direction, (epoch << 2) | state, so nothing
// is cleared per call; one warp publishes (payload, fence, release-store of the
// flag) while the others look back (relaxed flag loads over a window of 8
// predecessors, a fence, then L2 loads of the payloads). The input is read
// once, each table written once; the look-back payloads add a few percent.
//
// The previous 4-launch reduce-then-scan (tile_totals_kernel, two
// exclusive_scan_lines_kernel, tile_scan_kernel; no inter-block dependencies,
// but the input read twice) stays as benchmark variant 1
// (set_integral_cuda_variant), so the two can be compared.
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
unsigned g_first_epoch = 0;  // test hook: the epoch a new operator starts from (set_integral_cuda_first_epoch)
const char* const kVariantNames[] = {"single pass, look-back (production)", "4-launch reduce-then-scan (previous)",
                                     "single pass W8 TH64 minB2 (u8 1ch)", "single pass W2 TH64 minB8 (u8 1ch)",
                                     "single pass W4 TH64 minB4 (u8)",
                                     "single pass, generic int64 kernel (u8 1ch; the production path before the u8 kernel)",
                                     "single pass u8 1ch kernel TH64 W4 minB6", "single pass u8 1ch kernel TH128 W8 minB3",
                                     "single pass u8 1ch kernel TH256 W8 minB2"};

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

/// Row 0 of the tables over a top tile's nvalid entries (from `first`), and
/// the C entries of column 0 for the top-left tile: zeros. One warp.
template <typename Acc, bool S, bool Q>
__device__ __forceinline__ void zero_top_row(const TableOut& os, const TableOut& oq, int tj, int lane, int nvalid,
                                             long long first, int C) {
  for (int j = lane; j < nvalid; j += 32) {
    if (S) store_as(os.row(0), first + j, os.type, Acc(0));
    if (Q) store_as(oq.row(0), first + j, oq.type, Acc(0));
  }
  if (tj == 0 && lane < C) {
    if (S) store_as(os.row(0), lane, os.type, Acc(0));
    if (Q) store_as(oq.row(0), lane, oq.type, Acc(0));
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

  if (ti == 0 && warp == 0) zero_top_row<Acc, S, Q>(os, oq, tj, lane, nvalid, first, C);

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

// ---- single pass: tiled scan with decoupled look-back -------------------------------------

// Flag words: (epoch << 2) | state, one per tile and direction. A word written
// by an earlier call carries an older epoch and reads as "not yet", so the
// flags need no clearing per call (only when the epoch wraps, see next_epoch).
constexpr unsigned kFlagAggregate = 1, kFlagPrefix = 2;
constexpr unsigned kEpochLimit = 1u << 30;  ///< epochs are 1 .. kEpochLimit - 1 (0 = never written)
constexpr int kFlagsOffset = 32;            ///< flags start one 128-byte line after the ticket counter

/// What a single-pass launch shares between its tiles (all device pointers).
struct LookBackState {
  unsigned* ticket;  ///< tile-id counter; the block that takes the last ticket resets it to 0
  unsigned* hflag;   ///< [ntiles] horizontal (row-carry) flags
  unsigned* vflag;   ///< [ntiles] vertical (column-carry) flags
  void* hagg;        ///< [ntiles][LH*NT] horizontal aggregates (row totals, tile total)
  void* hinc;        ///< [ntiles][LH*NT] horizontal inclusive prefixes
  void* vagg;        ///< [ntiles][LV*NT] vertical aggregates (column totals, row-carry sum)
  void* vinc;        ///< [ntiles][LV*NT] vertical inclusive prefixes
  unsigned epoch;
};

__device__ __forceinline__ unsigned ld_relaxed_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release_gpu(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ long long ld_cg(const std::int64_t* p) { return __ldcg(reinterpret_cast<const long long*>(p)); }
__device__ __forceinline__ double ld_cg(const double* p) { return __ldcg(p); }

/// One warp publishes a vector of L values: payload first, each lane fences
/// (its stores are visible device-wide), then lane 0 release-stores the flag.
template <typename Acc>
__device__ __forceinline__ void publish_warp(unsigned* flag, Acc* dst, const Acc* vals, int L, unsigned word) {
  const int lane = threadIdx.x % 32;
  for (int k = lane; k < L; k += 32) dst[k] = vals[k];
  __threadfence();
  __syncwarp();
  if (lane == 0) st_release_gpu(flag, word);
}

/// Decoupled look-back along one line of tiles (positions 0 .. pos-1 before
/// this one; tile index tile0 + p * stride). Each thread sums its own
/// elements (threadIdx.x + m * THREADS < L) of the predecessors' vectors,
/// independently of the other threads: it reads a window of WIN flags at once
/// (relaxed), takes the run of ready ones nearest to it up to the first
/// inclusive prefix, fences (acquire) and adds their payloads (L2 loads).
/// Every flag it waits on belongs to a tile with a smaller ticket: no deadlock.
template <typename Acc, int M, int WIN, int THREADS>
__device__ __forceinline__ void look_back(const unsigned* flags, const Acc* agg, const Acc* inc, int L, long long tile0,
                                          long long stride, int pos, unsigned epoch, Acc (&carry)[M]) {
#pragma unroll
  for (int m = 0; m < M; ++m) carry[m] = Acc(0);
  const int tid = threadIdx.x;
  if (tid >= L) return;
  int k = pos - 1;
  while (k >= 0) {
    unsigned f[WIN];
#pragma unroll
    for (int w = 0; w < WIN; ++w) f[w] = k - w >= 0 ? ld_relaxed_gpu(flags + tile0 + (k - w) * stride) : 0u;
    int n = 0;
    bool pre = false;
#pragma unroll
    for (int w = 0; w < WIN; ++w) {
      const unsigned s = f[w] & 3u;
      if (n == w && !pre && (f[w] >> 2) == epoch && s != 0u) {
        n = w + 1;
        pre = s == kFlagPrefix;
      }
    }
    if (n == 0) {
      __nanosleep(40);
      continue;
    }
    __threadfence();  // the flags above were read before any payload below
#pragma unroll
    for (int w = 0; w < WIN; ++w)
      if (w < n) {
        const long long t = tile0 + static_cast<long long>(k - w) * stride;
        const Acc* p = (pre && w == n - 1 ? inc : agg) + t * L + tid;
#pragma unroll
        for (int m = 0; m < M; ++m)
          if (tid + m * THREADS < L) carry[m] += ld_cg(p + m * THREADS);
      }
    if (pre) return;
    k -= n;
  }
}

/// The block's tile id, in every thread: thread 0 takes the next ticket (the
/// block that takes the last one resets the counter for the next launch).
__device__ __forceinline__ long long take_ticket(const LookBackState& lb, long long ntiles, unsigned* ticket_s) {
  if (threadIdx.x == 0) {
    const unsigned t = atomicAdd(lb.ticket, 1u);
    if (t == ntiles - 1) atomicExch(lb.ticket, 0u);  // every ticket is taken: ready for the next launch
    *ticket_s = t;
  }
  __syncthreads();
  return *ticket_s;
}

/// Steps 2 and 3 of a single-pass tile, shared by the kernels. With hvec (per
/// table: row totals, then the tile total; [NT][LH]) and vvec (per table:
/// column totals, then C elements filled here; [NT][LV]) complete in shared
/// memory: the last warp publishes the horizontal aggregate while the others
/// look back along the tile row (-> hcar: row carries, and in the extra element
/// everything left of the tile in its rows, which also becomes vvec's extra
/// element); then the last warp publishes the horizontal prefix and the
/// vertical aggregate under one fence while the others look back up the tile
/// column (-> vcar: column carries, and in the extra element the corner).
/// Called by every thread of the block; ends after a barrier.
template <typename Acc, int C, int NW, int LH, int LV, int NT>
__device__ __forceinline__ void look_back_phases(const LookBackState& lb, long long tix, int ti, int tj, int ntj,
                                                 Acc* hvec, Acc* vvec, Acc* hcar, Acc* vcar) {
  constexpr int WIN = 8, LB_THREADS = 32 * (NW - 1);
  constexpr int MH = (LH * NT + LB_THREADS - 1) / LB_THREADS, MV = (LV * NT + LB_THREADS - 1) / LB_THREADS;
  constexpr int ROWS_C = LH - C, NV = LV - C;  // TH * C row totals, 32 * E column totals
  const int tid = threadIdx.x, lane = tid % 32;
  const unsigned ep = lb.epoch << 2;
  Acc* const hagg = static_cast<Acc*>(lb.hagg) + tix * (LH * NT);
  Acc* const hinc = static_cast<Acc*>(lb.hinc) + tix * (LH * NT);
  Acc* const vagg = static_cast<Acc*>(lb.vagg) + tix * (LV * NT);
  Acc* const vinc = static_cast<Acc*>(lb.vinc) + tix * (LV * NT);
  // The last warp publishes (payload, fence, flag) while the others look
  // back: a fence waits for the stores to land, and only one warp waits.
  const bool publisher = tid / 32 == NW - 1;

  // 2. Horizontal: row carries (and, in the extra element, the sum of
  //    everything left of the tile in its rows).
  if (publisher) {
    publish_warp(lb.hflag + tix, tj == 0 ? hinc : hagg, hvec, LH * NT, ep | (tj == 0 ? kFlagPrefix : kFlagAggregate));
  } else {
    Acc carry[MH];
    if (tj == 0) {
#pragma unroll
      for (int m = 0; m < MH; ++m) carry[m] = Acc(0);
    } else {
      look_back<Acc, MH, WIN, LB_THREADS>(lb.hflag, static_cast<const Acc*>(lb.hagg), static_cast<const Acc*>(lb.hinc),
                                          LH * NT, static_cast<long long>(ti) * ntj, 1, tj, lb.epoch, carry);
    }
#pragma unroll
    for (int m = 0; m < MH; ++m) {
      const int k = tid + m * LB_THREADS;
      if (k < LH * NT) {
        hcar[k] = carry[m];
        const int t = k / LH, e = k % LH;
        if (e >= ROWS_C) vvec[t * LV + NV + (e - ROWS_C)] = carry[m];  // the vertical aggregate's extra element
      }
    }
  }
  __syncthreads();

  // 3. Vertical: column carries and the corner. Meanwhile the publisher
  //    publishes this tile's horizontal prefix and its vertical aggregate
  //    (column totals and the sum of its row carries) under one fence.
  if (publisher) {
    Acc* const vout = ti == 0 ? vinc : vagg;  // the top tile row has no carries: its aggregate is its prefix
    if (tj != 0)
      for (int k = lane; k < LH * NT; k += 32) hinc[k] = hcar[k] + hvec[k];
    for (int k = lane; k < LV * NT; k += 32) vout[k] = vvec[k];
    __threadfence();
    __syncwarp();
    if (lane == 0) {
      if (tj != 0) st_release_gpu(lb.hflag + tix, ep | kFlagPrefix);
      st_release_gpu(lb.vflag + tix, ep | (ti == 0 ? kFlagPrefix : kFlagAggregate));
    }
  } else {
    Acc carry[MV];
    if (ti == 0) {
#pragma unroll
      for (int m = 0; m < MV; ++m) carry[m] = Acc(0);
    } else {
      look_back<Acc, MV, WIN, LB_THREADS>(lb.vflag, static_cast<const Acc*>(lb.vagg), static_cast<const Acc*>(lb.vinc),
                                          LV * NT, tj, ntj, ti, lb.epoch, carry);
    }
#pragma unroll
    for (int m = 0; m < MV; ++m) {
      const int k = tid + m * LB_THREADS;
      if (k < LV * NT) vcar[k] = carry[m];
    }
  }
  __syncthreads();
}

/// The vertical inclusive prefix (column carries + column totals), published
/// by the last warp once the block no longer needs it for anything else: only
/// this warp's rows wait for the fence. Not for the top tile row (its
/// aggregate was already published as a prefix).
template <typename Acc, int LV, int NT>
__device__ __forceinline__ void publish_vertical_prefix(const LookBackState& lb, long long tix, const Acc* vcar,
                                                        const Acc* vvec) {
  const int lane = threadIdx.x % 32;
  Acc* const vinc = static_cast<Acc*>(lb.vinc) + tix * (LV * NT);
  for (int k = lane; k < LV * NT; k += 32) vinc[k] = vcar[k] + vvec[k];
  __threadfence();
  __syncwarp();
  if (lane == 0) st_release_gpu(lb.vflag + tix, (lb.epoch << 2) | kFlagPrefix);
}

/// A single-pass configuration: E elements per lane (tile width 32*E/C
/// pixels), TH rows per tile, WARPS warps per tile (each on TH/WARPS rows),
/// MINB blocks per SM asked of the compiler.
template <int E_, int TH_, int WARPS_, int MINB_> struct SpCfg {
  static constexpr int E = E_, TH = TH_, WARPS = WARPS_, MINB = MINB_;
};

/// Shared-memory layout of the single-pass kernel (dynamic, sized on the host).
template <typename Tin, int C, int E, int TH, int WARPS_, bool S, bool Q> struct SpLayout {
  static constexpr int WARPS = WARPS_, THREADS = 32 * WARPS;
  static constexpr int NT = (S ? 1 : 0) + (Q ? 1 : 0);  ///< tables
  static constexpr int TQ = S ? 1 : 0;                  ///< index of the squared sum among them
  static constexpr int NV = 32 * E;                     ///< elements per tile row
  static constexpr int P = 32 * (E + 1);                ///< padded row (one pad per lane)
  static constexpr int LH = (TH + 1) * C;               ///< row totals + the tile total
  static constexpr int LV = NV + C;                     ///< column totals + the row-carry sum
  // Acc arrays first (8-byte aligned), then the input tile.
  static constexpr std::size_t colpart = 0;                                      // [NT][WARPS][P]
  static constexpr std::size_t wsum = colpart + std::size_t(NT) * WARPS * P;     // [NT][WARPS][C]
  static constexpr std::size_t hvec = wsum + std::size_t(NT) * WARPS * C;        // [NT][LH]
  static constexpr std::size_t vvec = hvec + std::size_t(NT) * LH;               // [NT][LV]
  static constexpr std::size_t hcar = vvec + std::size_t(NT) * LV;               // [NT][LH] row carries
  static constexpr std::size_t vcar = hcar + std::size_t(NT) * LH;               // [NT][LV] column carries, corner
  static constexpr std::size_t acc_elems = vcar + std::size_t(NT) * LV;
  static constexpr std::size_t tile_bytes = std::size_t(TH) * P * sizeof(Tin);  // [TH][P]
  static constexpr std::size_t bytes = acc_elems * 8 + tile_bytes + 16;
};

/// The table row just above warp `warp`'s first row, S(y0, x+1), for the
/// warp's elements (blocked): column carries (vcarry) plus the column sums of
/// the tile's rows above the warp, scanned along the row, started from the
/// corner (vcarry[NV..]) plus the row carries of those rows.
template <typename Acc, int C, int E, int R>
__device__ __forceinline__ void init_top_sp(const Acc* vcarry, const Acc* hcarry, const Acc* colpart, int warp, int lane,
                                            Acc (&acc)[E]) {
  constexpr int P = 32 * (E + 1);
  using WarpScan = cub::WarpScan<Vec<Acc, C>>;
  typename WarpScan::TempStorage unused;  // the shuffle implementation needs no storage
#pragma unroll
  for (int e = 0; e < E; ++e) {
    Acc a = vcarry[lane * E + e];
    for (int w = 0; w < warp; ++w) a += colpart[w * P + lane * (E + 1) + e];
    acc[e] = a;
  }
  Vec<Acc, C> t = scan_in_thread<Acc, C, E>(acc), ex, start;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    Acc a = vcarry[32 * E + c];
    for (int r = 0; r < warp * R; ++r) a += hcarry[r * C + c];
    start.v[c] = a;
  }
  WarpScan(unused).ExclusiveScan(t, ex, start, VecAdd<Acc, C>());
#pragma unroll
  for (int e = 0; e < E; ++e) acc[e] += ex.v[e % C];
}

// One block per tile of TH rows x 32*E/C pixels, tiles taken in row-major
// ticket order. Warp w owns tile rows w*R .. w*R+R-1.
//  1. load the tile once into shared memory; per-warp column sums, row totals;
//  2. publish the horizontal aggregate (row totals + tile total), look back
//     along the tile row -> row carries, publish the inclusive prefix;
//  3. publish the vertical aggregate (column totals + the sum of this tile's
//     row carries), look back up the tile column -> column carries and, in the
//     extra element, the corner; publish the inclusive prefix;
//  4. each warp builds its top row and scans/stores its rows (as tile_scan_kernel).
template <typename Tin, int C, int E, int TH, int NW, int MINB, bool S, bool Q>
__global__ void __launch_bounds__(32 * NW, MINB)
    single_pass_kernel(View2D<const Tin> src, TileGrid g, LookBackState lb, TableOut os, TableOut oq) {
  using Acc = typename AccOf<Tin>::type;
  using L = SpLayout<Tin, C, E, TH, NW, S, Q>;
  constexpr int WARPS = L::WARPS, THREADS = L::THREADS, R = TH / WARPS, NV = L::NV, P = L::P, LH = L::LH,
                LV = L::LV, NT = L::NT, TQ = L::TQ, TW = NV / C;
  static_assert(E % C == 0 && E % 2 == 0 && TH % WARPS == 0 && WARPS >= 2,
                "E: whole pixels per lane, E + 1 odd; TH: whole warps; one warp publishes, the others look back");
  extern __shared__ __align__(16) unsigned char sp_smem[];
  Acc* const sm = reinterpret_cast<Acc*>(sp_smem);
  Acc* const colpart = sm + L::colpart;
  Acc* const wsum = sm + L::wsum;
  Acc* const hvec = sm + L::hvec;
  Acc* const vvec = sm + L::vvec;
  Acc* const hcar = sm + L::hcar;
  Acc* const vcar = sm + L::vcar;
  Tin* const tile = reinterpret_cast<Tin*>(sp_smem + L::acc_elems * 8);
  unsigned* const ticket_s = reinterpret_cast<unsigned*>(sp_smem + L::acc_elems * 8 + L::tile_bytes);

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const long long tix = take_ticket(lb, static_cast<long long>(g.nti) * g.ntj, ticket_s);
  const int ti = static_cast<int>(tix / g.ntj), tj = static_cast<int>(tix % g.ntj);
  const int x0 = tj * TW, r0 = ti * TH;
  const int nvalid = min(TW, g.W - x0) * C;
  const long long first = static_cast<long long>(x0 + 1) * C;  // this tile's first entry in a table row

  if (ti == 0 && warp == 0) zero_top_row<Acc, S, Q>(os, oq, tj, lane, nvalid, first, C);

  // 1. Load (striped, coalesced; RL rows' loads in flight at once), keep the
  //    tile in shared memory (padded blocked layout), sum the columns.
  {
    constexpr int RL = R < 8 ? R : 8;
    Acc cs[E], cq[E];
#pragma unroll
    for (int i = 0; i < E; ++i) cs[i] = cq[i] = Acc(0);
#pragma unroll 1
    for (int rc = 0; rc < R; rc += RL) {
      Tin raw[RL][E];
#pragma unroll
      for (int rr = 0; rr < RL; ++rr) {
        const int y = r0 + warp * R + rc + rr;
        if (y < g.H) {
          load_striped(src.row(y) + x0 * C, nvalid, lane, raw[rr]);
        } else {
#pragma unroll
          for (int i = 0; i < E; ++i) raw[rr][i] = Tin(0);
        }
      }
#pragma unroll
      for (int rr = 0; rr < RL; ++rr)
#pragma unroll
        for (int i = 0; i < E; ++i) {
          const int j = i * 32 + lane;
          tile[(warp * R + rc + rr) * P + j + j / E] = raw[rr][i];
          const Acc v = static_cast<Acc>(raw[rr][i]);
          if (S) cs[i] += v;
          if (Q) cq[i] += v * v;
        }
    }
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const int j = i * 32 + lane;
      if (S) colpart[(0 * WARPS + warp) * P + j + j / E] = cs[i];
      if (Q) colpart[(TQ * WARPS + warp) * P + j + j / E] = cq[i];
    }
    __syncwarp();
    // Row totals (blocked: a lane's elements are whole pixels), butterfly-reduced.
    Vec<Acc, C> ws = zero_vec<Acc, C>(), wq = zero_vec<Acc, C>();
#pragma unroll 4
    for (int rr = 0; rr < R; ++rr) {
      const int row = warp * R + rr;
      Vec<Acc, C> ts = zero_vec<Acc, C>(), tq = zero_vec<Acc, C>();
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const Acc v = static_cast<Acc>(tile[row * P + lane * (E + 1) + e]);
        if (S) ts.v[e % C] += v;
        if (Q) tq.v[e % C] += v * v;
      }
#pragma unroll
      for (int c = 0; c < C; ++c)
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
          if (S) ts.v[c] += __shfl_xor_sync(0xffffffffu, ts.v[c], off);
          if (Q) tq.v[c] += __shfl_xor_sync(0xffffffffu, tq.v[c], off);
        }
      if (lane == 0)
#pragma unroll
        for (int c = 0; c < C; ++c) {
          if (S) hvec[0 * LH + row * C + c] = ts.v[c];
          if (Q) hvec[TQ * LH + row * C + c] = tq.v[c];
        }
      ws = VecAdd<Acc, C>()(ws, ts);
      wq = VecAdd<Acc, C>()(wq, tq);
    }
    if (lane == 0)
#pragma unroll
      for (int c = 0; c < C; ++c) {
        if (S) wsum[(0 * WARPS + warp) * C + c] = ws.v[c];
        if (Q) wsum[(TQ * WARPS + warp) * C + c] = wq.v[c];
      }
  }
  __syncthreads();
  // Tile totals (the last element of the horizontal vector) and column totals.
  if (tid < NT * C) {
    const int t = tid / C, c = tid % C;
    Acc a = Acc(0);
#pragma unroll
    for (int w = 0; w < WARPS; ++w) a += wsum[(t * WARPS + w) * C + c];
    hvec[t * LH + TH * C + c] = a;
  }
  for (int k = tid; k < NT * NV; k += THREADS) {
    const int t = k / NV, j = k % NV;
    Acc a = Acc(0);
#pragma unroll
    for (int w = 0; w < WARPS; ++w) a += colpart[(t * WARPS + w) * P + j + j / E];
    vvec[t * LV + j] = a;
  }
  __syncthreads();

  look_back_phases<Acc, C, NW, LH, LV, NT>(lb, tix, ti, tj, g.ntj, hvec, vvec, hcar, vcar);
  // 4. The tables.
  Acc a_s[E], a_q[E];
  if (S) init_top_sp<Acc, C, E, R>(vcar, hcar, colpart, warp, lane, a_s);
  if (Q) init_top_sp<Acc, C, E, R>(vcar + TQ * LV, hcar + TQ * LH, colpart + TQ * WARPS * P, warp, lane, a_q);
  __syncthreads();  // colpart becomes the store staging below
  if (warp == NW - 1 && ti != 0) publish_vertical_prefix<Acc, LV, NT>(lb, tix, vcar, vvec);
  Acc* const stage = colpart + warp * P;
  for (int rr = 0; rr < R; ++rr) {
    const int row = warp * R + rr, y = r0 + row;
    if (y >= g.H) break;
    Acc v[E];
#pragma unroll
    for (int e = 0; e < E; ++e) v[e] = static_cast<Acc>(tile[row * P + lane * (E + 1) + e]);
    if (S) {
      Vec<Acc, C> carry;
#pragma unroll
      for (int c = 0; c < C; ++c) carry.v[c] = hcar[row * C + c];
      Acc s[E];
#pragma unroll
      for (int e = 0; e < E; ++e) s[e] = v[e];
      scan_row<Acc, C, E>(s, carry, a_s, stage, lane, nvalid, os.row(y + 1), first, os.type);
      if (tj == 0 && lane < C) store_as(os.row(y + 1), lane, os.type, Acc(0));
    }
    if (Q) {
      Vec<Acc, C> carry;
#pragma unroll
      for (int c = 0; c < C; ++c) carry.v[c] = hcar[TQ * LH + row * C + c];
      Acc q[E];
#pragma unroll
      for (int e = 0; e < E; ++e) q[e] = v[e] * v[e];
      scan_row<Acc, C, E>(q, carry, a_q, stage, lane, nvalid, oq.row(y + 1), first, oq.type);
      if (tj == 0 && lane < C) store_as(oq.row(y + 1), lane, oq.type, Acc(0));
    }
  }
}

// ---- single pass, u8 one channel: 32-bit arithmetic inside the tile ----------------------
//
// The commonest request (a grey u8 image) has its own kernel. Same tiles (TH
// rows x 256 pixels), tickets and look-back as single_pass_kernel, but
//  - each lane loads its 8 consecutive pixels of a row as one 8-byte word
//    (byte loads only where the image's base or pitch is not 8-aligned or at
//    the right edge), stored as such in shared memory (16-byte chunks of a row
//    XOR-swizzled by the row, so row-wise and lane-wise reads are both free of
//    bank conflicts);
//  - column sums run in 16-bit halves of 32-bit words (two columns per add),
//    row totals are one thread per row over the shared tile with dp4a (4
//    pixels per instruction, squares too);
//  - inside the tile everything is u32: a tile's sums are below 2^32 (squares:
//    TH * 256 * 255^2 < 2^32 for TH <= 256); only the carries from other tiles
//    and the accumulated table entries are 64-bit.

/// Shared memory of single_pass_u8c1_kernel (dynamic, sized on the host).
template <int TH, int NW, bool S, bool Q> struct SpU8Layout {
  static constexpr int NT = (S ? 1 : 0) + (Q ? 1 : 0), TQ = S ? 1 : 0;
  static constexpr int NV = 256, LH = TH + 1, LV = NV + 1;
  // int64 look-back vectors first.
  static constexpr std::size_t hvec = 0, vvec = hvec + NT * LH, hcar = vvec + NT * LV, vcar = hcar + NT * LH;
  static constexpr std::size_t acc_bytes = (vcar + NT * LV) * 8;
  // Then one region that holds the warps' u32 column sums [NT][NW][NV], and,
  // once the top rows are built, each warp's store staging (NV int64).
  static constexpr std::size_t uni = (acc_bytes + 15) / 16 * 16;
  static constexpr std::size_t col_bytes = std::size_t(NT) * NW * NV * 4, stage_bytes = std::size_t(NW) * NV * 8;
  static constexpr std::size_t tile = uni + (col_bytes > stage_bytes ? col_bytes : stage_bytes);  // [TH][256] u8
  static constexpr std::size_t misc = tile + std::size_t(TH) * 256;  // ticket, then the warps' tile totals [NT][NW]
  static constexpr std::size_t bytes = misc + 16 + std::size_t(NT) * NW * 4;
};

/// Byte offset of 16-byte chunk `chunk` of tile row `row` (swizzled).
__device__ __forceinline__ int u8_tile_at(int row, int chunk) { return row * 256 + ((chunk ^ (row & 15)) << 4); }

/// Position of entry j (0..255) of a warp's store staging: pairs of entries
/// (16-byte units) XOR-swizzled so that a lane's 8 consecutive entries
/// (4 x 16-byte stores) and a warp's 32 consecutive entries (8-byte loads)
/// are both free of bank conflicts.
__device__ __forceinline__ int u8_stage_at(int j) {
  const int u = j >> 1;
  return ((u ^ ((u >> 3) & 7)) << 1) | (j & 1);
}

/// A lane's 8 pixels of a row (pixels past n read as 0).
__device__ __forceinline__ uint2 load8_u8(const std::uint8_t* p, int n, bool aligned) {
  if (aligned && n >= 8) return __ldcs(reinterpret_cast<const uint2*>(p));
  uint2 w = make_uint2(0u, 0u);
#pragma unroll
  for (int k = 0; k < 8; ++k)
    if (k < n) {
      const unsigned b = p[k];
      if (k < 4) w.x |= b << (8 * k);
      else w.y |= b << (8 * (k - 4));
    }
  return w;
}

__device__ __forceinline__ unsigned warp_inclusive_scan_u32(unsigned v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned n = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += n;
  }
  return v;
}
__device__ __forceinline__ unsigned warp_sum_u32(unsigned v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

struct AddI64 {
  __device__ __forceinline__ long long operator()(long long a, long long b) const { return a + b; }
};

/// The table row above warp `warp`'s first row for the lane's 8 entries: the
/// column carries plus the column sums of the warps above (u32), scanned along
/// the row from the corner plus the row carries of the rows above the warp.
template <int NW, int R>
__device__ __forceinline__ void init_top_u8(const std::int64_t* vcar, const std::int64_t* hcar, const unsigned* colpart,
                                            int warp, int lane, std::int64_t (&acc)[8]) {
  using WarpScan = cub::WarpScan<long long>;
  typename WarpScan::TempStorage unused;  // the shuffle implementation needs no storage
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const int j = lane * 8 + e;
    unsigned above = 0;
    for (int w = 0; w < warp; ++w) above += colpart[w * 256 + j];
    acc[e] = vcar[j] + above;
  }
#pragma unroll
  for (int e = 1; e < 8; ++e) acc[e] += acc[e - 1];
  // The row carries of the rows above the warp, summed across the lanes.
  long long start = 0;
  for (int r = lane; r < warp * R; r += 32) start += hcar[r];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) start += __shfl_xor_sync(0xffffffffu, start, o);
  start += vcar[256];  // the corner
  long long ex;
  WarpScan(unused).ExclusiveScan(static_cast<long long>(acc[7]), ex, start, AddI64());
#pragma unroll
  for (int e = 0; e < 8; ++e) acc[e] += ex;
}

/// One table row of a warp: scan the lane's 8 values along the row (u32),
/// add the row carry, accumulate into acc (the row above) and store through
/// the staging buffer, coalesced, in the table's type.
template <typename T>
__device__ __forceinline__ void store_staged(const std::int64_t (&acc)[8], std::int64_t* stage, int lane, int nvalid,
                                             unsigned char* out_row, long long first) {
#pragma unroll
  for (int k = 0; k < 4; ++k)
    *reinterpret_cast<longlong2*>(stage + u8_stage_at(lane * 8 + 2 * k)) = make_longlong2(acc[2 * k], acc[2 * k + 1]);
  __syncwarp();
  T* out = reinterpret_cast<T*>(out_row) + first;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int j = i * 32 + lane;
    if (j < nvalid) {
      const std::int64_t x = stage[u8_stage_at(j)];
      if constexpr (std::is_same<T, std::uint32_t>::value) out[j] = static_cast<std::uint32_t>(x);
      else out[j] = static_cast<T>(x);
    }
  }
  __syncwarp();
}
__device__ __forceinline__ void scan_row_u8(unsigned (&v)[8], std::int64_t carry, std::int64_t (&acc)[8],
                                            std::int64_t* stage, int lane, int nvalid, unsigned char* out_row,
                                            long long first, TableType type) {
#pragma unroll
  for (int e = 1; e < 8; ++e) v[e] += v[e - 1];
  const unsigned inc = warp_inclusive_scan_u32(v[7], lane), ex = inc - v[7];
#pragma unroll
  for (int e = 0; e < 8; ++e) acc[e] += static_cast<std::int64_t>(v[e] + ex) + carry;
  switch (type) {
    case TableType::u32: store_staged<std::uint32_t>(acc, stage, lane, nvalid, out_row, first); break;
    case TableType::u64: store_staged<std::uint64_t>(acc, stage, lane, nvalid, out_row, first); break;
    case TableType::f64: store_staged<double>(acc, stage, lane, nvalid, out_row, first); break;
    default: store_staged<std::int64_t>(acc, stage, lane, nvalid, out_row, first); break;
  }
}

// One block of NW warps per tile of TH rows x 256 pixels; warp w owns tile
// rows w*R .. w*R+R-1. Steps as single_pass_kernel's (see the file comment).
template <int TH, int NW, int MINB, bool S, bool Q>
__global__ void __launch_bounds__(32 * NW, MINB)
    single_pass_u8c1_kernel(View2D<const std::uint8_t> src, TileGrid g, LookBackState lb, TableOut os, TableOut oq) {
  using Acc = std::int64_t;
  using L = SpU8Layout<TH, NW, S, Q>;
  constexpr int THREADS = 32 * NW, R = TH / NW, NV = L::NV, LH = L::LH, LV = L::LV, NT = L::NT, TQ = L::TQ;
  constexpr int TPR = THREADS / TH;  // threads per row for the row totals
  static_assert(TH % NW == 0 && NW >= 2 && R % 8 == 0 && TH <= 256 && THREADS % TH == 0 && 16 % TPR == 0,
                "TH: whole warps of 8-row groups, at most 256 rows (u32 squares), 1/2/4/8/16 threads per row");
  extern __shared__ __align__(16) unsigned char sp_smem[];
  Acc* const sm = reinterpret_cast<Acc*>(sp_smem);
  Acc* const hvec = sm + L::hvec;
  Acc* const vvec = sm + L::vvec;
  Acc* const hcar = sm + L::hcar;
  Acc* const vcar = sm + L::vcar;
  unsigned* const colpart = reinterpret_cast<unsigned*>(sp_smem + L::uni);
  unsigned char* const tile = sp_smem + L::tile;
  unsigned* const ticket_s = reinterpret_cast<unsigned*>(sp_smem + L::misc);
  unsigned* const wtot = ticket_s + 4;  // [NT][NW]

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const long long tix = take_ticket(lb, static_cast<long long>(g.nti) * g.ntj, ticket_s);
  const int ti = static_cast<int>(tix / g.ntj), tj = static_cast<int>(tix % g.ntj);
  const int x0 = tj * NV, r0 = ti * TH;
  const int nvalid = min(NV, g.W - x0);
  const long long first = x0 + 1;  // this tile's first entry in a table row

  if (ti == 0 && warp == 0) zero_top_row<Acc, S, Q>(os, oq, tj, lane, nvalid, first, 1);

  // 1. Load: each lane 8 pixels per row, 8 rows in flight; into the shared
  //    tile; column sums in registers (u32, two 16-bit columns per word for the
  //    sum: TH * 255 < 2^16).
  {
    const bool aligned = ((reinterpret_cast<std::uintptr_t>(src.data) | static_cast<std::uintptr_t>(src.pitch)) & 7) == 0;
    const int jl = lane * 8, n = nvalid - jl;
    unsigned cs[4] = {0u, 0u, 0u, 0u}, cq[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) cq[k] = 0u;
#pragma unroll 1
    for (int rc = 0; rc < R; rc += 8) {
      uint2 w[8];
#pragma unroll
      for (int rr = 0; rr < 8; ++rr) {
        const int y = r0 + warp * R + rc + rr;
        w[rr] = y < g.H ? load8_u8(src.row(y) + x0 + jl, n, aligned) : make_uint2(0u, 0u);
      }
#pragma unroll
      for (int rr = 0; rr < 8; ++rr) {
        const int row = warp * R + rc + rr;
        *reinterpret_cast<uint2*>(tile + u8_tile_at(row, lane >> 1) + (lane & 1) * 8) = w[rr];
        if (S) {
          cs[0] += w[rr].x & 0x00FF00FFu;
          cs[1] += (w[rr].x >> 8) & 0x00FF00FFu;
          cs[2] += w[rr].y & 0x00FF00FFu;
          cs[3] += (w[rr].y >> 8) & 0x00FF00FFu;
        }
        if (Q) {
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const unsigned a = (w[rr].x >> (8 * k)) & 0xFFu, b = (w[rr].y >> (8 * k)) & 0xFFu;
            cq[k] += a * a;
            cq[4 + k] += b * b;
          }
        }
      }
    }
    // The warp's column sums -> shared; its share of the tile totals.
    if (S) {
      const uint4 lo = make_uint4(cs[0] & 0xFFFFu, cs[1] & 0xFFFFu, cs[0] >> 16, cs[1] >> 16);
      const uint4 hi = make_uint4(cs[2] & 0xFFFFu, cs[3] & 0xFFFFu, cs[2] >> 16, cs[3] >> 16);
      unsigned* dst = colpart + warp * NV + jl;
      *reinterpret_cast<uint4*>(dst) = lo;
      *reinterpret_cast<uint4*>(dst + 4) = hi;
      const unsigned t = warp_sum_u32(lo.x + lo.y + lo.z + lo.w + hi.x + hi.y + hi.z + hi.w);
      if (lane == 0) wtot[warp] = t;
    }
    if (Q) {
      unsigned* dst = colpart + (TQ * NW + warp) * NV + jl;
      *reinterpret_cast<uint4*>(dst) = make_uint4(cq[0], cq[1], cq[2], cq[3]);
      *reinterpret_cast<uint4*>(dst + 4) = make_uint4(cq[4], cq[5], cq[6], cq[7]);
      const unsigned t = warp_sum_u32(cq[0] + cq[1] + cq[2] + cq[3] + cq[4] + cq[5] + cq[6] + cq[7]);
      if (lane == 0) wtot[TQ * NW + warp] = t;
    }
  }
  __syncthreads();
  // Row totals: TPR threads per row over the shared tile, 4 pixels per dp4a.
  {
    const int row = tid / TPR, part = tid % TPR;
    unsigned rs = 0u, rq = 0u;
#pragma unroll
    for (int i = 0; i < 16 / TPR; ++i) {
      const uint4 v = *reinterpret_cast<const uint4*>(tile + u8_tile_at(row, part * (16 / TPR) + i));
      if (S) {
        rs = __dp4a(v.x, 0x01010101u, rs);
        rs = __dp4a(v.y, 0x01010101u, rs);
        rs = __dp4a(v.z, 0x01010101u, rs);
        rs = __dp4a(v.w, 0x01010101u, rs);
      }
      if (Q) {
        rq = __dp4a(v.x, v.x, rq);
        rq = __dp4a(v.y, v.y, rq);
        rq = __dp4a(v.z, v.z, rq);
        rq = __dp4a(v.w, v.w, rq);
      }
    }
#pragma unroll
    for (int o = 1; o < TPR; o <<= 1) {
      if (S) rs += __shfl_xor_sync(0xffffffffu, rs, o);
      if (Q) rq += __shfl_xor_sync(0xffffffffu, rq, o);
    }
    if (part == 0) {
      if (S) hvec[row] = rs;
      if (Q) hvec[TQ * LH + row] = rq;
    }
  }
  // Tile totals and column totals.
  if (tid < NT) {
    unsigned a = 0u;
#pragma unroll
    for (int w = 0; w < NW; ++w) a += wtot[tid * NW + w];
    hvec[tid * LH + TH] = a;
  }
  for (int k = tid; k < NT * NV; k += THREADS) {
    const int t = k / NV, j = k % NV;
    unsigned a = 0u;
#pragma unroll
    for (int w = 0; w < NW; ++w) a += colpart[(t * NW + w) * NV + j];
    vvec[t * LV + j] = a;
  }
  __syncthreads();

  // 2-3. Row carries, column carries and the corner.
  look_back_phases<Acc, 1, NW, LH, LV, NT>(lb, tix, ti, tj, g.ntj, hvec, vvec, hcar, vcar);

  // 4. The tables.
  Acc a_s[8], a_q[8];
  if (S) init_top_u8<NW, R>(vcar, hcar, colpart, warp, lane, a_s);
  if (Q) init_top_u8<NW, R>(vcar + TQ * LV, hcar + TQ * LH, colpart + TQ * NW * NV, warp, lane, a_q);
  __syncthreads();  // the column sums' region becomes the store staging below
  if (warp == NW - 1 && ti != 0) publish_vertical_prefix<Acc, LV, NT>(lb, tix, vcar, vvec);
  Acc* const stage = reinterpret_cast<Acc*>(sp_smem + L::uni) + warp * NV;
#pragma unroll 1
  for (int rr = 0; rr < R; ++rr) {
    const int row = warp * R + rr, y = r0 + row;
    if (y >= g.H) break;
    const uint2 w = *reinterpret_cast<const uint2*>(tile + u8_tile_at(row, lane >> 1) + (lane & 1) * 8);
    unsigned v[8];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      v[k] = (w.x >> (8 * k)) & 0xFFu;
      v[4 + k] = (w.y >> (8 * k)) & 0xFFu;
    }
    if (S) {
      unsigned s[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) s[e] = v[e];
      scan_row_u8(s, hcar[row], a_s, stage, lane, nvalid, os.row(y + 1), first, os.type);
      if (tj == 0 && lane == 0) store_as(os.row(y + 1), 0, os.type, Acc(0));
    }
    if (Q) {
      unsigned q[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) q[e] = v[e] * v[e];
      scan_row_u8(q, hcar[TQ * LH + row], a_q, stage, lane, nvalid, oq.row(y + 1), first, oq.type);
      if (tj == 0 && lane == 0) store_as(oq.row(y + 1), 0, oq.type, Acc(0));
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
    // The scratch (ticket counter, look-back flags and payloads, aggregates)
    // is shared by every call of this operator: a call on another stream than
    // the previous call first waits for that call's work, so two streams never
    // run it at once (which could make the single pass wait forever). One
    // event record per call; no wait at all on the usual single stream.
    if (have_last_ && stream != last_stream_) PIXELKIT_CUDA_TRY(cudaStreamWaitEvent(stream, last_done_, 0));
    std::string path;
    if (!out.sum.empty() || !out.sqsum.empty()) {
      path = sums(src, out.sum, out.sqsum, stream);
      if (!out.sum.empty() && !out.sqsum.empty()) path += ", sum + sqsum fused";
    }
    if (!out.tilted.empty()) {
      tilted(src, out.tilted, stream);
      path += std::string(path.empty() ? "" : "; ") + "tilted: row prefix + diagonal scans";
    }
    PIXELKIT_CUDA_TRY(cudaEventRecord(last_done_, stream));
    last_stream_ = stream;
    have_last_ = true;
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
    if (r.sum || r.sqsum) {
      // The single-pass path's scratch (u8 tiles are the larger payload per pixel).
      const int E = channels == 1 ? Geom<1>::E : (channels == 3 ? Geom<3>::E : Geom<4>::E);
      const int TH = sp_rows(type, channels, r.sum && r.sqsum);
      const long long ntiles = static_cast<long long>((width + 32 * E / channels - 1) / (32 * E / channels)) *
                               ((height + TH - 1) / TH);
      payload_.reserve(sp_payload_bytes(ntiles, channels, E, TH, (r.sum ? 1 : 0) + (r.sqsum ? 1 : 0)));
      reserve_flags(ntiles);
    }
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
  /// Elements of one table's aggregates.
  static std::size_t aggregate_elems(const TileGrid& g, int C) {
    return (static_cast<std::size_t>(g.H) * g.ntj + static_cast<std::size_t>(g.nti) * g.W +
            static_cast<std::size_t>(g.nti) * g.ntj) *
           C;
  }

  /// Returns the path taken.
  std::string sums(const ConstImageView& src, const IntegralTableView& sum, const IntegralTableView& sq,
                   stream_t stream) {
    std::string path = "cuda single-pass tiled scan, decoupled look-back";
    with_input(src.type, src.channels, [&](auto tin, auto cc) {
      using Tin = decltype(tin);
      constexpr int CC = decltype(cc)::value;
      if (g_variant == 1) {
        sums_cfg<Tin, CC>(Cfg<Geom<CC>::E, 2>{}, src, sum, sq, stream);
        path = "cuda tiled reduce-then-scan (4 launches)";
        return;
      }
      if constexpr (std::is_same<Tin, std::uint8_t>::value) {
        if (g_variant == 4) {
          sums_single<Tin, CC>(SpCfg<Geom<CC>::E, 64, 4, 4>{}, src, sum, sq, stream);
          return;
        }
        if constexpr (CC == 1) {
          switch (g_variant) {
            case 2: sums_single<Tin, CC>(SpCfg<8, 64, 8, 2>{}, src, sum, sq, stream); return;
            case 3: sums_single<Tin, CC>(SpCfg<8, 64, 2, 8>{}, src, sum, sq, stream); return;
            case 5: sums_single<Tin, CC>(SpDefault<Tin, CC>{}, src, sum, sq, stream); return;
            case 6: sums_single_u8c1<64, 4, 6>(src, sum, sq, stream); break;
            case 7: sums_single_u8c1<128, 8, 3>(src, sum, sq, stream); break;
            case 8: sums_single_u8c1<256, 8, 2>(src, sum, sq, stream); break;
            default:  // production: measured in docs/notes-integral.md ("The u8 one-channel kernel")
              if (!sum.empty() && !sq.empty()) sums_single_u8c1<256, 8, 2>(src, sum, sq, stream);
              else sums_single_u8c1<128, 4, 4>(src, sum, sq, stream);
              break;
          }
          path = "cuda single-pass tiled scan, decoupled look-back, u8 1-channel kernel (32-bit in-tile sums)";
          return;
        }
      }
      if constexpr (std::is_same<Tin, std::uint8_t>::value && CC != 1) {
        if (!sum.empty() && !sq.empty()) {
          sums_single<Tin, CC>(SpCfg<Geom<CC>::E, 64, 4, 4>{}, src, sum, sq, stream);
          return;
        }
      }
      sums_single<Tin, CC>(SpDefault<Tin, CC>{}, src, sum, sq, stream);
    });
    return path;
  }

  /// The production single-pass configuration: 4 warps on 128-row tiles for
  /// u8, on 32-row tiles for f32 (its input tile is 4x larger in shared
  /// memory). u8 with 3 or 4 channels and both tables takes 64-row tiles (see
  /// sp_rows; measured in docs/notes-integral.md).
  template <typename Tin, int CC>
  using SpDefault = SpCfg<Geom<CC>::E, std::is_same<Tin, std::uint8_t>::value ? 128 : 32, 4, 4>;
  static int sp_rows(PixelType type, int channels, bool both) {
    if (type != PixelType::u8) return 32;
    if (channels == 1) return both ? 256 : 128;  // the u8 one-channel kernel
    return both ? 64 : 128;
  }

  static std::size_t sp_payload_bytes(long long ntiles, int C, int E, int TH, int NT) {
    return static_cast<std::size_t>(ntiles) * 2 * ((TH + 1) * C + 32 * E + C) * NT * 8;
  }

  /// The look-back flags (ticket counter + 2 per tile): grow-only; zeroed when
  /// (re)allocated (DeviceBuffer::reserve zeroes a new allocation and waits
  /// for it) and when the epoch wraps, never otherwise.
  void reserve_flags(long long ntiles) {
    flags_.reserve((kFlagsOffset + 2 * static_cast<std::size_t>(ntiles)) * sizeof(unsigned));
  }
  unsigned next_epoch(stream_t stream) {
    if (++epoch_ >= kEpochLimit) {
      // A flag of the epoch we return to could still be in the buffer (a tile
      // index no call has reached since): clear them all, once per 2^30 calls.
      epoch_ = 1;
      PIXELKIT_CUDA_TRY(cudaMemsetAsync(flags_.get(), 0, flags_.size(), stream));
    }
    return epoch_;
  }

  /// The look-back state of one single-pass launch over ntiles tiles (scratch
  /// grows only; a new epoch per call, so no flag is cleared per call).
  LookBackState look_back_state(long long ntiles, int C, int E, int TH, int NT, stream_t stream) {
    const std::size_t half = sp_payload_bytes(ntiles, C, E, TH, NT) / 2;  // horizontal + vertical, one kind
    payload_.reserve(2 * half);
    reserve_flags(ntiles);
    LookBackState lb;
    lb.ticket = flags_.as<unsigned>();
    lb.hflag = lb.ticket + kFlagsOffset;
    lb.vflag = lb.hflag + ntiles;
    const std::size_t hbytes = static_cast<std::size_t>(ntiles) * (TH + 1) * C * NT * 8;
    unsigned char* base = payload_.as<unsigned char>();
    lb.hagg = base;
    lb.vagg = base + hbytes;
    lb.hinc = base + half;
    lb.vinc = base + half + hbytes;
    lb.epoch = next_epoch(stream);
    return lb;
  }

  /// One single-pass launch: a block per tile, `smem` bytes of dynamic shared
  /// memory (past 48 KB the kernel's attribute is raised, once per operator
  /// and kernel: each kernel always asks for the same size).
  template <typename Kernel, typename View>
  void launch_single(Kernel kernel, std::size_t smem, long long ntiles, int threads, const View& view,
                     const TileGrid& g, const LookBackState& lb, const TableOut& os, const TableOut& oq,
                     stream_t stream) {
    const void* key = reinterpret_cast<const void*>(kernel);
    if (smem > 48 * 1024 && std::find(raised_.begin(), raised_.end(), key) == raised_.end()) {
      PIXELKIT_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
      raised_.push_back(key);
    }
    kernel<<<static_cast<unsigned>(ntiles), threads, smem, stream>>>(view, g, lb, os, oq);
    PIXELKIT_CUDA_CHECK_LAUNCH("single-pass integral kernel");
  }

  template <typename Tin, int CC, typename CF>
  void sums_single(CF, const ConstImageView& src, const IntegralTableView& sum, const IntegralTableView& sq,
                   stream_t stream) {
    constexpr int E = CF::E, TH = CF::TH, NW = CF::WARPS, MINB = CF::MINB;
    const bool S = !sum.empty(), Q = !sq.empty();
    TileGrid g;
    g.W = src.width;
    g.H = src.height;
    g.ntj = (g.W + 32 * E / CC - 1) / (32 * E / CC);
    g.nti = (g.H + TH - 1) / TH;
    const long long ntiles = static_cast<long long>(g.nti) * g.ntj;
    const LookBackState lb = look_back_state(ntiles, CC, E, TH, (S ? 1 : 0) + (Q ? 1 : 0), stream);
    const TableOut os = S ? table_out(sum) : TableOut{nullptr, 0, TableType::i64};
    const TableOut oq = Q ? table_out(sq) : TableOut{nullptr, 0, TableType::u64};
    const auto view = view2d<Tin>(src);
    auto launch = [&](auto kernel, std::size_t smem) { launch_single(kernel, smem, ntiles, 32 * NW, view, g, lb, os, oq, stream); };
    if (S && Q) launch(single_pass_kernel<Tin, CC, E, TH, NW, MINB, true, true>, SpLayout<Tin, CC, E, TH, NW, true, true>::bytes);
    else if (S) launch(single_pass_kernel<Tin, CC, E, TH, NW, MINB, true, false>, SpLayout<Tin, CC, E, TH, NW, true, false>::bytes);
    else launch(single_pass_kernel<Tin, CC, E, TH, NW, MINB, false, true>, SpLayout<Tin, CC, E, TH, NW, false, true>::bytes);
  }

  /// The u8 one-channel single pass (32-bit in-tile arithmetic), TH-row tiles.
  template <int TH, int NW, int MINB>
  void sums_single_u8c1(const ConstImageView& src, const IntegralTableView& sum, const IntegralTableView& sq,
                        stream_t stream) {
    const bool S = !sum.empty(), Q = !sq.empty();
    TileGrid g;
    g.W = src.width;
    g.H = src.height;
    g.ntj = (g.W + 255) / 256;
    g.nti = (g.H + TH - 1) / TH;
    const long long ntiles = static_cast<long long>(g.nti) * g.ntj;
    const LookBackState lb = look_back_state(ntiles, 1, 8, TH, (S ? 1 : 0) + (Q ? 1 : 0), stream);
    const TableOut os = S ? table_out(sum) : TableOut{nullptr, 0, TableType::i64};
    const TableOut oq = Q ? table_out(sq) : TableOut{nullptr, 0, TableType::u64};
    const auto view = view2d<std::uint8_t>(src);
    auto launch = [&](auto kernel, std::size_t smem) { launch_single(kernel, smem, ntiles, 32 * NW, view, g, lb, os, oq, stream); };
    if (S && Q) launch(single_pass_u8c1_kernel<TH, NW, MINB, true, true>, SpU8Layout<TH, NW, true, true>::bytes);
    else if (S) launch(single_pass_u8c1_kernel<TH, NW, MINB, true, false>, SpU8Layout<TH, NW, true, false>::bytes);
    else launch(single_pass_u8c1_kernel<TH, NW, MINB, false, true>, SpU8Layout<TH, NW, false, true>::bytes);
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
  DeviceBuffer flags_, payload_;  // single pass: look-back flags + ticket, look-back payloads
  std::vector<const void*> raised_;  ///< kernels whose dynamic shared memory limit was raised
  unsigned epoch_ = g_first_epoch;
  Event last_done_;               ///< recorded after every call's work (cross-stream ordering)
  stream_t last_stream_ = nullptr;
  bool have_last_ = false;
};

}  // namespace

std::unique_ptr<CudaIntegral> make_cuda_integral() { return std::make_unique<CudaIntegralImpl>(); }

int integral_cuda_variants() { return static_cast<int>(sizeof(kVariantNames) / sizeof(kVariantNames[0])); }
const char* integral_cuda_variant_name(int v) { return v >= 0 && v < integral_cuda_variants() ? kVariantNames[v] : "?"; }
void set_integral_cuda_variant(int v) { g_variant = v >= 0 && v < integral_cuda_variants() ? v : 0; }
unsigned integral_cuda_epoch_limit() { return kEpochLimit; }
void set_integral_cuda_first_epoch(unsigned epoch) { g_first_epoch = epoch < kEpochLimit ? epoch : 0; }

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
