// The filter's backends, behind the one dispatch in filter.cpp. Each receives
// views that dispatch has already checked: same size, type and channels, no
// overlap, memory matching the backend, kernel sides odd and 1..31.
#pragma once

#include <memory>
#include <string>

#include "pixelkit/filter.hpp"

namespace pixelkit::detail {

/// filter_ref.cpp: the definition. Double accumulation, OpenCV rounding.
void filter_ref(const ConstImageView& src, const ImageView& dst, const Kernel& kernel,
                const Border& border);

/// filter_cpu.cpp: SIMD + OpenMP; separable kernels as two 1D passes.
/// Returns a short description of the path taken (for --verbose).
std::string filter_cpu(const ConstImageView& src, const ImageView& dst, const Kernel& kernel,
                       const Border& border, int threads);

/// filter_cuda.cu: the CUDA backend. Created once per Filter2D; holds the
/// kernel's coefficients and grow-only device/pinned scratch and streams.
class CudaFilter {
 public:
  virtual ~CudaFilter() = default;
  /// Both views in device memory: queued on `stream`, returns at once.
  virtual std::string run_device(const ConstImageView& src, const ImageView& dst,
                                 stream_t stream) = 0;
  /// Host views (pageable or pinned): strips through device buffers with
  /// upload / compute / download overlapped; returns when dst is complete.
  virtual std::string run_host(const ConstImageView& src, const ImageView& dst,
                               stream_t stream) = 0;
};

/// Defined in filter_cuda.cu (CUDA builds only).
std::unique_ptr<CudaFilter> make_cuda_filter(const Kernel& kernel, const Border& border);

}  // namespace pixelkit::detail
