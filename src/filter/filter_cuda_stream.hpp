// The row-streaming filter's host interface (filter_cuda_stream.cu; kernel:
// filter_cuda_stream.cuh); included by filter_cuda.cu, which launches it.
#pragma once

#include "pixelkit/border.hpp"
#include "pixelkit/filter.hpp"

namespace pixelkit::detail::cuda_filter {

struct StreamParams;

struct StreamKernelInfo {
  const void* fn = nullptr;  ///< stream_kernel<C, SEP>, or nullptr: no instance
  /// The instance for the band layout (stream_kernel<C, SEP, true>: the
  /// dense kernels' interior path); the same as fn where there is none.
  const void* band_fn = nullptr;
  int smem_bytes = 0;        ///< dynamic shared memory per block
  bool separable = false;    ///< the instance runs the kernel's two factors
  int strip_bytes = 0;       ///< row bytes one warp covers
  int side = 0;              ///< 3 or 5
  /// Whole-number factors on packed 16-bit lanes (all 5x5 instances; 3x3
  /// separable ones whose factors allow it); else FP32.
  bool integer = false;
  /// Dense 3x3 on packed fp16 pairs (stream_half_error_bound); else FP32.
  bool half = false;
  /// 5x5 whole numbers, symmetric factors with outer ones 1 (int5sym).
  bool symmetric = false;
  /// The fp16 instances without the ring (stream_regs_kernel<C, side, NR>:
  /// no shared memory, NR = stream_tuning::kRegsRows output rows a thread,
  /// and kRegsRowsWave for images whose threads then fit one wave); nullptr
  /// where there are none. The dense 5x5 fp16 instance (half5) has only these.
  const void* regs_fn = nullptr;
  const void* regs_wave_fn = nullptr;
  /// The same for replicate, reflect and reflect101 alone, in RegsBorder's
  /// order less general (stream_regs_kernel<C, side, NR, RegsBorder::...>:
  /// rows through that mode, row ends by constant byte permutations).
  const void* regs_fixed_fn[3] = {};
  const void* regs_fixed_wave_fn[3] = {};
};

/// Which of the row-streaming kernel's instances a launch takes.
enum class StreamInstance {
  dense,      ///< FP32, a dense 3x3 kernel
  separable,  ///< FP32, a separable 3x3 kernel
  half,       ///< packed fp16 pairs, a dense 3x3 kernel (stream_half_error_bound)
  int3,       ///< packed 16-bit lanes, a separable 3x3 kernel of whole-number factors
  int5,       ///< the same for 5x5
  int5sym,    ///< the same, factors symmetric with outer ones 1 (gaussian:5), taps that share a factor added first
  half5,      ///< packed fp16 pairs, a dense 5x5 kernel (stream_regs5_half_error_bound): stream_regs_kernel only
};
/// The instance `which` for 1, 3 or 4 channels, one source file each
/// (filter_cuda_stream_c1.cu, _c3.cu, _c4.cu: stream_pick<C>). Lazy loading
/// loads a file's module whole on the first launch of any of its kernels, so
/// a call loads only its own channel count's 9 kernels, not all 27 (notes,
/// run 45).
StreamKernelInfo stream_kernel_c1(StreamInstance which);
StreamKernelInfo stream_kernel_c3(StreamInstance which);
StreamKernelInfo stream_kernel_c4(StreamInstance which);

/// The fp16 instance's error bound: the largest |fp16 result - exact sum|
/// over all u8 inputs for the dense 3x3 kernel c (9 coefficients, row-major),
/// summed as that instance sums: inputs as exact subnormals b * 2^-24, c
/// times 2^kStreamHalfScale rounded to fp16, so that every value is the true
/// one times 2^-10; one product and eight multiply-adds in row-major order,
/// each rounded to fp16. The bound is 255 times the coefficients' rounding,
/// plus each operation's half unit in the last place at the largest
/// magnitude its result can reach (255 times the sum of the |coefficients| so
/// far, plus the error so far). Below 1, every output is within 1 grey level
/// of the exact sum's rounding, and of ref's. HUGE_VAL for a coefficient
/// that is not finite or beyond fp16's range when scaled (|c| > 3.998).
double stream_half_error_bound(const float* c);
/// The same for the dense 5x5 fp16 instance (25 coefficients, row-major),
/// summed as stream_regs_kernel<C, 5, NR> sums: each kernel row's product and
/// four multiply-adds, then the five row sums in order, each operation
/// rounded to fp16 (0.54 for the benchmark's random dense 5x5; the same
/// products in row-major order would be bound by 0.99).
double stream_regs5_half_error_bound(const float* c);
/// The fp16 instance's coefficients are c * 2^kStreamHalfScale; its inputs
/// b * 2^-24 (a byte's bits as an fp16 half).
constexpr int kStreamHalfScale = 14;
/// The largest bound at which the fp16 instance is taken: outputs are then
/// within 1 of ref's, with a margin (box:3's bound is 0.46, a random 3x3
/// smoothing kernel's ~0.35-0.55; sharpen, edge, emboss and laplacian are
/// above 3 and stay in FP32).
constexpr double kStreamHalfMaxError = 0.75;

/// stream_regs_kernel's row ends, for replicate, reflect and reflect101: a
/// nibble for each of the 4 SW side bytes left of a row's first chunk
/// (right = false; x = 0) or right of its last (right = true; x = the
/// chunk's first byte, width * C - 16): the byte of that 16-byte chunk
/// which the border mapping gives. A reach of SW pixels either side mirrors
/// or repeats pixels within the row's first or last 3 C <= 12 bytes, so each
/// lies in the chunk for rows of 16 bytes or more; bytes beyond the reach
/// (5x5 in 1 or 3 channels) get a byte clamped into it, which no output
/// reads. (Host and device: the tests check it against border_index_near.)
template <int C, int SW>
PIXELKIT_HD unsigned regs_side_selectors(bool right, int x, int width, BorderMode mode) {
  unsigned sel = 0u;
  for (int b = 0; b < 4 * SW; ++b) {
    int s;
    if (!right) {
      const int el = b - 4 * SW, pl = (el + 1) / C - 1;  // the element and its pixel, floor(el / C)
      s = border_index_near(pl, width, mode) * C + (el - pl * C);
    } else {
      s = border_index_near(width + b / C, width, mode) * C + b % C - x;
    }
    sel |= static_cast<unsigned>(s < 0 ? 0 : s > 15 ? 15 : s) << (4 * b);
  }
  return sel;
}

/// stream_regs_kernel's instances: the general one (every border mode, the
/// row ends through regs_side_selectors at run time) and one for each mode
/// whose row ends copy the row's own pixels, fixed at compile time (rows
/// through the mode alone, the side words by constant byte permutations).
enum class RegsBorder { general, replicate, reflect, reflect101 };
/// The fixed instances of reflect and reflect101 mirror a row once, which
/// maps every row a thread reads into the image from this height on: the
/// last segment reads up to NR - 1 + RY rows past the last row (NR = 4 rows
/// a thread, RY = 2 for 5x5), and the mirror of row height + k is row
/// height - 2 - k for reflect101. The host takes them from there
/// (replicate's, which clamps, at every height).
constexpr int kRegsMirrorMinHeight = 6;
/// The image row a fixed instance reads for row iy of its window (iy from
/// -RY up to height + NR - 2 + RY): replicate clamps; reflect and reflect101
/// mirror once, which lands in the image from kRegsMirrorMinHeight rows on
/// (the tests check every such row against border_index).
PIXELKIT_HD int regs_fixed_row(RegsBorder rb, int iy, int height) {
  if (rb == RegsBorder::replicate) {
#ifdef __CUDA_ARCH__
    return min(max(iy, 0), height - 1);  // the same clamp; the form version 6 ran (its sm_90 code)
#else
    return iy < 0 ? 0 : iy > height - 1 ? height - 1 : iy;
#endif
  }
  if (rb == RegsBorder::reflect) return iy < 0 ? -1 - iy : iy >= height ? 2 * height - 1 - iy : iy;
  return iy < 0 ? -iy : iy >= height ? 2 * height - 2 - iy : iy;
}
/// The fixed instance for `mode`, or general.
constexpr RegsBorder regs_border_for(BorderMode mode) {
  return mode == BorderMode::replicate    ? RegsBorder::replicate
         : mode == BorderMode::reflect    ? RegsBorder::reflect
         : mode == BorderMode::reflect101 ? RegsBorder::reflect101
                                          : RegsBorder::general;
}

/// regs_side_selectors for a fixed instance (rb not general), without the
/// row's width: the byte of the row's first chunk (left) or last chunk
/// (right, which ends the row) that side byte b (of 4 SW) copies. Bytes
/// beyond the reach (SW pixels) take the reach's farthest byte, which keeps
/// them in the words the reach reads.
template <int C, int SW>
constexpr int regs_fixed_side_byte(RegsBorder rb, bool right, int b) {
  const int reach = SW * C;
  int k = 0, ch = 0;  // the pixel's distance past the row's end (1: the next) and its channel
  if (!right) {
    const int d = 4 * SW - b < reach ? 4 * SW - b : reach;  // bytes before the row
    k = (d + C - 1) / C;
    ch = k * C - d;
  } else {
    const int e = b < reach ? b : reach - 1;  // bytes after the row
    k = e / C + 1;
    ch = e % C;
  }
  // The copied pixel's distance from the row's end pixel.
  const int m = rb == RegsBorder::replicate ? 0 : rb == RegsBorder::reflect ? k - 1 : k;
  return right ? 16 - (m + 1) * C + ch : m * C + ch;
}

/// How a fixed instance forms side word i (of SW) from its chunk's words c:
/// v = __byte_perm(c[w0], c[w1], sel), then, where w2 >= 0, v =
/// __byte_perm(v, c[w2], sel2) (a word's 4 bytes come from at most 3 of the
/// chunk's words: reflect101 at 3 channels reads bytes 8, 3, 4 and 5).
struct RegsSideWord {
  int w0 = 0, w1 = 0, w2 = -1;
  unsigned sel = 0u, sel2 = 0u;
};
template <int C, int SW>
constexpr RegsSideWord regs_fixed_side_word(RegsBorder rb, bool right, int i) {
  int src[4] = {}, words[4] = {-1, -1, -1, -1}, n = 0;
  for (int k = 0; k < 4; ++k) {
    src[k] = regs_fixed_side_byte<C, SW>(rb, right, 4 * i + k);
    bool seen = false;
    for (int j = 0; j < n; ++j) seen = seen || words[j] == src[k] / 4;
    if (!seen) words[n++] = src[k] / 4;
  }
  RegsSideWord r;
  r.w0 = words[0];
  r.w1 = n > 1 ? words[1] : words[0];
  r.w2 = n > 2 ? words[2] : -1;
  for (int k = 0; k < 4; ++k) {
    const int w = src[k] / 4, byte = src[k] % 4;
    // Bytes of w2 take a placeholder in the first permute and their own in the second.
    const int first = w == r.w0 ? byte : w == r.w1 ? 4 + byte : 0;
    const int second = w == r.w2 ? 4 + byte : k;
    r.sel |= static_cast<unsigned>(first) << (4 * k);
    r.sel2 |= static_cast<unsigned>(second) << (4 * k);
  }
  return n > 3 ? RegsSideWord{-1, -1, -1, 0u, 0u} : r;  // w0 = -1: the kernel's static_assert
}

/// The streaming kernel for a u8 3x3 kernel (dense or separable) or a
/// separable 5x5 one on 1, 3 or 4 channels; fn is nullptr for any other
/// shape. A separable 3x3 kernel of whole-number factors (as for 5x5 below;
/// gaussian:3, [1 2 1] / 4 each way) gets the integer instance where
/// `allow_int`, else the FP32 one; a 5x5 kernel only the integer one, and
/// only where `allow_int` (PIXELKIT_CUDA_FILTER_INT=off turns them off).
/// (Whether a 5x5 kernel's factors suit it is make_stream_coeffs's answer.)
///
/// A dense 3x3 kernel gets the fp16 instance where `allow_half` and
/// stream_half_error_bound(kernel) <= kStreamHalfMaxError
/// (PIXELKIT_CUDA_FILTER_HALF=off turns it off), else the FP32 one.
///
/// A 5x5 kernel whose factors are symmetric with outer ones 1 (gaussian:5)
/// gets int5sym where `allow_sym` (PIXELKIT_CUDA_FILTER_SYM=off turns it
/// off), else int5. A dense (not separable) 5x5 kernel gets half5 where
/// `allow_half` and stream_regs5_half_error_bound(kernel) <=
/// kStreamHalfMaxError; fn is then nullptr and regs_fn is set.
StreamKernelInfo stream_kernel_for(int channels, const Kernel& kernel, bool allow_int, bool allow_half,
                                   bool allow_sym);

/// Peak DRAM bandwidth a SM in GB/s, from the device's memory clock (kHz,
/// cudaDevAttrMemoryClockRate; data moves on both edges), bus width (bits)
/// and SM count; 0 where any of them is unknown (0).
double peak_dram_gbps_per_sm(int mem_clock_khz, int bus_bits, int sms);
/// The peak DRAM bandwidth a SM (GB/s) from which the row-streaming kernel's
/// band rule counts a GPU's memory as fast: the H200 has 36.5 (4814 GB/s on
/// 132 SMs), the H100 SXM 25.4 (notes, run 45).
constexpr double kStreamFastMemoryGBpsPerSM = 30.0;
/// Whether the row-streaming kernel's rule (stream_tuning::bands_by_rule)
/// walks an image of `segs16` 16-row segments a strip, summed over the strips,
/// in bands, for a kernel of this side (3 or 5) on `channels` channels with
/// `wave` warps resident at once, on a GPU with `gbps_per_sm` of peak DRAM
/// bandwidth a SM.
bool stream_bands_by_rule(int side, long long segs16, long long wave, double gbps_per_sm, int channels);

/// Fills the coefficients and the border word of `p` for `info`'s instance;
/// false when the border cannot be held in a byte (a constant value that is
/// not an integer 0..255) or a coefficient is not finite, and for an integer
/// instance unless the kernel is exactly q[y] * p[x] / 2^a with whole numbers p, q >= 0,
/// a gain of at most 1 (sum p * sum q <= 2^a) and a <= 8, so that every sum
/// times 255 fits 16 bits (gaussian:5, OpenCV's [1 4 6 4 1] / 16 each way, and
/// other binomials).
bool make_stream_coeffs(const Kernel& kernel, const Border& border, const StreamKernelInfo& info, StreamParams* p);

}  // namespace pixelkit::detail::cuda_filter
