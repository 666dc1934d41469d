// Host side of the tensor-core filters (kernels: filter_cuda_mma.cuh, separable
// tiles; filter_cuda_mma_stream.cuh, separable streaming; filter_cuda_mma_dense.cuh,
// dense): which kernels they take, the coefficient checks and scaling, the
// error bounds, and the tiled separable kernel's instances and table. The
// streaming kernel's instances are in filter_cuda_mma_stream_c1.cu, _c3.cu and
// _c4.cu, the dense kernel's in filter_cuda_mma_dense.cu (files of their own:
// CUDA's lazy loading loads a file's module whole, mma_stream_pick says more);
// the launches are in filter_cuda.cu, beside the other paths.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>

#include <cuda_fp16.h>

#include "filter/filter_cuda_mma.cuh"
#include "filter/filter_cuda_mma_dense.cuh"
#include "filter/filter_cuda_mma_stream.cuh"
#include "filter/filter_cuda_mma.hpp"
#include "filter/filter_cuda_stream.hpp"

namespace pixelkit::detail::cuda_filter {

namespace {

template <int C, int KS1, int KS2>
MmaKernelInfo info() {
  return {reinterpret_cast<const void*>(separable_mma_kernel<C, KS1, KS2>), MmaGeom<C, KS1, KS2>::kSmemBytes};
}

template <int C, int KS1>
MmaKernelInfo pick_ks2(int ks2) {
  switch (ks2) {
    case 1: return info<C, KS1, 1>();
    case 2: return info<C, KS1, 2>();
    default: return info<C, KS1, 3>();
  }
}

template <int C>
MmaKernelInfo pick_ks1(int ks1, int ks2) {
  switch (ks1) {
    case 1: return pick_ks2<C, 1>(ks2);
    case 2: return pick_ks2<C, 2>(ks2);
    default: return pick_ks2<C, 3>(ks2);
  }
}

/// The constant border's value enters the tiles as an fp16 value: it has to
/// be exact there, as every u8 value is.
bool border_exact_in_fp16(const Border& border) {
  if (border.mode != BorderMode::constant) return true;
  const float v = border.value;
  return std::isfinite(v) && __half2float(__float2half_rn(v)) == v;
}

/// Scales v so that its largest magnitude lies in [0.5, 1); returns the
/// power of two applied (0 for an all-zero vector).
int normalise(float* v, int n) {
  float m = 0.0f;
  for (int i = 0; i < n; ++i) m = std::max(m, std::fabs(v[i]));
  if (m == 0.0f || !std::isfinite(m)) return 0;
  int e = 0;
  (void)std::frexp(m, &e);  // m = f * 2^e, f in [0.5, 1)
  for (int i = 0; i < n; ++i) v[i] = std::ldexp(v[i], -e);
  return -e;
}

/// The sides both separable tensor-core kernels share (taps, radii, the
/// 4-aligned tile start) and their factors, copied; false if a factor is not
/// finite or exceeds `limit` in magnitude.
template <typename K>
bool set_factors(K& k, const float* row, int nx, const float* col, int ny, float limit) {
  k.nx = nx;
  k.ny = ny;
  k.rx = nx / 2;
  k.ry = ny / 2;
  k.ral = (k.rx + 3) & ~3;
  for (int i = 0; i < nx; ++i)
    if (!std::isfinite(k.row[i] = row[i]) || std::fabs(row[i]) > limit) return false;
  for (int i = 0; i < ny; ++i)
    if (!std::isfinite(k.col[i] = col[i]) || std::fabs(col[i]) > limit) return false;
  return true;
}

/// Sum of |c - hi - lo| over n coefficients split into fp16 hi + lo as the
/// kernels split them (both rounded to nearest), and sum of |c|.
void split_miss(const float* c, int n, double* missed, double* l1) {
  *missed = 0.0;
  *l1 = 0.0;
  for (int i = 0; i < n; ++i) {
    const float hi = __half2float(__float2half_rn(c[i]));
    const float lo = __half2float(__float2half_rn(c[i] - hi));
    *missed += std::fabs(static_cast<double>(c[i]) - hi - lo);
    *l1 += std::fabs(static_cast<double>(c[i]));
  }
}

}  // namespace

bool make_mma_stream_coeffs(const float* row, int nx, const float* col, int ny, const Border& border,
                            MmaStreamCoeffs* out) {
  if (nx < 3 || ny < 3 || nx > 31 || ny > 31 || nx % 2 == 0 || ny % 2 == 0) return false;
  // A constant border enters the loaded rows as a byte: a whole grey level.
  MmaStreamCoeffs k{};
  if (!byte_border_word(border, &k.border_word)) return false;
  if (!set_factors(k, row, nx, col, ny, 32768.0f)) return false;
  // The tiles hold each byte b as b * 2^-24 (MmaStreamCoeffs::row): the row
  // factors take 2^sh, as large as keeps them below 2^15, the column factors
  // 2^(24 - sh), which must keep them below 2^15 too.
  float max_r = 0.0f, max_c = 0.0f;
  for (int i = 0; i < nx; ++i) max_r = std::max(max_r, std::fabs(k.row[i]));
  for (int i = 0; i < ny; ++i) max_c = std::max(max_c, std::fabs(k.col[i]));
  int er = 0, ec = 0;  // max < 2^e
  if (max_r > 0.0f) (void)std::frexp(max_r, &er);
  if (max_c > 0.0f) (void)std::frexp(max_c, &ec);
  const int sh = 15 - er, sv = 24 - sh;
  if (ec + sv > 15) return false;  // |row| * |col| reaches 2^6: no split fits fp16
  k.row_scale = sh;
  for (int i = 0; i < nx; ++i) k.row[i] = std::ldexp(k.row[i], sh);
  for (int i = 0; i < ny; ++i) k.col[i] = std::ldexp(k.col[i], sv);
  double miss_r = 0, l1_r = 0, miss_c = 0, l1_c = 0;
  split_miss(k.row, nx, &miss_r, &l1_r);
  split_miss(k.col, ny, &miss_c, &l1_c);
  k.lo = false;
  for (int i = 0; i < nx + ny; ++i) {
    const float c = i < nx ? k.row[i] : k.col[i - nx];
    if (__half2float(__float2half_rn(c)) != c) k.lo = true;
  }
  // Back to unscaled units.
  miss_r = std::ldexp(miss_r, -sh);
  l1_r = std::ldexp(l1_r, -sh);
  miss_c = std::ldexp(miss_c, -sv);
  l1_c = std::ldexp(l1_c, -sv);
  // The intermediate (|v| <= 255 * sum |row|) enters pass 2 as fp16 hi + lo
  // times 2^(sh - 24): at most 255 * 31 * 2^15 * 2^-24 < 16, far inside
  // fp16's range, for any factors that passed the test above.
  // What hi + lo miss of each factor, times the largest u8 value, and what
  // the fp16 hi + lo of the intermediate miss where it is subnormal (at most
  // 2^-25 each, in the kernel's units: 2^-sh of a grey level, times the
  // column factors), must stay within the FP32 kernels' own rounding: 2^-20
  // of the largest output magnitude, or 1e-3 of a grey level.
  const double miss = 255.0 * (miss_r * l1_c + l1_r * miss_c) + std::ldexp(l1_c, -sh);
  if (miss > std::max(1e-3, std::ldexp(255.0 * l1_r * l1_c, -20))) return false;
  // Both passes take 2 or 3 k-steps for sides 3..31 (the instances built).
  if (mma_ksteps(ny, 0) > 3 || mma_ksteps(nx, k.ral - k.rx) > 3) return false;
  *out = k;
  return true;
}

MmaKernelInfo mma_stream_kernel(int channels, const MmaStreamCoeffs& k, bool lean) {
  switch (channels) {
    case 1: return mma_stream_kernel_c1(k, lean);
    case 3: return mma_stream_kernel_c3(k, lean);
    default: return mma_stream_kernel_c4(k, lean);
  }
}

bool make_mma_stream_integer(const float* coeffs, MmaStreamCoeffs* k) {
  const int nx = k->nx, ny = k->ny;
  // One k32 step each way (sides up to 17, the row band's shift included).
  if (mma_ksteps(ny, 0) > 2 || mma_ksteps(nx, k->ral - k->rx) > 2) return false;
  auto at = [&](int y, int x) { return static_cast<double>(coeffs[static_cast<std::size_t>(y) * nx + x]); };
  // Non-negative coefficients (u8 x u8 products), not all zero.
  int px = 0, py = 0;
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x < nx; ++x) {
      if (!(at(y, x) >= 0.0)) return false;  // negative or NaN
      if (at(y, x) > at(py, px)) py = y, px = x;
    }
  if (at(py, px) == 0.0) return false;
  // Column factors: the pivot's column times the smallest power of two that
  // makes it whole numbers, divided by their common divisor.
  auto whole_after = [](const double* v, int n, int e) {
    for (int i = 0; i < n; ++i)
      if (std::ldexp(v[i], e) != std::floor(std::ldexp(v[i], e))) return false;
    return true;
  };
  double cv[32];
  for (int y = 0; y < ny; ++y) cv[y] = at(y, px);
  int b = 0;
  while (!whole_after(cv, ny, b))
    if (++b > 40) return false;
  for (int y = 0; y < ny; ++y)
    if (std::ldexp(cv[y], b) > 0x1p52) return false;  // whole numbers a long long holds exactly
  long long q[32] = {};
  long long gq = 0;
  for (int y = 0; y < ny; ++y) {
    q[y] = static_cast<long long>(std::ldexp(cv[y], b));
    gq = std::gcd(gq, q[y]);
  }
  for (int y = 0; y < ny; ++y)
    if ((q[y] /= gq) > 255) return false;
  // Row factors: the pivot's row over its column factor, times the smallest
  // power of two 2^a that makes every one a whole number up to 255.
  double u[32];
  for (int x = 0; x < nx; ++x) u[x] = at(py, x) / static_cast<double>(q[py]);
  int a = 0;
  while (!whole_after(u, nx, a))
    if (++a > 30) return false;
  long long p[32] = {};
  long long sp = 0, sq = 0;
  for (int x = 0; x < nx; ++x) {
    p[x] = static_cast<long long>(std::ldexp(u[x], a));
    if (p[x] > 255) return false;
    sp += p[x];
  }
  for (int y = 0; y < ny; ++y) sq += q[y];
  // Exactly the kernel: q[y] * p[x] / 2^a is every coefficient, bit for bit.
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x < nx; ++x)
      if (static_cast<double>(q[y] * p[x]) != std::ldexp(at(y, x), a)) return false;
  // Pass 1's sums fit 16 bits (they enter pass 2 as two bytes); the gain is at
  // most 1, so every output lies in 0..255 (no saturation); the whole sum
  // stays below 2^24 (exact in a float).
  if (255 * sp > 65535 || sp * sq > (1ll << a) || 255 * sp * sq >= (1ll << 24)) return false;
  for (int x = 0; x < nx; ++x) k->row[x] = static_cast<float>(p[x]);
  for (int y = 0; y < ny; ++y) k->col[y] = static_cast<float>(q[y]);
  k->int_shift = a;
  k->integer = true;
  k->lo = false;
  return true;
}

bool mma_stream_integer_factors(const float* coeffs, int nx, int ny, int* p, int* q, int* a) {
  if (nx < 1 || ny < 1 || nx > 31 || ny > 31 || nx % 2 == 0 || ny % 2 == 0) return false;
  MmaStreamCoeffs k{};
  k.nx = nx;
  k.ny = ny;
  k.rx = nx / 2;
  k.ry = ny / 2;
  k.ral = (k.rx + 3) & ~3;
  if (!make_mma_stream_integer(coeffs, &k)) return false;
  for (int x = 0; x < nx; ++x) p[x] = static_cast<int>(k.row[x]);
  for (int y = 0; y < ny; ++y) q[y] = static_cast<int>(k.col[y]);
  *a = k.int_shift;
  return true;
}

namespace {
/// fp16's half unit in the last place at magnitude m (its subnormal
/// spacing's half, 2^-25, below the normal range).
double half_ulp_fp16(double m) { return m < 0x1p-14 ? 0x1p-25 : std::ldexp(1.0, std::ilogb(m) - 11); }
/// What an fp32 sum of n terms whose partial sums stay within m can lose on
/// the tensor cores: 4 units in the last place a term (their accumulation
/// truncates and aligns with few guard bits, so not the half unit of a
/// rounded sum).
double fp32_sum_error(int n, double m) { return n * std::ldexp(m, -21); }
}  // namespace

double mma_stream_half_error_bound(const MmaStreamCoeffs& k) {
  // In grey levels: the factors as the kernel holds them are k.row * 2^-sh
  // and k.col * 2^-(24 - sh); the F16 kernels use their fp16 roundings R, C.
  const int sh = k.row_scale, sv = 24 - sh;
  double miss_r = 0, l1_r = 0, l1_rh = 0, miss_c = 0, l1_ch = 0;
  for (int i = 0; i < k.nx; ++i) {
    const double h = __half2float(__float2half_rn(k.row[i]));
    if (!std::isfinite(h)) return HUGE_VAL;
    miss_r += std::ldexp(std::fabs(k.row[i] - h), -sh);
    l1_r += std::ldexp(std::fabs(static_cast<double>(k.row[i])), -sh);
    l1_rh += std::ldexp(std::fabs(h), -sh);
  }
  for (int i = 0; i < k.ny; ++i) {
    const double h = __half2float(__float2half_rn(k.col[i]));
    if (!std::isfinite(h)) return HUGE_VAL;
    miss_c += std::ldexp(std::fabs(k.col[i] - h), -sv);
    l1_ch += std::ldexp(std::fabs(h), -sv);
  }
  // Pass 1: sum R x over nx taps in fp32 (|v| <= m1), then rounded to fp16,
  // where the value is held times 2^(sh - 24).
  const double m1 = 255.0 * l1_rh;
  const double e1 = fp32_sum_error(k.nx, m1) + std::ldexp(half_ulp_fp16(std::ldexp(m1, sh - 24)), 24 - sh);
  // Pass 2: sum C (v + e) over ny taps in fp32. Against the exact sum:
  // C's rounding times the exact intermediate, R's rounding and e times C.
  const double m2 = l1_ch * (m1 + e1);
  return l1_ch * (e1 + 255.0 * miss_r) + 255.0 * l1_r * miss_c + fp32_sum_error(k.ny, m2);
}

bool make_mma_stream_half(MmaStreamCoeffs* k) {
  // The F16 instances are built for both passes on the same k-steps, and
  // replace the LO ones only (exact factors keep theirs: no lo products).
  if (k->integer || !k->lo) return false;
  if (mma_ksteps(k->ny, 0) != mma_ksteps(k->nx, k->ral - k->rx)) return false;
  if (!(mma_stream_half_error_bound(*k) <= kStreamHalfMaxError)) return false;
  k->f16 = true;
  return true;
}

double mma_stream_half_bound(const float* row, int nx, const float* col, int ny) {
  MmaStreamCoeffs k{};
  if (!make_mma_stream_coeffs(row, nx, col, ny, Border{BorderMode::replicate, 0}, &k)) return HUGE_VAL;
  return mma_stream_half_error_bound(k);
}

double mma_dense_half_error_bound(const float* c, int n) {
  // Products of exact u8 values and fp16 coefficients summed in fp32.
  double miss = 0, l1h = 0;
  for (int i = 0; i < n; ++i) {
    const double h = __half2float(__float2half_rn(c[i]));
    if (!std::isfinite(c[i]) || !std::isfinite(h)) return HUGE_VAL;
    miss += std::fabs(c[i] - h);
    l1h += std::fabs(h);
  }
  return 255.0 * miss + fp32_sum_error(n, 255.0 * l1h);
}

bool make_mma_sep_coeffs(const float* row, int nx, const float* col, int ny, const Border& border,
                         MmaSepCoeffs* out) {
  if (nx < 1 || ny < 1 || nx > 31 || ny > 31 || nx % 2 == 0 || ny % 2 == 0) return false;
  if (!border_exact_in_fp16(border)) return false;
  MmaSepCoeffs k{};
  if (!set_factors(k, row, nx, col, ny, std::numeric_limits<float>::infinity())) return false;
  const int er = normalise(k.row, nx);
  const int ec = normalise(k.col, ny);
  k.out_scale = std::ldexp(1.0f, -(er + ec));
  // The intermediate (|v| <= 255 * sum |col|, at most 255 * 31 after scaling)
  // stays far inside fp16's range (65504); the scale must stay a normal float.
  if (!std::isfinite(k.out_scale) || k.out_scale == 0.0f) return false;
  *out = k;
  return true;
}

int mma_ks1(const MmaSepCoeffs& k) { return mma_ksteps(k.ny, 0); }
int mma_ks2(const MmaSepCoeffs& k) { return mma_ksteps(k.nx, k.ral - k.rx); }

bool make_mma_dense_coeffs(const float* coeffs, int kw, int kh, const Border& border, bool allow_half,
                           MmaDenseCoeffs* out) {
  constexpr int kMax = mma_dense_tuning::kMaxSide;
  if (kw < 1 || kh < 1 || kw > kMax || kh > kMax || kw % 2 == 0 || kh % 2 == 0) return false;
  if (!border_exact_in_fp16(border)) return false;
  MmaDenseCoeffs k{};
  k.kw = kw;
  k.kh = kh;
  k.rx = kw / 2;
  k.ry = kh / 2;
  const int n = kw * kh;
  // No scaling (it would cost a multiply per output): hi + lo are taken from
  // the coefficients as they are. hi holds 11 bits, lo the next 11 down to
  // fp16's subnormal step (2^-24); |c| must stay below fp16's largest value.
  // What hi + lo miss, times the largest u8 value, summed over the taps, must
  // stay within the FP32 kernels' own rounding: 2^-20 of the largest output
  // magnitude (255 * sum |c|), or 1e-3 of a grey level.
  double missed = 0.0, l1 = 0.0;
  k.has_lo = false;
  for (int i = 0; i < n; ++i) {
    const float c = coeffs[i];
    if (!std::isfinite(c) || std::fabs(c) > 32768.0f) return false;
    k.c[i] = c;
    const float hi = __half2float(__float2half_rn(c));
    const float lo = __half2float(__float2half_rn(c - hi));
    if (lo != 0.0f) k.has_lo = true;
    missed += std::fabs(static_cast<double>(c) - hi - lo);
    l1 += std::fabs(static_cast<double>(c));
  }
  if (missed * 255.0 > std::max(1e-3, std::ldexp(255.0 * l1, -20))) return false;
  // fp16 coefficients alone (the LO = false instance) where every output
  // then stays within 1 grey level of ref's (notes, run 44).
  if (k.has_lo && allow_half && mma_dense_half_error_bound(coeffs, n) <= kStreamHalfMaxError) {
    k.has_lo = false;
    k.half = true;
  }
  *out = k;
  return true;
}

MmaKernelInfo mma_sep_kernel(int channels, int ks1, int ks2) {
  switch (channels) {
    case 1: return pick_ks1<1>(ks1, ks2);
    case 3: return pick_ks1<3>(ks1, ks2);
    default: return pick_ks1<4>(ks1, ks2);
  }
}

}  // namespace pixelkit::detail::cuda_filter
