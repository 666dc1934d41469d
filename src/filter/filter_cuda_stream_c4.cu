// The row-streaming kernel's instances for four channels
// (stream_pick<4>, filter_cuda_stream.cuh; filter_cuda_stream.hpp says why a file each).
#include "filter/filter_cuda_stream.cuh"

namespace pixelkit::detail::cuda_filter {

StreamKernelInfo stream_kernel_c4(StreamInstance which) { return stream_pick<4>(which); }

}  // namespace pixelkit::detail::cuda_filter
