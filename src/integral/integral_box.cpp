// The box filter through a summed-area table: each output is one rectangle
// sum times the box's coefficient, so the cost does not grow with the box.
//
// Borders: for every mode but constant the image is first extended by the
// box's radii (border_index, exactly as the filter reads it) and the table is
// built over the extended image. For constant:V no extension is needed: the
// rectangle is clipped to the image and V times the number of pixels outside
// is added, which also keeps V exact when it is not a u8 value.
//
// Exactness: for u8 images the table is exact (u32: a box sum is below 2^32)
// and the coefficient c is
// a float, so c * S is exact in f64 and the u8 result equals ref's
// sum of c * I(x, y) bit for bit (every product and partial sum there is exact
// too). f32 images differ from ref only by f64 rounding.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/view2d.hpp"
#include "integral/integral_backends.hpp"
#include "integral/integral_common.hpp"
#include "pixelkit/config.hpp"

namespace pixelkit::detail {

bool is_box_kernel(const Kernel& k) {
  if (k.coeffs.empty() || k.coeffs.size() != static_cast<std::size_t>(k.width) * k.height) return false;
  return std::all_of(k.coeffs.begin(), k.coeffs.end(), [&](float c) { return c == k.coeffs[0]; });
}

int box_integral_crossover(Backend backend) {
  // Measured by bench_integral_gpu (docs/notes-integral.md), u8 RGB reflect101:
  //  cpu, 1080p, 16 threads: the separable filter grows ~linearly with N
  //    (0.7 ms at 5, 2.3 ms at 21, 5.4 ms at 31); the table path is flat
  //    (2.4-3.5 ms, also at 63 and 127): they meet near 21.
  //  cuda, 4K, H100: the filter costs 0.07 ms at 3 and 0.155 ms at 31
  //    (+~0.003 ms per N); the table path is flat at 0.34-0.40 ms up to 127, so
  //    they would meet near N = 100, beyond the filter's 31-pixel limit: with
  //    today's kernels the table never pays on cuda.
  switch (backend) {
    case Backend::cpu: return 21;
    case Backend::cuda: return 101;
    default: return 1 << 30;
  }
}

bool box_via_integral_pays(const Kernel& kernel, Backend backend) {
  if (backend != Backend::cpu && backend != Backend::cuda) return false;
  return std::max(kernel.width, kernel.height) >= box_integral_crossover(backend) && is_box_kernel(kernel);
}

namespace {

// Ties to even without a library call, so the loop vectorises: adding and
// subtracting 1.5 * 2^52 rounds any |x| < 2^51 in the default rounding mode
// (this file is never built with -ffast-math, which would fold it away).
inline double round_even(double x) {
  constexpr double kMagic = 6755399441055744.0;
  return (x + kMagic) - kMagic;
}

template <typename T>
void box_cpu(const ConstImageView& src_v, const ImageView& dst_v, const Kernel& k, const Border& border,
             int threads, BoxScratch& scratch) {
  // u8: a u32 table suffices (a box sum is below 31 * 31 * 255, and u32
  // rectangle sums are exact modulo 2^32); f32: f64.
  using Tab = std::conditional_t<std::is_same_v<T, std::uint8_t>, std::uint32_t, double>;
  const int W = src_v.width, H = src_v.height, C = src_v.channels;
  const int rx = k.radius_x(), ry = k.radius_y(), kw = k.width, kh = k.height;
  const double coef = static_cast<double>(k.coeffs[0]);
  const bool constant = border.mode == BorderMode::constant;
  const TableType tt = std::is_same_v<T, std::uint8_t> ? TableType::u32 : TableType::f64;
  // Small images on one thread: a parallel region costs more than their work.
  threads = static_cast<long long>(W) * H * C >= (1 << 16) ? threads : 1;

  // The image the table is built over: src itself (constant) or src extended.
  Image& ext = scratch.extended;
  ConstImageView base = src_v;
  if (!constant) {
    if (ext.width() != W + 2 * rx || ext.height() != H + 2 * ry || ext.channels() != C || ext.type() != src_v.type)
      ext = Image(W + 2 * rx, H + 2 * ry, C, src_v.type);
    const auto s = view2d<T>(src_v);
    const auto e = view2d<T>(ext.view());
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int y = 0; y < e.height; ++y) {
      const T* in = s.row(border_index(y - ry, H, border.mode));
      T* out = e.row(y);
      for (int x = 0; x < e.width; ++x) {
        if (x == rx && W > 0) {  // the interior in one copy
          std::copy(in, in + static_cast<std::ptrdiff_t>(W) * C, out + static_cast<std::ptrdiff_t>(rx) * C);
          x += W - 1;
          continue;
        }
        const T* p = in + static_cast<std::ptrdiff_t>(border_index(x - rx, W, border.mode)) * C;
        for (int c = 0; c < C; ++c) out[x * C + c] = p[c];
      }
    }
    base = ext.cview();
  }
  IntegralTable& table = scratch.table;
  if (!table.fits(base.width, base.height, C, tt, Memory::host)) table = IntegralTable(base.width, base.height, C, tt);
  integral_cpu(base, IntegralViews{table.view(), {}, {}}, threads);
  const TableRef<const Tab> t = table.ref<const Tab>();
  const auto dst = view2d<T>(dst_v);
  const double value = static_cast<double>(border.value);

  auto store = [](T* out, std::ptrdiff_t i, double acc) {
    if constexpr (std::is_same_v<T, std::uint8_t>) {
      const double r = round_even(acc);
      out[i] = static_cast<std::uint8_t>(r < 0 ? 0 : (r > 255 ? 255 : r));
    } else {
      out[i] = static_cast<float>(acc);
    }
  };

  if (!constant) {
    // Every output is the same four-read expression: one vectorisable loop per row.
    const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(W) * C, dx = static_cast<std::ptrdiff_t>(kw) * C;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int y = 0; y < H; ++y) {
      const Tab* __restrict top = t.row(y);
      const Tab* __restrict bot = t.row(y + kh);
      T* __restrict out = dst.row(y);
      for (std::ptrdiff_t i = 0; i < n; ++i) {
        const Tab sum = static_cast<Tab>(static_cast<Tab>(bot[i + dx] - top[i + dx]) - static_cast<Tab>(bot[i] - top[i]));
        if constexpr (std::is_same_v<Tab, std::uint32_t>)
          store(out, i, static_cast<double>(static_cast<std::int32_t>(sum)) * coef);
        else
          store(out, i, sum * coef);
      }
    }
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int y = 0; y < H; ++y) {
    T* out = dst.row(y);
    const int y0 = std::max(0, y - ry), y1 = std::min(H, y - ry + kh);
    for (int x = 0; x < W; ++x) {
      const int x0 = std::max(0, x - rx), x1 = std::min(W, x - rx + kw);
      const long long inside = static_cast<long long>(x1 - x0) * (y1 - y0);
      const double outside = static_cast<double>(static_cast<long long>(kw) * kh - inside);
      for (int c = 0; c < C; ++c) {
        const Tab sum = t.rect_sum(x0, y0, x1 - x0, y1 - y0, c);
        double acc = (std::is_same_v<Tab, std::uint32_t> ? static_cast<double>(static_cast<std::int32_t>(sum))
                                                         : static_cast<double>(sum)) *
                     coef;
        if (outside > 0) acc += coef * value * outside;
        store(out, static_cast<std::ptrdiff_t>(x) * C + c, acc);
      }
    }
  }
}

}  // namespace

std::string box_filter_via_integral(const ConstImageView& src, const ImageView& dst, const Kernel& kernel,
                                    const Border& border, Backend backend, const Options& options,
                                    BoxScratch* scratch) {
  PIXELKIT_EXPECTS(is_box_kernel(kernel), Status::internal, "box_filter_via_integral: not a box kernel");
  const std::string what = "box " + std::to_string(kernel.width) + "x" + std::to_string(kernel.height) +
                           " via summed-area table";
  if (backend == Backend::cuda) {
#if PIXELKIT_WITH_CUDA
    if (src.memory == Memory::device) return "cuda " + box_filter_via_integral_cuda(src, dst, kernel, border, options.stream);
    Image dsrc = clone(src, Memory::device);
    Image ddst(dst.width, dst.height, dst.channels, dst.type, Memory::device);
    std::string path = box_filter_via_integral_cuda(dsrc.cview(), ddst.view(), kernel, border, options.stream);
    copy(ddst.cview(), dst, options.stream);
    synchronize(options.stream);
    return "cuda " + path + " (host image through device copies)";
#else
    throw Error(Status::unsupported, "backend cuda: this build of pixelkit has no CUDA backend");
#endif
  }
  PIXELKIT_EXPECTS(is_host(src.memory) && is_host(dst.memory), Status::invalid_argument,
                   "box_filter_via_integral: the cpu backend needs host images");
  const int threads = resolve_threads(options.threads);
  BoxScratch local;
  BoxScratch& s = scratch ? *scratch : local;
  if (src.type == PixelType::u8) box_cpu<std::uint8_t>(src, dst, kernel, border, threads, s);
  else box_cpu<float>(src, dst, kernel, border, threads, s);
  return "cpu " + what + " (u32/f64 table, " + std::to_string(threads) + " threads)";
}

}  // namespace pixelkit::detail
