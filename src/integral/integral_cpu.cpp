// integral_cpu.cpp - the cpu backend of the integral: OpenMP over bands of
// rows, reduce-then-scan, so the table is written once and never re-read.
//
//  1. Each thread sums the columns of its band of rows (reads the image only).
//  2. One thread turns those column sums into each band's "top row": the
//     table row just above the band, S(r0, x+1) = sum over y < r0, x' <= x,
//     an exclusive scan over bands followed by a prefix along the row (a few
//     rows' worth of work).
//  3. Each thread scans its band from its top row: per row a running row sum
//     (one add per element, the only serial dependency) added to the table's
//     previous row, read back from cache, and stored once (an f32 table of an
//     f32 image keeps an f64 accumulator row instead, rounded once per entry).
//     Sum and squared sum share the pass.
// Channels are a template parameter, so the per-channel running sums live in
// registers and the element loop has no inner channel loop left at run time.
// The accumulators are exact int64 for u8 and f64 for f32 (see
// integral_backends.hpp), so the result does not depend on the band split.
//
// The tilted table is computed by the ref recurrence on whole rows (each row
// needs the two before it): the element loop is branch-free and vectorises;
// it runs on one thread.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/view2d.hpp"
#include "integral/integral_backends.hpp"
#include "integral/integral_common.hpp"

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
inline void add_store4(const T* __restrict prev, T* __restrict out, u32x4 v) {
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
void row_u8_c1(const std::uint8_t* __restrict in, int W, const TS* __restrict ps, TS* __restrict os,
               const TQ* __restrict pq, TQ* __restrict oq) {
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
               const IntegralTableView& sq) {
  using Acc = typename integral_acc<Tin>::type;
  constexpr bool S = !std::is_same_v<TS, None>;
  constexpr bool Q = !std::is_same_v<TQ, None>;
  constexpr bool DS = kDirect<Tin, TS>, DQ = kDirect<Tin, TQ>;
  using RS = std::conditional_t<DS, TS, Acc>;  // running-sum types
  using RQ = std::conditional_t<DQ, TQ, Acc>;
  const int W = src.width;
  const std::size_t n = static_cast<std::size_t>(W) * C;
  // The band's top row in the table's type, for the first row's read-back.
  std::vector<RS> top_s(DS ? n : 0);
  std::vector<RQ> top_q(DQ ? n : 0);
  if constexpr (DS)
    for (std::size_t i = 0; i < n; ++i) top_s[i] = static_cast<RS>(as[i]);
  if constexpr (DQ)
    for (std::size_t i = 0; i < n; ++i) top_q[i] = static_cast<RQ>(aq[i]);
  const RS* prev_s = DS ? top_s.data() : nullptr;
  const RQ* prev_q = DQ ? top_q.data() : nullptr;
  if constexpr (std::is_same_v<Tin, std::uint8_t> && C == 1 && (DS || !S) && (DQ || !Q)) {
    if (W <= 66051) {
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
        row_u8_c1<TS, TQ>(src.row(y), W, ps, os, pq, oq);
        if constexpr (S) prev_s = os;
        if constexpr (Q) prev_q = oq;
      }
      return;
    }
  }
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
void sums_cpu(const ConstImageView& src_v, const IntegralTableView& sum, const IntegralTableView& sq, int threads) {
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
#pragma omp parallel for num_threads(bands) schedule(static, 1)
    for (int b = 0; b < bands - 1; ++b)  // the last band's column sums are never needed
      band_column_sums<Tin, C, S, Q>(src, start[b], start[b + 1], S ? &acc_s[(b + 1) * n] : nullptr,
                                     Q ? &acc_q[(b + 1) * n] : nullptr);
    // Band b+1 holds the column sums of band b: exclusive scan over bands,
    // then a prefix along the row per channel gives each band's top row.
    for (Acc* a : {S ? acc_s.data() : nullptr, Q ? acc_q.data() : nullptr}) {
      if (!a) continue;
      for (int b = 2; b < bands; ++b)
        for (std::size_t i = 0; i < n; ++i) a[b * n + i] += a[(b - 1) * n + i];
      for (int b = 1; b < bands; ++b) {
        Acc* r = a + b * n;
        for (std::size_t i = C; i < n; ++i) r[i] += r[i - C];
      }
    }
  }
#pragma omp parallel for num_threads(bands) schedule(static, 1)
  for (int b = 0; b < bands; ++b)
    band_scan<Tin, C, TS, TQ>(src, start[b], start[b + 1], S ? &acc_s[b * n] : nullptr, Q ? &acc_q[b * n] : nullptr,
                              sum, sq);
}

template <typename Tin, int C, typename TS>
void sums_cpu_q(const ConstImageView& src, const IntegralViews& out, int threads) {
  if (out.sqsum.empty()) {
    sums_cpu<Tin, C, TS, None>(src, out.sum, out.sqsum, threads);
    return;
  }
  with_table_type(out.sqsum.type, [&](auto tq) {
    using TQ = decltype(tq);
    if constexpr ((std::is_same_v<Tin, std::uint8_t> && (std::is_same_v<TQ, std::uint64_t> || std::is_same_v<TQ, double>)) ||
                  (std::is_same_v<Tin, float> && (std::is_same_v<TQ, float> || std::is_same_v<TQ, double>)))
      sums_cpu<Tin, C, TS, TQ>(src, out.sum, out.sqsum, threads);
    else
      throw Error(Status::internal, "integral cpu: unchecked squared-sum type");
  });
}

template <typename Tin, int C>
void sums_cpu_s(const ConstImageView& src, const IntegralViews& out, int threads) {
  if (out.sum.empty()) {
    sums_cpu_q<Tin, C, None>(src, out, threads);
    return;
  }
  with_table_type(out.sum.type, [&](auto ts) {
    using TS = decltype(ts);
    if constexpr ((std::is_same_v<Tin, std::uint8_t> &&
                   (std::is_same_v<TS, std::uint32_t> || std::is_same_v<TS, std::int64_t> || std::is_same_v<TS, double>)) ||
                  (std::is_same_v<Tin, float> && (std::is_same_v<TS, float> || std::is_same_v<TS, double>)))
      sums_cpu_q<Tin, C, TS>(src, out, threads);
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

std::string integral_cpu(const ConstImageView& src, const IntegralViews& out, int threads) {
  std::string path;
  if (!out.sum.empty() || !out.sqsum.empty()) {
    const bool u8 = src.type == PixelType::u8;
    switch (src.channels) {
      case 1: u8 ? sums_cpu_s<std::uint8_t, 1>(src, out, threads) : sums_cpu_s<float, 1>(src, out, threads); break;
      case 3: u8 ? sums_cpu_s<std::uint8_t, 3>(src, out, threads) : sums_cpu_s<float, 3>(src, out, threads); break;
      case 4: u8 ? sums_cpu_s<std::uint8_t, 4>(src, out, threads) : sums_cpu_s<float, 4>(src, out, threads); break;
      default: throw Error(Status::internal, "integral cpu: unchecked channel count");
    }
    const int bands = band_count(src, threads);
    path = "cpu reduce-then-scan over " + std::to_string(bands) + " row band(s)" +
           (!out.sum.empty() && !out.sqsum.empty() ? ", sum + sqsum fused" : "");
  }
  if (!out.tilted.empty()) {
    if (src.type == PixelType::u8) tilted_cpu<std::uint8_t>(src, out.tilted);
    else tilted_cpu<float>(src, out.tilted);
    path += std::string(path.empty() ? "" : "; ") + "tilted: row recurrence, 1 thread";
  }
  return path;
}

}  // namespace pixelkit::detail
