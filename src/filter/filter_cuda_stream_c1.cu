// The row-streaming kernel's instances for one channel
// (stream_pick<1>, filter_cuda_stream.cuh; filter_cuda_stream.hpp says why a file each).
#include "filter/filter_cuda_stream.cuh"

namespace pixelkit::detail::cuda_filter {

StreamKernelInfo stream_kernel_c1(StreamInstance which) { return stream_pick<1>(which); }

}  // namespace pixelkit::detail::cuda_filter
