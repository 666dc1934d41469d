// The streaming tensor-core kernel's instances for one channel
// (mma_stream_pick<1>, filter_cuda_mma_stream.cuh, says why a file each).
#include "filter/filter_cuda_mma.hpp"
#include "filter/filter_cuda_mma_stream.cuh"

namespace pixelkit::detail::cuda_filter {

MmaKernelInfo mma_stream_kernel_c1(const MmaStreamCoeffs& k, bool lean) { return mma_stream_pick<1>(k, lean); }

}  // namespace pixelkit::detail::cuda_filter
