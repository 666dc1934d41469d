// The row-streaming kernel's instances for three channels
// (stream_pick<3>, filter_cuda_stream.cuh; filter_cuda_stream.hpp says why a file each).
#include "filter/filter_cuda_stream.cuh"

namespace pixelkit::detail::cuda_filter {

StreamKernelInfo stream_kernel_c3(StreamInstance which) { return stream_pick<3>(which); }

}  // namespace pixelkit::detail::cuda_filter
