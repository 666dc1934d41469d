// The tensor-core filters' host interface (filter_cuda_mma.cu): the separable
// one (filter_cuda_mma.cuh) and the dense one (filter_cuda_mma_dense.cuh);
// included by filter_cuda.cu, which launches them.
#pragma once

#include "pixelkit/border.hpp"

namespace pixelkit::detail::cuda_filter {

struct MmaSepCoeffs;
struct MmaDenseCoeffs;
struct MmaStreamCoeffs;

/// Fills `out` and returns true when the separable kernel row (nx taps) x col
/// (ny taps) can take the tensor-core path with this border: odd sides up to
/// 31, finite coefficients, and a constant border value exact in fp16.
bool make_mma_sep_coeffs(const float* row, int nx, const float* col, int ny, const Border& border,
                         MmaSepCoeffs* out);

/// k-steps (1..3) of the vertical and horizontal passes.
int mma_ks1(const MmaSepCoeffs& k);
int mma_ks2(const MmaSepCoeffs& k);

struct MmaKernelInfo {
  const void* fn;  ///< separable_mma_kernel<C, KS1, KS2> or dense_mma_kernel<C, KH, P>
  int smem_bytes;  ///< dynamic shared memory it needs
};

/// The kernel for 1, 3 or 4 channels and the given k-steps.
MmaKernelInfo mma_sep_kernel(int channels, int ks1, int ks2);

/// Fills `out` and returns true when the dense kernel (kw x kh, row-major)
/// can take the dense tensor-core path with this border: odd sides up to 9,
/// finite coefficients that hi + lo fp16 parts hold to FP32 accuracy, and a
/// constant border value exact in fp16. Where `allow_half`
/// (PIXELKIT_CUDA_FILTER_HALF) and mma_dense_half_error_bound is at most
/// kStreamHalfMaxError, the coefficients are rounded to fp16 and the lo
/// products left out (MmaDenseCoeffs::half).
bool make_mma_dense_coeffs(const float* coeffs, int kw, int kh, const Border& border, bool allow_half,
                           MmaDenseCoeffs* out);

/// The largest |result - exact sum| over all u8 inputs, in grey levels, for
/// the dense tensor-core kernel on fp16 coefficients alone (n of them):
/// 255 times what their rounding misses, plus the fp32 sums' error. Below 1,
/// every output is within 1 of ref's. HUGE_VAL for a coefficient beyond fp16.
double mma_dense_half_error_bound(const float* c, int n);

/// dense_mma_kernel<C, KH, planar, LO, RT> for 1, 3 or 4 channels and this
/// kernel; RT (tile heights at run time) when `short_tiles` and
/// mma_dense_tuning::has_short_tiles.
MmaKernelInfo mma_dense_kernel(int channels, const MmaDenseCoeffs& k, bool short_tiles);

/// Fills `out` and returns true when the separable kernel row (nx taps) x col
/// (ny taps) can take the streaming tensor-core path
/// (filter_cuda_mma_stream.cuh) with this border: odd sides 3 to 31, finite
/// coefficients that fp16 hi + lo parts hold to FP32 accuracy once the row
/// factors are scaled by 2^sh and the column factors by 2^(24 - sh), both
/// below 2^15 (MmaStreamCoeffs::row), and a constant border value that is a
/// whole grey level (0..255).
bool make_mma_stream_coeffs(const float* row, int nx, const float* col, int ny, const Border& border,
                            MmaStreamCoeffs* out);

/// Turns coefficients that make_mma_stream_coeffs filled into the INT
/// kernels' whole numbers (MmaStreamCoeffs::integer; notes, run 20) and
/// returns true where the kernel (`coeffs`, nx x ny, row-major, the filter's
/// own) is exactly q[y] * p[x] / 2^a with whole numbers p, q in 0..255, sides
/// up to 17, pass 1's sums below 2^16 (255 * sum p) and a gain of at most 1
/// (sum p * sum q <= 2^a): OpenCV's fixed Gaussians 5, 7 and 9, binomials.
/// Otherwise leaves `k` as it was.
bool make_mma_stream_integer(const float* coeffs, MmaStreamCoeffs* k);

/// make_mma_stream_integer on its own, for tests (plain C++, no GPU needed):
/// the whole numbers p (nx) and q (ny) and the power a it finds for the
/// kernel (`coeffs`, nx x ny, row-major), or false where it declines.
bool mma_stream_integer_factors(const float* coeffs, int nx, int ny, int* p, int* q, int* a);

/// The same bound for the streaming kernel's F16 instances on the factors
/// make_mma_stream_coeffs scaled: fp16 factors, pass 1's fp32 sum rounded to
/// fp16, pass 2's in fp32 (notes, run 44).
double mma_stream_half_error_bound(const MmaStreamCoeffs& k);

/// Sets k->f16 and returns true where the F16 instances take the kernel: an
/// LO kernel (not integer, not exact in fp16) with both passes on the same
/// k-steps and mma_stream_half_error_bound at most kStreamHalfMaxError.
bool make_mma_stream_half(MmaStreamCoeffs* k);

/// mma_stream_half_error_bound for factors row (nx) x col (ny), for tests
/// (plain C++, no GPU): HUGE_VAL where make_mma_stream_coeffs declines them.
double mma_stream_half_bound(const float* row, int nx, const float* col, int ny);

/// separable_mma_stream_kernel<C, KS1, KS2, HALF, LO, INT, F16, LEAN> for 1, 3
/// or 4 channels and these coefficients (its k-steps, whether the last one is
/// half and whether the lo products run follow from them). lean: the
/// instance of one prefetch set and 4 blocks a SM where there is one
/// (mma_stream_tuning::has_lean), else the same as without.
MmaKernelInfo mma_stream_kernel(int channels, const MmaStreamCoeffs& k, bool lean = false);

/// mma_stream_kernel for one channel count (filter_cuda_mma_stream_c1.cu,
/// _c3.cu, _c4.cu: mma_stream_pick<C>).
MmaKernelInfo mma_stream_kernel_c1(const MmaStreamCoeffs& k, bool lean);
MmaKernelInfo mma_stream_kernel_c3(const MmaStreamCoeffs& k, bool lean);
MmaKernelInfo mma_stream_kernel_c4(const MmaStreamCoeffs& k, bool lean);

}  // namespace pixelkit::detail::cuda_filter
