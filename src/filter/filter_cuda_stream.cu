// Host side of the row-streaming filter (kernel: filter_cuda_stream.cuh):
// which kernels it takes and its instance table. The launch is in
// filter_cuda.cu, beside the other paths.
#include <cmath>

#include "filter/filter_cuda_mma.hpp"  // mma_stream_integer_factors
#include "filter/filter_cuda_stream.cuh"
#include "filter/filter_cuda_stream.hpp"

namespace pixelkit::detail::cuda_filter {

namespace {

template <int C>
StreamKernelInfo info(bool separable) {
  const void* fn = separable ? reinterpret_cast<const void*>(stream_kernel<C, true>)
                             : reinterpret_cast<const void*>(stream_kernel<C, false>);
  const void* band_fn = separable ? fn : reinterpret_cast<const void*>(stream_kernel<C, false, true>);
  return {fn, band_fn, stream_tuning::kSmemBytes, separable, stream_tuning::kStripBytes, 3, false};
}

/// The integer instances (K = 3 or 5: separable, whole-number factors).
template <int C, int K>
StreamKernelInfo info_int() {
  return {reinterpret_cast<const void*>(stream_kernel<C, true, false, K, true>),
          reinterpret_cast<const void*>(stream_kernel<C, true, true, K, true>), stream_tuning::kSmemBytes, true,
          stream_tuning::kStripBytes, K, true};
}

template <int K>
StreamKernelInfo info_int(int channels) {
  switch (channels) {
    case 1: return info_int<1, K>();
    case 3: return info_int<3, K>();
    case 4: return info_int<4, K>();
    default: return {};
  }
}

/// Whether the n x n kernel is exactly q[y] * p[x] / 2^a with whole numbers
/// p, q >= 0, a gain of at most 1 and a <= 8 (the integer instances' bound).
bool integer_factors(const Kernel& kernel, int n, int* ip, int* iq, int* a) {
  return mma_stream_integer_factors(kernel.coeffs.data(), n, n, ip, iq, a) && *a <= 8;
}

}  // namespace

StreamKernelInfo stream_kernel_for(int channels, const Kernel& kernel, bool allow_int) {
  if (kernel.width == 5 && kernel.height == 5) {
    if (!kernel.separable || !allow_int) return {};
    return info_int<5>(channels);
  }
  if (kernel.width != 3 || kernel.height != 3) return {};
  const bool sep = kernel.separable && kernel.row.size() == 3 && kernel.col.size() == 3;
  int ip[3], iq[3], a = 0;
  if (sep && allow_int && integer_factors(kernel, 3, ip, iq, &a)) return info_int<3>(channels);
  switch (channels) {
    case 1: return info<1>(sep);
    case 3: return info<3>(sep);
    case 4: return info<4>(sep);
    default: return {};
  }
}

bool make_stream_coeffs(const Kernel& kernel, const Border& border, const StreamKernelInfo& info, StreamParams* p) {
  if (info.fn == nullptr) return false;
  unsigned v = 0;
  if (!byte_border_word(border, &v)) return false;
  for (float c : kernel.coeffs)
    if (!std::isfinite(c)) return false;
  p->border_word = v;
  if (info.integer) {
    // q[y] * p[x] / 2^a with a gain of at most 1 (sum p * sum q <= 2^a); the
    // kernel divides by 2^8, so q takes the other 2^(8 - a).
    const int n = info.side;
    int ip[5], iq[5], a = 0;
    if (!integer_factors(kernel, n, ip, iq, &a)) return false;
    for (int i = 0; i < n; ++i) p->ip[i] = ip[i], p->iq[i] = iq[i] << (8 - a);
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
