// The CUDA backend of the filter: host launchers and the strip pipeline for
// host images. Kernels: filter_cuda_kernels.cuh; launch sizes: filter_tuning.hpp.
//
// Paths (the string run_* returns says which ran), first match wins:
//   u8 3x3, dense or separable, source and     -> stream_kernel<C,SEP>: warps walk down 512-byte
//       destination 16-byte aligned, constant     strips row by row, filter_cuda_stream.cuh, sm_80
//       border value a whole grey level           up (PIXELKIT_CUDA_FILTER_STREAM=off: never;
//                                                  PIXELKIT_CUDA_FILTER_MMA=on or dense: never);
//                                                 separable with whole-number factors over a
//                                                 power of two (gaussian:3): its exact integer
//                                                 instance (PIXELKIT_CUDA_FILTER_INT=off: never);
//                                                 dense whose fp16 error bound is at most 0.75
//                                                 (smoothing kernels): its fp16 instance
//                                                 (PIXELKIT_CUDA_FILTER_HALF=off: never)
//   u8 separable above 3x3, sides 3..31,       -> separable_mma_stream_kernel<C,KS1,KS2,H,LO,INT,F16,LEAN>: tensor
//       constant border value a whole grey        cores, blocks walk down 64-pixel strips,
//       level                                     filter_cuda_mma_stream.cuh, sm_80 up; whole-number
//                                                 factors over a power of two: its exact INT
//                                                 instances (PIXELKIT_CUDA_FILTER_INT=off: never);
//                                                 square ones whose fp16 error bound is at most
//                                                 0.75 (Gaussians, boxes): its F16 instances
//                                                 (PIXELKIT_CUDA_FILTER_HALF=off: never); INT and
//                                                 two-k-step F16 at 1-3 channels: the LEAN ones
//                                                 (4 blocks a SM) where segments are long
//                                                 (PIXELKIT_CUDA_FILTER_LEAN=off: never)
//                                                 (PIXELKIT_CUDA_FILTER_MMA=stream: every u8
//                                                  separable kernel it holds; off, on, dense: never)
//   u8 kernel up to 9x9, source 16-byte        -> dense_mma_kernel<C,KH,P,LO,RT>: tensor cores,
//       aligned, that would take a dense path     filter_cuda_mma_dense.cuh, sm_80 up
//       below: sides 7 or 9, or not square;       (PIXELKIT_CUDA_FILTER_MMA=off: never; =on: every
//       5x5 at 3-4 channels; 1-channel 5x5        u8 dense kernel up to 9x9; =dense: every u8
//       from 4 waves of 64-row tiles, 3x3 from    kernel up to 9x9, separable ones too); tiles
//       12; u8 separable 7x7 from one wave        of 64, 48, 32 or 16 rows (RT, 3-4 channels,
//                                                 5-9 rows: mma_dense_tuning::tile_rows); fp16
//                                                 coefficients alone (LO false) where their error
//                                                 bound is at most 0.75 (PIXELKIT_CUDA_FILTER_HALF)
//   separable kernel up to 3x3, and u8 5x5     -> dense_tiled_kernel (below: faster than two passes)
//   u8 separable that the streaming kernel     -> separable_mma_kernel<C,KS1,KS2>: tensor cores,
//       declined, nx + ny >= 26 with both         filter_cuda_mma.cuh, sm_80 up
//       sides <= 17, or nx + ny >= 54
//       (square: 13..17 and 27..31)               (PIXELKIT_CUDA_FILTER_MMA=off: never; =on: every
//                                                  u8 separable kernel)
//   separable kernel, square N x N             -> separable_fused_kernel<T,C,N>
//       (u8: N = 3..31; f32: N = 3..9, to bound the build time)
//   separable kernel, other shapes and sizes   -> separable_fused_kernel<T,C,0> (sizes at run time)
//   dense 3x3 / 5x5 / 7x7, 9x9                 -> dense_tiled_kernel<T,C,K,K,2 / 4 / 8>
//   dense, any other size                      -> dense_tiled_kernel<T,C,0,0,4> (sizes at run time)
// No device scratch is needed on either path: both passes of the separable
// filter meet in shared memory.
// Both streaming kernels walk the largest images in bands of short segments
// (the 3x3 kernel at 8K RGB, and on the H200 at 4K and 5K RGB too, its 5x5
// integer instances from half as many segments, on the H200 for 1 and 4
// channels from 0.65 waves, stream_tuning::bands_by_rule;
// the tensor-core one where its one
// wave would fill under 85% of the resident blocks' slots,
// mma_stream_tuning::walk_bands: 4K and 5K RGB for vertical sides 19..31,
// 8192x4320 and 6000x4000 for all; the path then ends in "in bands";
// PIXELKIT_CUDA_FILTER_BANDS=off: never, on or N: always, see band_rows_policy).
// The tensor-core one's one-wave layout, where its items would leave slots
// empty, cuts a short tail band for the blocks left over to walk
// (mma_stream_tuning::tail_plan: 8K RGB, and 4K for vertical sides up to 17;
// the path then ends in "with a tail band"; PIXELKIT_CUDA_FILTER_TAIL=off:
// never).
// Before its first global access (pdl_begin), each block of the streaming
// kernels and of the dense tensor-core kernel prefetches its first rows into
// L2 while the kernel before it on the stream drains (prefetch_rows_l2;
// PIXELKIT_CUDA_FILTER_PREFETCH=off: never).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/cuda_resources.hpp"
#include "core/host_copy.hpp"
#include "core/view2d.hpp"
#include "filter/filter_backends.hpp"
#include "filter/filter_cuda_kernels.cuh"
#include "filter/filter_cuda_mma.cuh"
#include "filter/filter_cuda_mma_dense.cuh"
#include "filter/filter_cuda_mma_stream.cuh"
#include "filter/filter_cuda_mma.hpp"
#include "filter/filter_cuda_stream.cuh"
#include "filter/filter_cuda_stream.hpp"
#include "filter/filter_tuning.hpp"

namespace pixelkit::detail {

namespace {

using namespace cuda_filter;
using DenseTuning = filter_tuning::Dense;
using SepTuning = filter_tuning::Separable;
using StripTuning = filter_tuning::HostStrips;

constexpr std::size_t kDefaultSmemLimit = 48 * 1024;

bool aligned(const void* p, std::ptrdiff_t pitch, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0 && static_cast<std::size_t>(pitch) % bytes == 0;
}

const char* type_name(PixelType t) { return t == PixelType::u8 ? "u8" : "f32"; }

/// PIXELKIT_CUDA_FILTER_MMA: unset = the default rule (the u8 kernels where
/// the tensor cores were measured faster), "off" = never, "on" = every u8
/// separable kernel through the tiled separable tensor-core kernel and every
/// other u8 kernel up to 9x9 through the dense one, "dense" = every u8 kernel
/// up to 9x9 through the dense one, "stream" = every u8 separable kernel the
/// streaming tensor-core kernel holds through it, whatever its size (tests
/// use them to cover every size; the benchmark, to compare the paths).
enum class MmaPolicy { automatic, off, on, dense, stream };
MmaPolicy mma_policy() {
  const char* v = std::getenv("PIXELKIT_CUDA_FILTER_MMA");
  if (v == nullptr || *v == '\0') return MmaPolicy::automatic;
  const std::string s(v);
  if (s == "off" || s == "0") return MmaPolicy::off;
  if (s == "on" || s == "1") return MmaPolicy::on;
  if (s == "dense") return MmaPolicy::dense;
  if (s == "stream") return MmaPolicy::stream;
  return MmaPolicy::automatic;
}

/// Whether the switch `name` is on: unset, or anything but "off" or "0".
bool switch_on(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || (std::strcmp(v, "off") != 0 && std::strcmp(v, "0") != 0);
}

/// PIXELKIT_CUDA_FILTER_INT=off: the streaming tensor-core kernel never takes
/// its integer instances (notes, run 20; the benchmark and tests compare them
/// with the fp16 ones); unset or anything else: it takes them where the
/// factors allow (make_mma_stream_integer).
bool int_enabled() { return switch_on("PIXELKIT_CUDA_FILTER_INT"); }

/// PIXELKIT_CUDA_FILTER_STREAM=off: never take the row-streaming kernel (the
/// benchmark compares the paths with it); unset or anything else: the u8 3x3
/// kernels take it.
bool stream_enabled() { return switch_on("PIXELKIT_CUDA_FILTER_STREAM"); }

/// PIXELKIT_CUDA_FILTER_HALF=off: every kernel keeps FP32-class accuracy
/// (the row-streaming kernel's dense 3x3 in FP32, the tensor-core kernels'
/// hi + lo products); unset or anything else: fp16 arithmetic where an error
/// bound keeps every output within 1 grey level of ref's
/// (stream_half_error_bound, mma_stream_half_error_bound,
/// mma_dense_half_error_bound).
bool half_enabled() { return switch_on("PIXELKIT_CUDA_FILTER_HALF"); }

/// PIXELKIT_CUDA_FILTER_SYM=off: the row-streaming kernel's 5x5 kernels of
/// symmetric whole-number factors keep the general integer instance (the
/// benchmark compares the two); unset or anything else: they take int5sym
/// (stream_kernel_for). Both are exact.
bool sym_enabled() { return switch_on("PIXELKIT_CUDA_FILTER_SYM"); }

/// PIXELKIT_CUDA_FILTER_BANDS: unset = the default rule (the streaming
/// kernels walk large images in bands of short segments, notes run 15),
/// "off" = never (the benchmark compares the layouts with it), "on" = always,
/// a number N = always, in segments of N rows (the tensor-core kernel rounds
/// it up to 16; tests use it to make blocks walk several bands on small
/// images). Returns -1 for off, 0 for the rule, kBandsOwnHeight for on (each
/// kernel's own band height), else N.
constexpr int kBandsOwnHeight = 0x7fff;
int band_rows_policy() {
  const char* v = std::getenv("PIXELKIT_CUDA_FILTER_BANDS");
  if (v == nullptr || *v == '\0') return 0;
  if (std::strcmp(v, "off") == 0 || std::strcmp(v, "0") == 0) return -1;
  if (std::strcmp(v, "on") == 0) return kBandsOwnHeight;
  const int n = std::atoi(v);
  return n > 0 ? n : 0;
}

/// PIXELKIT_CUDA_FILTER_EDGES=bytes: the streaming tensor-core kernel loads
/// the pixels beyond the image byte by byte through border_index on every
/// border (as before run 35; tests and the benchmark compare the two); unset
/// or anything else: replicate, reflect and reflect101 take their edge
/// columns from shared memory (MmaStreamParams::fix_edges).
bool edge_columns_from_smem() {
  const char* v = std::getenv("PIXELKIT_CUDA_FILTER_EDGES");
  return v == nullptr || std::strcmp(v, "bytes") != 0;
}

/// PIXELKIT_CUDA_FILTER_PREFETCH=off: the streaming kernels and the dense
/// tensor-core kernel do not prefetch their first rows into L2 before
/// pdl_begin (prefetch_rows_l2; the benchmark compares both); unset or
/// anything else: they do.
bool prefetch_enabled() { return switch_on("PIXELKIT_CUDA_FILTER_PREFETCH"); }

/// Which borders take stream_regs_kernel (regs_policy).
enum class RegsPolicy { off, fixed_modes, rule, always };

/// PIXELKIT_CUDA_FILTER_DENSE_ROWS=16|32|48|64: the dense tensor-core kernel's
/// output rows per tile (the benchmark compares them); unset or anything else:
/// mma_dense_tuning::tile_rows. Returns 0 for the rule.
int dense_rows_policy() {
  const char* v = std::getenv("PIXELKIT_CUDA_FILTER_DENSE_ROWS");
  const int n = v == nullptr ? 0 : std::atoi(v);
  return n == 16 || n == 32 || n == 48 || n == 64 ? n : 0;
}

/// PIXELKIT_CUDA_FILTER_REGS: the fp16 dense 3x3 and 5x5 kernels without
/// the ring (stream_regs_kernel; notes, runs 54 to 57). Replicate, reflect
/// and reflect101 have instances of their own (rows through that mode, the
/// row ends' side words by constant byte permutations), which beat the ring
/// and the tensor cores at every size (H100, RGB, replicate, ms, run 57:
/// dense 3x3 640x480 0.0049 -> 0.0020, 1080p 0.0085 -> 0.0064, 4K 0.0243 ->
/// 0.0192, 8K 0.0808 -> 0.0684; dense 5x5 1080p 0.0128 -> 0.0094, 8K 0.1070
/// -> 0.0978; one and four channels faster too), so they are the default
/// wherever the kernel's error bound allows and the rows are whole 16-byte
/// chunks. The general instance (constant and wrap; version 4) is correct but
/// no faster where it counts (1080p dense 3x3 0.0090 against the ring's
/// 0.0085; dense 5x5 slower than the tensor cores at every size), so it runs
/// only when asked. Unset or anything else: the fixed modes' instances, not
/// the general one (RegsPolicy::fixed_modes); "on": also the general one by
/// the rule (stream_tuning::regs_plan: 3x3 where the ring would walk one
/// wave, 5x5 up to about 4K RGB); "always": every mode wherever the bound
/// allows; "off" or "0": never (3x3 walks the ring, 5x5 takes the tensor
/// cores).
RegsPolicy regs_policy() {
  const char* v = std::getenv("PIXELKIT_CUDA_FILTER_REGS");
  if (v == nullptr) return RegsPolicy::fixed_modes;
  if (std::strcmp(v, "on") == 0 || std::strcmp(v, "1") == 0) return RegsPolicy::rule;
  if (std::strcmp(v, "always") == 0) return RegsPolicy::always;
  return std::strcmp(v, "off") == 0 || std::strcmp(v, "0") == 0 ? RegsPolicy::off : RegsPolicy::fixed_modes;
}

/// PIXELKIT_CUDA_FILTER_PDL=off: launch the filter kernels without
/// programmatic dependent launch (the benchmark compares both); unset or
/// anything else: with it, on sm_90 up (CudaFilterImpl::launch_kernel).
bool pdl_enabled() { return switch_on("PIXELKIT_CUDA_FILTER_PDL"); }

/// PIXELKIT_CUDA_FILTER_TAIL=off: the streaming tensor-core kernel's one-wave
/// layout never takes a tail band (the benchmark compares both); unset or
/// anything else: where mma_stream_tuning::tail_plan finds one.
bool tail_enabled() { return switch_on("PIXELKIT_CUDA_FILTER_TAIL"); }

/// PIXELKIT_CUDA_FILTER_LEAN=off: the streaming tensor-core kernel's integer
/// and two-k-step fp16 instances (sides 5..17; 1 and 3 channels) keep two
/// prefetch sets (the benchmark and tests compare both); unset or anything
/// else: they take the lean instance (one set, 4 blocks a SM or more) where
/// its segments are long (mma_stream_tuning::kLeanMinSegSteps).
bool lean_enabled() { return switch_on("PIXELKIT_CUDA_FILTER_LEAN"); }

// ---- kernel tables -------------------------------------------------------------

template <typename T>
using DenseKernel = void (*)(const DenseParams<T>);
template <typename T>
using SepKernel = void (*)(const SepParams<T>);

template <typename T, int C>
DenseKernel<T> dense_kernel_for(int kw, int kh) {
  if (kw == kh) {
    switch (kw) {
      case 3: return dense_tiled_kernel<T, C, 3, 3, DenseTuning::rows_specialised(3)>;
      case 5: return dense_tiled_kernel<T, C, 5, 5, DenseTuning::rows_specialised(5)>;
      case 7: return dense_tiled_kernel<T, C, 7, 7, DenseTuning::rows_specialised(7)>;
      case 9: return dense_tiled_kernel<T, C, 9, 9, DenseTuning::rows_specialised(9)>;
      default: break;
    }
  }
  return nullptr;
}

template <typename T, int C, int... Ns>
SepKernel<T> sep_kernel_pick(int n, std::integer_sequence<int, Ns...>) {
  SepKernel<T> k = nullptr;
  ((n == 2 * Ns + 3 ? (k = separable_fused_kernel<T, C, 2 * Ns + 3>, 0) : 0), ...);
  return k;
}

template <typename T, int C>
SepKernel<T> sep_kernel_for(int nx, int ny) {
  if (nx != ny || nx < 3) return nullptr;
  // u8 (the performance target): every odd size 3..31 unrolled. f32: 3..9
  // unrolled, larger sizes run the generic kernel; each unrolled 31-tap kernel
  // costs seconds of nvcc time per architecture, and this keeps the file's
  // build time in check.
  if constexpr (std::is_same_v<T, float>)
    return sep_kernel_pick<T, C>(nx, std::make_integer_sequence<int, 4>{});  // 3, 5, 7, 9
  else
    return sep_kernel_pick<T, C>(nx, std::make_integer_sequence<int, 15>{});  // 3, 5, ..., 31
}

// ---- the filter object -----------------------------------------------------------

class CudaFilterImpl final : public CudaFilter {
 public:
  CudaFilterImpl(const Kernel& kernel, const Border& border) : border_(border) {
    kw_ = kernel.width;
    kh_ = kernel.height;
    // Separable kernels go through the fused two-pass kernel, except 1-tap
    // sides (a 1xN / Nx1 kernel is a plain dense row or column) and kernels of
    // at most 3x3: there the dense tiled kernel is faster than two passes
    // (study s002, H100 1080p RGB: gaussian:3 0.0281 ms separable against
    // 0.0151 ms for a dense 3x3).
    separable_ = kernel.separable && kernel.width > 1 && kernel.height > 1 && kernel.width * kernel.height > 9;
    dense_ = DenseCoeffs{};
    dense_.kw = kw_;
    dense_.kh = kh_;
    for (std::size_t i = 0; i < kernel.coeffs.size(); ++i) dense_.c[i] = kernel.coeffs[i];
    sep_ = SepCoeffs{};
    sep_.nx = kw_;
    sep_.ny = kh_;
    if (separable_) {
      for (int i = 0; i < kw_; ++i) sep_.row[i] = kernel.row[static_cast<std::size_t>(i)];
      for (int i = 0; i < kh_; ++i) sep_.col[i] = kernel.col[static_cast<std::size_t>(i)];
    }
    // The streaming tensor-core kernel (filter_cuda_mma_stream.cuh; runs 11
    // and 12 of the notes, H100, RGB u8, 720p to 8K) takes u8 separable
    // kernels above 3x3: faster than every other path at every size (8K
    // gaussian:9 0.210 -> 0.130 ms, gaussian:31 0.375 -> 0.224; 1080p
    // 0.0271 -> 0.0158, 0.0387 -> 0.0249). 5x5 and 7x7 at 8K: 0.130 against
    // the dense tensor-core kernel's 0.156 / 0.153 (run 12; before its
    // staging fix the streaming kernel was 1-3% slower there and they kept
    // the dense kernel from 16 M pixels up).
    const MmaPolicy policy = mma_policy();
    mma_stream_ = MmaStreamCoeffs{};
    mma_stream_ok_ = kernel.separable &&
                     (policy == MmaPolicy::stream || (policy == MmaPolicy::automatic && kw_ * kh_ > 9)) &&
                     make_mma_stream_coeffs(kernel.row.data(), kw_, kernel.col.data(), kh_, border, &mma_stream_);
    // Whole-number factors over a power of two (OpenCV's fixed Gaussians 5,
    // 7, 9; binomials) take its integer instances: exact, and faster (run 20).
    if (mma_stream_ok_ && int_enabled()) (void)make_mma_stream_integer(kernel.coeffs.data(), &mma_stream_);
    // The others, where every output stays within 1 grey level of ref's, on
    // fp16 products alone (run 44; PIXELKIT_CUDA_FILTER_HALF=off: never).
    if (mma_stream_ok_ && half_enabled()) (void)make_mma_stream_half(&mma_stream_);
    // The tiled separable tensor-core kernel where it beat the FP32 passes
    // (run 8, same machine, 1080p / 4K / 8K): their time hardly depends on
    // the taps within a k-step class, so they win from gaussian:13 up while
    // each pass takes 2 k-steps (sides <= 17), lose to FP32 at 19..25 (3
    // k-steps, 2 blocks per SM), and win again from 27. Automatic: only
    // where the streaming kernel declines (a constant border value that is
    // not a whole grey level, coefficients it cannot hold exactly).
    mma_ = MmaSepCoeffs{};
    mma_ok_ = kernel.separable && policy != MmaPolicy::off && policy != MmaPolicy::stream &&
              make_mma_sep_coeffs(kernel.row.data(), kw_, kernel.col.data(), kh_, border, &mma_);
    if (mma_ok_ && policy == MmaPolicy::automatic) {
      const bool two_ksteps = mma_ks1(mma_) <= 2 && mma_ks2(mma_) <= 2;
      mma_ok_ = two_ksteps ? kw_ + kh_ >= 26 : kw_ + kh_ >= 54;
    }
    // The dense tensor-core kernel (run 9 of the notes, H100, RGB u8, 720p
    // to 8K, against the FP32 kernels): it wins at every size for dense
    // kernels with a side of 7 or 9 (8K 9x9: 0.400 -> 0.222 ms) and for other
    // shapes (the FP32 kernel for them is the generic one), and for
    // gaussian:7 from one full wave of tiles up (8K: 0.196 -> 0.159); at 3x3
    // and 5x5 it loses below 8K (its tiles take longer than the FP32
    // kernel's, so small grids end on a long tail) and wins by 4-6% at 8K,
    // i.e. from about 12 waves; gaussian:9 stays on the FP32 separable
    // kernel (0.209 against 0.218 at 8K). Since run 19's tile counter, 5x5
    // wins from 4 waves (4K RGB 0.0499 -> 0.0472 ms; run 30), and since its
    // tiles of 16 to 48 rows on small grids (run 38) at every size with 3
    // and 4 channels: mma_dense_tuning::auto_min_waves and tile_rows.
    // The row-streaming kernel (filter_cuda_stream.cuh) takes u8 3x3
    // kernels, dense and separable (run 10 of the notes, H100, RGB, ms,
    // dense 3x3 / gaussian:3, streaming against before): 720p 0.0082 / 0.0079
    // against 0.0081 (a tie for dense), 1080p 0.0120 / 0.0115 against 0.0123,
    // 4K 0.0331 / 0.0321 against 0.0361, 8K 0.1147 / 0.1141 against 0.1229 /
    // 0.1222. Its FP32 5x5 and 7x7 instances were slower than the kernels they
    // would have replaced (8K dense 5x5 0.243 against 0.163, gaussian:5 0.184
    // against 0.160, gaussian:7 0.227 against 0.156) and were removed. Its 5x5
    // instances of whole-number factors on packed 16-bit lanes (run 26) take
    // gaussian:5 and binomials in the band layout: 8K 0.1057 -> 0.0970.
    stream_p_ = StreamParams{};
    band_rows_ = band_rows_policy();
    pdl_ = pdl_enabled();
    tail_ = tail_enabled();
    lean_ = lean_enabled();
    fix_edges_ = edge_columns_from_smem();
    prefetch_ = prefetch_enabled();
    regs_ = regs_policy();
    dense_rows_ = dense_rows_policy();
    // A tensor-core switch that forces those kernels (on, dense) wins.
    if (stream_enabled() && policy != MmaPolicy::on && policy != MmaPolicy::dense && policy != MmaPolicy::stream) {
      const int channels[3] = {1, 3, 4};
      // The integer instances: PIXELKIT_CUDA_FILTER_INT=off turns them off too.
      const bool allow_int = int_enabled(), allow_half = half_enabled(), allow_sym = sym_enabled();
      for (int i = 0; i < 3; ++i) stream_[i] = stream_kernel_for(channels[i], kernel, allow_int, allow_half, allow_sym);
      stream_ok_ = make_stream_coeffs(kernel, border, stream_[1], &stream_p_);
    }
    mma_dense_ = MmaDenseCoeffs{};
    const bool mma_dense_fits = policy != MmaPolicy::off &&
                                make_mma_dense_coeffs(kernel.coeffs.data(), kw_, kh_, border, half_enabled(),
                                                      &mma_dense_);
    mma_dense_min_waves_ = -1;
    mma_dense_auto5_ = false;
    if (mma_dense_fits) {
      const bool dense_path = !separable_ || (kw_ == 5 && kh_ == 5);  // what the FP32 kernels would run
      switch (policy) {
        case MmaPolicy::dense: mma_dense_min_waves_ = 0; break;
        case MmaPolicy::on: mma_dense_min_waves_ = kernel.separable ? -1 : 0; break;
        default:
          if (dense_path)
            mma_dense_min_waves_ = kw_ == kh_ && kw_ <= 5 ? mma_dense_tuning::auto_min_waves(kw_, false) : 0;
          else if (kw_ == 7 && kh_ == 7)
            mma_dense_min_waves_ = 1;
          // 5x5's rule depends on the channels (short tiles or not): at launch.
          mma_dense_auto5_ = dense_path && kw_ == 5 && kh_ == 5;
          break;
      }
    }
  }

  ~CudaFilterImpl() override {
    // Work queued by run_host has always completed before it returned. A dense
    // tensor-core launch on a caller's stream may still be running and using
    // tile_counters_, so wait for the device before ~DeviceBuffer frees them
    // (cudaFree may synchronise by itself, but is not documented to).
    if (tile_counters_.size() != 0) (void)cudaDeviceSynchronize();
  }

  std::string run_device(const ConstImageView& src, const ImageView& dst, stream_t stream) override {
    return launch(src, dst, 0, src.height, stream);
  }

  std::string run_host(const ConstImageView& src, const ImageView& dst, stream_t stream) override;

 private:
  struct KernelAttr {
    const void* fn;
    int device;
    int max_blocks_per_sm;
  };

  std::string launch(const ConstImageView& src, const ImageView& dst, int y_begin, int y_end, cudaStream_t stream) {
    if (src.type == PixelType::u8) return launch_t<std::uint8_t>(src, dst, y_begin, y_end, stream);
    return launch_t<float>(src, dst, y_begin, y_end, stream);
  }

  template <typename T>
  std::string launch_t(const ConstImageView& src, const ImageView& dst, int y_begin, int y_end, cudaStream_t stream) {
    switch (src.channels) {
      case 1: return launch_tc<T, 1>(src, dst, y_begin, y_end, stream);
      case 3: return launch_tc<T, 3>(src, dst, y_begin, y_end, stream);
      case 4: return launch_tc<T, 4>(src, dst, y_begin, y_end, stream);
      default: throw Error(Status::internal, "cuda filter: channel count not checked by dispatch");
    }
  }

  template <typename T>
  FilterArgs<T> args(const ConstImageView& src, const ImageView& dst, int y_begin, int y_end,
                     std::size_t store_vec_elems) const {
    FilterArgs<T> a{};
    a.src = view2d<T>(src);
    a.dst = view2d<T>(dst);
    a.y_begin = y_begin;
    a.y_end = y_end;
    a.border_value = border_.value;
    a.mode = border_.mode;
    a.vec_src = aligned(src.data, src.pitch, 4 * sizeof(T));
    a.vec_dst = aligned(dst.data, dst.pitch, store_vec_elems * sizeof(T));
    return a;
  }

  template <typename T, int C>
  std::string launch_tc(const ConstImageView& src, const ImageView& dst, int y_begin, int y_end, cudaStream_t stream) {
    // The kernels form row addresses as 32x32-bit products within a tile.
    PIXELKIT_EXPECTS(src.pitch > 0 && src.pitch < (std::ptrdiff_t{1} << 31) && dst.pitch > 0 &&
                         dst.pitch < (std::ptrdiff_t{1} << 31),
                     Status::unsupported, "cuda filter: row pitch must be positive and below 2 GiB");
    const std::string shape = " (" + std::string(type_name(src.type)) + " C" + std::to_string(C) + ")";
    const int rows = y_end - y_begin;
    const int wc = src.width * C;
    if constexpr (std::is_same<T, std::uint8_t>::value) {
      // The row-streaming kernel: one wave of warps, each a segment of rows
      // of a 512-byte strip, or bands of short segments (filter_cuda_stream.cuh).
      // Its 5x5 instances (whole-number factors) only in bands: in one wave
      // the tensor-core kernel below is faster (notes, run 26).
      const StreamKernelInfo& si = stream_[C == 1 ? 0 : C == 3 ? 1 : 2];
      const bool stream_fits = stream_ok_ && (si.fn != nullptr || si.regs_fn != nullptr) && tensor_cores() &&
                               aligned(src.data, src.pitch, 16) && aligned(dst.data, dst.pitch, 16);
      StreamParams sp = stream_p_;
      bool bands = false;
      // Waves of each layout's own instance (their registers may differ).
      const auto wave_of = [&](const void* fn, int smem) {  // threads
        return static_cast<long long>(prepare(fn, smem, smem, stream_tuning::kThreads)) * stream_tuning::kThreads *
               sm_count();
      };
      if (stream_fits && si.fn != nullptr) {
        const long long wave = wave_of(si.fn, si.smem_bytes) / 32;  // warps
        sp.strips = (wc + si.strip_bytes - 1) / si.strip_bytes;
        const long long band_segs = (rows + stream_tuning::kBandSegRows - 1) / stream_tuning::kBandSegRows;
        bands = band_rows_ > 0 ||
                (band_rows_ == 0 && stream_bands_by_rule(si.side, sp.strips * band_segs,
                                                         wave_of(si.band_fn, si.smem_bytes) / 32,
                                                         dram_gbps_per_sm(), C));
        if (!bands) {
          // One wave of warps, segments as tall as that needs, consecutive
          // warps down one strip.
          const long long want_segs = std::max<long long>(1, wave / sp.strips);
          sp.seg_rows = std::max<int>(stream_tuning::kMinSegRows, static_cast<int>((rows + want_segs - 1) / want_segs));
          sp.strip_major = false;
          sp.prefetch_rows = prefetch_ ? stream_tuning::kPrefetchRows : 0;
        }
      }
      // The fp16 dense kernels without the ring (notes, runs 54 to 57) on
      // rows of whole 16-byte chunks (1080p, 720p, 4K and 8K are, in 1, 3
      // and 4 channels): replicate's, reflect's and reflect101's own
      // instances wherever they exist (the default), constant and wrap
      // through the general one by regs_policy; other widths walk the ring
      // or take the tensor cores.
      const RegsBorder rb = regs_border_for(border_.mode);
      const int fixed = static_cast<int>(rb) - 1;  // regs_fixed_fn's index, or -1
      const bool own = fixed >= 0 && si.regs_fixed_fn[fixed] != nullptr &&
                       (rb == RegsBorder::replicate || src.height >= kRegsMirrorMinHeight);
      const bool regs_mode = own ? regs_ != RegsPolicy::off : regs_ == RegsPolicy::rule || regs_ == RegsPolicy::always;
      if (stream_fits && si.regs_fn != nullptr && regs_mode && wc % stream_tuning::kLaneBytes == 0) {
        const long long chunks = wc / stream_tuning::kLaneBytes;
        const long long threads2 =
            chunks * ((rows + stream_tuning::kRegsRowsWave - 1) / stream_tuning::kRegsRowsWave);
        const long long threads4 = chunks * ((rows + stream_tuning::kRegsRows - 1) / stream_tuning::kRegsRows);
        const void* const regs4 = own ? si.regs_fixed_fn[fixed] : si.regs_fn;
        const void* const regs2 = own ? si.regs_fixed_wave_fn[fixed] : si.regs_wave_fn;
        const stream_tuning::RegsPlan plan =
            stream_tuning::regs_plan(si.side, bands, threads2, wave_of(regs2, 0), threads4, wave_of(regs4, 0));
        const bool one_wave2 = plan.two_rows;
        if (own || regs_ == RegsPolicy::always || plan.take) {
          sp.a = args<T>(src, dst, y_begin, y_end, 16);
          sp.strips = static_cast<int>(chunks);
          sp.seg_rows = one_wave2 ? stream_tuning::kRegsRowsWave : stream_tuning::kRegsRows;
          sp.segs = (rows + sp.seg_rows - 1) / sp.seg_rows;
          sp.prefetch_rows = 0;
          const long long threads = chunks * sp.segs;
          launch_persistent(MmaKernelInfo{one_wave2 ? regs2 : regs4, 0}, stream_tuning::kThreads,
                            (threads + stream_tuning::kThreads - 1) / stream_tuning::kThreads, &sp, stream);
          PIXELKIT_CUDA_CHECK_LAUNCH("stream_regs_kernel");
          return "cuda dense streaming " + std::to_string(kw_) + "x" + std::to_string(kh_) + " in fp16 in registers" +
                 (one_wave2 ? "" : " 4 rows a thread") + shape;
        }
      }
      if (stream_fits && si.fn != nullptr && (bands || si.side != 5)) {
        sp.a = args<T>(src, dst, y_begin, y_end, 16);
        if (bands) {
          // Large images: short segments, strip fastest, several waves: the
          // warps in flight cover a narrow band of rows (notes, run 15).
          sp.seg_rows = band_rows_ > 0 && band_rows_ != kBandsOwnHeight ? band_rows_ : stream_tuning::kBandSegRows;
          sp.strip_major = true;
        }
        sp.segs = (rows + sp.seg_rows - 1) / sp.seg_rows;
        const long long warps = static_cast<long long>(sp.strips) * sp.segs;
        const long long blocks = (warps + stream_tuning::kWarps - 1) / stream_tuning::kWarps;
        const void* fn = bands ? si.band_fn : si.fn;  // prepared above
        launch_persistent(MmaKernelInfo{fn, si.smem_bytes}, stream_tuning::kThreads, blocks, &sp, stream);
        PIXELKIT_CUDA_CHECK_LAUNCH("stream_kernel");
        return std::string(si.separable ? "cuda separable streaming " : "cuda dense streaming ") +
               std::to_string(kw_) + "x" + std::to_string(kh_) + (si.integer ? " integer factors" : "") +
               (si.symmetric ? " symmetric" : "") +
               (si.half ? " in fp16" : "") + (bands ? " in bands" : "") + shape;
      }
      if (mma_stream_ok_ && tensor_cores()) {
        // One wave of blocks, one (strip, segment) item each: segments as
        // tall as that allows, in whole 16-row steps (the edge strips' cut
        // kEdgeSegFactor times shorter); or, below, bands of items.
        MmaStreamParams p{};
        p.a = args<T>(src, dst, y_begin, y_end, 4);
        p.k = mma_stream_;
        p.vec16_dst = aligned(dst.data, dst.pitch, 16);
        p.fix_edges = fix_edges_ && p.a.vec_src && src.width >= mma_stream_tuning::kMinFixWidth &&
                      (border_.mode == BorderMode::replicate || border_.mode == BorderMode::reflect ||
                       border_.mode == BorderMode::reflect101);
        p.src_pitch_warps = mma_stream_tuning::kWarps * src.pitch;
        p.prefetch_rows = prefetch_ ? mma_stream_tuning::kPrefetchRows : 0;
        MmaKernelInfo ki = mma_stream_kernel(C, mma_stream_);
        long long resident = resident_blocks(ki, mma_stream_tuning::kThreads);
        p.strips = (src.width + mma_stream_tuning::kStripPx - 1) / mma_stream_tuning::kStripPx;
        const int steps = (rows + 15) / 16;
        const bool three_down = mma_ksteps(mma_stream_.ny, 0) == 3;
        // The edge strips' segments in one wave: kEdgeSegFactor(ThreeDown)
        // times shorter where they load bytes, kEdgeSegFactorFixed where not.
        const int wave_factor = p.fix_edges  ? mma_stream_tuning::kEdgeSegFactorFixed
                                : three_down ? mma_stream_tuning::kEdgeSegFactorThreeDown
                                             : mma_stream_tuning::kEdgeSegFactor;
        const int n_int = p.strips >= 3 ? p.strips - 2 : 0, n_edge = std::min(p.strips, 2);
        // The lean instance (4 blocks a SM, where there is one) where the
        // one wave it fills gives segments of kLeanMinSegSteps steps or more,
        // or the band walk is forced.
        if (lean_) {
          const MmaKernelInfo lean = mma_stream_kernel(C, mma_stream_, true);
          if (lean.fn != ki.fn) {
            const long long lean_resident = resident_blocks(lean, mma_stream_tuning::kThreads);
            if (mma_stream_tuning::take_lean(steps, n_int, n_edge, wave_factor, lean_resident, band_rows_ > 0)) {
              ki = lean;
              resident = lean_resident;
            }
          }
        }
        // The layout for a segment height cap (0: none) and edge factor:
        // segments as tall as one wave allows, capped; the edge strips' cut
        // `factor` times shorter.
        auto lay_out = [&](int cap, int factor) {
          const long long want = std::max<long long>(1, resident / (n_int + factor * n_edge));  // bands for one wave
          p.seg_rows = 16 * static_cast<int>((steps + want - 1) / want);
          if (cap > 0) p.seg_rows = std::min(p.seg_rows, cap);
          p.segs = (rows + p.seg_rows - 1) / p.seg_rows;
          const mma_stream_tuning::EdgeCut cut = mma_stream_tuning::edge_cut(p.seg_rows / 16, factor);
          p.edge_seg_rows = cut.rows;
          p.edge_subs = cut.pieces;
          return static_cast<long long>(n_int + n_edge * p.edge_subs) * p.segs;  // items
        };
        // One wave where it fills the GPU, else bands of kBandSegRows rows
        // walked by every resident block (mma_stream_tuning::walk_bands;
        // notes, runs 15, 32 and 33).
        bool bands = band_rows_ > 0;
        if (band_rows_ == 0) {
          const long long wave = lay_out(0, wave_factor);
          const long long band_items = static_cast<long long>(n_int + n_edge * mma_stream_tuning::kEdgeSegFactor) *
                                       ((rows + mma_stream_tuning::kBandSegRows - 1) / mma_stream_tuning::kBandSegRows);
          bands = mma_stream_tuning::walk_bands(wave, band_items, resident);
        }
        const int band = band_rows_ > 0 && band_rows_ != kBandsOwnHeight ? 16 * ((band_rows_ + 15) / 16)
                                                                  : mma_stream_tuning::kBandSegRows;
        const int factor = bands ? mma_stream_tuning::kEdgeSegFactor : wave_factor;
        lay_out(bands ? band : 0, factor);
        // One wave whose items leave slots empty: a tail band for the blocks
        // left over, where the cost model says it ends sooner
        // (mma_stream_tuning::tail_plan; PIXELKIT_CUDA_FILTER_TAIL=off: never).
        const mma_stream_tuning::TailPlan tail =
            bands || !tail_ ? mma_stream_tuning::TailPlan{}
                            : mma_stream_tuning::tail_plan(steps, n_int, n_edge, factor, resident,
                                                           mma_stream_tuning::restart_steps(mma_ksteps(mma_stream_.ny, 0)),
                                                           p.seg_rows / 16, p.segs);
        if (tail.segs > 0) {
          // The same cuts as tail_plan's model (tail_steps: the tail's rows
          // in 16-row steps, the last one partial where the rows end there).
          const mma_stream_tuning::EdgeCut cut = mma_stream_tuning::edge_cut(tail.seg_steps, factor);
          const mma_stream_tuning::EdgeCut tail_cut = mma_stream_tuning::edge_cut(tail.tail_steps, factor);
          p.segs = tail.segs;
          p.seg_rows = 16 * tail.seg_steps;
          p.edge_seg_rows = cut.rows;
          p.edge_subs = cut.pieces;
          p.tail_y0 = p.a.y_begin + p.segs * p.seg_rows;
          p.tail_rows = rows - p.segs * p.seg_rows;
          p.tail_edge_rows = tail_cut.rows;
          p.tail_items = n_int + n_edge * tail_cut.pieces;
        }
        const int per_band = n_int + n_edge * p.edge_subs;
        const long long blocks = std::min(static_cast<long long>(per_band) * p.segs + p.tail_items, resident);
        launch_persistent(ki, mma_stream_tuning::kThreads, blocks, &p, stream);
        PIXELKIT_CUDA_CHECK_LAUNCH("separable_mma_stream_kernel");
        return "cuda separable tensor cores streaming " + std::to_string(kw_) + "x" + std::to_string(kh_) +
               (mma_stream_.integer ? " integer factors"
                : mma_stream_.f16   ? " in fp16"
                : mma_stream_.lo    ? ""
                                    : " fp16-exact factors") +
               (bands ? " in bands" : "") + (tail.segs > 0 ? " with a tail band" : "") + shape;
      }
      // Both tensor-core kernels run a persistent grid: as many blocks as fit
      // at once, each walking tiles.
      const bool mma_dense = mma_dense_min_waves_ >= 0 && tensor_cores() && aligned(src.data, src.pitch, 16);
      if (mma_dense) {
        // Both instances (64-row tiles, and tile heights at run time) hold
        // the same shared memory and registers, so as many blocks fit.
        const bool rt = mma_dense_tuning::has_short_tiles(C, kh_, mma_dense_planar(C, kw_));
        const MmaKernelInfo ki64 = mma_dense_kernel(C, mma_dense_, false);
        const long long resident = resident_blocks(ki64, mma_dense_tuning::kThreads);
        const long long tiles = tile_count(src.width, rows, mma_dense_tuning::kTilePx, mma_dense_tuning::kTileRows);
        const int min_waves = mma_dense_auto5_ ? mma_dense_tuning::auto_min_waves(5, rt) : mma_dense_min_waves_;
        if (tiles >= resident * min_waves) {
          MmaDenseParams p{};
          p.a = args<T>(src, dst, y_begin, y_end, 4);
          p.k = mma_dense_;
          p.vec16_dst = aligned(dst.data, dst.pitch, 16);
          bool own_counter = false;
          p.tile_counter = tile_counter(stream, &own_counter);
          const int th = !rt                ? mma_dense_tuning::kTileRows
                         : dense_rows_ > 0 ? dense_rows_
                                           : mma_dense_tuning::tile_rows(
                                                 tiles, tile_count(src.width, rows, mma_dense_tuning::kTilePx, 16),
                                                 resident, kh_);
          const MmaKernelInfo ki = th == mma_dense_tuning::kTileRows ? ki64 : mma_dense_kernel(C, mma_dense_, true);
          const long long n = tile_count(src.width, rows, mma_dense_tuning::kTilePx, th);
          // (resident_blocks also sets the RT instance's shared-memory limit.)
          const long long grid = std::min({n, resident, resident_blocks(ki, mma_dense_tuning::kThreads)});
          p.dynamic = own_counter && n >= mma_dense_tuning::kDynamicMinRounds * resident;
          p.w = mma_dense_walk(src.width, rows, th, grid, p.dynamic);
          p.prefetch = prefetch_;
          launch_persistent(ki, mma_dense_tuning::kThreads, grid, &p, stream);
          PIXELKIT_CUDA_CHECK_LAUNCH("dense_mma_kernel");
          return "cuda dense tensor cores " + std::to_string(kw_) + "x" + std::to_string(kh_) +
                 (mma_dense_.half ? " in fp16" : "") +
                 (th != mma_dense_tuning::kTileRows ? " in " + std::to_string(th) + "-row tiles" : "") + shape;
        }
      }
      if (mma_ok_ && tensor_cores()) {
        MmaSepParams p{};
        p.a = args<T>(src, dst, y_begin, y_end, 4);
        p.k = mma_;
        p.vec16_dst = aligned(dst.data, dst.pitch, 16);
        const MmaKernelInfo ki = mma_sep_kernel(C, mma_ks1(mma_), mma_ks2(mma_));
        const long long tiles = tile_count(src.width, rows, mma_tuning::kTilePx, mma_tuning::kTileRows);
        launch_persistent(ki, mma_tuning::kThreads, std::min(tiles, resident_blocks(ki, mma_tuning::kThreads)), &p,
                          stream);
        PIXELKIT_CUDA_CHECK_LAUNCH("separable_mma_kernel");
        return "cuda separable tensor cores " + std::to_string(kw_) + "x" + std::to_string(kh_) + shape;
      }
    }
    // u8 5x5 separable kernels also take the dense tiled kernel: faster at
    // every size measured (H100, RGB, ms, gaussian:5 separable against dense:
    // 720p 0.0163 / 0.0114, 1080p 0.0237 / 0.0181, 4K 0.0575 / 0.0496, 8K
    // 0.1765 / 0.1734); from 7x7 up the two passes win.
    const bool separable = separable_ && !(std::is_same<T, std::uint8_t>::value && kw_ == 5 && kh_ == 5);
    if (separable) {
      SepParams<T> p{};
      p.a = args<T>(src, dst, y_begin, y_end, SepTuning::kVElems);
      p.k = sep_;
      SepKernel<T> fn = sep_kernel_for<T, C>(kw_, kh_);
      const bool spec = fn != nullptr;
      if (!spec) fn = separable_fused_kernel<T, C, 0>;
      const int smem = SepGeom(kw_, C).smem_bytes();
      const int per_sm = prepare(reinterpret_cast<const void*>(fn), smem, SepGeom(spec ? kw_ : kMaxSide, C).smem_bytes(),
                                 SepTuning::kThreads);
      const int blocks_x = (wc + SepTuning::kTileElems - 1) / SepTuning::kTileElems;
      p.seg_rows = segment_rows(rows, SepTuning::kChunkRows, blocks_x, per_sm, SepTuning::kTargetWaves);
      const int segs = (rows + p.seg_rows - 1) / p.seg_rows;
      const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(segs));
      launch_kernel(reinterpret_cast<const void*>(fn), grid, dim3(SepTuning::kThreads), smem, &p, stream);
      PIXELKIT_CUDA_CHECK_LAUNCH("separable_fused_kernel");
      return spec ? "cuda separable fused " + std::to_string(kw_) + "x" + std::to_string(kh_) + shape
                  : "cuda separable fused generic " + std::to_string(kw_) + "x" + std::to_string(kh_) + shape;
    }
    DenseParams<T> p{};
    p.a = args<T>(src, dst, y_begin, y_end, DenseTuning::kVec);
    p.k = dense_;
    DenseKernel<T> fn = dense_kernel_for<T, C>(kw_, kh_);
    const bool spec = fn != nullptr;
    const int rpt = spec ? DenseTuning::rows_specialised(kw_) : DenseTuning::kRowsGeneric;
    if (!spec) fn = dense_tiled_kernel<T, C, 0, 0, DenseTuning::kRowsGeneric>;
    const int smem = DenseGeom(kw_, kh_, C, rpt).smem_bytes();
    const int smem_max = spec ? smem : DenseGeom(kMaxSide, kMaxSide, C, rpt).smem_bytes();
    prepare(reinterpret_cast<const void*>(fn), smem, smem_max, DenseTuning::kThreads);
    const int tile_rows = DenseTuning::kThreadsY * rpt;
    const dim3 grid(static_cast<unsigned>((wc + DenseTuning::kTileElems - 1) / DenseTuning::kTileElems),
                    static_cast<unsigned>((rows + tile_rows - 1) / tile_rows));
    const dim3 block(DenseTuning::kThreadsX, DenseTuning::kThreadsY);
    launch_kernel(reinterpret_cast<const void*>(fn), grid, block, smem, &p, stream);
    PIXELKIT_CUDA_CHECK_LAUNCH("dense_tiled_kernel");
    return (spec ? "cuda dense tiled " : "cuda dense tiled generic ") + std::to_string(kw_) + "x" +
           std::to_string(kh_) + shape;
  }

  /// Rows each block sweeps: a whole number of `step` rows, as few as give the
  /// grid about `waves` full waves of resident blocks (long sweeps amortise
  /// the apron and the pipeline's start; enough blocks fill the GPU).
  int segment_rows(int rows, int step, int blocks_x, int per_sm, int waves) {
    const long long want = static_cast<long long>(waves) * per_sm * sm_count();
    const int max_segs = (rows + step - 1) / step;
    const int segs = static_cast<int>(std::clamp<long long>((want + blocks_x - 1) / blocks_x, 1, max_segs));
    return (max_segs + segs - 1) / segs * step;
  }

  /// Raises the kernel's dynamic shared-memory limit when it may need more
  /// than the default 48 KB (once per kernel and device; always to the most
  /// any size of that kernel needs, so that objects with different kernel
  /// sizes never lower it under each other) and returns how many blocks of
  /// `smem` bytes fit on one multiprocessor.
  int prepare(const void* fn, int smem, int smem_max, int threads) {
    int device = 0;
    PIXELKIT_CUDA_TRY(cudaGetDevice(&device));
    for (const auto& k : attrs_)
      if (k.fn == fn && k.device == device) return k.max_blocks_per_sm;
    if (static_cast<std::size_t>(smem_max) > kDefaultSmemLimit)
      PIXELKIT_CUDA_TRY(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_max));
    int blocks = 0;
    PIXELKIT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, threads, static_cast<std::size_t>(smem)));
    attrs_.push_back({fn, device, std::max(blocks, 1)});
    return std::max(blocks, 1);
  }

  /// mma.sync with fp16 operands and m16n8k16 shape: compute capability 8.0 up.
  bool tensor_cores() { return cc_major_.get(cudaDevAttrComputeCapabilityMajor) >= 8; }

  int sm_count() { return sm_count_.get(cudaDevAttrMultiProcessorCount); }

  /// Peak DRAM bandwidth a SM (GB/s; 0 where the device does not say), for
  /// the row-streaming kernel's band rule. Only a tuning input: a runtime
  /// that does not report the memory clock or bus width gets 0 (the H100's
  /// rule), not an error, and the failed query's error is cleared so that the
  /// next launch check does not report it.
  double dram_gbps_per_sm() {
    int d = 0;
    PIXELKIT_CUDA_TRY(cudaGetDevice(&d));
    if (d != dram_device_) {
      int clock = 0, bus = 0;
      if (cudaDeviceGetAttribute(&clock, cudaDevAttrMemoryClockRate, d) != cudaSuccess ||
          cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, d) != cudaSuccess) {
        (void)cudaGetLastError();
        clock = bus = 0;
      }
      dram_gbps_ = peak_dram_gbps_per_sm(clock, bus, sm_count());
      dram_device_ = d;
    }
    return dram_gbps_;
  }

  /// Blocks of a tensor-core kernel resident at once on the whole GPU.
  long long resident_blocks(const MmaKernelInfo& ki, int threads) {
    return static_cast<long long>(prepare(ki.fn, ki.smem_bytes, ki.smem_bytes, threads)) * sm_count();
  }

  static long long tile_count(int width, int rows, int tile_px, int tile_rows) {
    return static_cast<long long>((width + tile_px - 1) / tile_px) * ((rows + tile_rows - 1) / tile_rows);
  }

  /// Launches a filter kernel, whose one argument is a parameter block. On
  /// sm_90 up the launch allows programmatic dependent launch: the kernel may
  /// be scheduled while the kernel before it on the stream drains, and waits
  /// for it in pdl_begin before its first global memory access (notes, run
  /// 31: H100, 1080p RGB gaussian:17 0.0171 -> 0.0147 ms a launch of
  /// back-to-back filters; PIXELKIT_CUDA_FILTER_PDL=off turns it off).
  template <typename Params>
  void launch_kernel(const void* fn, dim3 grid, dim3 block, int smem, Params* p, cudaStream_t stream) {
    void* kargs[] = {p};
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = static_cast<std::size_t>(smem);
    cfg.stream = stream;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    if (pdl_ && cc_major_.get(cudaDevAttrComputeCapabilityMajor) >= 9) {
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
    }
    PIXELKIT_CUDA_TRY(cudaLaunchKernelExC(&cfg, fn, kargs));
  }

  /// The tensor-core and row-streaming kernels: one dimension of `blocks`.
  template <typename Params>
  void launch_persistent(const MmaKernelInfo& ki, int threads, long long blocks, Params* p, cudaStream_t stream) {
    launch_kernel(ki.fn, dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads)), ki.smem_bytes, p,
                  stream);
  }

  /// The dense tensor-core kernel's tile counter for launches on `stream`
  /// (two words, zero between launches: the kernel's last block zeroes them).
  /// Launches that share a counter must be ordered, so each of the first
  /// kTileCounterSlots streams this filter sees gets its own (*own = true);
  /// later streams share one more slot and walk their tiles in the fixed
  /// order (the kernel still counts its blocks there, but nothing reads it).
  static constexpr std::size_t kTileCounterSlots = 32;
  /// Allocated at the first dense launch (a cudaMalloc and a synchronised
  /// zeroing), so that launch must not be inside a stream capture.
  unsigned* tile_counter(cudaStream_t stream, bool* own) {
    if (tile_counters_.size() == 0) tile_counters_.reserve((kTileCounterSlots + 1) * 2 * sizeof(unsigned));
    std::size_t slot = 0;
    while (slot < counter_streams_.size() && counter_streams_[slot] != stream) ++slot;
    if (slot == counter_streams_.size() && slot < kTileCounterSlots) counter_streams_.push_back(stream);
    *own = slot < kTileCounterSlots;
    return tile_counters_.as<unsigned>() + 2 * slot;
  }

  /// One device attribute, read again only when the current device changes.
  struct CachedDeviceAttr {
    int device = -1, value = 0;
    int get(cudaDeviceAttr attr) {
      int d = 0;
      PIXELKIT_CUDA_TRY(cudaGetDevice(&d));
      if (d != device) {
        PIXELKIT_CUDA_TRY(cudaDeviceGetAttribute(&value, attr, d));
        device = d;
      }
      return value;
    }
  };

  void ensure_streams(int strips) {
    if (streams_.empty()) {
      for (int i = 0; i < StripTuning::kStreams; ++i) {
        streams_.emplace_back();
        stream_done_.emplace_back();
      }
    }
    while (static_cast<int>(up_done_.size()) < strips) up_done_.emplace_back();
    while (static_cast<int>(down_done_.size()) < strips) down_done_.emplace_back();
  }

  Border border_;
  int kw_ = 0, kh_ = 0;
  bool separable_ = false;
  DenseCoeffs dense_{};
  SepCoeffs sep_{};
  bool mma_ok_ = false;
  MmaSepCoeffs mma_{};
  bool mma_stream_ok_ = false;
  MmaStreamCoeffs mma_stream_{};
  bool stream_ok_ = false;
  int band_rows_ = 0;  ///< PIXELKIT_CUDA_FILTER_BANDS: -1 never, 0 the rule, N forced, in rows
  bool pdl_ = true;    ///< PIXELKIT_CUDA_FILTER_PDL: programmatic dependent launch (launch_kernel)
  bool tail_ = true;   ///< PIXELKIT_CUDA_FILTER_TAIL: the streaming tensor-core kernel's tail band (tail_plan)
  bool lean_ = true;   ///< PIXELKIT_CUDA_FILTER_LEAN: its lean instances (mma_stream_tuning::kLeanMinSegSteps)
  bool fix_edges_ = true;  ///< PIXELKIT_CUDA_FILTER_EDGES: edge columns from shared memory (fix_edges)
  int dense_rows_ = 0;     ///< PIXELKIT_CUDA_FILTER_DENSE_ROWS: the dense tensor-core kernel's tile rows, 0 = rule
  RegsPolicy regs_ = RegsPolicy::fixed_modes;  ///< PIXELKIT_CUDA_FILTER_REGS: regs_policy()
  bool prefetch_ = true;   ///< PIXELKIT_CUDA_FILTER_PREFETCH: L2 prefetch of the first rows before pdl_begin
  StreamKernelInfo stream_[3]{};  ///< the row-streaming instance for 1, 3 and 4 channels
  StreamParams stream_p_{};        ///< its coefficients and border word
  bool mma_dense_auto5_ = false;  ///< the automatic rule for 5x5: mma_dense_tuning::auto_min_waves(5, short tiles)
  int mma_dense_min_waves_ = -1;  ///< take the dense tensor-core kernel from this many waves of tiles; -1: never
  MmaDenseCoeffs mma_dense_{};

  std::vector<KernelAttr> attrs_;
  CachedDeviceAttr sm_count_, cc_major_;
  int dram_device_ = -1;     ///< the device dram_gbps_ was read for
  double dram_gbps_ = 0.0;   ///< dram_gbps_per_sm()

  // The dense tensor-core kernel's tile counters (tile_counter).
  DeviceBuffer tile_counters_;
  std::vector<cudaStream_t> counter_streams_;

  // run_host resources, all grow-only and created on first use.
  DeviceBuffer d_src_, d_dst_;
  PinnedBuffer up_stage_, down_stage_;
  std::vector<Stream> streams_;
  std::vector<Event> stream_done_;
  std::vector<Event> up_done_, down_done_;
  Event start_;
};

// ---- host images: strips ------------------------------------------------------------
//
// The image is cut into NS horizontal strips. Strip s is uploaded on stream
// s % kStreams (pageable rows are first copied by this thread, with its
// OpenMP team (detail::copy_rows: one core's memcpy is slower than PCIe),
// into a pinned staging slot; pinned rows go straight), its kernel runs on the same stream
// once the uploads of every strip holding a row it reads (its own and the
// apron rows of its neighbours) are done, then its rows come back (into a
// staging slot, which this thread copies out to dst kStreams strips later).
// So the host copies strip s+1 in and strip s-3 out while the GPU uploads,
// filters and downloads the strips in between. The device buffers hold the
// whole image, so the kernel's borders are those of the whole image.
std::string CudaFilterImpl::run_host(const ConstImageView& src, const ImageView& dst, stream_t caller) {
  const int height = src.height;
  const std::size_t row_bytes = src.row_bytes();
  const std::size_t dpitch = (row_bytes + 255) & ~static_cast<std::size_t>(255);  // aligned rows: vector loads
  const long long total = static_cast<long long>(row_bytes) * height;
  int strips = static_cast<int>(
      std::clamp<long long>(total / StripTuning::kTargetStripBytes, 1, StripTuning::kMaxStrips));
  const int strip_rows = std::max((height + strips - 1) / strips, StripTuning::kMinStripRows);
  strips = (height + strip_rows - 1) / strip_rows;
  const int reach = (kh_ / 2 + strip_rows - 1) / strip_rows;  // neighbour strips whose rows a strip reads
  const int k = StripTuning::kStreams;

  ensure_streams(strips);
  d_src_.reserve(dpitch * static_cast<std::size_t>(height));
  d_dst_.reserve(dpitch * static_cast<std::size_t>(height));
  const bool src_pinned = src.memory == Memory::pinned;
  const bool dst_pinned = dst.memory == Memory::pinned;
  const std::size_t slot_bytes = row_bytes * static_cast<std::size_t>(strip_rows);
  if (!src_pinned) up_stage_.reserve(slot_bytes * k);
  if (!dst_pinned) down_stage_.reserve(slot_bytes * k);

  ImageView dsrc{};
  dsrc.data = d_src_.get();
  dsrc.width = src.width;
  dsrc.height = height;
  dsrc.channels = src.channels;
  dsrc.type = src.type;
  dsrc.memory = Memory::device;
  dsrc.pitch = static_cast<std::ptrdiff_t>(dpitch);
  ImageView ddst = dsrc;
  ddst.data = d_dst_.get();

  auto first_row = [&](int s) { return s * strip_rows; };
  auto end_row = [&](int s) { return std::min(height, (s + 1) * strip_rows); };
  auto stream_of = [&](int s) -> cudaStream_t { return streams_[static_cast<std::size_t>(s % k)]; };
  auto slot = [&](unsigned char* base, int s) { return base + slot_bytes * static_cast<std::size_t>(s % k); };
  auto* const up_base = up_stage_.as<unsigned char>();
  auto* const down_base = down_stage_.as<unsigned char>();
  auto* const dsrc_base = static_cast<unsigned char*>(dsrc.data);
  auto* const ddst_base = static_cast<unsigned char*>(ddst.data);

  int drained = 0;  // pageable dst: strips [0, drained) have been copied out of staging
  auto drain_to = [&](int limit) {
    for (; drained < std::min(limit, strips); ++drained) {
      const int s = drained;
      PIXELKIT_CUDA_TRY(cudaEventSynchronize(down_done_[static_cast<std::size_t>(s)]));
      copy_rows(dst.row<unsigned char>(first_row(s)), static_cast<std::size_t>(dst.pitch), slot(down_base, s),
                row_bytes, row_bytes, end_row(s) - first_row(s));
    }
  };

  std::string path;
  try {
    // Everything queued on the caller's stream before this call comes first.
    PIXELKIT_CUDA_TRY(cudaEventRecord(start_, caller));
    for (auto& st : streams_) PIXELKIT_CUDA_TRY(cudaStreamWaitEvent(st, start_, 0));

    for (int step = 0; step < strips + reach; ++step) {
      if (step < strips) {  // upload strip `step`
        const int s = step;
        const int y0 = first_row(s), n = end_row(s) - y0;
        if (src_pinned) {
          PIXELKIT_CUDA_TRY(cudaMemcpy2DAsync(dsrc_base + dpitch * y0, dpitch, src.row<unsigned char>(y0),
                                              static_cast<std::size_t>(src.pitch), row_bytes, n,
                                              cudaMemcpyHostToDevice, stream_of(s)));
        } else {
          // The slot's previous upload (strip s - k) must be done before we refill it.
          if (s >= k) PIXELKIT_CUDA_TRY(cudaEventSynchronize(up_done_[static_cast<std::size_t>(s - k)]));
          unsigned char* to = slot(up_base, s);
          copy_rows(to, row_bytes, src.row<unsigned char>(y0), static_cast<std::size_t>(src.pitch), row_bytes, n);
          PIXELKIT_CUDA_TRY(cudaMemcpy2DAsync(dsrc_base + dpitch * y0, dpitch, to, row_bytes, row_bytes, n,
                                              cudaMemcpyHostToDevice, stream_of(s)));
        }
        PIXELKIT_CUDA_TRY(cudaEventRecord(up_done_[static_cast<std::size_t>(s)], stream_of(s)));
      }
      const int t = step - reach;  // every strip strip t reads has been queued for upload
      if (t < 0) continue;
      cudaStream_t st = stream_of(t);
      for (int u = std::max(0, t - reach); u <= std::min(strips - 1, t + reach); ++u)
        if (u % k != t % k)  // uploads on st itself are ordered already
          PIXELKIT_CUDA_TRY(cudaStreamWaitEvent(st, up_done_[static_cast<std::size_t>(u)], 0));
      const int y0 = first_row(t), y1 = end_row(t);
      path = launch(dsrc, ddst, y0, y1, st);
      if (dst_pinned) {
        PIXELKIT_CUDA_TRY(cudaMemcpy2DAsync(dst.row<unsigned char>(y0), static_cast<std::size_t>(dst.pitch),
                                            ddst_base + dpitch * y0, dpitch, row_bytes, y1 - y0,
                                            cudaMemcpyDeviceToHost, st));
      } else {
        drain_to(t - k + 1);  // the slot's previous strip is copied out before it is overwritten
        PIXELKIT_CUDA_TRY(cudaMemcpy2DAsync(slot(down_base, t), row_bytes, ddst_base + dpitch * y0, dpitch,
                                            row_bytes, y1 - y0, cudaMemcpyDeviceToHost, st));
      }
      PIXELKIT_CUDA_TRY(cudaEventRecord(down_done_[static_cast<std::size_t>(t)], st));
    }
    if (!dst_pinned) drain_to(strips);
    for (int i = 0; i < k; ++i) {
      const auto ui = static_cast<std::size_t>(i);
      PIXELKIT_CUDA_TRY(cudaEventRecord(stream_done_[ui], streams_[ui]));
      PIXELKIT_CUDA_TRY(cudaStreamWaitEvent(caller, stream_done_[ui], 0));  // later work on caller sees dst
    }
    for (auto& st : streams_) PIXELKIT_CUDA_TRY(cudaStreamSynchronize(st));
  } catch (...) {
    // Leave nothing in flight that reads or writes the caller's memory.
    for (auto& st : streams_) (void)cudaStreamSynchronize(st);
    (void)cudaGetLastError();
    throw;
  }
  return path + " + host strips x" + std::to_string(strips);
}

}  // namespace

std::unique_ptr<CudaFilter> make_cuda_filter(const Kernel& kernel, const Border& border) {
  return std::make_unique<CudaFilterImpl>(kernel, border);
}

}  // namespace pixelkit::detail
