// The integral operation's backends, behind the one dispatch in integral.cpp.
// Each receives arguments that dispatch has already checked: src is u8 or f32
// with 1, 3 or 4 channels; every non-empty table in `out` has the shape
// (H+1) x (W+1) x C, a type resolve_request accepts for src's type, and memory
// on the backend's side.
//
// Every backend computes the same function: entries are accumulated exactly
// (64-bit integers for u8 input) or in f64 (f32 input) and converted to the
// table's type once, when stored.
#pragma once

#include <memory>
#include <string>

#include "pixelkit/border.hpp"
#include "pixelkit/filter.hpp"
#include "pixelkit/integral.hpp"

namespace pixelkit::detail {

/// integral_ref.cpp: the definition, plain loops.
void integral_ref(const ConstImageView& src, const IntegralViews& out);

/// integral_cpu.cpp: OpenMP over row bands (reduce, then scan), vectorised
/// rows, sum and squared sum in the same pass. Returns the path taken.
std::string integral_cpu(const ConstImageView& src, const IntegralViews& out, int threads);

/// integral_cuda.cu: the CUDA backend. One per Integral operator; holds
/// grow-only device scratch, including the single pass's ticket counter and
/// look-back flags. Calls on different streams are ordered by the operator
/// itself (a call on another stream than the previous call waits for it, so
/// the shared scratch is never used by two launches at once).
class CudaIntegral {
 public:
  virtual ~CudaIntegral() = default;
  /// src and tables in device memory: queued on `stream`, returns at once.
  virtual std::string run_device(const ConstImageView& src, const IntegralViews& out, stream_t stream) = 0;
  /// src and tables in host memory: upload, compute, download; returns when done.
  virtual std::string run_host(const ConstImageView& src, const IntegralViews& out, stream_t stream) = 0;
  /// Grows the device scratch for images up to this size.
  virtual void reserve(int width, int height, int channels, PixelType type, const IntegralRequest& request) = 0;
};

/// Defined in integral_cuda.cu (CUDA builds only).
std::unique_ptr<CudaIntegral> make_cuda_integral();

/// Benchmark hook (integral_cuda.cu): alternative paths of the sum / squared
/// sum, for bench_integral_gpu. 0 is production (the single-pass tiled scan
/// with decoupled look-back); 1 is the previous 4-launch reduce-then-scan (any
/// input); 2.. are other single-pass tile configurations (u8 input, 1 channel
/// except where the name says "u8"; other inputs run production); 5 is the
/// generic int64 kernel on u8 one-channel images (production there before the
/// u8 one-channel kernel), 6.. that kernel's other tile shapes. Every variant computes the same tables. Not
/// thread-safe; never set outside benchmarks and tests.
int integral_cuda_variants();
const char* integral_cuda_variant_name(int variant);
void set_integral_cuda_variant(int variant);

/// Test hook (integral_cuda.cu): the single pass's flags carry a call counter
/// (the epoch, 1 .. integral_cuda_epoch_limit() - 1, wrapping to 1). Operators
/// created after set_integral_cuda_first_epoch(e) start counting from e, so a
/// test can cross the wrap in a few calls. 0 restores the default. Not
/// thread-safe.
unsigned integral_cuda_epoch_limit();
void set_integral_cuda_first_epoch(unsigned epoch);

/// Rectangle sums of a device table (integral_cuda.cu): `rects` and `out` are
/// host arrays of n; T is the table's element type.
template <typename T>
void rect_sums_cuda(const IntegralTableView& table, const Rect* rects, std::size_t n, int channel, T* out,
                    stream_t stream);

// ---- the box filter through a summed-area table ---------------------------------

/// True when `kernel` has all coefficients equal (a box of any w x h).
bool is_box_kernel(const Kernel& kernel);

/// The smallest box side from which the table beats the filter's own path on
/// `backend` (measured by bench/bench_integral_gpu.cu and docs/notes-integral.md).
int box_integral_crossover(Backend backend);

/// True when filter2d should route `kernel` through box_filter_via_integral:
/// a box kernel at or above the crossover, on cpu or cuda (never ref: ref is
/// the definition and keeps its plain loops).
bool box_via_integral_pays(const Kernel& kernel, Backend backend);

/// filter2d with a box kernel, computed from a summed-area table of the image
/// extended by the border: cost independent of the box size. Same contract as
/// filter2d (u8 rounded half-to-even and saturated, f32 stored as is); the
/// u8 result equals the ref filter exactly (the table sum times the float
/// coefficient is exact in f64). `backend` is cpu or cuda (device or host
/// images on cuda). Returns the path taken.
/// `scratch`, when given, keeps the cpu path's border-extended image and table
/// between calls (Filter2D passes its own), so repeated calls allocate nothing.
struct BoxScratch {
  Image extended;
  IntegralTable table;
};
std::string box_filter_via_integral(const ConstImageView& src, const ImageView& dst, const Kernel& kernel,
                                    const Border& border, Backend backend, const Options& options,
                                    BoxScratch* scratch = nullptr);

/// Device side of the above (integral_cuda.cu): src and dst in device memory,
/// queued on `stream`.
std::string box_filter_via_integral_cuda(const ConstImageView& src, const ImageView& dst, const Kernel& kernel,
                                         const Border& border, stream_t stream);

}  // namespace pixelkit::detail
