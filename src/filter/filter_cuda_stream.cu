// Host side of the row-streaming filter (kernel: filter_cuda_stream.cuh):
// which instance a kernel takes (the instances themselves are in
// filter_cuda_stream_c1.cu, _c3.cu, _c4.cu), its coefficients and its band
// rule. The launch is in filter_cuda.cu, beside the other paths.
#include <cmath>
#include <cstring>

#include <cuda_fp16.h>

#include "filter/filter_cuda_mma.hpp"  // mma_stream_integer_factors
#include "filter/filter_cuda_stream.cuh"
#include "filter/filter_cuda_stream.hpp"

namespace pixelkit::detail::cuda_filter {

namespace {

/// The instance `which` for `channels` channels, from its channel count's file.
StreamKernelInfo pick(int channels, StreamInstance which) {
  switch (channels) {
    case 1: return stream_kernel_c1(which);
    case 3: return stream_kernel_c3(which);
    case 4: return stream_kernel_c4(which);
    default: return {};
  }
}

/// Whether the n x n kernel is exactly q[y] * p[x] / 2^a with whole numbers
/// p, q >= 0, a gain of at most 1 and a <= 8 (the integer instances' bound).
bool integer_factors(const Kernel& kernel, int n, int* ip, int* iq, int* a) {
  return mma_stream_integer_factors(kernel.coeffs.data(), n, n, ip, iq, a) && *a <= 8;
}

}  // namespace

namespace {
/// c * 2^14 rounded to fp16, as the fp16 instance holds its coefficients.
__half scaled_half(float c) { return __float2half_rn(std::ldexp(c, kStreamHalfScale)); }

/// An fp16 operation's result is at most m in magnitude, held as m * 2^-10:
/// fp16's half unit in the last place there is 2^(e - 11) for m in [2^e,
/// 2^(e+1)) once m * 2^-10 is normal (m >= 2^-4), else half the subnormal
/// spacing, 2^-25, i.e. 2^-15 at the true scale.
double half_ulp(double m) {
  return m < std::ldexp(1.0, -4) ? std::ldexp(1.0, -15) : std::ldexp(1.0, std::ilogb(m) - 11);
}

/// One product of a running fp16 sum (a product or a multiply-add) with
/// coefficient c: its rounding to fp16 times 255 and its reach (255 |c|) go
/// into *err and *reach, then the operation's own rounding. False for a
/// coefficient that is not finite or beyond fp16's range when scaled.
bool add_half_product(float c, double* err, double* reach) {
  if (!std::isfinite(c)) return false;
  const double h = std::ldexp(static_cast<double>(__half2float(scaled_half(c))), -kStreamHalfScale);
  if (!std::isfinite(h)) return false;  // |c| beyond 65504 / 2^14
  *err += 255.0 * std::fabs(static_cast<double>(c) - h);
  *reach += 255.0 * std::fabs(h);
  *err += half_ulp(*reach + *err);
  return true;
}
}  // namespace

double stream_half_error_bound(const float* c) {
  double err = 0, reach = 0;
  for (int i = 0; i < 9; ++i)
    if (!add_half_product(c[i], &err, &reach)) return HUGE_VAL;
  return err;
}

double stream_regs5_half_error_bound(const float* c) {
  // Each kernel row's 5 products as stream_half_error_bound takes its 9 (a
  // product, then multiply-adds), then the row sums added in order.
  double err = 0, reach = 0;
  for (int y = 0; y < 5; ++y) {
    double row_err = 0, row_reach = 0;
    for (int x = 0; x < 5; ++x)
      if (!add_half_product(c[5 * y + x], &row_err, &row_reach)) return HUGE_VAL;
    err += row_err;
    reach += row_reach;
    if (y > 0) err += half_ulp(reach + err);
  }
  return err;
}

double peak_dram_gbps_per_sm(int mem_clock_khz, int bus_bits, int sms) {
  if (mem_clock_khz <= 0 || bus_bits <= 0 || sms <= 0) return 0.0;
  return 2.0 * mem_clock_khz * 1e3 * (bus_bits / 8.0) / sms / 1e9;
}

bool stream_bands_by_rule(int side, long long segs16, long long wave, double gbps_per_sm, int channels) {
  return stream_tuning::bands_by_rule(side, segs16, wave, gbps_per_sm >= kStreamFastMemoryGBpsPerSM, channels);
}

namespace {
/// int5sym's condition on make_stream_coeffs's factors (iq already scaled to
/// the divisor 2^8): both symmetric, both outer ones 1.
bool symmetric_outer_one(const int* ip, const int* iq) {
  return ip[0] == 1 && iq[0] == 1 && ip[0] == ip[4] && ip[1] == ip[3] && iq[0] == iq[4] && iq[1] == iq[3];
}
/// ip and iq as make_stream_coeffs sets them; false where the kernel has no
/// such factors.
bool stream_integer_coeffs(const Kernel& kernel, int n, int* ip, int* iq) {
  int a = 0;
  if (!integer_factors(kernel, n, ip, iq, &a)) return false;
  for (int i = 0; i < n; ++i) iq[i] <<= 8 - a;
  return true;
}
}  // namespace

StreamKernelInfo stream_kernel_for(int channels, const Kernel& kernel, bool allow_int, bool allow_half,
                                   bool allow_sym) {
  if (kernel.width == 5 && kernel.height == 5) {
    if (!kernel.separable) {
      if (allow_half && stream_regs5_half_error_bound(kernel.coeffs.data()) <= kStreamHalfMaxError)
        return pick(channels, StreamInstance::half5);
      return {};
    }
    if (!allow_int) return {};
    int ip[5], iq[5];
    if (allow_sym && stream_integer_coeffs(kernel, 5, ip, iq) && symmetric_outer_one(ip, iq))
      return pick(channels, StreamInstance::int5sym);
    return pick(channels, StreamInstance::int5);
  }
  if (kernel.width != 3 || kernel.height != 3) return {};
  const bool sep = kernel.separable && kernel.row.size() == 3 && kernel.col.size() == 3;
  int ip[3], iq[3], a = 0;
  if (sep && allow_int && integer_factors(kernel, 3, ip, iq, &a)) return pick(channels, StreamInstance::int3);
  if (!sep && allow_half && stream_half_error_bound(kernel.coeffs.data()) <= kStreamHalfMaxError)
    return pick(channels, StreamInstance::half);
  return pick(channels, sep ? StreamInstance::separable : StreamInstance::dense);
}

bool make_stream_coeffs(const Kernel& kernel, const Border& border, const StreamKernelInfo& info, StreamParams* p) {
  if (info.fn == nullptr && info.regs_fn == nullptr) return false;
  unsigned v = 0;
  if (!byte_border_word(border, &v)) return false;
  for (float c : kernel.coeffs)
    if (!std::isfinite(c)) return false;
  p->border_word = v;
  if (info.integer) {
    // q[y] * p[x] / 2^a with a gain of at most 1 (sum p * sum q <= 2^a); the
    // kernel divides by 2^8, so q takes the other 2^(8 - a).
    const int n = info.side;
    int ip[5], iq[5];
    if (!stream_integer_coeffs(kernel, n, ip, iq)) return false;
    if (info.symmetric && !(n == 5 && symmetric_outer_one(ip, iq))) return false;
    for (int i = 0; i < n; ++i) p->ip[i] = ip[i], p->iq[i] = iq[i];
    return true;
  }
  if (info.half) {
    const int n = info.side * info.side;
    unsigned* const hc = info.side == 5 ? p->hc5 : p->hc;
    for (int i = 0; i < n; ++i) {
      const __half h = scaled_half(kernel.coeffs[static_cast<std::size_t>(i)]);
      unsigned short u = 0;
      std::memcpy(&u, &h, sizeof u);
      hc[i] = static_cast<unsigned>(u) * 0x00010001u;
    }
    return true;
  }
  if (info.separable) {
    for (int i = 0; i < 3; ++i) p->row[i] = kernel.row[static_cast<std::size_t>(i)];
    for (int i = 0; i < 3; ++i) p->col[i] = kernel.col[static_cast<std::size_t>(i)];
  } else {
    for (int i = 0; i < 9; ++i) p->c[i] = kernel.coeffs[static_cast<std::size_t>(i)];
  }
  return true;
}

}  // namespace pixelkit::detail::cuda_filter
