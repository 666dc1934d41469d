#include "core/cuda_tma.hpp"

#include <cuda_runtime.h>
#include <cudaTypedefs.h>

namespace pixelkit::detail {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      p = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

}  // namespace

bool tma_available() {
  int dev = 0, major = 0;
  const bool ok = cudaGetDevice(&dev) == cudaSuccess &&
                  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess;
  if (!ok) (void)cudaGetLastError();
  return ok && major >= 9 && encoder() != nullptr;
}

bool encode_tma_2d_u32(CUtensorMap* map, const void* base, std::uint64_t words, std::uint64_t rows,
                       std::size_t pitch, unsigned box_words, unsigned box_rows) {
  const auto fn = encoder();
  if (fn == nullptr || base == nullptr || words == 0 || rows == 0) return false;
  if (reinterpret_cast<std::uintptr_t>(base) % 16 != 0 || pitch % 16 != 0 || pitch >= (std::uint64_t{1} << 40))
    return false;
  if (box_words == 0 || box_words > 256 || box_rows == 0 || box_rows > 256 || (box_words * 4) % 16 != 0) return false;
  if (words > (std::uint64_t{1} << 32) || rows > (std::uint64_t{1} << 32)) return false;
  const cuuint64_t dims[2] = {words, rows};
  const cuuint64_t strides[1] = {pitch};
  const cuuint32_t box[2] = {box_words, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  return fn(map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, const_cast<void*>(base), dims, strides, box, element_strides,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace pixelkit::detail
