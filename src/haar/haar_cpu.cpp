// haar_cpu.cpp - the cpu backend of the Haar transform: f32 arithmetic, one
// 2x2 block at a time (all four outputs from the same four inputs), OpenMP
// threads over block rows, inner loops over a row that GCC vectorises (the
// channel count is a template parameter, so the stride is a constant).
//
// Passes over memory: level 1 reads the source view directly (u8 converted on
// the fly, any pitch) and writes its details straight into the coefficient
// array; only the approximation, a quarter of the size, goes to scratch for
// the next level. The last level writes its approximation into the array.
// The inverse mirrors this: the last step writes the destination (u8 rounded
// to nearest even and saturated) directly.
//
// Orthonormal: the two 1D gains 1/sqrt2 multiply to exactly 1/2, so each
// output is (sum or difference of four inputs) * 0.5f; average: * 0.25f. The
// inverse multiplies by 0.5f (orthonormal) or 1 (average). Odd sides pair the
// last sample with itself (PyWavelets' periodization padding).
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/view2d.hpp"
#include "haar/haar_backends.hpp"

namespace pixelkit::detail {
namespace {

// Below this many blocks a level runs on one thread: the fork costs more.
constexpr long long kParallelBlocks = 16384;

template <typename T>
inline float load(T v) {
  return static_cast<float>(v);
}

// Round to nearest (ties to even: the FPU's default mode) and saturate.
// Adding and removing 1.5 * 2^23 rounds in vector registers without lrintf.
inline void store(float* p, float v) { *p = v; }
inline void store(std::uint8_t* p, float v) {
  float f = v > 0.0f ? v : 0.0f;
  f = f < 255.0f ? f : 255.0f;
  constexpr float kRound = 12582912.0f;  // (x + c) - c is not folded without -ffast-math
  *p = static_cast<std::uint8_t>(static_cast<int>((f + kRound) - kRound));
}

// One forward level: `in` (w x h) -> ll (ceil halves) and the level's three
// detail bands in `co`.
template <int C, typename Tin>
void forward_level(const View2D<const Tin>& in, const View2D<float>& ll, const View2D<float>& co,
                   const HaarLayout::Band& b, float s, int threads) {
  const int full = in.width / 2;  // blocks with two real columns
  const bool odd_w = b.width > full;
  const long long work = static_cast<long long>(b.width) * b.height;
#pragma omp parallel for schedule(static) num_threads(threads) if (work >= kParallelBlocks)
  for (int i = 0; i < b.height; ++i) {
    const Tin* __restrict r0 = in.row(2 * i);
    const Tin* __restrict r1 = in.row(std::min(2 * i + 1, in.height - 1));
    float* __restrict l = ll.row(i);
    float* __restrict xd = co.row(i) + b.x0 * C;
    float* __restrict yd = co.row(b.y0 + i);
    float* __restrict dd = yd + b.x0 * C;
    for (int j = 0; j < full; ++j)
      for (int c = 0; c < C; ++c) {
        const float a = load(r0[2 * j * C + c]), bb = load(r0[(2 * j + 1) * C + c]);
        const float cc = load(r1[2 * j * C + c]), d = load(r1[(2 * j + 1) * C + c]);
        const float s0 = a + bb, d0 = a - bb, s1 = cc + d, d1 = cc - d;
        l[j * C + c] = (s0 + s1) * s;
        xd[j * C + c] = (d0 + d1) * s;
        yd[j * C + c] = (s0 - s1) * s;
        dd[j * C + c] = (d0 - d1) * s;
      }
    if (odd_w) {
      const int j = full;
      for (int c = 0; c < C; ++c) {
        const float a = load(r0[2 * j * C + c]), cc = load(r1[2 * j * C + c]);
        l[j * C + c] = (2.0f * a + 2.0f * cc) * s;  // (a + a) + (c + c), exactly as the pair sums
        xd[j * C + c] = 0.0f;
        yd[j * C + c] = (2.0f * a - 2.0f * cc) * s;
        dd[j * C + c] = 0.0f;
      }
    }
  }
}

// One inverse level: ll (band) + details -> out (the finer size, cropped).
template <int C, typename Tout>
void inverse_level(const View2D<const float>& ll, const View2D<const float>& co, const View2D<Tout>& out,
                   const HaarLayout::Band& b, float s, int threads) {
  const int full = out.width / 2;
  const bool odd_w = b.width > full;
  const long long work = static_cast<long long>(b.width) * b.height;
#pragma omp parallel for schedule(static) num_threads(threads) if (work >= kParallelBlocks)
  for (int i = 0; i < b.height; ++i) {
    const float* __restrict l = ll.row(i);
    const float* __restrict xd = co.row(i) + b.x0 * C;
    const float* __restrict yd = co.row(b.y0 + i);
    const float* __restrict dd = yd + b.x0 * C;
    Tout* __restrict o0 = out.row(2 * i);
    const bool second = 2 * i + 1 < out.height;
    Tout* __restrict o1 = out.row(second ? 2 * i + 1 : 2 * i);
    if (second) {
      for (int j = 0; j < full; ++j)
        for (int c = 0; c < C; ++c) {
          const int k = j * C + c;
          const float p = l[k] + yd[k], q = l[k] - yd[k], u = xd[k] + dd[k], v = xd[k] - dd[k];
          store(&o0[2 * j * C + c], (p + u) * s);
          store(&o0[(2 * j + 1) * C + c], (p - u) * s);
          store(&o1[2 * j * C + c], (q + v) * s);
          store(&o1[(2 * j + 1) * C + c], (q - v) * s);
        }
    } else {
      for (int j = 0; j < full; ++j)
        for (int c = 0; c < C; ++c) {
          const int k = j * C + c;
          const float p = l[k] + yd[k], u = xd[k] + dd[k];
          store(&o0[2 * j * C + c], (p + u) * s);
          store(&o0[(2 * j + 1) * C + c], (p - u) * s);
        }
    }
    if (odd_w) {
      const int j = full;
      for (int c = 0; c < C; ++c) {
        const int k = j * C + c;
        const float p = l[k] + yd[k], q = l[k] - yd[k], u = xd[k] + dd[k], v = xd[k] - dd[k];
        store(&o0[2 * j * C + c], (p + u) * s);
        if (second) store(&o1[2 * j * C + c], (q + v) * s);
      }
    }
  }
}

// A dense w x h x c float plane of the scratch (grown only when too small).
View2D<float> scratch_plane(HaarCpuScratch& scratch, int which, int w, int h, int c) {
  auto& b = scratch.plane[which];
  const std::size_t n = static_cast<std::size_t>(w) * h * c;
  if (b.size() < n) b.resize(n);
  return {b.data(), w, h, c, static_cast<std::ptrdiff_t>(w) * c * static_cast<std::ptrdiff_t>(sizeof(float))};
}

template <typename T>
View2D<const T> as_const(const View2D<T>& v) {
  return {v.data, v.width, v.height, v.channels, v.pitch};
}

void zero_gaps(const View2D<float>& co, const HaarLayout& l, int threads) {
  const int C = co.channels;
  for (int k = 1; k <= l.levels; ++k) {
    const auto& b = l.band[k];
#pragma omp parallel for schedule(static) num_threads(threads) if (b.y0 - b.height > 64)
    for (int y = b.height; y < b.y0; ++y) std::fill_n(co.row(y) + b.x0 * C, b.width * C, 0.0f);
    if (b.x0 > b.width)
      for (int y = b.y0; y < b.y0 + b.height; ++y) std::fill_n(co.row(y) + b.width * C, (b.x0 - b.width) * C, 0.0f);
  }
}

template <int C, typename Tin>
void forward_t(const ConstImageView& src, const ImageView& coeffs, const HaarLayout& l, float s, int threads,
               HaarCpuScratch& scratch) {
  const auto co = view2d<float>(coeffs);
  View2D<const float> prev{};
  for (int k = 1; k <= l.levels; ++k) {
    const auto& b = l.band[k];
    // The last level's approximation goes to the array's top-left corner.
    const View2D<float> ll = k == l.levels ? View2D<float>{co.data, b.width, b.height, C, co.pitch}
                                           : scratch_plane(scratch, (k - 1) % 2, b.width, b.height, C);
    if (k == 1) forward_level<C, Tin>(view2d<Tin>(src), ll, co, b, s, threads);
    else forward_level<C, float>(prev, ll, co, b, s, threads);
    prev = as_const(ll);
  }
  zero_gaps(co, l, threads);
}

template <int C, typename Tout>
void inverse_t(const ConstImageView& coeffs, const ImageView& dst, const HaarLayout& l, float s, int threads,
               HaarCpuScratch& scratch) {
  const auto co = view2d<float>(coeffs);
  View2D<const float> ll{co.data, l.band[l.levels].width, l.band[l.levels].height, C, co.pitch};
  for (int k = l.levels; k >= 1; --k) {
    const auto& b = l.band[k];
    if (k == 1) {
      inverse_level<C, Tout>(ll, co, view2d<Tout>(dst), b, s, threads);
    } else {
      const auto& up = l.band[k - 1];
      const View2D<float> out = scratch_plane(scratch, (k - 1) % 2, up.width, up.height, C);
      inverse_level<C, float>(ll, co, out, b, s, threads);
      ll = as_const(out);
    }
  }
}

template <typename Tin>
void forward_c(const ConstImageView& src, const ImageView& coeffs, const HaarLayout& l, float s, int threads,
               HaarCpuScratch& scratch) {
  switch (src.channels) {
    case 1: forward_t<1, Tin>(src, coeffs, l, s, threads, scratch); break;
    case 3: forward_t<3, Tin>(src, coeffs, l, s, threads, scratch); break;
    default: forward_t<4, Tin>(src, coeffs, l, s, threads, scratch); break;
  }
}

template <typename Tout>
void inverse_c(const ConstImageView& coeffs, const ImageView& dst, const HaarLayout& l, float s, int threads,
               HaarCpuScratch& scratch) {
  switch (dst.channels) {
    case 1: inverse_t<1, Tout>(coeffs, dst, l, s, threads, scratch); break;
    case 3: inverse_t<3, Tout>(coeffs, dst, l, s, threads, scratch); break;
    default: inverse_t<4, Tout>(coeffs, dst, l, s, threads, scratch); break;
  }
}

}  // namespace

std::string haar_forward_cpu(const ConstImageView& src, const ImageView& coeffs, const HaarLayout& layout,
                             HaarNormalize normalize, int threads, HaarCpuScratch& scratch) {
  const float s = normalize == HaarNormalize::average ? 0.25f : 0.5f;
  if (src.type == PixelType::u8) forward_c<std::uint8_t>(src, coeffs, layout, s, threads, scratch);
  else forward_c<float>(src, coeffs, layout, s, threads, scratch);
  return "cpu 2x2 blocks, " + std::to_string(layout.levels) + " levels, " + std::to_string(threads) + " threads";
}

std::string haar_inverse_cpu(const ConstImageView& coeffs, const ImageView& dst, const HaarLayout& layout,
                             HaarNormalize normalize, int threads, HaarCpuScratch& scratch) {
  const float s = normalize == HaarNormalize::average ? 1.0f : 0.5f;
  if (dst.type == PixelType::u8) inverse_c<std::uint8_t>(coeffs, dst, layout, s, threads, scratch);
  else inverse_c<float>(coeffs, dst, layout, s, threads, scratch);
  return "cpu 2x2 blocks, " + std::to_string(layout.levels) + " levels, " + std::to_string(threads) + " threads";
}

}  // namespace pixelkit::detail
