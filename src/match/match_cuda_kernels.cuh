// match_cuda_kernels.cuh - the device side of template matching (match_cuda.cu).
//
// Layers: launch sizes (MatchTuning), device helpers, kernels. The host side
// (plans, buffers, launchers, the cost model) is match_cuda.cu.
//
// Direct correlation (direct_kernel). The output map is cut into tiles of
// TILE_W x TILE_H windows, one block each (16 x 8 threads); the template into
// chunks of KH rows x KW words of one channel. A block walks over a range of
// chunks (its slice, blockIdx.z): it stages the chunk's words and the image
// rows under its tile in shared memory, then every thread accumulates R rows
// x G words x P shifts of windows in registers.
//   u8: a word is 4 consecutive pixels of one channel plane, and the template
//       is kept in 4 shifted copies (shift s: T(i - s)), so that window
//       x = 4a + s is the dot product of the aligned image words a, a+1, ...
//       with the template words of shift s: one __dp4a per 4 products, no byte
//       shuffling. Sums are exact u32 within a slice (a slice holds at most
//       66051 products per window, 66051 * 255^2 < 2^32) and exact u64 across
//       slices (summed, in order, by the score kernel).
//   f32: a word is one pixel, held as f64 in shared memory; products and sums
//       in f64 (fma), i.e. exact products accumulated in f64.
// With a mask the template words are M*T, and the masked window sums
// S1 = sum M I and S2 = sum M I^2 are accumulated in the same pass (u8: S1 =
// dp4a(I, M), S2 = dp4a(I & (M * 0xff), I)); each slice then stays within one
// channel, since S1 and S2 are per channel. Without a mask S1 and S2 come from
// integral tables (integral_cuda.cu) read by the score kernel.
//
// FFT correlation: fft_pad_kernel writes the image (and with a mask its
// square) zero-padded into f64 planes, cuFFT D2Z, fft_product_kernel
// multiplies by the conjugate template spectra (summing over channels for X),
// cuFFT Z2D, and the score kernel reads X (and masked S1, S2) from the
// inverse's planes, scaled by 1 / (Px * Py) and, for u8, rounded to the exact
// integer when fft_rounds_exactly() allows.
//
// Window sums without a mask: for u8, column_sums_kernel (sums of h rows per
// element, exact u32) and score_rows_kernel (the row's exact u64 prefix sums
// in shared memory, two reads per window); otherwise (f32, very tall
// templates, very wide rows) integral tables from integral_cuda.cu read by
// score_kernel.
//
// Score map: score_kernel / score_rows_kernel feed the exact / f64 sums to
// match_score() (the formula every backend shares) and also reduce their
// block's best position, which starts the selection. Selection: argbest_kernel
// + final_best_kernel (ties to the smallest row-major index, NaN never wins:
// select_matches' order), suppress_kernel writes NaN over the square |dx|, |dy| <
// min_distance, and color_count_kernel counts the pixels in the HSV range.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/view2d.hpp"
#include "match/match_common.hpp"

namespace pixelkit::detail {

// ---- benchmark hooks (defined in match_cuda.cu) -------------------------------------------------

/// Stage times of the last CudaMatcher::run while profiling is on (CUDA
/// events; ms): window sums (integral tables), correlation (direct kernel, or
/// pad + forward FFT + products + inverse FFT), score map, selection + colour
/// check + download. Profiling adds events and is for benchmarks only; not
/// thread-safe.
struct MatchCudaStages {
  double sums_ms = 0, corr_ms = 0, score_ms = 0, select_ms = 0;
  int slices = 0;     ///< direct: slices of the template (grid z)
  int padded_w = 0;   ///< fft: transform size
  int padded_h = 0;
  int window_sums = 0;  ///< 0: none or masked, 1: integral tables, 2: column sums + row prefix sums
};
void set_match_cuda_profiling(bool on);
MatchCudaStages match_cuda_last_stages();
/// Forces the integral-table window sums (u8 without a mask), for the
/// benchmark's comparison with the default column / row sums.
void set_match_cuda_force_tables(bool on);

#if !defined(PIXELKIT_MATCH_CUDA_HOOKS_ONLY)  // the benchmark includes only the hooks above

}  // namespace pixelkit::detail

#include <cub/block/block_scan.cuh>

namespace pixelkit::detail {

// ---- launch sizes -------------------------------------------------------------------

struct MatchTuning {
  static constexpr int kTX = 16;                 ///< threads across a direct tile
  static constexpr int kTY = 8;                  ///< threads down a direct tile
  static constexpr int kDirectThreads = kTX * kTY;
  static constexpr int kKH = 16;                 ///< template rows per chunk
  static constexpr std::uint32_t kU8Products = 66051;  ///< u32 capacity in products of two u8 values
  static constexpr int kWavesPerSM = 6;          ///< direct blocks wanted per SM (slices are added to reach it)
  static constexpr int kScoreBX = 32, kScoreBY = 8;
  static constexpr int kScoreThreads = kScoreBX * kScoreBY;
  static constexpr int kSelectThreads = 256;
  static constexpr int kSelectBlocksPerSM = 4;
  static constexpr int kFinalThreads = 1024;
  static constexpr int kSuppressBX = 32, kSuppressBY = 8;
  static constexpr int kColorThreads = 256;
  static constexpr int kColorPixelsPerBlock = 1024;  ///< colour count: window pixels per block (grid.x)
  static constexpr int kColThreads = 256;        ///< column sums: threads along a row
  static constexpr int kColMinRows = 4, kColMaxRows = 64;  ///< column sums: output rows per thread (sliding)
  static constexpr long long kColThreadsWanted = 131072;   ///< column sums: threads to aim for
  static constexpr int kRowThreads = 256;        ///< score with row prefix sums
  static constexpr int kRowChunk = 1024;         ///< its windows per block (one output row), a multiple of kRowThreads
  static constexpr int kFftBX = 64, kFftBY = 4;  ///< padding kernel
  static constexpr int kProductThreads = 256;
};

/// Per element type: what a word is, how products accumulate.
template <typename T> struct DirectTraits;
template <> struct DirectTraits<std::uint8_t> {
  using Word = std::uint32_t;  ///< 4 pixels of one plane
  using TWord = uint4;         ///< one template word in its 4 shifts
  using Part = std::uint32_t;  ///< a slice's partial sum
  static constexpr int kPer = 4;  ///< windows per word (shifts)
  static constexpr int kG = 2;    ///< words per thread along a row
  /// Rows per thread: fewer when S1 / S2 are accumulated too (registers).
  template <bool S1, bool S2> static constexpr int rows() { return (S1 && S2) ? 1 : ((S1 || S2) ? 2 : 4); }
};
template <> struct DirectTraits<float> {
  using Word = double;
  using TWord = double;
  using Part = double;
  static constexpr int kPer = 1;
  static constexpr int kG = 4;
  template <bool S1, bool S2> static constexpr int rows() { return (S1 || S2) ? 2 : 4; }
};

template <typename T, bool S1, bool S2> struct DirectGeom {
  using Tr = DirectTraits<T>;
  static constexpr int R = Tr::template rows<S1, S2>();
  static constexpr int TILE_W = MatchTuning::kTX * Tr::kG * Tr::kPer;
  static constexpr int TILE_H = MatchTuning::kTY * R;
};

// ---- device helpers --------------------------------------------------------------------

/// A word of the staged image tile: 4 pixels (u8) or 1 pixel (f32) of plane c
/// starting at column x of row y; pixels outside the image read as 0.
template <typename T> struct TileLoad;
template <> struct TileLoad<std::uint8_t> {
  static __device__ __forceinline__ std::uint32_t load(const View2D<const std::uint8_t>& img, int y, int x, int c) {
    if (y >= img.height || x >= img.width) return 0u;
    const std::uint8_t* row = img.row(y);
    const int C = img.channels;
    if (C == 1 && x + 3 < img.width && (reinterpret_cast<std::uintptr_t>(row + x) & 3u) == 0)
      return *reinterpret_cast<const std::uint32_t*>(row + x);
    std::uint32_t v = 0;
#pragma unroll
    for (int b = 0; b < 4; ++b)
      if (x + b < img.width) v |= static_cast<std::uint32_t>(row[(x + b) * C + c]) << (8 * b);
    return v;
  }
};
template <> struct TileLoad<float> {
  static __device__ __forceinline__ double load(const View2D<const float>& img, int y, int x, int c) {
    if (y >= img.height || x >= img.width) return 0.0;
    return static_cast<double>(img.row(y)[x * img.channels + c]);
  }
};

/// Multiply-accumulate of one image word with one template word, all shifts.
__device__ __forceinline__ void mac_x(std::uint32_t (&acc)[4], std::uint32_t iw, const uint4& t) {
  acc[0] = __dp4a(iw, t.x, acc[0]);
  acc[1] = __dp4a(iw, t.y, acc[1]);
  acc[2] = __dp4a(iw, t.z, acc[2]);
  acc[3] = __dp4a(iw, t.w, acc[3]);
}
__device__ __forceinline__ void mac_x(double (&acc)[1], double iw, double t) { acc[0] = fma(iw, t, acc[0]); }
/// S2 with a 0/1 mask: sum M I^2 (u8: the masked bytes dotted with themselves).
__device__ __forceinline__ void mac_s2(std::uint32_t (&acc)[4], std::uint32_t iw, const uint4& m) {
  acc[0] = __dp4a(iw & (m.x * 0xffu), iw, acc[0]);
  acc[1] = __dp4a(iw & (m.y * 0xffu), iw, acc[1]);
  acc[2] = __dp4a(iw & (m.z * 0xffu), iw, acc[2]);
  acc[3] = __dp4a(iw & (m.w * 0xffu), iw, acc[3]);
}
__device__ __forceinline__ void mac_s2(double (&acc)[1], double iw, double m) { acc[0] = fma(iw * iw, m, acc[0]); }

/// KW + G words of a tile row from (8- or 16-byte aligned) shared memory, in pairs.
template <int N>
__device__ __forceinline__ void load_pairs(const std::uint32_t* p, std::uint32_t (&v)[N]) {
  static_assert(N % 2 == 0, "pairs");
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    const uint2 q = reinterpret_cast<const uint2*>(p)[i];
    v[2 * i] = q.x;
    v[2 * i + 1] = q.y;
  }
}
template <int N>
__device__ __forceinline__ void load_pairs(const double* p, double (&v)[N]) {
  static_assert(N % 2 == 0, "pairs");
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    const double2 q = reinterpret_cast<const double2*>(p)[i];
    v[2 * i] = q.x;
    v[2 * i + 1] = q.y;
  }
}

// ---- direct correlation ------------------------------------------------------------------

template <typename T> struct DirectArgs {
  using Tr = DirectTraits<T>;
  View2D<const T> image;                 ///< interleaved, C channels
  const typename Tr::TWord* tmpl;        ///< [C][h][nwp] words of M*T (T without a mask)
  const typename Tr::TWord* mask;        ///< [C][h][nwp] words of the 0/1 mask; null without
  int h, C;
  int nwp;                               ///< words per template row (nwc * KW)
  int nwc, nhc;                          ///< word chunks per row, row chunks per channel
  int Wo, Ho;
  int chunks_per_slice;
  int slices_per_channel;                ///< > 0: slices stay within a channel (masked); 0: span channels
  long long plane;                       ///< Wo * Ho
  typename Tr::Part* px;                 ///< [slice][Ho][Wo]
  typename Tr::Part* ps1;
  typename Tr::Part* ps2;
};

template <typename T, int KW, bool S1, bool S2>
__global__ void __launch_bounds__(MatchTuning::kDirectThreads)
    direct_kernel(DirectArgs<T> a) {
  using Tr = DirectTraits<T>;
  using Word = typename Tr::Word;
  using TWord = typename Tr::TWord;
  using Part = typename Tr::Part;
  using Geom = DirectGeom<T, S1, S2>;
  constexpr int G = Tr::kG, P = Tr::kPer, R = Geom::R;
  constexpr int TX = MatchTuning::kTX, KH = MatchTuning::kKH;
  constexpr int TILE_W = Geom::TILE_W, TILE_H = Geom::TILE_H;
  constexpr int TWS = (TX * G + KW + 2) & ~1;  // words per staged row (even: pair loads)
  constexpr int ROWS = TILE_H + KH - 1;
  constexpr int NW = ((KW + G) + 1) & ~1;       // window words per thread (even)
  constexpr bool MASKED = S1 || S2;
  __shared__ __align__(16) Word tile[ROWS * TWS];
  __shared__ TWord tsh[KH * KW];
  __shared__ TWord msh[MASKED ? KH * KW : 1];

  const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
  const int ox0 = blockIdx.x * TILE_W, oy0 = blockIdx.y * TILE_H;
  const int z = blockIdx.z;
  const int per = a.nhc * a.nwc;
  int first, last;
  if (a.slices_per_channel > 0) {
    const int c = z / a.slices_per_channel, zz = z % a.slices_per_channel;
    first = c * per + zz * a.chunks_per_slice;
    last = min(c * per + per, first + a.chunks_per_slice);
  } else {
    first = z * a.chunks_per_slice;
    last = min(a.C * per, first + a.chunks_per_slice);
  }

  Part acc[R][G][P], acc1[R][G][P], acc2[R][G][P];  // acc1 / acc2 unused (and dropped) without S1 / S2
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
      for (int s = 0; s < P; ++s) {
        acc[r][g][s] = Part(0);
        if constexpr (S1) acc1[r][g][s] = Part(0);
        if constexpr (S2) acc2[r][g][s] = Part(0);
      }

  for (int id = first; id < last; ++id) {
    const int c = id / per, rem = id % per, hc = rem / a.nwc, wc = rem % a.nwc;
    const int j0 = hc * KH, nkh = min(KH, a.h - j0);
    for (int i = threadIdx.x; i < nkh * KW; i += blockDim.x) {
      const int kh = i / KW, m = i % KW;
      const long long at = (static_cast<long long>(c) * a.h + j0 + kh) * a.nwp + static_cast<long long>(wc) * KW + m;
      tsh[i] = a.tmpl[at];
      if constexpr (MASKED) msh[i] = a.mask[at];
    }
    const int gx0 = ox0 + wc * KW * P;  // image column of the tile's first word
    const int nrows = TILE_H + nkh - 1;
    for (int i = threadIdx.x; i < nrows * TWS; i += blockDim.x) {
      const int r = i / TWS, k = i % TWS;
      tile[i] = TileLoad<T>::load(a.image, oy0 + j0 + r, gx0 + k * P, c);
    }
    __syncthreads();
    for (int kh = 0; kh < nkh; ++kh) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        Word iw[NW];
        load_pairs(tile + (ty * R + r + kh) * TWS + tx * G, iw);
#pragma unroll
        for (int m = 0; m < KW; ++m) {
          const TWord t = tsh[kh * KW + m];
#pragma unroll
          for (int g = 0; g < G; ++g) {
            mac_x(acc[r][g], iw[m + g], t);
            if constexpr (S1) mac_x(acc1[r][g], iw[m + g], msh[kh * KW + m]);
            if constexpr (S2) mac_s2(acc2[r][g], iw[m + g], msh[kh * KW + m]);
          }
        }
      }
    }
    __syncthreads();
  }

  const long long base = static_cast<long long>(z) * a.plane;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int oy = oy0 + ty * R + r;
    if (oy >= a.Ho) continue;
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
      for (int s = 0; s < P; ++s) {
        const int ox = ox0 + (tx * G + g) * P + s;
        if (ox >= a.Wo) continue;
        const long long at = base + static_cast<long long>(oy) * a.Wo + ox;
        a.px[at] = acc[r][g][s];
        if constexpr (S1) a.ps1[at] = acc1[r][g][s];
        if constexpr (S2) a.ps2[at] = acc2[r][g][s];
      }
  }
}

// ---- the best position (select_matches' order) ---------------------------------------------

struct BestPos {
  float value;
  int pad;
  long long index;  ///< row-major in the map; -1: none
};

/// a better than b: the better score, then the smaller index; none never wins.
__device__ __forceinline__ bool better_pos(float av, long long ai, float bv, long long bi, bool lower) {
  if (ai < 0) return false;
  if (bi < 0) return true;
  if (av != bv) return lower ? av < bv : av > bv;
  return ai < bi;
}

/// Block-wide best; the result is valid in thread 0. `warp_v/warp_i` hold 32 entries.
__device__ __forceinline__ void block_best(float& v, long long& i, bool lower, float* warp_v, long long* warp_i) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = (blockDim.x + 31) / 32;
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    const float ov = __shfl_down_sync(0xffffffffu, v, off);
    const long long oi = __shfl_down_sync(0xffffffffu, i, off);
    if (better_pos(ov, oi, v, i, lower)) {
      v = ov;
      i = oi;
    }
  }
  if (lane == 0) {
    warp_v[warp] = v;
    warp_i[warp] = i;
  }
  __syncthreads();
  if (warp == 0) {
    v = lane < nwarps ? warp_v[lane] : 0.0f;
    i = lane < nwarps ? warp_i[lane] : -1;
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
      const float ov = __shfl_down_sync(0xffffffffu, v, off);
      const long long oi = __shfl_down_sync(0xffffffffu, i, off);
      if (better_pos(ov, oi, v, i, lower)) {
        v = ov;
        i = oi;
      }
    }
  }
}

// ---- score map -----------------------------------------------------------------------------

/// Where X, S1 and S2 come from.
enum class SumSource : int { none, slices, fft, tables };

template <typename T> struct ScoreArgs {
  using Part = typename DirectTraits<T>::Part;
  using SumT = typename std::conditional<std::is_same<T, std::uint8_t>::value, std::int64_t, double>::type;
  using SqT = typename std::conditional<std::is_same<T, std::uint8_t>::value, std::uint64_t, double>::type;
  MatchMethod method;
  TemplateStats t;
  int Wo, Ho, C, w, h;
  bool need_s1, need_s2, lower;
  SumSource xsrc, ssrc;
  // slices (direct)
  const Part* px;
  const Part* ps1;
  const Part* ps2;
  int nslices, slices_per_channel;
  long long plane;
  // fft planes (inverse transform outputs): X at plane 0, S1[c] at s1_plane + c, S2[c] at s2_plane + c
  const double* fft;
  long long fft_plane;
  int fft_pitch;
  double inv_n;
  bool round;
  int s1_plane, s2_plane;
  // integral tables
  const unsigned char* tsum;
  std::ptrdiff_t tsum_pitch;
  const unsigned char* tsq;
  std::ptrdiff_t tsq_pitch;
  // out
  float* out;
  std::ptrdiff_t out_pitch;
  BestPos* best;  ///< one per block
};

template <typename V>
__device__ __forceinline__ V table_rect(const unsigned char* data, std::ptrdiff_t pitch, int C, int x, int y, int w, int h,
                                        int c) {
  const V* r0 = reinterpret_cast<const V*>(data + static_cast<std::ptrdiff_t>(y) * pitch);
  const V* r1 = reinterpret_cast<const V*>(data + static_cast<std::ptrdiff_t>(y + h) * pitch);
  const V a = r0[static_cast<std::ptrdiff_t>(x) * C + c], b = r0[static_cast<std::ptrdiff_t>(x + w) * C + c];
  const V d = r1[static_cast<std::ptrdiff_t>(x) * C + c], e = r1[static_cast<std::ptrdiff_t>(x + w) * C + c];
  return (e - b) - (d - a);
}

template <typename T>
__device__ __forceinline__ double sum_slices(const typename DirectTraits<T>::Part* p, int z0, int z1, long long plane,
                                             long long at) {
  if constexpr (std::is_same<T, std::uint8_t>::value) {
    std::uint64_t s = 0;
    for (int z = z0; z < z1; ++z) s += p[z * plane + at];
    return static_cast<double>(s);
  } else {
    double s = 0;
    for (int z = z0; z < z1; ++z) s += p[z * plane + at];
    return s;
  }
}

template <typename T>
__device__ __forceinline__ double fft_value(const ScoreArgs<T>& a, int plane, int x, int y) {
  const double v = a.fft[plane * a.fft_plane + static_cast<long long>(y) * a.fft_pitch + x] * a.inv_n;
  if (!a.round) return v;
  const double r = rint(v);
  return r == 0.0 ? 0.0 : r;  // an exact zero sum is +0 (rint(-1e-12) is -0; ref's sums are +0)
}

template <typename T>
__global__ void __launch_bounds__(MatchTuning::kScoreThreads) score_kernel(ScoreArgs<T> a) {
  using SumT = typename ScoreArgs<T>::SumT;
  using SqT = typename ScoreArgs<T>::SqT;
  __shared__ float warp_v[32];
  __shared__ long long warp_i[32];
  const int x = blockIdx.x * MatchTuning::kScoreBX + threadIdx.x % MatchTuning::kScoreBX;
  const int y = blockIdx.y * MatchTuning::kScoreBY + threadIdx.x / MatchTuning::kScoreBX;
  float v = 0.0f;
  long long idx = -1;
  if (x < a.Wo && y < a.Ho) {
    const long long at = static_cast<long long>(y) * a.Wo + x;
    double X = 0, S1[kMaxMatchChannels] = {0, 0, 0}, S2[kMaxMatchChannels] = {0, 0, 0};
    if (a.xsrc == SumSource::slices) X = sum_slices<T>(a.px, 0, a.nslices, a.plane, at);
    else X = fft_value(a, 0, x, y);
    for (int c = 0; c < a.C; ++c) {
      if (a.ssrc == SumSource::tables) {
        if (a.need_s1) S1[c] = static_cast<double>(table_rect<SumT>(a.tsum, a.tsum_pitch, a.C, x, y, a.w, a.h, c));
        if (a.need_s2) S2[c] = static_cast<double>(table_rect<SqT>(a.tsq, a.tsq_pitch, a.C, x, y, a.w, a.h, c));
      } else if (a.ssrc == SumSource::slices) {
        const int z0 = c * a.slices_per_channel, z1 = z0 + a.slices_per_channel;
        if (a.need_s1) S1[c] = sum_slices<T>(a.ps1, z0, z1, a.plane, at);
        if (a.need_s2) S2[c] = sum_slices<T>(a.ps2, z0, z1, a.plane, at);
      } else if (a.ssrc == SumSource::fft) {
        if (a.need_s1) S1[c] = fft_value(a, a.s1_plane + c, x, y);
        if (a.need_s2) S2[c] = fft_value(a, a.s2_plane + c, x, y);
      }
    }
    v = match_score(a.method, a.t, X, S1, S2);
    reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(a.out) + static_cast<std::ptrdiff_t>(y) * a.out_pitch)[x] = v;
    if (v == v) idx = at;  // NaN never wins
  }
  block_best(v, idx, a.lower, warp_v, warp_i);
  if (threadIdx.x == 0) {
    BestPos b;
    b.value = v;
    b.pad = 0;
    b.index = idx;
    a.best[blockIdx.y * gridDim.x + blockIdx.x] = b;
  }
}

// ---- window sums without a mask (u8): column sums, then row prefix sums ------------------------
//
// column_sums_kernel: V(x, y) = sum of the h image values I(x, y .. y + h - 1)
// per interleaved element (and of their squares), exact in u32 (255^2 h <
// 2^32 for h <= 66051), [Ho][W * C]; each thread slides down `rows` rows,
// chosen by the host so that about kColThreadsWanted threads run (a tall
// template on a narrow image would otherwise leave the GPU latency-bound).
// score_rows_kernel: one block per output row and kRowChunk windows stages
// that row of V in shared memory as exact u64 exclusive prefix sums along x,
// so that a window's sum is two reads; then the scores as score_kernel.
// Together they read the image about once and write / read 4 bytes per
// element and sum, instead of building and reading two 64-bit tables.

template <bool S1, bool S2>
__global__ void __launch_bounds__(MatchTuning::kColThreads)
    column_sums_kernel(View2D<const std::uint8_t> img, int WC, int h, int Ho, int rows, std::uint32_t* v1,
                       std::uint32_t* v2) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= WC) return;
  const int y0 = blockIdx.y * rows, y1 = min(Ho, y0 + rows);
  std::uint32_t s1 = 0, s2 = 0;
#pragma unroll 8
  for (int j = 0; j < h; ++j) {
    const std::uint32_t v = img.row(y0 + j)[e];
    s1 += v;
    s2 += v * v;
  }
  for (int y = y0;;) {
    const long long at = static_cast<long long>(y) * WC + e;
    if constexpr (S1) v1[at] = s1;
    if constexpr (S2) v2[at] = s2;
    if (++y >= y1) break;
    const std::uint32_t a = img.row(y - 1)[e], b = img.row(y + h - 1)[e];
    s1 += b - a;  // modular: exact, the true sum is in range
    s2 += b * b - a * a;
  }
}

__global__ void __launch_bounds__(MatchTuning::kRowThreads)
    score_rows_kernel(ScoreArgs<std::uint8_t> a, const std::uint32_t* v1, const std::uint32_t* v2) {
  using BlockScan = cub::BlockScan<unsigned long long, MatchTuning::kRowThreads>;
  __shared__ typename BlockScan::TempStorage scan;
  __shared__ float warp_v[32];
  __shared__ long long warp_i[32];
  extern __shared__ unsigned long long sp[];  // [pair][stride]: E(0) = 0, E(m) = sum of positions < m
  const int C = a.C, w = a.w;
  const long long WC = static_cast<long long>(a.Wo + w - 1) * C;
  const int y = blockIdx.y, x0 = blockIdx.x * MatchTuning::kRowChunk;
  const int n_out = min(MatchTuning::kRowChunk, a.Wo - x0), L = n_out + w - 1;
  const int stride = MatchTuning::kRowChunk + w;
  const int ns1 = a.need_s1 ? 1 : 0, ns2 = a.need_s2 ? 1 : 0;
  const int npairs = (ns1 + ns2) * C;
  // 0. this thread's correlations, loaded now so that they arrive during the scans
  constexpr int kPer = MatchTuning::kRowChunk / MatchTuning::kRowThreads;
  double xs[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int k = static_cast<int>(threadIdx.x) + j * MatchTuning::kRowThreads;
    xs[j] = 0;
    if (k < n_out) {
      const long long at = static_cast<long long>(y) * a.Wo + x0 + k;
      xs[j] = a.xsrc == SumSource::slices ? sum_slices<std::uint8_t>(a.px, 0, a.nslices, a.plane, at)
                                          : fft_value(a, 0, x0 + k, y);
    }
  }
  // 1. this row's column sums, coalesced
  const long long base = static_cast<long long>(y) * WC + static_cast<long long>(x0) * C;
  for (int i = threadIdx.x; i < L * C; i += blockDim.x) {
    const int p = i / C, c = i % C;
    if (ns1) sp[c * stride + 1 + p] = v1[base + i];
    if (ns2) sp[(ns1 * C + c) * stride + 1 + p] = v2[base + i];
  }
  __syncthreads();
  // 2. prefix sums: a contiguous run per thread, then a block scan of the runs' totals
  const int per = (L + blockDim.x - 1) / blockDim.x;
  const int p0 = min(L, static_cast<int>(threadIdx.x) * per), p1 = min(L, p0 + per);
  for (int q = 0; q < npairs; ++q) {
    unsigned long long* s = sp + q * stride + 1;
    unsigned long long tot = 0;
    for (int p = p0; p < p1; ++p) {
      tot += s[p];
      s[p] = tot;
    }
    unsigned long long off;
    BlockScan(scan).ExclusiveSum(tot, off);
    for (int p = p0; p < p1; ++p) s[p] += off;
    if (threadIdx.x == 0) s[-1] = 0;
    __syncthreads();
  }
  // 3. scores
  float v = 0.0f;
  long long idx = -1;
  float* out = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(a.out) + static_cast<std::ptrdiff_t>(y) * a.out_pitch);
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int k = static_cast<int>(threadIdx.x) + j * MatchTuning::kRowThreads;
    if (k >= n_out) break;
    const int x = x0 + k;
    const long long at = static_cast<long long>(y) * a.Wo + x;
    const double X = xs[j];
    double S1[kMaxMatchChannels] = {0, 0, 0}, S2[kMaxMatchChannels] = {0, 0, 0};
    for (int c = 0; c < C; ++c) {
      if (ns1) {
        const unsigned long long* s = sp + c * stride;
        S1[c] = static_cast<double>(s[k + w] - s[k]);
      }
      if (ns2) {
        const unsigned long long* s = sp + (ns1 * C + c) * stride;
        S2[c] = static_cast<double>(s[k + w] - s[k]);
      }
    }
    const float r = match_score(a.method, a.t, X, S1, S2);
    out[x] = r;
    if (r == r && better_pos(r, at, v, idx, a.lower)) {
      v = r;
      idx = at;
    }
  }
  block_best(v, idx, a.lower, warp_v, warp_i);
  if (threadIdx.x == 0) {
    BestPos b;
    b.value = v;
    b.pad = 0;
    b.index = idx;
    a.best[blockIdx.y * gridDim.x + blockIdx.x] = b;
  }
}

// ---- selection --------------------------------------------------------------------------------

/// What the device hands back per match (one download for all of them).
struct DeviceMatch {
  int x, y;
  float score;
  int valid;
  unsigned long long count;
};

/// Best of a contiguous Wo x Ho map (the NMS working copy), grid-stride.
__global__ void __launch_bounds__(MatchTuning::kSelectThreads)
    argbest_kernel(const float* map, long long n, bool lower, BestPos* best) {
  __shared__ float warp_v[32];
  __shared__ long long warp_i[32];
  float v = 0.0f;
  long long idx = -1;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const float m = map[i];
    if (m == m && better_pos(m, i, v, idx, lower)) {
      v = m;
      idx = i;
    }
  }
  block_best(v, idx, lower, warp_v, warp_i);
  if (threadIdx.x == 0) {
    BestPos b;
    b.value = v;
    b.pad = 0;
    b.index = idx;
    best[blockIdx.x] = b;
  }
}

/// One block: the best of `n` partial bests -> result[k] (count zeroed).
__global__ void __launch_bounds__(MatchTuning::kFinalThreads)
    final_best_kernel(const BestPos* best, int n, bool lower, int Wo, DeviceMatch* result, int k) {
  __shared__ float warp_v[32];
  __shared__ long long warp_i[32];
  float v = 0.0f;
  long long idx = -1;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const BestPos b = best[i];
    if (better_pos(b.value, b.index, v, idx, lower)) {
      v = b.value;
      idx = b.index;
    }
  }
  block_best(v, idx, lower, warp_v, warp_i);
  if (threadIdx.x == 0) {
    DeviceMatch m;
    m.valid = idx >= 0 ? 1 : 0;
    m.x = idx >= 0 ? static_cast<int>(idx % Wo) : 0;
    m.y = idx >= 0 ? static_cast<int>(idx / Wo) : 0;
    m.score = v;
    m.count = 0;
    result[k] = m;
  }
}

/// NaN over the positions at Chebyshev distance < d from match k (if any).
/// The grid covers min(2d - 1, Wo) x min(2d - 1, Ho).
__global__ void suppress_kernel(float* map, int Wo, int Ho, int d, const DeviceMatch* result, int k) {
  const DeviceMatch m = result[k];
  if (!m.valid) return;
  const int x0 = max(0, m.x - d + 1), x1 = min(Wo - 1, m.x + d - 1);
  const int y0 = max(0, m.y - d + 1), y1 = min(Ho - 1, m.y + d - 1);
  const int x = x0 + blockIdx.x * blockDim.x + threadIdx.x;
  const int y = y0 + blockIdx.y * blockDim.y + threadIdx.y;
  if (x <= x1 && y <= y1) map[static_cast<long long>(y) * Wo + x] = __int_as_float(0x7fc00000);
}

/// Pixels of each match's w x h window (3-channel u8 RGB) in the HSV range,
/// added to result[k].count (zeroed by final_best_kernel). Grid (about w h /
/// kColorPixelsPerBlock, min(K, 65535)); matches past the grid's height are
/// taken in turn.
__global__ void __launch_bounds__(MatchTuning::kColorThreads)
    color_count_kernel(View2D<const std::uint8_t> img, int w, int h, HsvRange range, DeviceMatch* result, int K) {
  const long long n = static_cast<long long>(w) * h;
  for (int k = blockIdx.y; k < K; k += gridDim.y) {
    const DeviceMatch m = result[k];
    if (!m.valid) continue;
    unsigned long long count = 0;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
      const int j = static_cast<int>(i / w), q = static_cast<int>(i % w);
      const std::uint8_t* p = img.row(m.y + j) + static_cast<std::ptrdiff_t>(m.x + q) * 3;
      int hh, s, v;
      rgb_to_hsv8(p[0], p[1], p[2], hh, s, v);
      count += hsv_in_range(range, hh, s, v) ? 1u : 0u;
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) count += __shfl_down_sync(0xffffffffu, count, off);
    if (threadIdx.x % 32 == 0 && count) atomicAdd(&result[k].count, count);
  }
}

// ---- FFT -----------------------------------------------------------------------------------

/// Image -> zero-padded f64 planes Px x Py: plane c = channel c, and with
/// `squares` plane C + c = its square.
template <typename T>
__global__ void fft_pad_kernel(View2D<const T> img, double* planes, int Px, int Py, long long plane, bool squares) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= Px || y >= Py) return;
  const long long at = static_cast<long long>(y) * Px + x;
  const int C = img.channels;
  const bool inside = x < img.width && y < img.height;
  for (int c = 0; c < C; ++c) {
    const double v = inside ? static_cast<double>(img.row(y)[x * C + c]) : 0.0;
    planes[c * plane + at] = v;
    if (squares) planes[(C + c) * plane + at] = v * v;
  }
}

/// Small f64 planes [n][h][w] -> zero-padded planes Px x Py (the template).
__global__ void fft_pad_planes_kernel(const double* src, int w, int h, int n, double* planes, int Px, int Py,
                                      long long plane) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= Px || y >= Py) return;
  const long long at = static_cast<long long>(y) * Px + x;
  const bool inside = x < w && y < h;
  for (int p = 0; p < n; ++p)
    planes[p * plane + at] = inside ? src[(static_cast<long long>(p) * h + y) * w + x] : 0.0;
}

__device__ __forceinline__ double2 mul_conj(double2 a, double2 b) {  // a * conj(b)
  return make_double2(fma(a.x, b.x, a.y * b.y), fma(a.y, b.x, -(a.x * b.y)));
}
__device__ __forceinline__ double2 add2(double2 a, double2 b) { return make_double2(a.x + b.x, a.y + b.y); }

/// Spectra products, in place. Inputs: spec planes 0..C-1 = F(I_c), with
/// `squares` planes C..2C-1 = F(I_c^2); tspec planes 0..C-1 = F(M_c T_c), with
/// a mask planes C..2C-1 = F(M_c). Outputs: plane 0 = sum_c F(I_c) conj F(MT_c);
/// with s1: planes 1..C = F(I_c) conj F(M_c); with s2: the next C planes =
/// F(I_c^2) conj F(M_c). Each element's inputs are read before its outputs
/// are written, so the planes can be shared.
template <int C>
__global__ void __launch_bounds__(MatchTuning::kProductThreads)
    fft_product_kernel(double2* spec, const double2* tspec, long long n, bool s1, bool s2) {
  for (long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    double2 f[C], q[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      f[c] = spec[c * n + k];
      q[c] = s2 ? spec[(C + c) * n + k] : make_double2(0.0, 0.0);
    }
    double2 x = make_double2(0.0, 0.0);
#pragma unroll
    for (int c = 0; c < C; ++c) x = add2(x, mul_conj(f[c], tspec[c * n + k]));
    spec[k] = x;
    int out = 1;
    if (s1) {
#pragma unroll
      for (int c = 0; c < C; ++c) spec[(out + c) * n + k] = mul_conj(f[c], tspec[(C + c) * n + k]);
      out += C;
    }
    if (s2) {
#pragma unroll
      for (int c = 0; c < C; ++c) spec[(out + c) * n + k] = mul_conj(q[c], tspec[(C + c) * n + k]);
    }
  }
}

#endif  // !PIXELKIT_MATCH_CUDA_HOOKS_ONLY

}  // namespace pixelkit::detail
