// bench_npp.hpp - what the benchmark programs need to call NPP's stream-context
// (*_Ctx) functions: the NppStreamContext of a stream, filled from the device's
// properties. Benchmarks only (NPP is a peer to measure against, never a
// dependency of the library); include it where PIXELKIT_BENCH_HAVE_NPP is set.
#pragma once

#include <cuda_runtime.h>
#include <nppdefs.h>

#include <stdexcept>
#include <string>

namespace pixelkit::bench {

/// The context NPP's *_Ctx calls take for `stream` (current device).
inline NppStreamContext npp_context(cudaStream_t stream) {
  auto check = [](cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string("npp_context: ") + what + ": " + cudaGetErrorString(e));
  };
  NppStreamContext c{};
  c.hStream = stream;
  check(cudaGetDevice(&c.nCudaDeviceId), "cudaGetDevice");
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, c.nCudaDeviceId), "cudaGetDeviceProperties");
  c.nMultiProcessorCount = p.multiProcessorCount;
  c.nMaxThreadsPerMultiProcessor = p.maxThreadsPerMultiProcessor;
  c.nMaxThreadsPerBlock = p.maxThreadsPerBlock;
  c.nSharedMemPerBlock = p.sharedMemPerBlock;
  c.nCudaDevAttrComputeCapabilityMajor = p.major;
  c.nCudaDevAttrComputeCapabilityMinor = p.minor;
  unsigned flags = 0;
  check(cudaStreamGetFlags(stream, &flags), "cudaStreamGetFlags");
  c.nStreamFlags = flags;
  return c;
}

}  // namespace pixelkit::bench
