// GPU faults (issue 8): a failing CUDA call becomes a pixelkit::Error that
// names the call, with `out_of_memory` for allocation failures and `cuda`
// otherwise, and leaves no error behind in the runtime, so that the next
// pixelkit call on the GPU works and gives ref's answer. (Device allocation
// failures inside the operations are in tests/test_limits.cpp, LimitsGpu.*.)
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pixelkit/config.hpp"
#include "pixelkit/error.hpp"
#include "pixelkit/filter.hpp"
#include "test_support.hpp"

#if PIXELKIT_WITH_CUDA
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#endif

namespace pixelkit::test {
namespace {

#if PIXELKIT_WITH_CUDA
/// A cuda filter right after a failure equals ref's.
void expect_cuda_filter_still_works() {
  const Image src = random_image(97, 61, 3, PixelType::u8, 4242);
  const Kernel k = parse_kernel("gaussian:5");
  Image want(97, 61, 3, PixelType::u8), got(97, 61, 3, PixelType::u8);
  Options ref;
  ref.backend = Backend::ref;
  filter2d(src, want, k, Border{}, ref);
  Options cuda;
  cuda.backend = Backend::cuda;
  filter2d(src, got, k, Border{}, cuda);
  EXPECT_TRUE(agrees(got, want));
}

std::string message_of(void (*f)(), Status* status) {
  try {
    f();
  } catch (const Error& e) {
    *status = e.status();
    return e.what();
  }
  return {};
}
#endif

TEST(CudaErrors, AFailingCallNamesTheCallAndLeavesNoErrorBehind) {
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_WITH_CUDA
  Status status = Status::internal;
  // A copy to a null device pointer: cudaErrorInvalidValue, not sticky.
  const std::string what = message_of(
      [] {
        std::vector<std::uint8_t> host(64, 7);
        PIXELKIT_CUDA_TRY(cudaMemcpy(nullptr, host.data(), host.size(), cudaMemcpyHostToDevice));
      },
      &status);
  EXPECT_EQ(status, Status::cuda);
  EXPECT_NE(what.find("cudaMemcpy(nullptr, host.data(), host.size(), cudaMemcpyHostToDevice)"), std::string::npos)
      << what;
  EXPECT_NE(what.find(cudaGetErrorString(cudaErrorInvalidValue)), std::string::npos) << what;
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  expect_cuda_filter_still_works();
#endif
}

TEST(CudaErrors, AFailedAllocationIsOutOfMemoryAndLeavesNoErrorBehind) {
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_WITH_CUDA
  Status status = Status::internal;
  const std::string what = message_of(
      [] {
        void* p = nullptr;
        PIXELKIT_CUDA_TRY(cudaMalloc(&p, std::size_t{1} << 60));  // an exbibyte
        cudaFree(p);
      },
      &status);
  EXPECT_EQ(status, Status::out_of_memory);
  EXPECT_NE(what.find("cudaMalloc(&p, std::size_t{1} << 60)"), std::string::npos) << what;
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  expect_cuda_filter_still_works();
#endif
}

TEST(CudaErrors, ABadLaunchConfigurationNamesTheKernel) {
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_WITH_CUDA
  // What PIXELKIT_CUDA_CHECK_LAUNCH sees after a launch that the runtime
  // refused: here the error is made by a runtime call that records it as the
  // last error (an invalid device ordinal), then checked as a launch would be.
  ASSERT_NE(cudaSetDevice(-1), cudaSuccess);
  Status status = Status::internal;
  const std::string what = message_of([] { PIXELKIT_CUDA_CHECK_LAUNCH("some_kernel"); }, &status);
  EXPECT_EQ(status, Status::cuda);
  EXPECT_NE(what.find("launch some_kernel"), std::string::npos) << what;
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  expect_cuda_filter_still_works();
#endif
}

}  // namespace
}  // namespace pixelkit::test
