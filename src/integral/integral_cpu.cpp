// integral_cpu.cpp - the cpu backend of the integral: OpenMP over bands of
// rows, reduce-then-scan, so the table is written once and never re-read.
//
//  1. The column sums of the rows above each band: u8 images split the
//     columns between all threads (each sums its slice over the rows above the
//     last band, in u16 chunks of 257 rows, saving the running sums at each
//     band's start); f32 images sum each band's columns on its own thread and
//     scan over bands.
//  2. Each band turns its column sums into its "top row" (a prefix along the
//     row), the table row just above the band.
//  3. Each thread scans its band from its top row: per row a running row sum
//     added to the table's previous row, read back from cache, and stored once
//     (an f32 table of an f32 image keeps an f64 accumulator row instead,
//     rounded once per entry). Sum and squared sum share the pass. u8 rows
//     take an AVX2 kernel when the CPU has it (1 channel: 16 pixels per step;
//     3/4 channels: one pixel per vector), else the SSE2 one (1 channel) or
//     the generic loop; tables with 8-byte entries far larger than the cache
//     (u8, 1 channel) keep the previous row in a cached accumulator row and
//     are written with non-temporal stores.
// Channels are a template parameter, so the per-channel running sums live in
// registers and the element loop has no inner channel loop left at run time.
// The accumulators are exact int64 for u8 and f64 for f32 (see
// integral_backends.hpp), so the result does not depend on the band split.
//
// The tilted table is computed by the ref recurrence on whole rows (each row
// needs the two before it): the element loop is branch-free and vectorises;
// it runs on one thread.
#include <omp.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PIXELKIT_INTEGRAL_X86 1
#else
#define PIXELKIT_INTEGRAL_X86 0
#endif

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/view2d.hpp"
#include "integral/integral_backends.hpp"
#include "integral/integral_common.hpp"
#include "integral/integral_cpu_hooks.hpp"

namespace pixelkit::detail {

namespace {

struct None {};  // "this table is not wanted"

// Bands of at least 16 rows, one per thread; small images (under 64K
// elements) on one thread, where a parallel region costs more than the work.
int band_count(const ConstImageView& src, int threads) {
  if (static_cast<long long>(src.width) * src.height * src.channels < (1 << 16)) return 1;
  return std::max(1, std::min(threads, src.height / 16));
}

template <typename Tin, int C, bool S, bool Q>
void band_column_sums(const View2D<const Tin>& src, int y0, int y1, typename integral_acc<Tin>::type* cs,
                      typename integral_acc<Tin>::type* cq) {
  using Acc = typename integral_acc<Tin>::type;
  const int n = src.width * C;
  for (int y = y0; y < y1; ++y) {
    const Tin* in = src.row(y);
    for (int i = 0; i < n; ++i) {
      const Acc v = static_cast<Acc>(in[i]);
      if constexpr (S) cs[i] += v;
      if constexpr (Q) cq[i] += v * v;
    }
  }
}

// u8: the column sums of rows [0, start[b]) for every band b >= 1, of the
// elements [i0, i1) of a row, into cs / cq + b * n (all threads share the
// rows, each its own columns, so the pre-pass costs 1/threads of one read of
// the bands above the last). Chunks of 257 rows accumulate in u16 (sums) and
// u32 (squares), which cannot overflow (257 * 255 < 2^16, 257 * 255^2 <
// 2^32), and are then added to the int64 running sums.
template <bool S, bool Q>
__attribute__((always_inline)) inline void column_sums_u8_body(const View2D<const std::uint8_t>& src,
                                                               const int* start, int bands, std::size_t n,
                                                               std::size_t i0, std::size_t i1, std::int64_t* cs,
                                                               std::int64_t* cq) {
  const std::size_t m = i1 - i0;
  std::vector<std::uint16_t> s16(S ? m : 0);
  std::vector<std::uint32_t> q32(Q ? m : 0);
  std::vector<std::int64_t> rs(S ? m : 0, 0), rq(Q ? m : 0, 0);
  std::uint16_t* __restrict a = s16.data();
  std::uint32_t* __restrict b2 = q32.data();
  for (int b = 1; b < bands; ++b) {
    for (int y = start[b - 1]; y < start[b];) {
      const int y_end = std::min(start[b], y + 257);
      if constexpr (S) std::fill(s16.begin(), s16.end(), std::uint16_t(0));
      if constexpr (Q) std::fill(q32.begin(), q32.end(), std::uint32_t(0));
      for (; y < y_end; ++y) {
        const std::uint8_t* __restrict in = src.row(y) + i0;
        for (std::size_t i = 0; i < m; ++i) {
          if constexpr (S) a[i] = static_cast<std::uint16_t>(a[i] + in[i]);
          if constexpr (Q) b2[i] += static_cast<std::uint32_t>(in[i]) * in[i];
        }
      }
      for (std::size_t i = 0; i < m; ++i) {
        if constexpr (S) rs[i] += a[i];
        if constexpr (Q) rq[i] += b2[i];
      }
    }
    if constexpr (S) std::copy(rs.begin(), rs.end(), cs + b * n + i0);
    if constexpr (Q) std::copy(rq.begin(), rq.end(), cq + b * n + i0);
  }
}

template <bool S, bool Q>
void column_sums_u8(const View2D<const std::uint8_t>& src, const int* start, int bands, std::size_t n, std::size_t i0,
                    std::size_t i1, std::int64_t* cs, std::int64_t* cq) {
  column_sums_u8_body<S, Q>(src, start, bands, n, i0, i1, cs, cq);
}

#if PIXELKIT_INTEGRAL_X86
template <bool S, bool Q>
__attribute__((target("avx2"))) void column_sums_u8_avx2(const View2D<const std::uint8_t>& src, const int* start,
                                                         int bands, std::size_t n, std::size_t i0, std::size_t i1,
                                                         std::int64_t* cs, std::int64_t* cq) {
  column_sums_u8_body<S, Q>(src, start, bands, n, i0, i1, cs, cq);
}
#endif

// ---- one channel of u8: 16 pixels at a time ------------------------------------------
// With the x86-64 baseline's 16-byte vectors (GCC/Clang vector extensions and
// __builtin_shufflevector; the shuffles are the unpack and shift patterns SSE2 has): 16 bytes are widened
// to four u32x4, each is scanned in two shift-and-add steps, the running carry
// is added and broadcast on, and the previous table row is added before the
// store. The row prefix fits u32 for W <= 66051 (W * 255^2 < 2^32), and i32
// for the sum, which the caller checks.
typedef std::uint8_t u8x16 __attribute__((vector_size(16)));
typedef std::uint16_t u16x8 __attribute__((vector_size(16)));
typedef std::uint32_t u32x4 __attribute__((vector_size(16)));
typedef std::uint64_t u64x2 __attribute__((vector_size(16)));

inline u32x4 scan4(u32x4 v) {
  const u32x4 z = {0, 0, 0, 0};
  v += __builtin_shufflevector(v, z, 4, 0, 1, 2);
  v += __builtin_shufflevector(v, z, 4, 5, 0, 1);
  return v;
}

// out[k] = prev[k] + v[k], k < 4, in the table's type.
template <typename T>
inline void add_store4(const T* prev, T* out, u32x4 v) {
  if constexpr (std::is_same_v<T, std::uint32_t>) {
    u32x4 p;
    std::memcpy(&p, prev, 16);
    v += p;
    std::memcpy(out, &v, 16);
  } else if constexpr (std::is_integral_v<T>) {  // i64, u64: values are nonnegative
    const u32x4 z = {0, 0, 0, 0};
    u64x2 lo = (u64x2)__builtin_shufflevector(v, z, 0, 4, 1, 5), hi = (u64x2)__builtin_shufflevector(v, z, 2, 6, 3, 7);
    u64x2 p0, p1;
    std::memcpy(&p0, prev, 16);
    std::memcpy(&p1, prev + 2, 16);
    lo += p0;
    hi += p1;
    std::memcpy(out, &lo, 16);
    std::memcpy(out + 2, &hi, 16);
  } else {
    for (int k = 0; k < 4; ++k) out[k] = prev[k] + static_cast<T>(v[k]);
  }
}

template <typename TS, typename TQ>
void row_u8_c1(const std::uint8_t* __restrict in, int W, const TS* ps, TS* os, const TQ* pq, TQ* oq) {
  constexpr bool S = !std::is_same_v<TS, None>, Q = !std::is_same_v<TQ, None>;
  const u8x16 z8 = {0};
  const u16x8 z16 = {0};
  u32x4 cs = {0, 0, 0, 0}, cq = cs;
  int x = 0;
  for (; x + 16 <= W; x += 16) {
    u8x16 b;
    std::memcpy(&b, in + x, 16);
    const u16x8 lo = (u16x8)__builtin_shufflevector(b, z8, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const u16x8 hi = (u16x8)__builtin_shufflevector(b, z8, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const u32x4 a[4] = {(u32x4)__builtin_shufflevector(lo, z16, 0, 8, 1, 9, 2, 10, 3, 11),
                        (u32x4)__builtin_shufflevector(lo, z16, 4, 12, 5, 13, 6, 14, 7, 15),
                        (u32x4)__builtin_shufflevector(hi, z16, 0, 8, 1, 9, 2, 10, 3, 11),
                        (u32x4)__builtin_shufflevector(hi, z16, 4, 12, 5, 13, 6, 14, 7, 15)};
    for (int k = 0; k < 4; ++k) {
      if constexpr (S) {
        const u32x4 v = scan4(a[k]) + cs;
        cs = __builtin_shufflevector(v, v, 3, 3, 3, 3);
        add_store4(ps + x + 4 * k, os + x + 4 * k, v);
      }
      if constexpr (Q) {
        const u32x4 v = scan4(a[k] * a[k]) + cq;
        cq = __builtin_shufflevector(v, v, 3, 3, 3, 3);
        add_store4(pq + x + 4 * k, oq + x + 4 * k, v);
      }
    }
  }
  std::uint32_t s = cs[0], q = cq[0];
  for (; x < W; ++x) {
    const std::uint32_t v = in[x];
    s += v;
    q += v * v;
    if constexpr (S) os[x] = static_cast<TS>(ps[x] + static_cast<TS>(s));
    if constexpr (Q) oq[x] = static_cast<TQ>(pq[x] + static_cast<TQ>(q));
  }
}

// ---- one channel of u8 with AVX2: 16 pixels at a time in 32-byte vectors ------------------
// Chosen at run time (__builtin_cpu_supports) unless PIXELKIT_CPU_BASELINE=1 or
// the test hook forces the baseline above. Per 16 pixels: widen to 16 x u16,
// scan each 128-bit lane in three byte-shift-and-add steps, widen to two
// u32x8, add lane 0's total to lane 1 and the running carry. The carry's
// loop-carried chain is one add per 16 pixels (the broadcast of this block's
// total is computed from the block alone). Squares: u8 -> u32, squared with
// pmaddwd, scanned per 8. Same width limits as the baseline (checked by the
// caller): every row prefix fits u32, and i32 where it is converted to f64.
#if PIXELKIT_INTEGRAL_X86
#define PK_AVX2 __attribute__((target("avx2")))

PK_AVX2 inline void sum16_avx2(const std::uint8_t* p, __m256i& carry, __m256i& lo, __m256i& hi) {
  const __m256i seven = _mm256_set1_epi32(7);
  __m256i w = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  w = _mm256_add_epi16(w, _mm256_slli_si256(w, 2));
  w = _mm256_add_epi16(w, _mm256_slli_si256(w, 4));
  w = _mm256_add_epi16(w, _mm256_slli_si256(w, 8));
  const __m256i l = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(w));
  __m256i h = _mm256_cvtepu16_epi32(_mm256_extracti128_si256(w, 1));
  h = _mm256_add_epi32(h, _mm256_permutevar8x32_epi32(l, seven));
  lo = _mm256_add_epi32(l, carry);
  hi = _mm256_add_epi32(h, carry);
  carry = _mm256_add_epi32(carry, _mm256_permutevar8x32_epi32(h, seven));
}

PK_AVX2 inline __m256i sq8_avx2(const std::uint8_t* p, __m256i& carry) {
  __m256i x = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  x = _mm256_madd_epi16(x, x);  // each u32 is (v, 0) as two i16: v*v + 0
  x = _mm256_add_epi32(x, _mm256_slli_si256(x, 4));
  x = _mm256_add_epi32(x, _mm256_slli_si256(x, 8));
  const __m256i t = _mm256_permutevar8x32_epi32(x, _mm256_set1_epi32(3));
  x = _mm256_add_epi32(x, _mm256_blend_epi32(_mm256_setzero_si256(), t, 0xF0));
  const __m256i r = _mm256_add_epi32(x, carry);
  carry = _mm256_add_epi32(carry, _mm256_permutevar8x32_epi32(x, _mm256_set1_epi32(7)));
  return r;
}

// out[k] = prev[k] + v[k], k < 8, in the table's type (prev may equal out).
template <typename T>
PK_AVX2 inline void add_store8_avx2(const T* prev, T* out, __m256i v) {
  if constexpr (std::is_same_v<T, std::uint32_t>) {
    const __m256i p = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(prev));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_add_epi32(p, v));
  } else if constexpr (std::is_integral_v<T>) {  // i64, u64: values are nonnegative
    const __m256i a = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(v));
    const __m256i b = _mm256_cvtepu32_epi64(_mm256_extracti128_si256(v, 1));
    const __m256i p0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(prev));
    const __m256i p1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(prev + 4));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_add_epi64(p0, a));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 4), _mm256_add_epi64(p1, b));
  } else {  // f64: the row prefix is below 2^31 (checked), so the signed conversion is exact
    static_assert(std::is_same_v<T, double>);
    const __m256d a = _mm256_cvtepi32_pd(_mm256_castsi256_si128(v));
    const __m256d b = _mm256_cvtepi32_pd(_mm256_extracti128_si256(v, 1));
    const __m256d p0 = _mm256_loadu_pd(prev), p1 = _mm256_loadu_pd(prev + 4);
    _mm256_storeu_pd(out, _mm256_add_pd(p0, a));
    _mm256_storeu_pd(out + 4, _mm256_add_pd(p1, b));
  }
}

template <typename TS, typename TQ>
PK_AVX2 void row_u8_c1_avx2(const std::uint8_t* __restrict in, int W, const TS* ps, TS* os, const TQ* pq,
                            TQ* oq) {
  constexpr bool S = !std::is_same_v<TS, None>, Q = !std::is_same_v<TQ, None>;
  __m256i cs = _mm256_setzero_si256(), cq = cs;
  int x = 0;
  for (; x + 16 <= W; x += 16) {
    if constexpr (S) {
      __m256i lo, hi;
      sum16_avx2(in + x, cs, lo, hi);
      add_store8_avx2(ps + x, os + x, lo);
      add_store8_avx2(ps + x + 8, os + x + 8, hi);
    }
    if constexpr (Q) {
      const __m256i lo = sq8_avx2(in + x, cq);
      const __m256i hi = sq8_avx2(in + x + 8, cq);
      add_store8_avx2(pq + x, oq + x, lo);
      add_store8_avx2(pq + x + 8, oq + x + 8, hi);
    }
  }
  std::uint32_t s = static_cast<std::uint32_t>(_mm256_cvtsi256_si32(cs));
  std::uint32_t q = static_cast<std::uint32_t>(_mm256_cvtsi256_si32(cq));
  for (; x < W; ++x) {
    const std::uint32_t v = in[x];
    s += v;
    q += v * v;
    if constexpr (S) os[x] = static_cast<TS>(ps[x] + static_cast<TS>(s));
    if constexpr (Q) oq[x] = static_cast<TQ>(pq[x] + static_cast<TQ>(q));
  }
}

// ---- 3 or 4 channels of u8 with AVX2: one pixel per vector ------------------------------------
// The running sums of the C channels are one u32x4 (for C = 3 the fourth lane
// carries the next pixel's first channel and is never kept: each pixel's
// 4-entry store is overwritten in that entry by the next pixel's, and the last
// pixel of the row, which would read and write one entry too far, is scalar).
// Two pixels per step with the carry chain one add per step.
template <typename T>
PK_AVX2 inline void add_store4_avx2(const T* prev, T* out, __m128i v) {
  if constexpr (std::is_same_v<T, std::uint32_t>) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                     _mm_add_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(prev)), v));
  } else if constexpr (std::is_integral_v<T>) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                        _mm256_add_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(prev)),
                                         _mm256_cvtepu32_epi64(v)));
  } else {
    static_assert(std::is_same_v<T, double>);
    _mm256_storeu_pd(out, _mm256_add_pd(_mm256_loadu_pd(prev), _mm256_cvtepi32_pd(v)));
  }
}

inline std::uint32_t load_u32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

template <int C, typename TS, typename TQ>
PK_AVX2 void row_u8_cn_avx2(const std::uint8_t* __restrict in, int W, const TS* ps, TS* os, const TQ* pq, TQ* oq) {
  static_assert(C == 3 || C == 4);
  constexpr bool S = !std::is_same_v<TS, None>, Q = !std::is_same_v<TQ, None>;
  __m128i cs = _mm_setzero_si128(), cq = cs;
  const int vec_end = C == 3 ? W - 1 : W;  // pixels [0, vec_end) in vectors
  int x = 0;
  for (; x + 2 <= vec_end; x += 2) {
    const __m128i a = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(load_u32(in + x * C))));
    const __m128i b = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(load_u32(in + x * C + C))));
    const std::ptrdiff_t i = static_cast<std::ptrdiff_t>(x) * C;
    if constexpr (S) {
      const __m128i s0 = _mm_add_epi32(cs, a);
      cs = _mm_add_epi32(cs, _mm_add_epi32(a, b));
      add_store4_avx2(ps + i, os + i, s0);
      add_store4_avx2(ps + i + C, os + i + C, cs);
    }
    if constexpr (Q) {
      const __m128i a2 = _mm_madd_epi16(a, a), b2 = _mm_madd_epi16(b, b);
      const __m128i q0 = _mm_add_epi32(cq, a2);
      cq = _mm_add_epi32(cq, _mm_add_epi32(a2, b2));
      add_store4_avx2(pq + i, oq + i, q0);
      add_store4_avx2(pq + i + C, oq + i + C, cq);
    }
  }
  alignas(16) std::uint32_t s[4], q[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(s), cs);
  _mm_store_si128(reinterpret_cast<__m128i*>(q), cq);
  for (; x < W; ++x)
    for (int c = 0; c < C; ++c) {
      const std::size_t i = static_cast<std::size_t>(x) * C + c;
      const std::uint32_t v = in[i];
      s[c] += v;
      q[c] += v * v;
      if constexpr (S) os[i] = static_cast<TS>(ps[i] + static_cast<TS>(s[c]));
      if constexpr (Q) oq[i] = static_cast<TQ>(pq[i] + static_cast<TQ>(q[c]));
    }
}

// dst[0..n) = src[0..n) with non-temporal 32-byte stores where dst is aligned.
template <typename T>
PK_AVX2 void stream_row_avx2(const T* __restrict src, T* __restrict dst, std::size_t n) {
  std::size_t i = 0;
  if (reinterpret_cast<std::uintptr_t>(dst) % sizeof(T) != 0) {
    std::memcpy(dst, src, n * sizeof(T));
    return;
  }
  for (; i < n && reinterpret_cast<std::uintptr_t>(dst + i) % 32 != 0; ++i) dst[i] = src[i];
  constexpr std::size_t k = 32 / sizeof(T);
  for (; i + 2 * k <= n; i += 2 * k) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + k));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i + k), b);
  }
  for (; i < n; ++i) dst[i] = src[i];
}
#endif  // PIXELKIT_INTEGRAL_X86

// The same with the baseline's 16-byte stores.
template <typename T>
void stream_row_base(const T* __restrict src, T* __restrict dst, std::size_t n) {
#if PIXELKIT_INTEGRAL_X86
  std::size_t i = 0;
  if (reinterpret_cast<std::uintptr_t>(dst) % sizeof(T) != 0) {
    std::memcpy(dst, src, n * sizeof(T));
    return;
  }
  for (; i < n && reinterpret_cast<std::uintptr_t>(dst + i) % 16 != 0; ++i) dst[i] = src[i];
  constexpr std::size_t k = 16 / sizeof(T);
  for (; i + 2 * k <= n; i += 2 * k) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + k));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + k), b);
  }
  for (; i < n; ++i) dst[i] = src[i];
#else
  std::memcpy(dst, src, n * sizeof(T));
#endif
}

inline void store_fence() {
#if PIXELKIT_INTEGRAL_X86
  _mm_sfence();
#endif
}

// ---- which path: ISA and streaming stores ----------------------------------------------
std::atomic<bool> g_force_baseline{false};
// Streaming stores when the tables of one call exceed this many bytes and all
// have 8-byte entries: far past the last-level cache, where a normal store
// pays a read for ownership of every line. Measured on the 2-core Zen 4 VM
// (bench_integral_cpu): i64 4096^2 1 thread 9.1 vs 10.4 ms, 8192^2 34.5 vs
// 42 ms; no gain at 2048^2 (32 MiB) nor for u32 tables (equal or slower).
constexpr std::size_t kDefaultStreamThreshold = std::size_t{64} << 20;
std::atomic<std::size_t> g_stream_threshold{kDefaultStreamThreshold};

bool use_avx2() {
#if PIXELKIT_INTEGRAL_X86
  if (g_force_baseline.load(std::memory_order_relaxed)) return false;
  const char* env = std::getenv("PIXELKIT_CPU_BASELINE");
  if (env && *env && std::strcmp(env, "0") != 0) return false;
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

// The u8 one-channel row kernels keep the row prefix in u32: W * 255^2 < 2^32.
constexpr int kU8RowLimit = 66051;
// The AVX2 kernel converts the squared-sum prefix to f64 as i32: W * 255^2 < 2^31.
constexpr int kU8SqF64Avx2Limit = 33025;

struct Plan {
  bool avx2 = false;    // the AVX2 row kernel (u8, one channel)
  bool stream = false;  // accumulator rows + non-temporal table stores (u8, one channel)
};

Plan plan_for(const ConstImageView& src, const IntegralViews& out) {
  Plan p;
  p.avx2 = use_avx2();
  std::size_t bytes = 0;
  bool wide = true;  // every requested table has 8-byte entries
  for (const IntegralTableView* t : {&out.sum, &out.sqsum})
    if (!t->empty()) {
      bytes += t->row_bytes() * static_cast<std::size_t>(t->height);
      wide = wide && element_size(t->type) == 8;
    }
  p.stream = src.type == PixelType::u8 && src.channels == 1 && wide &&
             bytes > g_stream_threshold.load(std::memory_order_relaxed);
  return p;
}

// Whether table type T of a Tin image can be accumulated in T itself, i.e.
// reading back the previous table row as OpenCV does: every type but an f32
// table of an f32 image is then exactly the value ref computes (u32 by
// modular arithmetic, f64 of u8 by exact integers, f64 of f32 in ref's order).
template <typename Tin, typename T>
constexpr bool kDirect = !std::is_same_v<T, None> && !(std::is_same_v<Tin, float> && std::is_same_v<T, float>);

// Scans rows y0..y1-1 into the tables, starting from the accumulator rows
// (as, aq) = S(y0, 1..W). Direct tables read their previous row back (one
// load, one add, one store per entry); an f32 table of an f32 image keeps an
// f64 accumulator row (as / aq, updated in place) and is rounded once.
template <typename Tin, int C, typename TS, typename TQ>
void band_scan(const View2D<const Tin>& src, int y0, int y1, typename integral_acc<Tin>::type* __restrict as,
               typename integral_acc<Tin>::type* __restrict aq, const IntegralTableView& sum,
               const IntegralTableView& sq, const Plan& plan) {
  using Acc = typename integral_acc<Tin>::type;
  constexpr bool S = !std::is_same_v<TS, None>;
  constexpr bool Q = !std::is_same_v<TQ, None>;
  constexpr bool DS = kDirect<Tin, TS>, DQ = kDirect<Tin, TQ>;
  using RS = std::conditional_t<DS, TS, Acc>;  // running-sum types
  using RQ = std::conditional_t<DQ, TQ, Acc>;
  const int W = src.width;
  const std::size_t n = static_cast<std::size_t>(W) * C;
  if (y0 > 0) {  // column sums of the rows above -> the table row above the band
    if constexpr (S)
      for (std::size_t i = C; i < n; ++i) as[i] += as[i - C];
    if constexpr (Q)
      for (std::size_t i = C; i < n; ++i) aq[i] += aq[i - C];
  }
  // The band's top row in the table's type, for the first row's read-back,
  // after a leading zero (entry X = 0), so that it can serve as the
  // accumulator row of the streaming path, copied whole to each table row.
  std::vector<RS> top_s(DS ? n + 1 : 0);
  std::vector<RQ> top_q(DQ ? n + 1 : 0);
  if constexpr (DS)
    for (std::size_t i = 0; i < n; ++i) top_s[i + 1] = static_cast<RS>(as[i]);
  if constexpr (DQ)
    for (std::size_t i = 0; i < n; ++i) top_q[i + 1] = static_cast<RQ>(aq[i]);
  const RS* prev_s = DS ? top_s.data() + 1 : nullptr;
  const RQ* prev_q = DQ ? top_q.data() + 1 : nullptr;
  if constexpr (std::is_same_v<Tin, std::uint8_t> && C == 1 && (DS || !S) && (DQ || !Q)) {
    if (W <= kU8RowLimit) {
      using RowFn = void (*)(const std::uint8_t*, int, const TS*, TS*, const TQ*, TQ*);
      RowFn row = row_u8_c1<TS, TQ>;
#if PIXELKIT_INTEGRAL_X86
      if (plan.avx2 && !(Q && std::is_same_v<TQ, double> && W > kU8SqF64Avx2Limit)) row = row_u8_c1_avx2<TS, TQ>;
#endif
      if (plan.stream) {
        // The previous row stays in the accumulator rows (cached); the table
        // is only ever written, with non-temporal stores.
        TS* acc_s = nullptr;
        TQ* acc_q = nullptr;
        if constexpr (S) acc_s = top_s.data();
        if constexpr (Q) acc_q = top_q.data();
        for (int y = y0; y < y1; ++y) {
          row(src.row(y), W, S ? acc_s + 1 : nullptr, S ? acc_s + 1 : nullptr, Q ? acc_q + 1 : nullptr,
              Q ? acc_q + 1 : nullptr);
#if PIXELKIT_INTEGRAL_X86
          if (plan.avx2) {
            if constexpr (S) stream_row_avx2(acc_s, table_row<TS>(sum, y + 1), n + 1);
            if constexpr (Q) stream_row_avx2(acc_q, table_row<TQ>(sq, y + 1), n + 1);
            continue;
          }
#endif
          if constexpr (S) stream_row_base(acc_s, table_row<TS>(sum, y + 1), n + 1);
          if constexpr (Q) stream_row_base(acc_q, table_row<TQ>(sq, y + 1), n + 1);
        }
        store_fence();
        return;
      }
      for (int y = y0; y < y1; ++y) {
        TS* os = nullptr;
        TQ* oq = nullptr;
        if constexpr (S) {
          os = table_row<TS>(sum, y + 1);
          os[0] = TS(0);
          ++os;
        }
        if constexpr (Q) {
          oq = table_row<TQ>(sq, y + 1);
          oq[0] = TQ(0);
          ++oq;
        }
        const TS* ps = nullptr;
        const TQ* pq = nullptr;
        if constexpr (S) ps = prev_s;
        if constexpr (Q) pq = prev_q;
        row(src.row(y), W, ps, os, pq, oq);
        if constexpr (S) prev_s = os;
        if constexpr (Q) prev_q = oq;
      }
      return;
    }
  }
#if PIXELKIT_INTEGRAL_X86
  if constexpr (std::is_same_v<Tin, std::uint8_t> && (C == 3 || C == 4) && (DS || !S) && (DQ || !Q)) {
    if (plan.avx2 && W <= kU8RowLimit && !(Q && std::is_same_v<TQ, double> && W > kU8SqF64Avx2Limit)) {
      for (int y = y0; y < y1; ++y) {
        TS* os = nullptr;
        TQ* oq = nullptr;
        if constexpr (S) {
          os = table_row<TS>(sum, y + 1);
          for (int c = 0; c < C; ++c) os[c] = TS(0);
          os += C;
        }
        if constexpr (Q) {
          oq = table_row<TQ>(sq, y + 1);
          for (int c = 0; c < C; ++c) oq[c] = TQ(0);
          oq += C;
        }
        const TS* ps = nullptr;
        const TQ* pq = nullptr;
        if constexpr (S) ps = prev_s;
        if constexpr (Q) pq = prev_q;
        row_u8_cn_avx2<C, TS, TQ>(src.row(y), W, ps, os, pq, oq);
        if constexpr (S) prev_s = os;
        if constexpr (Q) prev_q = oq;
      }
      return;
    }
  }
#endif
  for (int y = y0; y < y1; ++y) {
    const Tin* __restrict in = src.row(y);
    TS* __restrict os = nullptr;
    TQ* __restrict oq = nullptr;
    if constexpr (S) {
      os = table_row<TS>(sum, y + 1);
      for (int c = 0; c < C; ++c) os[c] = TS(0);
      os += C;
    }
    if constexpr (Q) {
      oq = table_row<TQ>(sq, y + 1);
      for (int c = 0; c < C; ++c) oq[c] = TQ(0);
      oq += C;
    }
    RS s[C];
    RQ q[C];
    for (int c = 0; c < C; ++c) s[c] = RS(0), q[c] = RQ(0);
    for (int x = 0; x < W; ++x) {
      for (int c = 0; c < C; ++c) {
        const int i = x * C + c;
        if constexpr (S) {
          s[c] += static_cast<RS>(in[i]);
          if constexpr (DS) {
            os[i] = static_cast<TS>(prev_s[i] + s[c]);
          } else {
            as[i] += s[c];
            os[i] = static_cast<TS>(as[i]);
          }
        }
        if constexpr (Q) {
          const RQ v = static_cast<RQ>(in[i]);
          q[c] += v * v;
          if constexpr (DQ) {
            oq[i] = static_cast<TQ>(prev_q[i] + q[c]);
          } else {
            aq[i] += q[c];
            oq[i] = static_cast<TQ>(aq[i]);
          }
        }
      }
    }
    if constexpr (DS) prev_s = os;
    if constexpr (DQ) prev_q = oq;
  }
}

template <typename Tin, int C, typename TS, typename TQ>
void sums_cpu(const ConstImageView& src_v, const IntegralTableView& sum, const IntegralTableView& sq, int threads, const Plan& plan) {
  using Acc = typename integral_acc<Tin>::type;
  constexpr bool S = !std::is_same_v<TS, None>;
  constexpr bool Q = !std::is_same_v<TQ, None>;
  const auto src = view2d<Tin>(src_v);
  const int W = src.width, H = src.height;
  const std::size_t n = static_cast<std::size_t>(W) * C;
  if constexpr (S) {
    TS* r = table_row<TS>(sum, 0);
    std::fill(r, r + n + C, TS(0));
  }
  if constexpr (Q) {
    TQ* r = table_row<TQ>(sq, 0);
    std::fill(r, r + n + C, TQ(0));
  }
  const int bands = band_count(src_v, threads);
  std::vector<int> start(bands + 1);
  for (int b = 0; b <= bands; ++b) start[b] = static_cast<int>(static_cast<long long>(H) * b / bands);
  // Accumulator rows: band b's start at [b * n, (b+1) * n).
  std::vector<Acc> acc_s(S ? n * bands : 0, Acc(0)), acc_q(Q ? n * bands : 0, Acc(0));
  if (bands > 1) {
    if constexpr (std::is_same_v<Tin, std::uint8_t>) {
      // Every thread sums a slice of the columns over the rows above the last
      // band, saving the running sums at each band's start.
#pragma omp parallel num_threads(bands)
      {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const auto cut = [&](int k) { return k == nt ? n : n * k / nt / 64 * 64; };
        const std::size_t i0 = cut(t), i1 = cut(t + 1);
        if (i1 > i0) {
          auto fn = column_sums_u8<S, Q>;
#if PIXELKIT_INTEGRAL_X86
          if (plan.avx2) fn = column_sums_u8_avx2<S, Q>;
#endif
          fn(src, start.data(), bands, n, i0, i1, S ? acc_s.data() : nullptr, Q ? acc_q.data() : nullptr);
        }
      }
    } else {
#pragma omp parallel for num_threads(bands) schedule(static, 1)
      for (int b = 0; b < bands - 1; ++b)  // the last band's column sums are never needed
        band_column_sums<Tin, C, S, Q>(src, start[b], start[b + 1], S ? &acc_s[(b + 1) * n] : nullptr,
                                       Q ? &acc_q[(b + 1) * n] : nullptr);
      // Band b+1 holds the column sums of band b: exclusive scan over bands.
      for (Acc* a : {S ? acc_s.data() : nullptr, Q ? acc_q.data() : nullptr}) {
        if (!a) continue;
        for (int b = 2; b < bands; ++b)
          for (std::size_t i = 0; i < n; ++i) a[b * n + i] += a[(b - 1) * n + i];
      }
    }
    // Each band then turns its column sums into its top row (a prefix along
    // the row per channel) at the start of band_scan, in parallel.
  }
#pragma omp parallel for num_threads(bands) schedule(static, 1)
  for (int b = 0; b < bands; ++b)
    band_scan<Tin, C, TS, TQ>(src, start[b], start[b + 1], S ? &acc_s[b * n] : nullptr, Q ? &acc_q[b * n] : nullptr,
                              sum, sq, plan);
}

template <typename Tin, int C, typename TS>
void sums_cpu_q(const ConstImageView& src, const IntegralViews& out, int threads, const Plan& plan) {
  if (out.sqsum.empty()) {
    sums_cpu<Tin, C, TS, None>(src, out.sum, out.sqsum, threads, plan);
    return;
  }
  with_table_type(out.sqsum.type, [&](auto tq) {
    using TQ = decltype(tq);
    if constexpr ((std::is_same_v<Tin, std::uint8_t> && (std::is_same_v<TQ, std::uint64_t> || std::is_same_v<TQ, double>)) ||
                  (std::is_same_v<Tin, float> && (std::is_same_v<TQ, float> || std::is_same_v<TQ, double>)))
      sums_cpu<Tin, C, TS, TQ>(src, out.sum, out.sqsum, threads, plan);
    else
      throw Error(Status::internal, "integral cpu: unchecked squared-sum type");
  });
}

template <typename Tin, int C>
void sums_cpu_s(const ConstImageView& src, const IntegralViews& out, int threads, const Plan& plan) {
  if (out.sum.empty()) {
    sums_cpu_q<Tin, C, None>(src, out, threads, plan);
    return;
  }
  with_table_type(out.sum.type, [&](auto ts) {
    using TS = decltype(ts);
    if constexpr ((std::is_same_v<Tin, std::uint8_t> &&
                   (std::is_same_v<TS, std::uint32_t> || std::is_same_v<TS, std::int64_t> || std::is_same_v<TS, double>)) ||
                  (std::is_same_v<Tin, float> && (std::is_same_v<TS, float> || std::is_same_v<TS, double>)))
      sums_cpu_q<Tin, C, TS>(src, out, threads, plan);
    else
      throw Error(Status::internal, "integral cpu: unchecked sum type");
  });
}

template <typename Tin>
void tilted_cpu(const ConstImageView& src_v, const IntegralTableView& tilted) {
  using Acc = typename integral_acc<Tin>::type;
  const auto src = view2d<Tin>(src_v);
  const int W = src.width, H = src.height, C = src.channels;
  const std::size_t n = static_cast<std::size_t>(W + 1) * C;
  // Table rows Y-2, Y-1, Y, and image rows Y-1, Y-2 shifted right by one pixel
  // (entry X holds I(X-1, .), entry 0 is 0) so that every X reads in bounds.
  std::vector<Acc> r2(n, Acc(0)), r1(n, Acc(0)), r0(n, Acc(0)), i1(n, Acc(0)), i2(n, Acc(0));
  store_entries(tilted, 0, 0, r1.data(), n);
  const std::size_t wc = static_cast<std::size_t>(W) * C;
  for (int Y = 1; Y <= H; ++Y) {
    i2.swap(i1);  // image row Y-2
    const Tin* in = src.row(Y - 1);
    for (std::size_t i = 0; i < wc; ++i) i1[C + i] = static_cast<Acc>(in[i]);
    Acc* __restrict o = r0.data();
    const Acc* __restrict a = r1.data();
    const Acc* __restrict b = r2.data();
    const Acc* __restrict p = i1.data();
    const Acc* __restrict q = i2.data();
    for (int c = 0; c < C; ++c) o[c] = b[c] + a[C + c] - b[c] + p[c] + q[c];  // X = 0: T(-1, Y-1) = T(0, Y-2)
    for (std::size_t i = C; i < wc; ++i) o[i] = a[i - C] + a[i + C] - b[i] + p[i] + q[i];
    for (int c = 0; c < C; ++c)  // X = W: T(W+1, Y-1) = T(W, Y-2)
      o[wc + c] = a[wc - C + c] + b[wc + c] - b[wc + c] + p[wc + c] + q[wc + c];
    store_entries(tilted, Y, 0, r0.data(), n);
    r2.swap(r1);
    r1.swap(r0);
  }
}

}  // namespace

void set_integral_cpu_baseline(bool force) { g_force_baseline.store(force); }
void set_integral_cpu_stream_threshold(std::size_t bytes) {
  g_stream_threshold.store(bytes == 0 ? kDefaultStreamThreshold : bytes);
}
bool integral_cpu_avx2_available() {
#if PIXELKIT_INTEGRAL_X86
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

std::string integral_cpu(const ConstImageView& src, const IntegralViews& out, int threads) {
  std::string path;
  if (!out.sum.empty() || !out.sqsum.empty()) {
    const bool u8 = src.type == PixelType::u8;
    const Plan plan = plan_for(src, out);
    switch (src.channels) {
      case 1: u8 ? sums_cpu_s<std::uint8_t, 1>(src, out, threads, plan) : sums_cpu_s<float, 1>(src, out, threads, plan); break;
      case 3: u8 ? sums_cpu_s<std::uint8_t, 3>(src, out, threads, plan) : sums_cpu_s<float, 3>(src, out, threads, plan); break;
      case 4: u8 ? sums_cpu_s<std::uint8_t, 4>(src, out, threads, plan) : sums_cpu_s<float, 4>(src, out, threads, plan); break;
      default: throw Error(Status::internal, "integral cpu: unchecked channel count");
    }
    const int bands = band_count(src, threads);
    path = "cpu reduce-then-scan over " + std::to_string(bands) + " row band(s)" +
           (!out.sum.empty() && !out.sqsum.empty() ? ", sum + sqsum fused" : "");
    if (u8 && src.width <= kU8RowLimit)
      path += std::string(plan.avx2 ? ", avx2" : (src.channels == 1 ? ", sse2" : ", scalar rows")) +
              (plan.stream ? ", streaming stores" : "");
  }
  if (!out.tilted.empty()) {
    if (src.type == PixelType::u8) tilted_cpu<std::uint8_t>(src, out.tilted);
    else tilted_cpu<float>(src, out.tilted);
    path += std::string(path.empty() ? "" : "; ") + "tilted: row recurrence, 1 thread";
  }
  return path;
}

}  // namespace pixelkit::detail
