// CUDA error handling: every runtime call and every launch goes through
// PIXELKIT_CUDA_TRY, which turns a failure into pixelkit::Error naming the
// call. Only compiled into builds with CUDA.
#pragma once

#include <cuda_runtime.h>

#include "pixelkit/error.hpp"

namespace pixelkit::detail {

/// Throws Error(out_of_memory) for allocation failures, Error(cuda) otherwise,
/// with "<call>: <cuda error string>" as the message. Clears the runtime's
/// non-sticky last error first, so the next pixelkit call starts clean.
[[noreturn]] void throw_cuda(cudaError_t error, const char* call, const char* file, int line);

}  // namespace pixelkit::detail

#define PIXELKIT_CUDA_TRY(call)                                                   \
  do {                                                                            \
    const cudaError_t pixelkit_err_ = (call);                                     \
    if (pixelkit_err_ != cudaSuccess)                                             \
      ::pixelkit::detail::throw_cuda(pixelkit_err_, #call, __FILE__, __LINE__);   \
  } while (0)

/// After a <<<>>> launch: checks the launch itself (configuration errors).
#define PIXELKIT_CUDA_CHECK_LAUNCH(kernel_name)                                   \
  do {                                                                            \
    const cudaError_t pixelkit_err_ = cudaGetLastError();                         \
    if (pixelkit_err_ != cudaSuccess)                                             \
      ::pixelkit::detail::throw_cuda(pixelkit_err_, "launch " kernel_name, __FILE__, __LINE__); \
  } while (0)
