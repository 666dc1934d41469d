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
#include "core/cuda_tma.hpp"
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

TEST(CudaTma, TensorMapsOnlyForLayoutsTmaCanRead) {
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_WITH_CUDA
  // core/cuda_tma.hpp: a map is refused (false, no throw, no error left in
  // the runtime) for a base off a 16-byte boundary, a pitch that is not a
  // multiple of 16, a box row that is not whole 16-byte units or a box side
  // above 256; on a device with TMA an aligned layout gets one.
  void* buf = nullptr;
  ASSERT_EQ(cudaMalloc(&buf, 1 << 20), cudaSuccess);
  const auto* base = static_cast<const std::uint8_t*>(buf);
  CUtensorMap map{};
  EXPECT_FALSE(pixelkit::detail::encode_tma_2d_u32(&map, base + 4, 256, 64, 1024, 64, 16));
  EXPECT_FALSE(pixelkit::detail::encode_tma_2d_u32(&map, base, 256, 64, 1000, 64, 16));
  EXPECT_FALSE(pixelkit::detail::encode_tma_2d_u32(&map, base, 256, 64, 1024, 62, 16));
  EXPECT_FALSE(pixelkit::detail::encode_tma_2d_u32(&map, base, 256, 64, 1024, 64, 257));
  EXPECT_FALSE(pixelkit::detail::encode_tma_2d_u32(&map, base, 0, 64, 1024, 64, 16));
  if (pixelkit::detail::tma_available()) {
    EXPECT_TRUE(pixelkit::detail::encode_tma_2d_u32(&map, base, 256, 64, 1024, 64, 16));
  }
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  cudaFree(buf);
#endif
}

TEST(CudaInit, CreatesTheContextOrSaysWhyNot) {
  if (!cuda_available()) {
    // No CUDA build or no device: one clear unsupported error, on every call.
    for (int i = 0; i < 2; ++i) {
      try {
        cuda_init();
        ADD_FAILURE() << "cuda_init succeeded without a usable device";
      } catch (const Error& e) {
        EXPECT_EQ(e.status(), Status::unsupported);
        EXPECT_NE(std::string(e.what()).find("cuda_init: "), std::string::npos) << e.what();
      }
    }
    return;
  }
#if PIXELKIT_WITH_CUDA
  EXPECT_NO_THROW(cuda_init());
  EXPECT_NO_THROW(cuda_init());  // again: a no-op
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  expect_cuda_filter_still_works();
#endif
}

}  // namespace
}  // namespace pixelkit::test
