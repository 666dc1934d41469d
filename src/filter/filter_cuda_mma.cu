// Host side of the tensor-core separable filter (kernel: filter_cuda_mma.cuh):
// which kernels it takes, the coefficient scaling, and the kernel table. The
// launch itself is in filter_cuda.cu, beside the other paths.
#include <algorithm>
#include <cmath>

#include <cuda_fp16.h>

#include "filter/filter_cuda_mma.cuh"
#include "filter/filter_cuda_mma.hpp"

namespace pixelkit::detail::cuda_filter {

namespace {

template <int C, int KS1, int KS2>
MmaSepKernelInfo info() {
  return {reinterpret_cast<const void*>(separable_mma_kernel<C, KS1, KS2>), MmaGeom<C, KS1, KS2>::kSmemBytes};
}

template <int C, int KS1>
MmaSepKernelInfo pick_ks2(int ks2) {
  switch (ks2) {
    case 1: return info<C, KS1, 1>();
    case 2: return info<C, KS1, 2>();
    default: return info<C, KS1, 3>();
  }
}

template <int C>
MmaSepKernelInfo pick_ks1(int ks1, int ks2) {
  switch (ks1) {
    case 1: return pick_ks2<C, 1>(ks2);
    case 2: return pick_ks2<C, 2>(ks2);
    default: return pick_ks2<C, 3>(ks2);
  }
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

}  // namespace

bool make_mma_sep_coeffs(const float* row, int nx, const float* col, int ny, const Border& border,
                         MmaSepCoeffs* out) {
  if (nx < 1 || ny < 1 || nx > 31 || ny > 31 || nx % 2 == 0 || ny % 2 == 0) return false;
  // The constant border's value enters the tile as an fp16 value: it has to
  // be exact there, as every u8 value is.
  if (border.mode == BorderMode::constant) {
    const float v = border.value;
    if (!std::isfinite(v) || __half2float(__float2half_rn(v)) != v) return false;
  }
  MmaSepCoeffs k{};
  k.nx = nx;
  k.ny = ny;
  k.rx = nx / 2;
  k.ry = ny / 2;
  k.ral = (k.rx + 3) & ~3;
  for (int i = 0; i < nx; ++i) k.row[i] = row[i];
  for (int i = 0; i < ny; ++i) k.col[i] = col[i];
  for (int i = 0; i < nx; ++i)
    if (!std::isfinite(row[i])) return false;
  for (int i = 0; i < ny; ++i)
    if (!std::isfinite(col[i])) return false;
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

MmaSepKernelInfo mma_sep_kernel(int channels, int ks1, int ks2) {
  switch (channels) {
    case 1: return pick_ks1<1>(ks1, ks2);
    case 3: return pick_ks1<3>(ks1, ks2);
    default: return pick_ks1<4>(ks1, ks2);
  }
}

}  // namespace pixelkit::detail::cuda_filter
