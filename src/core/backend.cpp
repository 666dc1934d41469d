#include "pixelkit/backend.hpp"

#include <omp.h>

#include <string>

#include "pixelkit/config.hpp"
#if PIXELKIT_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace pixelkit {

Backend parse_backend(const std::string& text) {
  if (text == "auto") return Backend::automatic;
  if (text == "ref") return Backend::ref;
  if (text == "cpu") return Backend::cpu;
  if (text == "cuda") return Backend::cuda;
  throw Error(Status::invalid_argument, "backend '" + text + "' is not one of auto, ref, cpu, cuda");
}

const char* to_string(Backend backend) noexcept {
  switch (backend) {
    case Backend::automatic: return "auto";
    case Backend::ref: return "ref";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
  }
  return "?";
}

bool built_with_cuda() noexcept { return PIXELKIT_WITH_CUDA != 0; }

bool cuda_available() noexcept {
#if PIXELKIT_WITH_CUDA
  static const bool available = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return n > 0;
  }();
  return available;
#else
  return false;
#endif
}

std::string cuda_device_name() {
#if PIXELKIT_WITH_CUDA
  if (!cuda_available()) return {};
  cudaDeviceProp prop{};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  return prop.name;
#else
  return {};
#endif
}

void cuda_init() {
  PIXELKIT_EXPECTS(built_with_cuda(), Status::unsupported,
                   "cuda_init: this build of pixelkit has no CUDA backend (nvcc was not found at build time)");
  PIXELKIT_EXPECTS(cuda_available(), Status::unsupported, "cuda_init: no usable CUDA device was found");
#if PIXELKIT_WITH_CUDA
  const cudaError_t e = cudaFree(nullptr);  // the runtime's documented way to create the context
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(Status::unsupported, std::string("cuda_init: the CUDA context could not be created: ") +
                                         cudaGetErrorString(e));
  }
#endif
}

Backend resolve_backend(Backend requested, Memory memory) {
  if (requested == Backend::automatic) {
    if (memory == Memory::device) return Backend::cuda;
    return cuda_available() ? Backend::cuda : Backend::cpu;
  }
  if (requested == Backend::cuda) {
    PIXELKIT_EXPECTS(built_with_cuda(), Status::unsupported,
                     "backend cuda: this build of pixelkit has no CUDA backend (nvcc was not found at build time)");
    PIXELKIT_EXPECTS(cuda_available(), Status::unsupported,
                     "backend cuda: no usable CUDA device was found");
    return requested;
  }
  PIXELKIT_EXPECTS(memory != Memory::device, Status::invalid_argument,
                   std::string("backend ") + to_string(requested) +
                       " runs on the host, but the image is in device memory (use backend cuda or copy it to the host)");
  return requested;
}

int resolve_threads(int requested) noexcept {
  if (requested > 0) return requested;
  const int n = omp_get_max_threads();
  return n > 0 ? n : 1;
}

}  // namespace pixelkit
