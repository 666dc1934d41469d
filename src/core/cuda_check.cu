#include "core/cuda_check.hpp"

#include <string>

namespace pixelkit::detail {

void throw_cuda(cudaError_t error, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  std::string message = std::string(call) + ": " + cudaGetErrorString(error);
  (void)file;
  (void)line;
  if (error == cudaErrorMemoryAllocation) throw Error(Status::out_of_memory, message);
  throw Error(Status::cuda, message);
}

}  // namespace pixelkit::detail
