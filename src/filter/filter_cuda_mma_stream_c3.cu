// The streaming tensor-core kernel's instances for three channels
// (mma_stream_pick<3>, filter_cuda_mma_stream.cuh, says why a file each).
#include "filter/filter_cuda_mma.hpp"
#include "filter/filter_cuda_mma_stream.cuh"

namespace pixelkit::detail::cuda_filter {

MmaKernelInfo mma_stream_kernel_c3(const MmaStreamCoeffs& k, bool lean) { return mma_stream_pick<3>(k, lean); }

}  // namespace pixelkit::detail::cuda_filter
