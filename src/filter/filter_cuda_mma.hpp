// The tensor-core separable filter's host interface (filter_cuda_mma.cu);
// included by filter_cuda.cu, which launches it.
#pragma once

#include "pixelkit/border.hpp"

namespace pixelkit::detail::cuda_filter {

struct MmaSepCoeffs;

/// Fills `out` and returns true when the separable kernel row (nx taps) x col
/// (ny taps) can take the tensor-core path with this border: odd sides up to
/// 31, finite coefficients, and a constant border value exact in fp16.
bool make_mma_sep_coeffs(const float* row, int nx, const float* col, int ny, const Border& border,
                         MmaSepCoeffs* out);

/// k-steps (1..3) of the vertical and horizontal passes.
int mma_ks1(const MmaSepCoeffs& k);
int mma_ks2(const MmaSepCoeffs& k);

struct MmaSepKernelInfo {
  const void* fn;  ///< separable_mma_kernel<C, KS1, KS2>
  int smem_bytes;  ///< dynamic shared memory it needs
};

/// The kernel for 1, 3 or 4 channels and the given k-steps.
MmaSepKernelInfo mma_sep_kernel(int channels, int ks1, int ks2);

}  // namespace pixelkit::detail::cuda_filter
