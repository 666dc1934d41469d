// The dense tensor-core kernel's instances (dense_mma_kernel,
// filter_cuda_mma_dense.cuh) and the table that picks one: mma_dense_kernel
// (filter_cuda_mma.hpp). The coefficient checks and bounds are in
// filter_cuda_mma.cu; the launch in filter_cuda.cu.
//
// A file of its own so that the CUDA runtime loads these instances as one
// module (lazy loading loads a file's module on the first launch of any of
// its kernels) and so that the build spreads them over its jobs.
#include "filter/filter_cuda_mma.hpp"
#include "filter/filter_cuda_mma_dense.cuh"

namespace pixelkit::detail::cuda_filter {

namespace {

template <int C, int KH, bool P>
MmaKernelInfo dense_info(bool lo, bool short_tiles) {
  const void* fn = lo ? reinterpret_cast<const void*>(dense_mma_kernel<C, KH, P, true>)
                      : reinterpret_cast<const void*>(dense_mma_kernel<C, KH, P, false>);
  if constexpr (mma_dense_tuning::has_short_tiles(C, KH, P)) {
    if (short_tiles)
      fn = lo ? reinterpret_cast<const void*>(dense_mma_kernel<C, KH, P, true, true>)
              : reinterpret_cast<const void*>(dense_mma_kernel<C, KH, P, false, true>);
  }
  return {fn, MmaDenseGeom<C, KH, P>::kSmemBytes};
}

template <int C, bool P>
MmaKernelInfo dense_pick_kh(int kh, bool lo, bool short_tiles) {
  switch (kh) {
    case 1: return dense_info<C, 1, P>(lo, short_tiles);
    case 3: return dense_info<C, 3, P>(lo, short_tiles);
    case 5: return dense_info<C, 5, P>(lo, short_tiles);
    case 7: return dense_info<C, 7, P>(lo, short_tiles);
    default: return dense_info<C, 9, P>(lo, short_tiles);
  }
}

}  // namespace

MmaKernelInfo mma_dense_kernel(int channels, const MmaDenseCoeffs& k, bool short_tiles) {
  // The element-domain tile serves kernels whose reach is at most 4
  // interleaved elements; the planar one, any width up to 9.
  const bool s = short_tiles;
  switch (channels) {
    case 1: return dense_pick_kh<1, false>(k.kh, k.has_lo, s);
    case 3:
      return mma_dense_planar(3, k.kw) ? dense_pick_kh<3, true>(k.kh, k.has_lo, s)
                                       : dense_pick_kh<3, false>(k.kh, k.has_lo, s);
    default:
      return mma_dense_planar(4, k.kw) ? dense_pick_kh<4, true>(k.kh, k.has_lo, s)
                                       : dense_pick_kh<4, false>(k.kh, k.has_lo, s);
  }
}

}  // namespace pixelkit::detail::cuda_filter
