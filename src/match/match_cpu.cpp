// match_cpu.cpp - the cpu backend of template matching: direct evaluation with
// SIMD integer dot products and OpenMP, or FFT cross-correlation with OpenCV's
// cv::dft in f64 (builds with OpenCV), both feeding match_score().
//
// What every path computes per window (see match_common.hpp):
//   X     = sum_c sum M T I   one correlation, summed over the channels
//   S1[c] = sum M I           (ccoeff, ccoeff_normed)
//   S2[c] = sum M I^2         (sqdiff*, *_normed)
// Without a mask S1 and S2 are box sums, kept as running column sums per band
// of output rows (add the row entering the window, subtract the one leaving;
// exact int64 for u8), which reads the image once per band instead of
// writing and re-reading two (H+1) x (W+1) x C int64 integral tables (100 MB
// for a 1080p colour frame). With a mask they are correlations of I (and of
// I^2) with the mask, computed by the same machinery as X.
//
// ---- direct -----------------------------------------------------------------------
// Every correlation is a sum of "terms" (an image plane correlated with a
// tap set: plane I_c with the masked template M T of channel c, plane I_c with
// M_c, planes hi(I_c^2) and lo(I_c^2) with M_c, where I^2 = 256 hi + lo keeps
// every operand in 8 bits). The kernel is vectorised over output columns x:
//   acc[x] += sum_k tap[k] * plane[x + k]
// with the K consecutive pixels a dot-product instruction consumes packed into
// one 32-bit lane ("packed row": lane x holds plane[x .. x+K-1]):
//   avx512-vnni  K=4, vpdpbusd: u8 taps x s8 pixels (pixel - 128, the offset
//                added back as 128 * sum(taps)), 64 products per instruction
//   avx2 / sse2  K=2, pmaddwd: s16 x s16 pairs
//   generic      K=1, plain 32-bit multiply-add (portable vector extensions)
// f32 images use f64 planes and taps (K=1, FMA on avx512/avx2): products of
// two f32 values are exact in f64, the sums are f64.
// Register blocking: R output rows x NV vectors of accumulators stay in
// registers while every image row that reaches them is walked; one load of a
// packed image row feeds the R output rows (each with its own template row).
// Template rows are padded with R-1 zero rows above and below, so every image
// row updates all R accumulator rows without edge cases.
// Integer accumulators are int32 and are flushed into int64 before they can
// overflow (the bound per instruction times the count since the last flush,
// checked per image row and term: a 479x432x3 template of 255s is exact).
// Packed rows live in a per-thread ring of h + R - 1 rows, each converted once
// per band. Bands of output rows are spread over the threads (dynamic).
// The instruction set is picked once per call by CPUID; PIXELKIT_CPU_BASELINE=1
// forces the x86-64 baseline (sse2), PIXELKIT_MATCH_CPU_ISA=generic|sse2|avx2|
// avx512 forces one (capped to what the CPU has), so each path can be tested.
//
// ---- fft (PIXELKIT_WITH_OPENCV) ------------------------------------------------------
// cv::dft is single-threaded, so the 2D transforms are done as row and column
// passes spread over the threads, on padded sizes N = getOptimalDFTSize(W),
// M = getOptimalDFTSize(H) (a valid correlation needs no more: x + i < W <= N):
//   A. rows: each image plane row (f64, zero-padded to N) -> real DFT (CCS),
//      scattered into a column-major half spectrum Z[k][y], k <= N/2.
//   B. per band of k: complex DFT of each Z row over y (zero rows y >= H), then
//      per correlation G = sum_terms Z * conj(F(taps)), inverse DFT over y.
//   C. per output row y < (H - h + 1): gather the CCS row from G, inverse real
//      DFT -> the correlation row; u8 sums are rounded to the exact integer
//      (fft_rounds_exactly() guards it; where it fails, direct runs instead).
// The template's spectra F(taps) are made once per image size (reserve) and
// kept with every other buffer, so a call at a known size allocates nothing of
// its own (cv::dft keeps small internal temporaries).
// For the whole file, before any header (match_score() included): no errno
// from sqrt and no trapping FP exceptions, so that the vectoriser may compute
// both sides of the score formula's branches and select per lane (a division
// by a zero denominator yields inf in a lane that is then not selected).
// Neither option allows reassociation or contraction: every selected value is
// the same correctly rounded result as in a scalar call. (Clang has no such
// pragma: it builds the file with its defaults, which are only slower.)
#if !defined(__clang__)
#pragma GCC optimize("no-trapping-math", "no-math-errno")
#endif

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "match/match_backends.hpp"
#include "pixelkit/config.hpp"
#include "pixelkit/error.hpp"

#if PIXELKIT_WITH_OPENCV
#include <opencv2/core.hpp>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PIXELKIT_MATCH_X86 1
#else
#define PIXELKIT_MATCH_X86 0
#endif
// Which x86 paths are built. GCC builds them all: the trait functions carry
// target attributes and the `flatten` band functions inline them. Clang
// refuses an AVX vector passed by value between an attributed trait function
// and the unattributed templates that call it (its ABI check comes before
// flatten's inlining), so under clang a path is built only where the whole
// file is compiled for its instruction set (-march=native on such a CPU, or
// -mavx2 -mfma, -mavx512f -mavx512bw -mavx512vnni); cpu_has reports the
// others as absent, and the match runs on the best path built.
#if PIXELKIT_MATCH_X86 && (!defined(__clang__) || (defined(__AVX2__) && defined(__FMA__)))
#define PIXELKIT_MATCH_AVX2 1
#else
#define PIXELKIT_MATCH_AVX2 0
#endif
#if PIXELKIT_MATCH_X86 && \
    (!defined(__clang__) || (defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)))
#define PIXELKIT_MATCH_AVX512 1
#else
#define PIXELKIT_MATCH_AVX512 0
#endif

#if !defined(__GNUC__)
#error "match_cpu.cpp needs GCC or Clang (vector extensions, target attributes)"
#endif

// The kernel templates pass vector types between inline functions that all end
// up inside a band function with the matching target attribute (flatten).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace pixelkit::detail {
namespace {

constexpr int kMaxPlanes = 3 * kMaxMatchChannels;  // I_c, hi(I_c^2), lo(I_c^2)
constexpr int kMaxSpecs = 1 + 3 * kMaxMatchChannels;  // X, S1_c, S2hi_c, S2lo_c

bool needs_s1(MatchMethod m) { return m == MatchMethod::ccoeff || m == MatchMethod::ccoeff_normed; }
bool needs_s2(MatchMethod m) {
  return m == MatchMethod::sqdiff || m == MatchMethod::sqdiff_normed || m == MatchMethod::ccorr_normed ||
         m == MatchMethod::ccoeff_normed;
}

std::ptrdiff_t round_up(std::ptrdiff_t v, std::ptrdiff_t m) { return (v + m - 1) / m * m; }

// ---- instruction sets -----------------------------------------------------------------
// Trait functions carry their target attribute and are not always_inline: the
// band functions below are `flatten` with the same target, which inlines them
// there (filter_cpu.cpp does the same).

enum class Isa : int { generic, sse2, avx2, avx512 };
const char* isa_name(Isa isa, bool u8) {
  switch (isa) {
    case Isa::generic: return "generic simd";
    case Isa::sse2: return "sse2";
    case Isa::avx2: return u8 ? "avx2" : "avx2+fma";
    case Isa::avx512: return u8 ? "avx512-vnni" : "avx512";
  }
  return "?";
}

// u8 images: 32-bit integer lanes.
struct IntGeneric {
  static constexpr int L = 4, NV = 2, R = 4, K = 1, kOffset = 0;
  static constexpr std::int64_t kMaxStep = 255 * 255;  // |one multiply-add| per lane
  using Elem = std::int32_t;
  using PlaneElem = std::int32_t;
  typedef std::uint32_t V __attribute__((vector_size(16)));
  typedef std::uint32_t VU __attribute__((vector_size(16), aligned(4), may_alias));
  static inline V zero() { return V{}; }
  static inline V load(const Elem* p) { return *reinterpret_cast<const VU*>(p); }
  static inline V bcast(Elem t) { return V{} + static_cast<std::uint32_t>(t); }
  static inline V dp(V acc, V img, V tap) { return acc + img * tap; }  // unsigned: wraps, never UB
  static inline void store(std::int32_t* p, V v) { std::memcpy(p, &v, sizeof v); }
};

#if PIXELKIT_MATCH_X86
struct IntSse2 {
  static constexpr int L = 4, NV = 2, R = 4, K = 2, kOffset = 0;
  static constexpr std::int64_t kMaxStep = 2 * 255 * 255;
  using Elem = std::int32_t;
  using PlaneElem = std::int16_t;
  using V = __m128i;
  static inline V zero() { return _mm_setzero_si128(); }
  static inline V load(const Elem* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
  static inline V bcast(Elem t) { return _mm_set1_epi32(t); }
  static inline V dp(V acc, V img, V tap) { return _mm_add_epi32(acc, _mm_madd_epi16(img, tap)); }
  static inline void store(std::int32_t* p, V v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }
};

#define PK_AVX2 __attribute__((target("avx2,fma")))
#if PIXELKIT_MATCH_AVX2
struct IntAvx2 {
  static constexpr int L = 8, NV = 2, R = 4, K = 2, kOffset = 0;
  static constexpr std::int64_t kMaxStep = 2 * 255 * 255;
  using Elem = std::int32_t;
  using PlaneElem = std::int16_t;
  using V = __m256i;
  PK_AVX2 static inline V zero() { return _mm256_setzero_si256(); }
  PK_AVX2 static inline V load(const Elem* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  PK_AVX2 static inline V bcast(Elem t) { return _mm256_set1_epi32(t); }
  PK_AVX2 static inline V dp(V acc, V img, V tap) { return _mm256_add_epi32(acc, _mm256_madd_epi16(img, tap)); }
  PK_AVX2 static inline void store(std::int32_t* p, V v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
};
#endif

#if PIXELKIT_MATCH_AVX512
#define PK_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))
struct IntVnni {
  static constexpr int L = 16, NV = 4, R = 4, K = 4, kOffset = 128;  // 4x4 measured best of 3x7, 4x6, 6x4, 8x3
  static constexpr std::int64_t kMaxStep = 4 * 255 * 128;
  using Elem = std::int32_t;
  using PlaneElem = std::int8_t;
  using V = __m512i;
  PK_VNNI static inline V zero() { return _mm512_setzero_si512(); }
  PK_VNNI static inline V load(const Elem* p) { return _mm512_loadu_si512(p); }
  PK_VNNI static inline V bcast(Elem t) { return _mm512_set1_epi32(t); }
  // u8 taps (unsigned operand) times s8 pixels (signed operand). Inline asm
  // with a read-write accumulator: with the intrinsic GCC 12 copies every
  // accumulator once per instruction (vmovdqa32 between registers, measured
  // as half of the loop's instructions).
  PK_VNNI static inline V dp(V acc, V img, V tap) {
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(tap), "v"(img));
    return acc;
  }
  PK_VNNI static inline void store(std::int32_t* p, V v) { _mm512_storeu_si512(p, v); }
};
#endif
#endif

// f32 images: f64 lanes.
struct F64Generic {
  static constexpr int L = 2, NV = 2, R = 4, K = 1, kOffset = 0;
  static constexpr std::int64_t kMaxStep = 0;  // no flushing
  using Elem = double;
  using PlaneElem = double;
  typedef double V __attribute__((vector_size(16)));
  typedef double VU __attribute__((vector_size(16), aligned(8), may_alias));
  static inline V zero() { return V{}; }
  static inline V load(const Elem* p) { return *reinterpret_cast<const VU*>(p); }
  static inline V bcast(Elem t) { return V{} + t; }
  static inline V dp(V acc, V img, V tap) { return acc + img * tap; }
  static inline void store(double* p, V v) { std::memcpy(p, &v, sizeof v); }
};

#if PIXELKIT_MATCH_AVX2
struct F64Avx2 {
  static constexpr int L = 4, NV = 2, R = 4, K = 1, kOffset = 0;
  static constexpr std::int64_t kMaxStep = 0;
  using Elem = double;
  using PlaneElem = double;
  using V = __m256d;
  PK_AVX2 static inline V zero() { return _mm256_setzero_pd(); }
  PK_AVX2 static inline V load(const Elem* p) { return _mm256_loadu_pd(p); }
  PK_AVX2 static inline V bcast(Elem t) { return _mm256_set1_pd(t); }
  PK_AVX2 static inline V dp(V acc, V img, V tap) { return _mm256_fmadd_pd(img, tap, acc); }
  PK_AVX2 static inline void store(double* p, V v) { _mm256_storeu_pd(p, v); }
};
#endif

#if PIXELKIT_MATCH_X86
#define PK_AVX512 __attribute__((target("avx512f")))
#endif
#if PIXELKIT_MATCH_AVX512
struct F64Avx512 {
  static constexpr int L = 8, NV = 4, R = 4, K = 1, kOffset = 0;
  static constexpr std::int64_t kMaxStep = 0;
  using Elem = double;
  using PlaneElem = double;
  using V = __m512d;
  PK_AVX512 static inline V zero() { return _mm512_setzero_pd(); }
  PK_AVX512 static inline V load(const Elem* p) { return _mm512_loadu_pd(p); }
  PK_AVX512 static inline V bcast(Elem t) { return _mm512_set1_pd(t); }
  PK_AVX512 static inline V dp(V acc, V img, V tap) { return _mm512_fmadd_pd(img, tap, acc); }
  PK_AVX512 static inline void store(double* p, V v) { _mm512_storeu_pd(p, v); }
};
#endif

bool cpu_has(Isa isa) {
#if PIXELKIT_MATCH_X86
  switch (isa) {
    case Isa::generic:
    case Isa::sse2: return true;
    case Isa::avx2: return PIXELKIT_MATCH_AVX2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::avx512:
      return PIXELKIT_MATCH_AVX512 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vnni");
  }
  return false;
#else
  return isa == Isa::generic;
#endif
}

// The best instruction set the CPU has, or the one the environment asks for.
Isa choose_isa() {
  Isa best = Isa::generic;
  for (Isa i : {Isa::sse2, Isa::avx2, Isa::avx512})
    if (cpu_has(i)) best = i;
  const char* base = std::getenv("PIXELKIT_CPU_BASELINE");
  if (base && *base && std::strcmp(base, "0") != 0) return cpu_has(Isa::sse2) ? Isa::sse2 : Isa::generic;
  if (const char* want = std::getenv("PIXELKIT_MATCH_CPU_ISA")) {
    const std::string w = want;
    Isa forced = best;
    if (w == "generic") forced = Isa::generic;
    if (w == "sse2") forced = Isa::sse2;
    if (w == "avx2") forced = Isa::avx2;
    if (w == "avx512") forced = Isa::avx512;
    if (cpu_has(forced)) return forced;
  }
  return best;
}

// ---- what the direct kernel computes ---------------------------------------------------

enum class PlaneKind : std::uint8_t { value, sq_hi, sq_lo, sq };
struct PlaneDesc {
  PlaneKind kind = PlaneKind::value;
  int channel = 0;
};
struct Term {
  int plane = 0;
  int tapset = 0;
};
struct Spec {
  Term terms[kMaxMatchChannels];
  int nterms = 0;
};

// The correlations a method needs, and the image planes they read.
struct Plan {
  int nplanes = 0;
  PlaneDesc planes[kMaxPlanes];
  int nspecs = 0;
  Spec specs[kMaxSpecs];
  int sx = 0;                       // X
  int s1[kMaxMatchChannels] = {};   // masked S1_c (-1: from the running sums)
  int s2a[kMaxMatchChannels] = {};  // masked S2_c: u8 hi part (x256) / f32 whole
  int s2b[kMaxMatchChannels] = {};  // masked S2_c: u8 lo part (-1 for f32)
};

// Tap sets: 0..C-1 the masked template M T per channel, C..2C-1 the mask per
// channel (masked only). `u8_split`: S2 as 256 hi + lo (u8 images, direct).
Plan make_plan(int C, bool masked, MatchMethod method, bool u8_split) {
  Plan p;
  auto add_plane = [&](PlaneKind k, int c) {
    p.planes[p.nplanes] = PlaneDesc{k, c};
    return p.nplanes++;
  };
  int value[kMaxMatchChannels];
  for (int c = 0; c < C; ++c) value[c] = add_plane(PlaneKind::value, c);
  Spec x;
  for (int c = 0; c < C; ++c) x.terms[x.nterms++] = Term{value[c], c};
  p.sx = p.nspecs;
  p.specs[p.nspecs++] = x;
  for (int c = 0; c < kMaxMatchChannels; ++c) p.s1[c] = p.s2a[c] = p.s2b[c] = -1;
  if (!masked) return p;
  if (needs_s1(method))
    for (int c = 0; c < C; ++c) {
      Spec s;
      s.terms[s.nterms++] = Term{value[c], C + c};
      p.s1[c] = p.nspecs;
      p.specs[p.nspecs++] = s;
    }
  if (needs_s2(method))
    for (int c = 0; c < C; ++c) {
      if (u8_split) {
        Spec hi, lo;
        hi.terms[hi.nterms++] = Term{add_plane(PlaneKind::sq_hi, c), C + c};
        lo.terms[lo.nterms++] = Term{add_plane(PlaneKind::sq_lo, c), C + c};
        p.s2a[c] = p.nspecs;
        p.specs[p.nspecs++] = hi;
        p.s2b[c] = p.nspecs;
        p.specs[p.nspecs++] = lo;
      } else {
        Spec s;
        s.terms[s.nterms++] = Term{add_plane(PlaneKind::sq, c), C + c};
        p.s2a[c] = p.nspecs;
        p.specs[p.nspecs++] = s;
      }
    }
  return p;
}

// Per-thread scratch (grow-only).
struct ThreadScratch {
  std::vector<unsigned char> ring;   // packed rows: slot x plane x stride elements
  std::vector<unsigned char> prow;   // one plane row before packing
  std::vector<double> spec_out;      // nspecs x R x outWpad: the correlations of a row group
  std::vector<double> rowbuf;        // score inputs of one row: (1 + 2C) x outW
  std::vector<unsigned char> col;    // running column sums (2 x W x C of int64 / double)
  std::vector<unsigned char> win;    // window sums of one row (2 x C x outW)
#if PIXELKIT_WITH_OPENCV
  cv::Mat band_in, band_out;         // fft: rows of N doubles
#endif
  double t_corr = 0, t_sums = 0, t_score = 0;  // profiling: ms in each stage
};

// Profiling (set_match_cpu_profiling): a stopwatch that adds each lap to one
// stage's total; a no-op when off.
struct StageClock {
  using Clock = std::chrono::steady_clock;
  bool on = false;
  Clock::time_point t;
  void start() {
    if (on) t = Clock::now();
  }
  void lap(double& total_ms) {
    if (!on) return;
    const Clock::time_point n = Clock::now();
    total_ms += std::chrono::duration<double, std::milli>(n - t).count();
    t = n;
  }
};
std::atomic<bool> g_profiling{false};
MatchCpuStages g_last_stages;

template <typename T>
T* grow_as(std::vector<unsigned char>& v, std::size_t count) {
  const std::size_t bytes = count * sizeof(T);
  if (v.size() < bytes) v.resize(bytes);
  return reinterpret_cast<T*>(v.data());
}
template <typename T>
T* grow_vec(std::vector<T>& v, std::size_t count) {
  if (v.size() < count) v.resize(count);
  return v.data();
}

struct DirectJob {
  ConstImageView image;
  int W = 0, H = 0, C = 0, w = 0, h = 0, outW = 0, outH = 0;
  int G = 0;                 // tap groups per template row: ceil(w / K)
  std::ptrdiff_t stride = 0; // elements of a packed row
  int slots = 0;             // ring rows: h + R - 1
  int chunk = 0;             // output columns per accumulator block: L * NV
  int outWpad = 0;
  int limit = INT_MAX;       // multiply-adds per lane between flushes
  const Plan* plan = nullptr;
  const void* taps[kMaxSpecs][kMaxMatchChannels] = {};  // per spec and term
  double bias[kMaxSpecs] = {};
  MatchMethod method = MatchMethod::sqdiff;
  const TemplateStats* stats = nullptr;
  bool masked = false, s1 = false, s2 = false;
  bool profile = false;
  ImageView scores;
  void (*score)(MatchMethod, const TemplateStats&, int, const double*, const double*, const double*, std::ptrdiff_t,
                float*) = nullptr;
};

// ---- running window sums (no mask) ------------------------------------------------------
// A = int64 (u8, exact) or double (f32). Columns hold the sums over the h rows
// of the current window; window sums slide along the row.

template <typename P, typename A>
struct RunningSums {
  const DirectJob* job;
  A* c1;  // W * C
  A* c2;
  A* w1;  // C * outW (channel-major)
  A* w2;

  void add_row(int y, A sign) {
    const P* src = job->image.row<P>(y);
    const int n = job->W * job->C;
    if (job->s1)
      for (int i = 0; i < n; ++i) c1[i] += sign * static_cast<A>(src[i]);
    if (job->s2)
      for (int i = 0; i < n; ++i) {
        const A v = static_cast<A>(src[i]);
        c2[i] += sign * (v * v);
      }
  }
  void init(int y0) {
    const std::size_t n = static_cast<std::size_t>(job->W) * job->C;
    std::fill(c1, c1 + n, A(0));
    std::fill(c2, c2 + n, A(0));
    for (int j = 0; j < job->h; ++j) add_row(y0 + j, A(1));
  }
  // Window sums of output row y (the columns must hold rows y .. y+h-1).
  template <int C>
  void window_c() {
    const int w = job->w, outW = job->outW;
    for (int c = 0; c < C; ++c) {
      if (job->s1) {
        A s = 0;
        for (int i = 0; i < w; ++i) s += c1[i * C + c];
        A* o = w1 + static_cast<std::size_t>(c) * outW;
        o[0] = s;
        for (int x = 1; x < outW; ++x) {
          s += c1[(x + w - 1) * C + c] - c1[(x - 1) * C + c];
          o[x] = s;
        }
      }
      if (job->s2) {
        A s = 0;
        for (int i = 0; i < w; ++i) s += c2[i * C + c];
        A* o = w2 + static_cast<std::size_t>(c) * outW;
        o[0] = s;
        for (int x = 1; x < outW; ++x) {
          s += c2[(x + w - 1) * C + c] - c2[(x - 1) * C + c];
          o[x] = s;
        }
      }
    }
  }
  void window() {
    if (job->C == 1)
      window_c<1>();
    else
      window_c<3>();
  }
  // Moves the columns from rows y .. y+h-1 to y+1 .. y+h.
  void advance(int y) {
    if (y + job->h >= job->H) return;
    // One pass: new row in, old row out (exact for integers; for f64 the
    // difference of the two squares is formed first).
    const P* in = job->image.row<P>(y + job->h);
    const P* out = job->image.row<P>(y);
    const int n = job->W * job->C;
    if (job->s1)
      for (int i = 0; i < n; ++i) c1[i] += static_cast<A>(in[i]) - static_cast<A>(out[i]);
    if (job->s2)
      for (int i = 0; i < n; ++i) {
        const A a = static_cast<A>(in[i]), b = static_cast<A>(out[i]);
        c2[i] += a * a - b * b;
      }
  }
};

// ---- the score of a row ------------------------------------------------------------------
// match_score() per window, with the method and the channel count fixed at
// compile time (a local copy of the stats with `channels` set to the constant
// lets the compiler unroll the channel loops and if-convert the branches), so
// the loop vectorises: 8 windows per instruction with AVX-512. Every
// operation is still one correctly rounded IEEE add, multiply, divide or
// square root in the formula's order (the file is compiled with
// -ffp-contract=off, so nothing is fused), hence the same bits as a scalar
// call on any instruction set.

template <MatchMethod Me, int C>
inline void score_row_mc(const TemplateStats& st, int n, const double* __restrict X, const double* __restrict S1,
                         const double* __restrict S2, std::ptrdiff_t cstride, float* __restrict out) {
  TemplateStats t = st;
  t.channels = C;
  for (int x = 0; x < n; ++x) {
    double s1[kMaxMatchChannels], s2[kMaxMatchChannels];
    for (int c = 0; c < C; ++c) {  // (the rows a method does not read are not loaded)
      s1[c] = S1[c * cstride + x];
      s2[c] = S2[c * cstride + x];
    }
    out[x] = match_score(Me, t, X[x], s1, s2);
  }
}

template <int C>
inline void score_row_c(MatchMethod m, const TemplateStats& st, int n, const double* X, const double* S1,
                        const double* S2, std::ptrdiff_t cstride, float* out) {
  switch (m) {
    case MatchMethod::sqdiff: return score_row_mc<MatchMethod::sqdiff, C>(st, n, X, S1, S2, cstride, out);
    case MatchMethod::sqdiff_normed:
      return score_row_mc<MatchMethod::sqdiff_normed, C>(st, n, X, S1, S2, cstride, out);
    case MatchMethod::ccorr: return score_row_mc<MatchMethod::ccorr, C>(st, n, X, S1, S2, cstride, out);
    case MatchMethod::ccorr_normed: return score_row_mc<MatchMethod::ccorr_normed, C>(st, n, X, S1, S2, cstride, out);
    case MatchMethod::ccoeff: return score_row_mc<MatchMethod::ccoeff, C>(st, n, X, S1, S2, cstride, out);
    case MatchMethod::ccoeff_normed:
      return score_row_mc<MatchMethod::ccoeff_normed, C>(st, n, X, S1, S2, cstride, out);
  }
}

// X: n values; S1, S2: C rows of cstride each (always valid memory; read only
// where the method needs them).
using ScoreFn = void (*)(MatchMethod, const TemplateStats&, int, const double*, const double*, const double*,
                         std::ptrdiff_t, float*);

#define PK_SCORE_BODY                                                  \
  if (st.channels == 1)                                                \
    score_row_c<1>(m, st, n, X, S1, S2, cstride, out);                 \
  else                                                                 \
    score_row_c<3>(m, st, n, X, S1, S2, cstride, out);

__attribute__((flatten)) void score_row_base(MatchMethod m, const TemplateStats& st, int n, const double* X,
                                             const double* S1, const double* S2, std::ptrdiff_t cstride,
                                             float* out) {
  PK_SCORE_BODY
}
#if PIXELKIT_MATCH_X86
PK_AVX2 __attribute__((flatten)) void score_row_avx2(MatchMethod m, const TemplateStats& st, int n, const double* X,
                                                     const double* S1, const double* S2, std::ptrdiff_t cstride,
                                                     float* out) {
  PK_SCORE_BODY
}
PK_AVX512 __attribute__((flatten)) void score_row_avx512(MatchMethod m, const TemplateStats& st, int n,
                                                         const double* X, const double* S1, const double* S2,
                                                         std::ptrdiff_t cstride, float* out) {
  PK_SCORE_BODY
}
#endif
#undef PK_SCORE_BODY

ScoreFn score_fn(Isa isa) {
#if PIXELKIT_MATCH_X86
  if (isa == Isa::avx512 && __builtin_cpu_supports("avx512f")) return score_row_avx512;
  if (isa == Isa::avx2 || isa == Isa::avx512) return score_row_avx2;
#else
  (void)isa;
#endif
  return score_row_base;
}

// ---- packed rows ------------------------------------------------------------------------

template <class I, typename P, int C>
inline void plane_values(const DirectJob& job, int r, PlaneDesc pd, typename I::PlaneElem* dst, std::ptrdiff_t n) {
  using PE = typename I::PlaneElem;
  constexpr int off = I::kOffset;
  std::ptrdiff_t x = 0;
  if (r < job.H) {
    const P* src = job.image.row<P>(r) + pd.channel;
    const int W = job.W;
    if constexpr (std::is_same<P, float>::value) {
      if (pd.kind == PlaneKind::value) {
        for (; x < W; ++x) dst[x] = static_cast<PE>(src[x * C]);
      } else {
        for (; x < W; ++x) {
          const double v = src[x * C];
          dst[x] = static_cast<PE>(v * v);
        }
      }
    } else {
      switch (pd.kind) {
        case PlaneKind::value:
          for (; x < W; ++x) dst[x] = static_cast<PE>(static_cast<int>(src[x * C]) - off);
          break;
        case PlaneKind::sq_hi:
          for (; x < W; ++x) {
            const int v = src[x * C];
            dst[x] = static_cast<PE>(((v * v) >> 8) - off);
          }
          break;
        case PlaneKind::sq_lo:
          for (; x < W; ++x) {
            const int v = src[x * C];
            dst[x] = static_cast<PE>(((v * v) & 255) - off);
          }
          break;
        case PlaneKind::sq:
          break;
      }
    }
  }
  // Past the image (columns >= W, rows >= H): the value 0. It only meets zero
  // taps or feeds columns that are not stored.
  for (; x < n; ++x) dst[x] = static_cast<PE>(-off);
}

// Packs plane row r into `dst` (stride elements): lane x = values x .. x+K-1.
template <class I, typename P>
inline void convert_row(const DirectJob& job, int r, int p, typename I::PlaneElem* tmp, typename I::Elem* dst) {
  const PlaneDesc pd = job.plan->planes[p];
  if constexpr (I::K == 1) {
    if (job.C == 1)
      plane_values<I, P, 1>(job, r, pd, dst, job.stride);
    else
      plane_values<I, P, 3>(job, r, pd, dst, job.stride);
  } else {
    static_assert(sizeof(typename I::PlaneElem) * I::K == 4, "K values per 32-bit lane");
    if (job.C == 1)
      plane_values<I, P, 1>(job, r, pd, tmp, job.stride + I::K);
    else
      plane_values<I, P, 3>(job, r, pd, tmp, job.stride + I::K);
    for (std::ptrdiff_t x = 0; x < job.stride; ++x) std::memcpy(dst + x, tmp + x, 4);
  }
}

// ---- the kernel ------------------------------------------------------------------------------

// One correlation over output rows y .. y+R-1, columns x0 .. x0+L*NV-1:
// out[q * ostride + x] (the bias added).
template <class I>
inline void correlate_block(const DirectJob& job, int s, const typename I::Elem* ring, int y, int x0, double* out,
                            std::ptrdiff_t ostride) {
  using V = typename I::V;
  using E = typename I::Elem;
  constexpr int R = I::R, NV = I::NV, L = I::L, K = I::K, B = L * NV;
  constexpr bool kInt = std::is_integral<E>::value;
  const Spec& spec = job.plan->specs[s];
  const int G = job.G, rows = job.h + R - 1;
  const std::ptrdiff_t plane_step = job.stride, slot_step = job.stride * job.plan->nplanes;

  V acc[R][NV];
#pragma GCC unroll 16
  for (int q = 0; q < R; ++q)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[q][v] = I::zero();

  // Flushing (integers only): a lane may take `limit` multiply-adds before it
  // could leave int32; one image row adds nterms * G of them.
  const int per_row = spec.nterms * G;
  const bool may_flush = kInt && static_cast<long long>(rows) * per_row > job.limit;
  const int rows_per_flush = !may_flush ? rows : std::max(1, job.limit / std::max(1, per_row));
  const bool split_rows = may_flush && per_row > job.limit;  // a very wide template
  alignas(64) std::int64_t wide[R][B];
  auto flush = [&]() {
    alignas(64) std::int32_t lanes[L];
    for (int q = 0; q < R; ++q)
      for (int v = 0; v < NV; ++v) {
        I::store(reinterpret_cast<E*>(lanes), acc[q][v]);
        for (int l = 0; l < L; ++l) wide[q][v * L + l] += lanes[l];
        acc[q][v] = I::zero();
      }
  };
  if (may_flush)
    for (int q = 0; q < R; ++q)
      for (int i = 0; i < B; ++i) wide[q][i] = 0;

  int since = 0;  // image rows (or, split_rows, multiply-adds) since the last flush
  int slot = y % job.slots;
  for (int jj = 0; jj < rows; ++jj, slot = slot + 1 == job.slots ? 0 : slot + 1) {
    if (may_flush && !split_rows && since == rows_per_flush) {
      flush();
      since = 0;
    }
    for (int t = 0; t < spec.nterms; ++t) {
      const E* row = ring + slot * slot_step + spec.terms[t].plane * plane_step + x0;
      const E* taps = static_cast<const E*>(job.taps[s][t]) + static_cast<std::ptrdiff_t>(jj + R - 1) * G;
      // Output row q uses template row jj - q.
      if (!split_rows) {
        for (int g = 0; g < G; ++g) {
          V img[NV];
#pragma GCC unroll 16
          for (int v = 0; v < NV; ++v) img[v] = I::load(row + g * K + v * L);
#pragma GCC unroll 16
          for (int q = 0; q < R; ++q) {
            const V tv = I::bcast(taps[g - q * G]);
#pragma GCC unroll 16
            for (int v = 0; v < NV; ++v) acc[q][v] = I::dp(acc[q][v], img[v], tv);
          }
        }
      } else {
        for (int g0 = 0; g0 < G; g0 += job.limit) {
          const int g1 = std::min(G, g0 + job.limit);
          if (since + (g1 - g0) > job.limit) {
            flush();
            since = 0;
          }
          since += g1 - g0;
          for (int g = g0; g < g1; ++g) {
            V img[NV];
            for (int v = 0; v < NV; ++v) img[v] = I::load(row + g * K + v * L);
            for (int q = 0; q < R; ++q) {
              const V tv = I::bcast(taps[g - q * G]);
              for (int v = 0; v < NV; ++v) acc[q][v] = I::dp(acc[q][v], img[v], tv);
            }
          }
        }
      }
    }
    if (!split_rows) ++since;
  }

  const double bias = job.bias[s];
  for (int q = 0; q < R; ++q) {
    double* o = out + q * ostride + x0;
    for (int v = 0; v < NV; ++v) {
      alignas(64) E lanes[L];
      I::store(lanes, acc[q][v]);
      for (int l = 0; l < L; ++l) {
        if constexpr (kInt) {
          const std::int64_t sum = (may_flush ? wide[q][v * L + l] : 0) + lanes[l];
          o[v * L + l] = static_cast<double>(sum) + bias;  // exact: integers far below 2^53
        } else {
          o[v * L + l] = lanes[l];
        }
      }
    }
  }
}

// One band of output rows [y0, y1), in groups of R rows.
template <class I, typename P>
inline void band_direct(const DirectJob& job, ThreadScratch& sc, int y0, int y1) {
  using E = typename I::Elem;
  using PE = typename I::PlaneElem;
  using A = typename std::conditional<std::is_same<P, float>::value, double, std::int64_t>::type;
  constexpr int R = I::R;
  const Plan& plan = *job.plan;
  const int C = job.C, outW = job.outW;
  const std::ptrdiff_t slot_elems = job.stride * plan.nplanes;
  E* ring = grow_as<E>(sc.ring, static_cast<std::size_t>(slot_elems) * job.slots);
  PE* tmp = grow_as<PE>(sc.prow, static_cast<std::size_t>(job.stride + I::K));
  const std::ptrdiff_t ostride = job.outWpad;
  double* spec_out = grow_vec(sc.spec_out, static_cast<std::size_t>(plan.nspecs) * R * ostride);
  double* rb = grow_vec(sc.rowbuf, static_cast<std::size_t>(1 + 2 * C) * outW);
  double* S1 = job.s1 ? rb + outW : nullptr;
  double* S2 = job.s2 ? rb + (1 + C) * static_cast<std::size_t>(outW) : nullptr;
  // What score_row reads: valid rows even where the method ignores them.
  const double* S1r = rb + outW;
  const double* S2r = rb + (1 + C) * static_cast<std::size_t>(outW);

  const bool running = !job.masked && (job.s1 || job.s2);
  RunningSums<P, A> sums{&job, nullptr, nullptr, nullptr, nullptr};
  if (running) {
    const std::size_t n = static_cast<std::size_t>(job.W) * C, m = static_cast<std::size_t>(C) * outW;
    A* colp = grow_as<A>(sc.col, 2 * n);
    A* winp = grow_as<A>(sc.win, 2 * m);
    sums = RunningSums<P, A>{&job, colp, colp + n, winp, winp + m};
    sums.init(y0);
  }

  StageClock clk{job.profile, {}};
  clk.start();
  int next = y0;  // the next image row to convert into the ring
  for (int y = y0; y < y1; y += R) {
    const int rg = std::min(R, y1 - y);
    for (; next < y + R + job.h - 1; ++next)
      for (int p = 0; p < plan.nplanes; ++p)
        convert_row<I, P>(job, next, p, tmp, ring + (next % job.slots) * slot_elems + p * job.stride);
    for (int s = 0; s < plan.nspecs; ++s)
      for (int x0 = 0; x0 < outW; x0 += job.chunk)
        correlate_block<I>(job, s, ring, y, x0, spec_out + static_cast<std::ptrdiff_t>(s) * R * ostride, ostride);
    clk.lap(sc.t_corr);

    for (int q = 0; q < rg; ++q) {
      const int yy = y + q;
      auto spec_row = [&](int s) { return spec_out + (static_cast<std::ptrdiff_t>(s) * R + q) * ostride; };
      const double* X = spec_row(plan.sx);
      if (running) {
        sums.window();
        for (int c = 0; c < C; ++c)
          for (int x = 0; x < outW; ++x) {
            if (S1) S1[c * outW + x] = static_cast<double>(sums.w1[c * outW + x]);
            if (S2) S2[c * outW + x] = static_cast<double>(sums.w2[c * outW + x]);
          }
        if (yy + 1 < y1) sums.advance(yy);
      } else if (job.masked) {
        for (int c = 0; c < C; ++c) {
          if (S1) std::memcpy(S1 + c * outW, spec_row(plan.s1[c]), sizeof(double) * outW);
          if (S2) {
            const double* a = spec_row(plan.s2a[c]);
            if (plan.s2b[c] >= 0) {
              const double* b = spec_row(plan.s2b[c]);
              for (int x = 0; x < outW; ++x) S2[c * outW + x] = 256.0 * a[x] + b[x];  // exact integers
            } else {
              std::memcpy(S2 + c * outW, a, sizeof(double) * outW);
            }
          }
        }
      }
      clk.lap(sc.t_sums);
      job.score(job.method, *job.stats, outW, X, S1r, S2r, outW, job.scores.row<float>(yy));
      clk.lap(sc.t_score);
    }
  }
}

using BandFn = void (*)(const DirectJob&, ThreadScratch&, int, int);

__attribute__((flatten)) void band_u8_generic(const DirectJob& j, ThreadScratch& s, int a, int b) {
  band_direct<IntGeneric, std::uint8_t>(j, s, a, b);
}
__attribute__((flatten)) void band_f32_generic(const DirectJob& j, ThreadScratch& s, int a, int b) {
  band_direct<F64Generic, float>(j, s, a, b);
}
#if PIXELKIT_MATCH_X86
__attribute__((flatten)) void band_u8_sse2(const DirectJob& j, ThreadScratch& s, int a, int b) {
  band_direct<IntSse2, std::uint8_t>(j, s, a, b);
}
#endif
#if PIXELKIT_MATCH_AVX2
PK_AVX2 __attribute__((flatten)) void band_u8_avx2(const DirectJob& j, ThreadScratch& s, int a, int b) {
  band_direct<IntAvx2, std::uint8_t>(j, s, a, b);
}
PK_AVX2 __attribute__((flatten)) void band_f32_avx2(const DirectJob& j, ThreadScratch& s, int a, int b) {
  band_direct<F64Avx2, float>(j, s, a, b);
}
#endif
#if PIXELKIT_MATCH_AVX512
PK_VNNI __attribute__((flatten)) void band_u8_vnni(const DirectJob& j, ThreadScratch& s, int a, int b) {
  band_direct<IntVnni, std::uint8_t>(j, s, a, b);
}
PK_AVX512 __attribute__((flatten)) void band_f32_avx512(const DirectJob& j, ThreadScratch& s, int a, int b) {
  band_direct<F64Avx512, float>(j, s, a, b);
}
#endif

// Geometry of an instruction set, for the job and the tap layout.
struct IsaGeom {
  int L, NV, R, K, offset;
  std::int64_t max_step;
  std::size_t elem;  // bytes of a packed element
  BandFn band;
};

template <class I>
IsaGeom geom_of(BandFn band) {
  return IsaGeom{I::L, I::NV, I::R, I::K, I::kOffset, I::kMaxStep, sizeof(typename I::Elem), band};
}

IsaGeom isa_geom(Isa isa, bool u8) {
#if PIXELKIT_MATCH_X86
  switch (isa) {
    case Isa::sse2:
      if (u8) return geom_of<IntSse2>(band_u8_sse2);
      break;
#if PIXELKIT_MATCH_AVX2
    case Isa::avx2: return u8 ? geom_of<IntAvx2>(band_u8_avx2) : geom_of<F64Avx2>(band_f32_avx2);
#endif
#if PIXELKIT_MATCH_AVX512
    case Isa::avx512: return u8 ? geom_of<IntVnni>(band_u8_vnni) : geom_of<F64Avx512>(band_f32_avx512);
#endif
    default: break;  // generic, and a path not built (cpu_has never picks it)
  }
#else
  (void)isa;
#endif
  return u8 ? geom_of<IntGeneric>(band_u8_generic) : geom_of<F64Generic>(band_f32_generic);
}

// Taps of one tap set in an instruction set's layout: (h + 2(R-1)) rows of G
// packed elements, template row j at row j + R - 1, zero rows around.
std::vector<unsigned char> pack_taps(const std::vector<double>& tv, int w, int h, const IsaGeom& g, bool u8) {
  const int G = (w + g.K - 1) / g.K, rows = h + 2 * (g.R - 1);
  std::vector<unsigned char> out(static_cast<std::size_t>(rows) * G * g.elem, 0);
  for (int j = 0; j < h; ++j)
    for (int k = 0; k < G; ++k) {
      unsigned char* dst = out.data() + (static_cast<std::size_t>(j + g.R - 1) * G + k) * g.elem;
      if (!u8) {
        const double v = tv[static_cast<std::size_t>(j) * w + k];
        std::memcpy(dst, &v, sizeof v);
        continue;
      }
      std::uint32_t packed = 0;
      for (int e = 0; e < g.K; ++e) {
        const int i = k * g.K + e;
        const std::uint32_t v = i < w ? static_cast<std::uint32_t>(tv[static_cast<std::size_t>(j) * w + i]) : 0u;
        packed |= v << (32 / g.K * e);  // K=4: bytes, K=2: 16-bit words, K=1: the value
      }
      std::memcpy(dst, &packed, sizeof packed);
    }
  return out;
}

constexpr double kDirectMacF64 = 3.4e-8;  // ms per f64 multiply-add (avx512), fitted like the others

// ---- the matcher ---------------------------------------------------------------------------

#if PIXELKIT_WITH_OPENCV
struct FftState {
  int W = 0, H = 0, N = 0, M = 0, Kc = 0;
  Plan plan;
  std::vector<cv::Mat> tspec;  // per tap set: Kc x M CV_64FC2
  std::vector<cv::Mat> z;      // per plane
  std::vector<cv::Mat> g;      // per spec
  double scale = 1;            // 1 / (N M)
  bool exact = true;           // u8: fft_rounds_exactly
};
constexpr int kFftRowBand = 32;  // rows per cv::dft call in the row passes
constexpr int kFftColBand = 8;   // spectrum rows per task in the column pass
#endif

class CpuMatcherImpl final : public CpuMatcher {
 public:
  explicit CpuMatcherImpl(const PreparedTemplate& t) : stats_(t.stats), method_(t.method) {
    const TemplateStats& st = stats_;
    C_ = st.channels;
    w_ = st.width;
    h_ = st.height;
    u8_ = t.templ.type() == PixelType::u8;
    masked_ = st.masked;
    // Tap sets as f64: the masked template per channel, then the mask.
    const int sets = masked_ ? 2 * C_ : C_;
    tapsets_.assign(sets, std::vector<double>(static_cast<std::size_t>(w_) * h_, 0.0));
    for (int j = 0; j < h_; ++j)
      for (int i = 0; i < w_; ++i)
        for (int c = 0; c < C_; ++c) {
          const int e = i * C_ + c;
          const double v = u8_ ? static_cast<double>(t.templ.row<std::uint8_t>(j)[e])
                               : static_cast<double>(t.templ.row<float>(j)[e]);
          const bool m = !masked_ || t.mask.row<std::uint8_t>(j)[e] != 0;
          const std::size_t k = static_cast<std::size_t>(j) * w_ + i;
          tapsets_[c][k] = m ? v : 0.0;
          if (masked_) tapsets_[C_ + c][k] = m ? 1.0 : 0.0;
        }
    plan_ = make_plan(C_, masked_, method_, u8_);
  }

  std::string run(const ConstImageView& image, const ImageView& scores, MatchStrategy strategy,
                  int threads) override {
    profile_ = g_profiling.load(std::memory_order_relaxed);
    if (!profile_) return run_path(image, scores, strategy, threads);
    for (ThreadScratch& t : scratch_) t.t_corr = t.t_sums = t.t_score = 0;
    fixed_corr_ms_ = 0;
    const auto t0 = std::chrono::steady_clock::now();
    std::string path = run_path(image, scores, strategy, threads);
    const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    double c = 0, su = 0, sc = 0;
    for (const ThreadScratch& t : scratch_) {
      c += t.t_corr;
      su += t.t_sums;
      sc += t.t_score;
    }
    MatchCpuStages st;
    const double rest = std::max(0.0, wall - fixed_corr_ms_), total = c + su + sc;
    st.corr_ms = fixed_corr_ms_ + (total > 0 ? rest * c / total : rest);
    st.sums_ms = total > 0 ? rest * su / total : 0;
    st.score_ms = total > 0 ? rest * sc / total : 0;
    g_last_stages = st;
    return path;
  }

  std::string run_path(const ConstImageView& image, const ImageView& scores, MatchStrategy strategy, int threads) {
    threads = resolve_threads(threads);
    if (strategy == MatchStrategy::fft) {
#if PIXELKIT_WITH_OPENCV
      prepare_fft(image.width, image.height);
      if (fft_.exact) return run_fft(image, scores, threads);
      return run_direct(image, scores, threads) + " (fft asked for; its error bound is too large to round " +
             std::to_string(image.width) + "x" + std::to_string(image.height) + " exactly)";
#else
      throw Error(Status::unsupported, "fft strategy on the cpu backend needs a build with OpenCV (cv::dft)");
#endif
    }
    return run_direct(image, scores, threads);
  }

  void reserve(int width, int height, MatchStrategy strategy) override {
    const int threads = resolve_threads(0);
    if (static_cast<int>(scratch_.size()) < threads) scratch_.resize(threads);
    if (strategy == MatchStrategy::fft) {
#if PIXELKIT_WITH_OPENCV
      prepare_fft(width, height);
      if (!fft_.exact) prepare_direct_buffers(width, height, threads);
      else prepare_fft_buffers(threads);
#else
      throw Error(Status::unsupported, "fft strategy on the cpu backend needs a build with OpenCV (cv::dft)");
#endif
    } else {
      prepare_direct_buffers(width, height, threads);
    }
  }

 private:
  // ---- direct ----
  void prepare_taps(Isa isa) {
    if (taps_ready_ && taps_isa_ == isa) return;
    const IsaGeom g = isa_geom(isa, u8_);
    taps_.clear();
    for (const auto& tv : tapsets_) taps_.push_back(pack_taps(tv, w_, h_, g, u8_));
    taps_isa_ = isa;
    taps_ready_ = true;
  }

  DirectJob make_job(const ConstImageView& image, const ImageView& scores, const IsaGeom& g) const {
    DirectJob j;
    j.image = image;
    j.W = image.width;
    j.H = image.height;
    j.C = C_;
    j.w = w_;
    j.h = h_;
    j.outW = image.width - w_ + 1;
    j.outH = image.height - h_ + 1;
    j.G = (w_ + g.K - 1) / g.K;
    j.chunk = g.L * g.NV;
    j.outWpad = static_cast<int>(round_up(j.outW, j.chunk));
    j.stride = round_up(j.outWpad + static_cast<std::ptrdiff_t>(j.G) * g.K + 16, 16);
    j.slots = h_ + g.R - 1;
    j.limit = g.max_step > 0 ? static_cast<int>(std::min<std::int64_t>(INT_MAX / g.max_step, INT_MAX)) : INT_MAX;
    j.plan = &plan_;
    for (int s = 0; s < plan_.nspecs; ++s) {
      double bias = 0;
      for (int t = 0; t < plan_.specs[s].nterms; ++t) {
        const int set = plan_.specs[s].terms[t].tapset;
        j.taps[s][t] = taps_[set].data();
        if (g.offset != 0) {
          double sum = 0;
          for (double v : tapsets_[set]) sum += v;
          bias += g.offset * sum;  // the pixels were stored minus the offset
        }
      }
      j.bias[s] = bias;
    }
    j.method = method_;
    j.stats = &stats_;
    j.masked = masked_;
    j.s1 = needs_s1(method_);
    j.s2 = needs_s2(method_);
    j.scores = scores;
    return j;  // j.score: set by the caller
  }

  void prepare_direct_buffers(int width, int height, int threads) {
    const Isa isa = choose_isa();
    prepare_taps(isa);
    const IsaGeom g = isa_geom(isa, u8_);
    // A job for this size with a null image: only the geometry is used.
    ConstImageView v;
    v.width = width;
    v.height = height;
    v.channels = C_;
    const DirectJob j = make_job(v, ImageView{}, g);
    if (static_cast<int>(scratch_.size()) < threads) scratch_.resize(threads);
    for (int t = 0; t < threads; ++t) {
      ThreadScratch& sc = scratch_[t];
      const std::size_t ring = static_cast<std::size_t>(j.stride) * plan_.nplanes * j.slots * g.elem;
      if (sc.ring.size() < ring) sc.ring.resize(ring);
      const std::size_t prow = static_cast<std::size_t>(j.stride + g.K) * 8;
      if (sc.prow.size() < prow) sc.prow.resize(prow);
      grow_vec(sc.spec_out, static_cast<std::size_t>(plan_.nspecs) * g.R * j.outWpad);
      grow_vec(sc.rowbuf, static_cast<std::size_t>(1 + 2 * C_) * j.outW);
      grow_as<double>(sc.col, 2 * static_cast<std::size_t>(width) * C_);
      grow_as<double>(sc.win, 2 * static_cast<std::size_t>(C_) * j.outW);
    }
  }

  std::string run_direct(const ConstImageView& image, const ImageView& scores, int threads) {
    const Isa isa = choose_isa();
    prepare_taps(isa);
    const IsaGeom g = isa_geom(isa, u8_);
    DirectJob job = make_job(image, scores, g);
    job.score = score_fn(isa);
    job.profile = profile_;
    // Bands of whole row groups, a few per thread (dynamic scheduling evens out
    // a shared machine); each band converts its h - 1 extra rows once.
    const int groups = (job.outH + g.R - 1) / g.R;
    const double work = static_cast<double>(job.outW) * job.outH * w_ * h_ * C_ * plan_.nspecs;
    int nbands = std::min(groups, 4 * threads);
    if (work < 2e6) nbands = 1;
    nbands = std::max(1, nbands);
    const int nthreads = std::max(1, std::min(threads, nbands));
    if (static_cast<int>(scratch_.size()) < nthreads) scratch_.resize(nthreads);
    const BandFn band = g.band;
    const int R = g.R, outH = job.outH;
#pragma omp parallel for num_threads(nthreads) schedule(dynamic, 1)
    for (int b = 0; b < nbands; ++b) {
      const int y0 = static_cast<int>(static_cast<long long>(groups) * b / nbands) * R;
      const int y1 = std::min(outH, static_cast<int>(static_cast<long long>(groups) * (b + 1) / nbands) * R);
      if (y0 < y1) band(job, scratch_[omp_get_thread_num()], y0, y1);
    }
    return std::string("direct ") + (u8_ ? "int32/int64 " : "f64 ") + isa_name(isa, u8_) + ", " +
           std::to_string(R) + "x" + std::to_string(job.chunk) + " blocks, " + std::to_string(plan_.nspecs) +
           (plan_.nspecs == 1 ? " correlation, " : " correlations, ") + std::to_string(nthreads) +
           (nthreads == 1 ? " thread" : " threads");
  }

#if PIXELKIT_WITH_OPENCV
  // ---- fft ----
  // Fills row y of a plane (or of a tap set) as N doubles, zero past its width.
  template <typename P>
  static void image_plane_row(const ConstImageView& im, int C, PlaneDesc pd, int y, double* d, int N) {
    const P* src = im.row<P>(y) + pd.channel;
    const int W = im.width;
    if (pd.kind == PlaneKind::value) {
      for (int x = 0; x < W; ++x) d[x] = static_cast<double>(src[x * C]);
    } else {
      for (int x = 0; x < W; ++x) {
        const double v = static_cast<double>(src[x * C]);
        d[x] = v * v;
      }
    }
    std::fill(d + W, d + N, 0.0);
  }

  // Real DFT of rows [y0, y1) (already in band_in) scattered into Z's columns y.
  void rows_forward(ThreadScratch& sc, int nb, int y0, cv::Mat& Z) const {
    const int N = fft_.N, Kc = fft_.Kc;
    cv::Mat in = sc.band_in.rowRange(0, nb), out = sc.band_out.rowRange(0, nb);
    cv::dft(in, out, cv::DFT_ROWS);
    for (int k = 0; k < Kc; ++k) {
      double* z = Z.ptr<double>(k) + 2 * static_cast<std::ptrdiff_t>(y0);
      for (int b = 0; b < nb; ++b) {
        const double* d = sc.band_out.ptr<double>(b);
        double re, im;
        if (k == 0) {
          re = d[0];
          im = 0;
        } else if (2 * k == N) {
          re = d[N - 1];
          im = 0;
        } else {
          re = d[2 * k - 1];
          im = d[2 * k];
        }
        z[2 * b] = re;
        z[2 * b + 1] = im;
      }
    }
  }

  // Column DFT of rows [k0, k1) of Z, with the rows y >= valid zeroed first.
  static void cols_forward(cv::Mat& Z, int k0, int k1, int valid) {
    const int M = Z.cols;
    for (int k = k0; k < k1; ++k) std::fill(Z.ptr<double>(k) + 2 * valid, Z.ptr<double>(k) + 2 * M, 0.0);
    cv::Mat band = Z.rowRange(k0, k1);
    cv::dft(band, band, cv::DFT_ROWS);
  }

  void prepare_fft(int width, int height) {
    if (fft_.W == width && fft_.H == height) return;
    FftState f;
    f.W = width;
    f.H = height;
    f.N = cv::getOptimalDFTSize(width);
    f.M = cv::getOptimalDFTSize(height);
    f.Kc = f.N / 2 + 1;
    f.scale = 1.0 / (static_cast<double>(f.N) * f.M);
    f.exact = !u8_ || fft_rounds_exactly(f.N, f.M, width, height, stats_);
    f.plan = make_plan(C_, masked_, method_, false);
    const int threads = resolve_threads(0);
    if (static_cast<int>(scratch_.size()) < threads) scratch_.resize(threads);
    fft_ = std::move(f);
    if (!fft_.exact) return;
    prepare_fft_buffers(threads);
    // The template's spectra: the tap sets zero-padded to N x M.
    const int sets = static_cast<int>(tapsets_.size());
    fft_.tspec.assign(sets, cv::Mat());
    for (int s = 0; s < sets; ++s) fft_.tspec[s] = cv::Mat(fft_.Kc, fft_.M, CV_64FC2);
    const int rbands = (h_ + kFftRowBand - 1) / kFftRowBand;
    const int cbands = (fft_.Kc + kFftColBand - 1) / kFftColBand;
#pragma omp parallel num_threads(threads)
    {
      ThreadScratch& sc = scratch_[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 1) collapse(2)
      for (int s = 0; s < sets; ++s)
        for (int rb = 0; rb < rbands; ++rb) {
          const int y0 = rb * kFftRowBand, nb = std::min(kFftRowBand, h_ - y0);
          for (int b = 0; b < nb; ++b) {
            double* d = sc.band_in.ptr<double>(b);
            const double* src = tapsets_[s].data() + static_cast<std::size_t>(y0 + b) * w_;
            std::copy(src, src + w_, d);
            std::fill(d + w_, d + fft_.N, 0.0);
          }
          rows_forward(sc, nb, y0, fft_.tspec[s]);
        }
#pragma omp for schedule(dynamic, 1) collapse(2)
      for (int s = 0; s < sets; ++s)
        for (int cb = 0; cb < cbands; ++cb)
          cols_forward(fft_.tspec[s], cb * kFftColBand, std::min(fft_.Kc, (cb + 1) * kFftColBand), h_);
    }
  }

  void prepare_fft_buffers(int threads) {
    FftState& f = fft_;
    if (static_cast<int>(scratch_.size()) < threads) scratch_.resize(threads);
    f.z.resize(f.plan.nplanes);
    for (cv::Mat& m : f.z) m.create(f.Kc, f.M, CV_64FC2);
    f.g.resize(f.plan.nspecs);
    for (cv::Mat& m : f.g) m.create(f.Kc, f.M, CV_64FC2);
    const int outW = f.W - w_ + 1;
    for (int t = 0; t < threads; ++t) {
      ThreadScratch& sc = scratch_[t];
      sc.band_in.create(kFftRowBand, f.N, CV_64F);
      sc.band_out.create(kFftRowBand, f.N, CV_64F);
      grow_vec(sc.spec_out, static_cast<std::size_t>(f.plan.nspecs) * kFftRowBand * outW);
      grow_vec(sc.rowbuf, static_cast<std::size_t>(1 + 2 * C_) * outW);
      grow_as<double>(sc.col, 2 * static_cast<std::size_t>(f.W) * C_);
      grow_as<double>(sc.win, 2 * static_cast<std::size_t>(C_) * outW);
    }
  }

  std::string run_fft(const ConstImageView& image, const ImageView& scores, int threads) {
    FftState& f = fft_;
    const Plan& plan = f.plan;
    const int W = image.width, H = image.height, outW = W - w_ + 1, outH = H - h_ + 1;
    const int N = f.N, Kc = f.Kc;
    if (static_cast<int>(scratch_.size()) < threads) scratch_.resize(threads);
    for (int t = 0; t < threads; ++t)
      if (scratch_[t].band_in.rows < kFftRowBand || scratch_[t].band_in.cols != N) prepare_fft_buffers(threads);
    const bool s1 = needs_s1(method_), s2 = needs_s2(method_);
    const bool running = !masked_ && (s1 || s2);
    const int rbands = (H + kFftRowBand - 1) / kFftRowBand;
    const int cbands = (Kc + kFftColBand - 1) / kFftColBand;
    const int nthreads = std::max(1, std::min(threads, outH));
    // Chunks of output rows for phase C: at least 2 row bands each (a chunk
    // re-sums h image rows to start its running sums).
    const int chunks = nthreads == 1 ? 1 : std::max(1, std::min(4 * nthreads, outH / (2 * kFftRowBand)));
    DirectJob sj;  // for the running sums
    sj.image = image;
    sj.W = W;
    sj.H = H;
    sj.C = C_;
    sj.w = w_;
    sj.h = h_;
    sj.outW = outW;
    sj.outH = outH;
    sj.s1 = s1;
    sj.s2 = s2;
    sj.score = score_fn(choose_isa());
    sj.profile = profile_;
    const auto t_start = std::chrono::steady_clock::now();
    auto t_ab = t_start;

#pragma omp parallel num_threads(nthreads)
    {
      const int tid = omp_get_thread_num();
      ThreadScratch& sc = scratch_[tid];
      // A. rows of every plane
#pragma omp for schedule(dynamic, 1) collapse(2)
      for (int p = 0; p < plan.nplanes; ++p)
        for (int rb = 0; rb < rbands; ++rb) {
          const int y0 = rb * kFftRowBand, nb = std::min(kFftRowBand, H - y0);
          for (int b = 0; b < nb; ++b) {
            double* d = sc.band_in.ptr<double>(b);
            if (u8_)
              image_plane_row<std::uint8_t>(image, C_, plan.planes[p], y0 + b, d, N);
            else
              image_plane_row<float>(image, C_, plan.planes[p], y0 + b, d, N);
          }
          rows_forward(sc, nb, y0, f.z[p]);
        }
      // B. columns, products, inverse columns
#pragma omp for schedule(dynamic, 1)
      for (int cb = 0; cb < cbands; ++cb) {
        const int k0 = cb * kFftColBand, k1 = std::min(Kc, k0 + kFftColBand);
        for (int p = 0; p < plan.nplanes; ++p) cols_forward(f.z[p], k0, k1, H);
        for (int s = 0; s < plan.nspecs; ++s) {
          const Spec& spec = plan.specs[s];
          for (int k = k0; k < k1; ++k) {
            double* __restrict gk = f.g[s].ptr<double>(k);
            const int n = 2 * f.M;
            for (int t = 0; t < spec.nterms; ++t) {
              const double* __restrict zk = f.z[spec.terms[t].plane].ptr<double>(k);
              const double* __restrict tk = f.tspec[spec.terms[t].tapset].ptr<double>(k);
              if (t == 0) {
                for (int i = 0; i < n; i += 2) {  // z * conj(t)
                  gk[i] = zk[i] * tk[i] + zk[i + 1] * tk[i + 1];
                  gk[i + 1] = zk[i + 1] * tk[i] - zk[i] * tk[i + 1];
                }
              } else {
                for (int i = 0; i < n; i += 2) {
                  gk[i] += zk[i] * tk[i] + zk[i + 1] * tk[i + 1];
                  gk[i + 1] += zk[i + 1] * tk[i] - zk[i] * tk[i + 1];
                }
              }
            }
          }
          cv::Mat band = f.g[s].rowRange(k0, k1);
          cv::dft(band, band, cv::DFT_ROWS | cv::DFT_INVERSE);
        }
      }
      // (the for's barrier above: every thread is done with A and B)
#pragma omp master
      t_ab = std::chrono::steady_clock::now();
      // C. inverse rows of the output rows in contiguous chunks (the running
      // sums walk a chunk; a few chunks per thread, so that a thread the OS
      // preempts on a shared machine does not hold the others up), then the
      // scores.
#pragma omp for schedule(dynamic, 1)
      for (int ch = 0; ch < chunks; ++ch) {
        const int ya = static_cast<int>(static_cast<long long>(outH) * ch / chunks);
        const int yb = static_cast<int>(static_cast<long long>(outH) * (ch + 1) / chunks);
        if (ya < yb) rows_inverse_and_score(sc, image, scores, sj, ya, yb, running);
      }
    }
    if (profile_) fixed_corr_ms_ = std::chrono::duration<double, std::milli>(t_ab - t_start).count();
    return std::string("fft cv::dft f64 ") + std::to_string(N) + "x" + std::to_string(f.M) + ", " +
           std::to_string(plan.nspecs) + (plan.nspecs == 1 ? " correlation" : " correlations") +
           (u8_ ? " rounded to integers, " : ", ") + std::to_string(nthreads) +
           (nthreads == 1 ? " thread" : " threads");
  }

  void rows_inverse_and_score(ThreadScratch& sc, const ConstImageView& image, const ImageView& scores,
                              const DirectJob& sj, int ya, int yb, bool running) {
    const FftState& f = fft_;
    const Plan& plan = f.plan;
    const int N = f.N, Kc = f.Kc, outW = sj.outW;
    const bool s1 = sj.s1, s2 = sj.s2;
    double* spec_out = grow_vec(sc.spec_out, static_cast<std::size_t>(plan.nspecs) * kFftRowBand * outW);
    double* rb = grow_vec(sc.rowbuf, static_cast<std::size_t>(1 + 2 * C_) * outW);
    double* S1 = s1 ? rb + outW : nullptr;
    double* S2 = s2 ? rb + (1 + C_) * static_cast<std::size_t>(outW) : nullptr;
    const double* S1r = rb + outW;
    const double* S2r = rb + (1 + C_) * static_cast<std::size_t>(outW);
    RunningSums<std::uint8_t, std::int64_t> su{&sj, nullptr, nullptr, nullptr, nullptr};
    RunningSums<float, double> sf{&sj, nullptr, nullptr, nullptr, nullptr};
    if (running) {
      const std::size_t n = static_cast<std::size_t>(sj.W) * C_, m = static_cast<std::size_t>(C_) * outW;
      if (u8_) {
        std::int64_t* colp = grow_as<std::int64_t>(sc.col, 2 * n);
        std::int64_t* winp = grow_as<std::int64_t>(sc.win, 2 * m);
        su = RunningSums<std::uint8_t, std::int64_t>{&sj, colp, colp + n, winp, winp + m};
        su.init(ya);
      } else {
        double* colp = grow_as<double>(sc.col, 2 * n);
        double* winp = grow_as<double>(sc.win, 2 * m);
        sf = RunningSums<float, double>{&sj, colp, colp + n, winp, winp + m};
        sf.init(ya);
      }
    }
    StageClock clk{sj.profile, {}};
    clk.start();
    for (int y0 = ya; y0 < yb; y0 += kFftRowBand) {
      const int nb = std::min(kFftRowBand, yb - y0);
      for (int s = 0; s < plan.nspecs; ++s) {
        for (int b = 0; b < nb; ++b) std::fill(sc.band_in.ptr<double>(b), sc.band_in.ptr<double>(b) + N, 0.0);
        for (int k = 0; k < Kc; ++k) {
          const double* gk = f.g[s].ptr<double>(k) + 2 * static_cast<std::ptrdiff_t>(y0);
          for (int b = 0; b < nb; ++b) {
            double* d = sc.band_in.ptr<double>(b);
            if (k == 0) {
              d[0] = gk[2 * b];
            } else if (2 * k == N) {
              d[N - 1] = gk[2 * b];
            } else {
              d[2 * k - 1] = gk[2 * b];
              d[2 * k] = gk[2 * b + 1];
            }
          }
        }
        cv::Mat in = sc.band_in.rowRange(0, nb), out = sc.band_out.rowRange(0, nb);
        cv::dft(in, out, cv::DFT_ROWS | cv::DFT_INVERSE | cv::DFT_REAL_OUTPUT);
        for (int b = 0; b < nb; ++b) {
          const double* d = sc.band_out.ptr<double>(b);
          double* o = spec_out + (static_cast<std::size_t>(s) * kFftRowBand + b) * outW;
          if (u8_) {
            // Round to the nearest integer: adding and subtracting 1.5 * 2^52
            // leaves the nearest integer (ties to even) of any |v| < 2^51, and
            // +0 rather than -0 for small negative v (nearbyint is a libm call
            // on the x86-64 baseline).
            constexpr double kRound = 6755399441055744.0;
            for (int x = 0; x < outW; ++x) o[x] = (d[x] * f.scale + kRound) - kRound;
          } else {
            for (int x = 0; x < outW; ++x) o[x] = d[x] * f.scale;
          }
        }
      }
      clk.lap(sc.t_corr);
      for (int b = 0; b < nb; ++b) {
        const int y = y0 + b;
        auto spec_row = [&](int s) { return spec_out + (static_cast<std::size_t>(s) * kFftRowBand + b) * outW; };
        if (running) {
          if (u8_) {
            su.window();
            for (int c = 0; c < C_; ++c)
              for (int x = 0; x < outW; ++x) {
                if (S1) S1[c * outW + x] = static_cast<double>(su.w1[c * outW + x]);
                if (S2) S2[c * outW + x] = static_cast<double>(su.w2[c * outW + x]);
              }
            if (y + 1 < yb) su.advance(y);
          } else {
            sf.window();
            for (int c = 0; c < C_; ++c)
              for (int x = 0; x < outW; ++x) {
                if (S1) S1[c * outW + x] = sf.w1[c * outW + x];
                if (S2) S2[c * outW + x] = sf.w2[c * outW + x];
              }
            if (y + 1 < yb) sf.advance(y);
          }
        } else if (masked_) {
          for (int c = 0; c < C_; ++c) {
            if (S1) std::memcpy(S1 + c * outW, spec_row(plan.s1[c]), sizeof(double) * outW);
            if (S2) std::memcpy(S2 + c * outW, spec_row(plan.s2a[c]), sizeof(double) * outW);
          }
        }
        clk.lap(sc.t_sums);
        sj.score(method_, stats_, outW, spec_row(plan.sx), S1r, S2r, outW, scores.row<float>(y));
        clk.lap(sc.t_score);
      }
    }
    (void)image;
  }
#endif

  TemplateStats stats_;
  MatchMethod method_;
  int C_ = 1, w_ = 1, h_ = 1;
  bool u8_ = true, masked_ = false;
  std::vector<std::vector<double>> tapsets_;
  Plan plan_;
  std::vector<std::vector<unsigned char>> taps_;
  Isa taps_isa_ = Isa::generic;
  bool taps_ready_ = false;
  std::vector<ThreadScratch> scratch_;
  bool profile_ = false;        // this call records its stages
  double fixed_corr_ms_ = 0;    // fft: phases A and B (all correlation)
#if PIXELKIT_WITH_OPENCV
  FftState fft_;
#endif
};

}  // namespace

std::unique_ptr<CpuMatcher> make_cpu_matcher(const PreparedTemplate& t) {
  return std::make_unique<CpuMatcherImpl>(t);
}

bool cpu_match_fft_available() noexcept { return PIXELKIT_WITH_OPENCV != 0; }

void set_match_cpu_profiling(bool on) noexcept { g_profiling.store(on); }
bool match_cpu_profiling() noexcept { return g_profiling.load(std::memory_order_relaxed); }
MatchCpuStages match_cpu_last_stages() noexcept { return g_last_stages; }
void set_match_cpu_last_stages(const MatchCpuStages& s) noexcept { g_last_stages = s; }

// The cost model (docs/notes-match-cpu.md): single-thread milliseconds from
// work counts, with constants fitted to bench_match_cpu / calibration runs on
// the development machine (AMD EPYC Zen 4, AVX-512 VNNI), divided by the
// threads at 85% efficiency. The method is not known here, so a mask counts
// as its most expensive method (ccoeff_normed: X, S1 and S2 correlations).
//   direct: kDirectMac per multiply-add as the kernel does them (output
//           columns rounded up to the 64-column block, template rows + 3 zero
//           rows, columns rounded up to the K-pixel group) + kDirectWindow per
//           window and channel (running sums, score, stores)
//   fft:    kFftForward per plane (H rows of real DFT + Kc columns of complex
//           DFT, in N log2 N units) + kFftInverse per correlation + kFftWindow
//           per window and channel
double cpu_match_cost_ms(MatchStrategy strategy, int image_width, int image_height, const TemplateStats& t,
                         PixelType type, int threads) {
  const bool u8 = type == PixelType::u8;
  const double W = image_width, H = image_height, w = t.width, h = t.height, C = t.channels;
  const double outW = std::max(1.0, W - w + 1), outH = std::max(1.0, H - h + 1);
  const double windows_c = outW * outH * C;
  const double parallel = std::max(1, threads) * 0.85 + 0.15;
  if (strategy == MatchStrategy::fft) {
#if PIXELKIT_WITH_OPENCV
    const double N = cv::getOptimalDFTSize(image_width), M = cv::getOptimalDFTSize(image_height);
#else
    const double N = W, M = H;
#endif
    const double Kc = std::floor(N / 2) + 1;
    const double fwd = H * N / 2 * std::log2(std::max(2.0, N)) + Kc * M * std::log2(std::max(2.0, M));
    const double inv = Kc * M * std::log2(std::max(2.0, M)) + outH * N / 2 * std::log2(std::max(2.0, N));
    const double planes = t.masked ? 2 * C : C, specs = t.masked ? 1 + 2 * C : 1;
    // u8 and f32 run the same transforms (f64); only the plane fill differs.
    constexpr double kFftForward = 1.52e-6, kFftInverse = 6.2e-7, kFftWindow = 9.7e-7;
    return (kFftForward * planes * fwd + kFftInverse * specs * inv + kFftWindow * windows_c) / parallel;
  }
  // Direct: the kernel's geometry on the instruction set this machine runs.
  const Isa isa = choose_isa();
  const IsaGeom g = isa_geom(isa, u8);
  const double terms = !t.masked ? C : (u8 ? 4 * C : 3 * C);  // X; masked: + S1 + S2 (u8: hi and lo)
  const double macs = std::ceil(outW / (g.L * g.NV)) * (g.L * g.NV) * outH * (h + g.R - 1) *
                      std::ceil(w / g.K) * g.K * terms;
  // Milliseconds per multiply-add, fitted with avx512-vnni (u8) and avx512 f64
  // (f32); the other instruction sets scaled by single-thread runs of the same
  // case (see the notes).
  double per_mac = u8 ? 4.86e-9 : kDirectMacF64;
  switch (isa) {
    case Isa::avx512: break;
    case Isa::avx2: per_mac *= u8 ? 2.7 : 2.0; break;      // u8 measured (1080p, 64x64), f32 by lanes
    case Isa::sse2: per_mac *= u8 ? 7.0 : 5.0; break;      // u8 measured; f32 runs generic f64 (2 lanes)
    case Isa::generic: per_mac *= u8 ? 33.0 : 5.0; break;  // u8 measured on x86 (no pmaddwd, emulated pmulld)
  }
  constexpr double kDirectWindow = 4.8e-6;
  return (per_mac * macs + kDirectWindow * windows_c) / parallel;
}

}  // namespace pixelkit::detail
