// The Haar transform's backends, behind the one dispatch in haar.cpp. Each
// receives views that dispatch has already checked: 1/3/4 channels, src u8 or
// f32, coefficients f32 with the same channels and exactly layout's
// coeff_width x coeff_height, no overlap, memory matching the backend, and a
// layout built by haar_layout (1 <= levels <= max).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pixelkit/haar.hpp"

namespace pixelkit::detail {

/// haar_ref.cpp: the definition. Separable 1D passes (rows, then columns) in
/// double precision, level by level, gaps zeroed.
void haar_forward_ref(const ConstImageView& src, const ImageView& coeffs, const HaarLayout& layout,
                      HaarNormalize normalize);
void haar_inverse_ref(const ConstImageView& coeffs, const ImageView& dst, const HaarLayout& layout,
                      HaarNormalize normalize);

/// Grow-only scratch of the cpu backend (the approximations between levels,
/// two planes used in turn), kept by HaarTransform so that calling it frame
/// after frame allocates nothing once the largest size has been seen.
struct HaarCpuScratch {
  std::vector<float> plane[2];
};

/// haar_cpu.cpp: f32, each 2x2 block at once, OpenMP over block rows, the
/// first level read straight from src and the last written straight to dst.
/// Returns a short description of the path taken (for --verbose).
std::string haar_forward_cpu(const ConstImageView& src, const ImageView& coeffs, const HaarLayout& layout,
                             HaarNormalize normalize, int threads, HaarCpuScratch& scratch);
std::string haar_inverse_cpu(const ConstImageView& coeffs, const ImageView& dst, const HaarLayout& layout,
                             HaarNormalize normalize, int threads, HaarCpuScratch& scratch);

/// Launch parameters of the CUDA backend: data, not literals (see haar_cuda.cu).
struct HaarCudaTuning {
  int block_threads = 256;  ///< threads per block of the level kernels (multiple of 32, <= 512)
  int max_fuse = 3;          ///< forward: levels one kernel computes in registers (1..3; 2 at most for 3/4 channels)
  int tail_elements = 6144;  ///< approximations this small (floats) finish in one block, in shared memory (0 = off)
  int max_fuse_inverse = 2;  ///< inverse: as max_fuse (on an H200, 8192^2: 1.26x the floor at 2, 1.47x at 3)
};

/// haar_cuda.cu: the CUDA backend. Created once per HaarTransform; holds
/// grow-only device scratch (approximations, and staging for host images).
class CudaHaar {
 public:
  virtual ~CudaHaar() = default;
  /// Views of any memory; device-only work is queued on `stream` and returns
  /// at once, work with a host side returns when the host result is complete.
  virtual std::string forward(const ConstImageView& src, const ImageView& coeffs, const HaarLayout& layout,
                              HaarNormalize normalize, stream_t stream) = 0;
  virtual std::string inverse(const ConstImageView& coeffs, const ImageView& dst, const HaarLayout& layout,
                              HaarNormalize normalize, stream_t stream) = 0;
  virtual HaarCudaTuning& tuning() = 0;
};

/// Defined in haar_cuda.cu (CUDA builds only).
std::unique_ptr<CudaHaar> make_cuda_haar();

}  // namespace pixelkit::detail
