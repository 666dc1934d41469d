// filter_cpu.cpp - the cpu backend of filter2d: OpenMP over bands of rows, SIMD
// inner loops written with GCC/Clang vector extensions (plus SSE2/AVX2
// intrinsics for the u8 store), compiled twice: for the x86-64 baseline (SSE2)
// and for AVX2+FMA, picked once per call by CPUID. PIXELKIT_CPU_BASELINE=1 in
// the environment forces the baseline, so both paths can be tested anywhere.
//
// Layout of the work (per thread, per band of output rows):
//  * An input row is converted to float once, with the horizontal border
//    already applied: a "padded row" of (W + kw - 1) * C floats. The interior
//    of the image is then read with no per-pixel border checks; the vertical
//    border only decides which source row (or the constant value) fills a row.
//  * Every filter step is the same contiguous multiply-accumulate,
//        out[i] = sum_t coef[t] * ptr[t][i],  i = x * C + c,
//    over a list of (pointer, coefficient) taps:
//      dense kernel:      kh * kw taps over a ring of padded rows, ptr = row + kx * C
//      separable, pass 1: kw taps over one padded row, into a ring of
//                         horizontally filtered rows
//      separable, pass 2: kh taps over that ring, written straight to dst.
//    Taps with a zero coefficient are dropped (OpenCV does the same).
//  * Output rows are made two at a time (mac2): rows y and y+1 share kh of
//    their kh+1 input rows, so a shared tap is loaded once for two FMAs.
//  * The accumulators stay in registers for a block of floats while all taps
//    are walked, so each output element is written once; u8 output is rounded
//    (ties to even) and saturated on that store.
//  * While a row pair is computed, the source rows of the next fills and the
//    next destination rows are prefetched, spread over its blocks.
//  * Scratch rows carry a zeroed tail of one block so the last, partial block
//    can read past the row end; only its valid part is stored.
// Scratch is allocated once per call for all threads; nothing allocates per row.
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "core/view2d.hpp"
#include "filter/filter_backends.hpp"
#include "pixelkit/backend.hpp"
#include "pixelkit/border.hpp"
#include "pixelkit/error.hpp"

#if !defined(__GNUC__)
#error "filter_cpu.cpp needs GCC or Clang (vector extensions, target attributes)"
#endif

#if defined(__x86_64__) || defined(__i386__)
#define PIXELKIT_CPU_X86 1
#else
#define PIXELKIT_CPU_X86 0
#endif

#define PK_INLINE inline __attribute__((always_inline))

namespace pixelkit::detail {
namespace {

// ---- SIMD building blocks -----------------------------------------------------

template <int L> struct Vec;
template <> struct Vec<4> {
  typedef float type __attribute__((vector_size(16)));
  typedef std::int32_t itype __attribute__((vector_size(16)));
  typedef float unaligned __attribute__((vector_size(16), aligned(4), may_alias));
};
template <> struct Vec<8> {
  typedef float type __attribute__((vector_size(32)));
  typedef std::int32_t itype __attribute__((vector_size(32)));
  typedef float unaligned __attribute__((vector_size(32), aligned(4), may_alias));
};

PK_INLINE void copy_n(float* __restrict out, const float* __restrict a, int n) {
  for (int j = 0; j < n; ++j) out[j] = a[j];
}
#if !PIXELKIT_CPU_X86
// Values are already clamped to 0..255 (see the u8 store_acc).
template <int N> PK_INLINE void narrow_n(std::uint8_t* __restrict out, const std::int32_t* __restrict a) {
  for (int j = 0; j < N; ++j) out[j] = static_cast<std::uint8_t>(a[j]);
}
PK_INLINE void narrow_n(std::uint8_t* __restrict out, const std::int32_t* __restrict a, int n) {
  for (int j = 0; j < n; ++j) out[j] = static_cast<std::uint8_t>(a[j]);
}
#endif

// Stores the NV accumulators of one block to out[0, count); count is the block
// size L * NV except at a row's end.
template <int L, int NV>
PK_INLINE void store_acc(float* __restrict out, const typename Vec<L>::type* acc, int count) {
  using V = typename Vec<L>::type;
  using VU = typename Vec<L>::unaligned;
  constexpr int B = L * NV;
  if (count == B) {
    for (int v = 0; v < NV; ++v) *reinterpret_cast<VU*>(out + v * L) = acc[v];
    return;
  }
  alignas(64) float tmp[B];
  for (int v = 0; v < NV; ++v) *reinterpret_cast<V*>(tmp + v * L) = acc[v];
  copy_n(out, tmp, count);
}

#if PIXELKIT_CPU_X86
// u8 on x86: min(f, 255) (NaN gives 255), cvtps2dq rounds to nearest-even (the
// default MXCSR mode, as nearbyint), and the saturating packs clamp to 0..255
// (cvtps2dq gives INT_MIN, hence 0, for anything below INT_MIN). These carry a
// target attribute and are not always_inline: the band functions are
// `flatten`, which inlines them there, where the target matches.
template <int NV>
__attribute__((target("avx2"))) inline void store_u8_avx2(std::uint8_t* __restrict out,
                                                          const typename Vec<8>::type* acc, int count) {
  static_assert(NV % 4 == 0, "groups of four vectors");
  alignas(32) std::uint8_t tmp[8 * NV];
  std::uint8_t* dst = count == 8 * NV ? out : tmp;
  const __m256 hi = _mm256_set1_ps(255.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int g = 0; g < NV; g += 4) {
    const __m256i i0 = _mm256_cvtps_epi32(_mm256_min_ps(acc[g], hi));
    const __m256i i1 = _mm256_cvtps_epi32(_mm256_min_ps(acc[g + 1], hi));
    const __m256i i2 = _mm256_cvtps_epi32(_mm256_min_ps(acc[g + 2], hi));
    const __m256i i3 = _mm256_cvtps_epi32(_mm256_min_ps(acc[g + 3], hi));
    // packs work per 128-bit lane; the dword permute restores pixel order.
    const __m256i b = _mm256_packus_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 8 * g),
                        _mm256_permutevar8x32_epi32(b, order));
  }
  if (dst == tmp) std::memcpy(out, tmp, static_cast<std::size_t>(count));
}

template <int NV>
inline void store_u8_sse2(std::uint8_t* __restrict out, const typename Vec<4>::type* acc, int count) {
  static_assert(NV % 4 == 0, "groups of four vectors");
  alignas(16) std::uint8_t tmp[4 * NV];
  std::uint8_t* dst = count == 4 * NV ? out : tmp;
  const __m128 hi = _mm_set1_ps(255.0f);
  for (int g = 0; g < NV; g += 4) {
    const __m128i i0 = _mm_cvtps_epi32(_mm_min_ps(acc[g], hi));
    const __m128i i1 = _mm_cvtps_epi32(_mm_min_ps(acc[g + 1], hi));
    const __m128i i2 = _mm_cvtps_epi32(_mm_min_ps(acc[g + 2], hi));
    const __m128i i3 = _mm_cvtps_epi32(_mm_min_ps(acc[g + 3], hi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 4 * g),
                     _mm_packus_epi16(_mm_packs_epi32(i0, i1), _mm_packs_epi32(i2, i3)));
  }
  if (dst == tmp) std::memcpy(out, tmp, static_cast<std::size_t>(count));
}

template <int L, int NV>
PK_INLINE void store_acc(std::uint8_t* __restrict out, const typename Vec<L>::type* acc, int count) {
  if constexpr (L == 8) {
    store_u8_avx2<NV>(out, acc, count);
  } else {
    store_u8_sse2<NV>(out, acc, count);
  }
}
#else
// u8, portable: adding 1.5 * 2^23 rounds a float of magnitude below 2^22 to
// an integer (to nearest, ties to even: the default FP mode) held in the low
// mantissa bits, so bits(f + M) - bits(M) is that integer. Float bits are
// monotonic, so anything larger, smaller or infinite still lands on the right
// side of 0..255 and the integer clamp saturates it.
template <int L, int NV>
PK_INLINE void store_acc(std::uint8_t* __restrict out, const typename Vec<L>::type* acc, int count) {
  using V = typename Vec<L>::type;
  using VI = typename Vec<L>::itype;
  constexpr int B = L * NV;
  alignas(64) std::int32_t ints[B];
  for (int v = 0; v < NV; ++v) {
#if defined(__FAST_MATH__)
    V f;
    for (int l = 0; l < L; ++l) f[l] = __builtin_nearbyintf(acc[v][l]) + 12582912.0f;
#else
    const V f = acc[v] + 12582912.0f;
#endif
    VI r;
    std::memcpy(&r, &f, sizeof r);
    r -= 0x4B400000;  // bits of 12582912.0f
    r = r > 0 ? r : 0;
    r = r < 255 ? r : 255;
    std::memcpy(ints + v * L, &r, sizeof r);
  }
  if (count == B) {
    narrow_n<B>(out, ints);
  } else {
    narrow_n(out, ints, count);
  }
}
#endif

// Rows of the image to pull into cache while a row pair is computed (the
// source rows the next fills convert, the next destination rows), spread
// over the blocks of the pair so they never queue up at once. Without it
// the conversion stalls at the start of every source row (perf: 25% of a
// 3x3 u8 filter's time on that load, 13% with it).
struct Prefetch {
  const char* row[4];
  bool write[4];
  int rows = 0;
  std::ptrdiff_t bytes = 0;  // per row
};

PK_INLINE void prefetch_lines(const Prefetch& pf, std::ptrdiff_t first, std::ptrdiff_t last,
                              std::ptrdiff_t lines_per_row) {
  for (std::ptrdiff_t l = first; l < last; ++l) {
    const std::ptrdiff_t r = l / lines_per_row;
    const char* p = pf.row[r] + (l - r * lines_per_row) * 64;
    if (pf.write[r]) {
      __builtin_prefetch(p, 1, 3);
    } else {
      __builtin_prefetch(p, 0, 3);
    }
  }
}

// One output row: out[i] = sum_t coef[t] * ptr[t][i] for i in [0, n). Every
// ptr[t] must be readable up to the next multiple of L * NV past n.
template <int L, int NV, typename Out>
PK_INLINE void mac1(Out* __restrict out, int n, const float* const* __restrict ptr,
                    const float* __restrict coef, int ntaps) {
  using V = typename Vec<L>::type;
  using VU = typename Vec<L>::unaligned;
  constexpr int B = L * NV;
  for (int i = 0; i < n; i += B) {
    V acc[NV];
    for (int v = 0; v < NV; ++v) acc[v] = V{};
    for (int t = 0; t < ntaps; ++t) {
      const V k = coef[t] - V{};  // broadcast (x - 0 == x for every x, so it folds)
      const float* p = ptr[t] + i;
      for (int v = 0; v < NV; ++v) acc[v] += k * *reinterpret_cast<const VU*>(p + v * L);
    }
    store_acc<L, NV>(out + i, acc, std::min(B, n - i));
  }
}

// Two output rows that share input rows: each tap is loaded once and feeds
// out0 with c0 and out1 with c1. Taps [0, nA) feed only out0, the next nB
// both, the last nC only out1. This halves the loads of a vertical stencil.
template <int L, int NV, typename Out>
PK_INLINE void mac2(Out* __restrict out0, Out* __restrict out1, int n,
                    const float* const* __restrict ptr, const float* __restrict c0,
                    const float* __restrict c1, int nA, int nB, int nC, const Prefetch& pf) {
  using V = typename Vec<L>::type;
  using VU = typename Vec<L>::unaligned;
  constexpr int B = L * NV;
  const int nAB = nA + nB, nall = nA + nB + nC;
  const std::ptrdiff_t nblocks = (n + B - 1) / B;
  const std::ptrdiff_t lines_per_row = (pf.bytes + 63) / 64;
  const std::ptrdiff_t lines = lines_per_row * pf.rows;
  const std::ptrdiff_t per_block = (lines + nblocks - 1) / nblocks;
  for (std::ptrdiff_t i = 0, line = 0; i < n; i += B, line += per_block) {
    prefetch_lines(pf, line, std::min(lines, line + per_block), lines_per_row);
    V a0[NV], a1[NV];
    for (int v = 0; v < NV; ++v) a0[v] = a1[v] = V{};
    int t = 0;
    for (; t < nA; ++t) {
      const V k0 = c0[t] - V{};
      const float* p = ptr[t] + i;
      for (int v = 0; v < NV; ++v) a0[v] += k0 * *reinterpret_cast<const VU*>(p + v * L);
    }
    for (; t < nAB; ++t) {
      const V k0 = c0[t] - V{};
      const V k1 = c1[t] - V{};
      const float* p = ptr[t] + i;
      for (int v = 0; v < NV; ++v) {
        const V x = *reinterpret_cast<const VU*>(p + v * L);
        a0[v] += k0 * x;
        a1[v] += k1 * x;
      }
    }
    for (; t < nall; ++t) {
      const V k1 = c1[t] - V{};
      const float* p = ptr[t] + i;
      for (int v = 0; v < NV; ++v) a1[v] += k1 * *reinterpret_cast<const VU*>(p + v * L);
    }
    const int count = static_cast<int>(std::min<std::ptrdiff_t>(B, n - i));
    store_acc<L, NV>(out0 + i, a0, count);
    store_acc<L, NV>(out1 + i, a1, count);
  }
}

// Floats of read-past slack every scratch row needs (the largest block).
constexpr int kSlack = 64;

// ---- the filter ------------------------------------------------------------

// A list of taps over a ring of rows: tap t reads ring row `row[t]` (relative
// to the first input row of the output row) at float offset off[t]. For one
// output row c0 holds the coefficients and nA the count; for two rows see mac2.
struct Taps {
  std::vector<int> row;
  std::vector<std::ptrdiff_t> off;
  std::vector<float> c0, c1;
  int nA = 0, nB = 0, nC = 0;

  int size() const { return static_cast<int>(row.size()); }
  void push(int r, std::ptrdiff_t o, float k0, float k1) {
    row.push_back(r);
    off.push_back(o);
    c0.push_back(k0);
    c1.push_back(k1);
  }
};

// K: rows x cols coefficients, k(r, x); tap x reads at offset x * step.
// Zero coefficients are dropped (as OpenCV does).
template <typename K>
Taps one_row_taps(int rows, int cols, std::ptrdiff_t step, K k) {
  Taps t;
  for (int r = 0; r < rows; ++r)
    for (int x = 0; x < cols; ++x)
      if (k(r, x) != 0.0f) t.push(r, x * step, k(r, x), 0.0f);
  t.nA = t.size();
  return t;
}

// Output rows y and y + 1 read input rows y - ry .. y + ry + 1 (r = 0..rows):
// out0 uses kernel row r, out1 kernel row r - 1.
template <typename K>
Taps two_row_taps(int rows, int cols, std::ptrdiff_t step, K k) {
  Taps t;
  for (int x = 0; x < cols; ++x)
    if (k(0, x) != 0.0f) t.push(0, x * step, k(0, x), 0.0f);
  t.nA = t.size();
  for (int r = 1; r < rows; ++r)
    for (int x = 0; x < cols; ++x)
      if (k(r, x) != 0.0f || k(r - 1, x) != 0.0f) t.push(r, x * step, k(r, x), k(r - 1, x));
  t.nB = t.size() - t.nA;
  for (int x = 0; x < cols; ++x)
    if (k(rows - 1, x) != 0.0f) t.push(rows, x * step, 0.0f, k(rows - 1, x));
  t.nC = t.size() - t.nA - t.nB;
  return t;
}

template <typename T>
struct Job {
  View2D<const T> src;
  View2D<T> dst;
  int W, H, C, kw, kh, rx, ry;
  Border border;
  std::vector<int> xmap;  // source column for x in [-rx, 0), then [W, W + rx); -1 = constant
  std::ptrdiff_t padlen;  // floats in a padded row: (W + kw - 1) * C
  int n;                  // floats in an output row: W * C
  std::ptrdiff_t stride;  // floats between scratch rows
  int ring;               // rows in the ring: kh + 1 (two output rows at a time)
  bool separable;
  // Dense: over padded input rows. Separable: the vertical pass over
  // horizontally filtered rows; `horiz` is the horizontal pass.
  Taps one, two, horiz;
};

// Virtual input row v (any integer) as floats, horizontally padded.
template <typename T>
PK_INLINE void fill_padded(const Job<T>& job, int v, float* __restrict out) {
  const int sy = border_index(v, job.H, job.border.mode);
  const float value = job.border.value;
  if (sy < 0) {
    std::fill(out, out + job.padlen, value);
    return;
  }
  const int C = job.C, rx = job.rx, n = job.n;
  const T* __restrict s = job.src.row(sy);
  const int* xmap = job.xmap.data();
  for (int x = 0; x < rx; ++x) {
    const int sx = xmap[x];
    for (int c = 0; c < C; ++c) out[x * C + c] = sx < 0 ? value : static_cast<float>(s[sx * C + c]);
  }
  float* __restrict mid = out + rx * C;
  for (int i = 0; i < n; ++i) mid[i] = static_cast<float>(s[i]);
  float* __restrict right = mid + n;
  for (int x = 0; x < rx; ++x) {
    const int sx = xmap[rx + x];
    for (int c = 0; c < C; ++c) right[x * C + c] = sx < 0 ? value : static_cast<float>(s[sx * C + c]);
  }
}

PK_INLINE int ring_slot(int v, int ring) { return ((v % ring) + ring) % ring; }

// Output rows [y0, y1) of the job. scratch: job.ring rows (+ one padded row
// when separable), zeroed once; ptrs: room for every tap list's pointers.
template <typename T, int L>
PK_INLINE void band_impl(const Job<T>& job, int y0, int y1, float* scratch, const float** ptrs) {
  const std::ptrdiff_t stride = job.stride;
  const int R = job.ring, ry = job.ry, n = job.n;
  float* ring = scratch;
  float* pad = scratch + R * stride;
  const float** hptrs = ptrs + std::max(job.one.size(), job.two.size());
  if (job.separable)
    for (int t = 0; t < job.horiz.size(); ++t) hptrs[t] = pad + job.horiz.off[t];

  int next = y0 - ry;  // the next virtual input row to put in the ring
  int y = y0;
  for (; y < y1; y += 2) {
    const bool pair = y + 1 < y1;
    for (const int last = y + ry + (pair ? 1 : 0); next <= last; ++next) {
      float* dst_row = ring + ring_slot(next, R) * stride;
      if (job.separable) {
        fill_padded(job, next, pad);
        mac1<L, 8>(dst_row, n, hptrs, job.horiz.c0.data(), job.horiz.size());
      } else {
        fill_padded(job, next, dst_row);
      }
    }
    const Taps& taps = pair ? job.two : job.one;
    for (int t = 0; t < taps.size(); ++t)
      ptrs[t] = ring + ring_slot(y - ry + taps.row[t], R) * stride + taps.off[t];
    if (pair) {
      Prefetch pf;
      pf.bytes = static_cast<std::ptrdiff_t>(n) * sizeof(T);
      for (int v = next; v < next + 2; ++v) {
        const int sy = border_index(v, job.H, job.border.mode);
        if (sy >= 0) {
          pf.row[pf.rows] = reinterpret_cast<const char*>(job.src.row(sy));
          pf.write[pf.rows++] = false;
        }
      }
      for (int yy = y + 2; yy < std::min(y + 4, y1); ++yy) {
        pf.row[pf.rows] = reinterpret_cast<const char*>(job.dst.row(yy));
        pf.write[pf.rows++] = true;
      }
      mac2<L, 4>(job.dst.row(y), job.dst.row(y + 1), n, ptrs, taps.c0.data(), taps.c1.data(),
                 taps.nA, taps.nB, taps.nC, pf);
    } else {
      mac1<L, 8>(job.dst.row(y), n, ptrs, taps.c0.data(), taps.nA);
    }
  }
}

template <typename T>
using BandFn = void (*)(const Job<T>&, int, int, float*, const float**);

// Baseline: 16-byte vectors (SSE2 on x86-64, NEON on aarch64).
template <typename T>
__attribute__((flatten)) void band_base(const Job<T>& job, int y0, int y1, float* scratch, const float** ptrs) {
  band_impl<T, 4>(job, y0, y1, scratch, ptrs);
}

#if PIXELKIT_CPU_X86
// AVX2 + FMA: 32-byte vectors; the multiply-adds are contracted to FMA (GCC's
// default -ffp-contract=fast for C++).
template <typename T>
__attribute__((target("avx2,fma"), flatten)) void band_avx2(const Job<T>& job, int y0, int y1,
                                                   float* scratch, const float** ptrs) {
  band_impl<T, 8>(job, y0, y1, scratch, ptrs);
}
#endif

// PIXELKIT_CPU_BASELINE=1 forces the baseline path, so that both paths can be
// tested against each other on one machine.
template <typename T>
BandFn<T> choose_isa(const char** name) {
  const char* env = std::getenv("PIXELKIT_CPU_BASELINE");
  const bool force_base = env && *env && std::strcmp(env, "0") != 0;
#if PIXELKIT_CPU_X86
  if (!force_base && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    *name = "avx2+fma";
    return band_avx2<T>;
  }
  *name = "sse2";
#else
  (void)force_base;
  *name = "generic simd";
#endif
  return band_base<T>;
}

struct AlignedFree {
  void operator()(float* p) const { ::operator delete[](p, std::align_val_t(64)); }
};

std::ptrdiff_t round_up(std::ptrdiff_t v, std::ptrdiff_t m) { return (v + m - 1) / m * m; }

template <typename T>
std::string run(const ConstImageView& src_view, const ImageView& dst_view, const Kernel& kernel,
                const Border& border, int threads) {
  Job<T> job;
  job.src = view2d<T>(src_view);
  job.dst = view2d<T>(dst_view);
  job.W = src_view.width;
  job.H = src_view.height;
  job.C = src_view.channels;
  job.kw = kernel.width;
  job.kh = kernel.height;
  job.rx = kernel.radius_x();
  job.ry = kernel.radius_y();
  job.border = border;
  const int C = job.C;
  job.n = job.W * C;
  job.padlen = static_cast<std::ptrdiff_t>(job.W + job.kw - 1) * C;
  job.ring = job.kh + 1;
  job.xmap.resize(2 * static_cast<std::size_t>(job.rx));
  for (int x = 0; x < job.rx; ++x) {
    job.xmap[x] = border_index(x - job.rx, job.W, border.mode);
    job.xmap[job.rx + x] = border_index(job.W + x, job.W, border.mode);
  }

  // Two 1D passes cost kw + kh taps per pixel instead of kw * kh.
  job.separable = kernel.separable && kernel.width > 1 && kernel.height > 1 &&
                  static_cast<int>(kernel.row.size()) == kernel.width &&
                  static_cast<int>(kernel.col.size()) == kernel.height;
  if (job.separable) {
    const auto col = [&](int r, int) { return kernel.col[r]; };
    job.one = one_row_taps(job.kh, 1, 0, col);
    job.two = two_row_taps(job.kh, 1, 0, col);
    job.horiz = one_row_taps(1, job.kw, C, [&](int, int x) { return kernel.row[x]; });
  } else {
    const auto k = [&](int r, int x) { return kernel.at(r, x); };
    job.one = one_row_taps(job.kh, job.kw, C, k);
    job.two = two_row_taps(job.kh, job.kw, C, k);
  }

  const char* isa = nullptr;
  const BandFn<T> band = choose_isa<T>(&isa);

  // Bands: a few per thread so that dynamic scheduling evens out busy cores,
  // but tall enough that refilling the ring each band starts with stays a
  // small fraction of its work.
  const int nthreads_req = resolve_threads(threads);
  const int min_rows = std::max(8, (job.separable ? 4 : 2) * job.kh);
  int nbands = std::min(8 * nthreads_req, std::max(1, job.H / min_rows));
  const double work = static_cast<double>(job.n) * job.H *
                      static_cast<double>(job.one.size() + job.horiz.size() + 1);
  if (work < 2.0e5) nbands = 1;  // too small to be worth waking threads
  nbands = std::max(1, std::min(nbands, job.H));
  const int nthreads = std::max(1, std::min(nthreads_req, nbands));

  // Scratch per thread: the ring (+ one padded row for the separable pass 1).
  // A row holds a padded row or an output row, plus read-past slack.
  job.stride = round_up(std::max<std::ptrdiff_t>(job.padlen, job.n) + kSlack, 16);
  const std::ptrdiff_t per_thread = (job.ring + (job.separable ? 1 : 0)) * job.stride;
  const std::size_t max_ptrs =
      static_cast<std::size_t>(std::max(job.one.size(), job.two.size()) + job.horiz.size() + 1);
  std::unique_ptr<float[], AlignedFree> scratch;
  std::vector<const float*> ptr_buf;
  try {
    scratch.reset(static_cast<float*>(::operator new[](
        sizeof(float) * static_cast<std::size_t>(per_thread) * nthreads, std::align_val_t(64))));
    ptr_buf.resize(max_ptrs * nthreads);
  } catch (const std::bad_alloc&) {
    throw Error(Status::out_of_memory, "filter2d (cpu): cannot allocate scratch rows");
  }

  const int H = job.H;
#pragma omp parallel num_threads(nthreads)
  {
    const int tid = omp_get_thread_num();
    float* mine = scratch.get() + per_thread * tid;
    std::fill(mine, mine + per_thread, 0.0f);  // the read-past slack must be finite
#pragma omp for schedule(dynamic, 1)
    for (int b = 0; b < nbands; ++b) {
      const int y0 = static_cast<int>(static_cast<long long>(H) * b / nbands);
      const int y1 = static_cast<int>(static_cast<long long>(H) * (b + 1) / nbands);
      band(job, y0, y1, mine, ptr_buf.data() + max_ptrs * tid);
    }
  }

  std::string path = "cpu ";
  if (job.separable) {
    path += "separable 2-pass (" + std::to_string(job.horiz.size()) + "+" +
            std::to_string(job.one.size()) + " taps)";
  } else {
    path += "direct " + std::to_string(job.one.size()) + " taps";
  }
  path += " f32, " + std::to_string(nthreads) + (nthreads == 1 ? " thread, " : " threads, ") + isa;
  return path;
}

}  // namespace

std::string filter_cpu(const ConstImageView& src, const ImageView& dst, const Kernel& kernel,
                       const Border& border, int threads) {
  switch (src.type) {
    case PixelType::u8:
      return run<std::uint8_t>(src, dst, kernel, border, threads);
    case PixelType::f32:
      return run<float>(src, dst, kernel, border, threads);
  }
  throw Error(Status::internal, "filter2d (cpu): unknown pixel type");
}

}  // namespace pixelkit::detail
