// What every template-matching backend shares, host and device alike: the
// template's sums, the one score formula, and OpenCV's 8-bit RGB -> HSV.
//
// Every backend computes, per window,
//   X     = sum_c sum M T I   (the correlation with the masked template,
//                              summed over the channels: one number)
//   S1[c] = sum M I           (window sum per channel; a box sum without a mask)
//   S2[c] = sum M I^2         (window energy per channel)
// exactly for u8 images (integers, or an FFT result rounded back to the exact
// integer) and in f64 for f32 images, then calls match_score() with them. The
// formula is written with explicitly rounded operations so that no compiler
// contracts a*b+c into an FMA on one backend and not on another: for u8 the
// f32 score is bit-identical everywhere. (Host files of src/match/ are also
// compiled with -ffp-contract=off.)
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "pixelkit/border.hpp"  // PIXELKIT_HD
#include "pixelkit/match.hpp"

namespace pixelkit::detail {

constexpr int kMaxMatchChannels = 3;

/// The template's sums (f64; exact for u8), computed once by the Matcher.
struct TemplateStats {
  int width = 0, height = 0, channels = 0;
  bool masked = false;
  double n[kMaxMatchChannels] = {};     ///< pixels that count, per channel (w * h without a mask)
  double s1[kMaxMatchChannels] = {};    ///< sum M T
  double s2[kMaxMatchChannels] = {};    ///< sum M T^2
  double mean[kMaxMatchChannels] = {};  ///< s1 / n (0 when n == 0)
  double norm = 0;        ///< sqrt(sum_c s2), the template part of the *_normed denominators (not ccoeff)
  double norm_centred = 0;  ///< sqrt(sum_c sum M (T - mean)^2), two-pass: exactly 0 for a flat template
};

// Explicitly rounded f64 arithmetic (no FMA contraction on the device).
#if defined(__CUDA_ARCH__)
PIXELKIT_HD double d_add(double a, double b) { return __dadd_rn(a, b); }
PIXELKIT_HD double d_sub(double a, double b) { return __dadd_rn(a, -b); }
PIXELKIT_HD double d_mul(double a, double b) { return __dmul_rn(a, b); }
PIXELKIT_HD double d_div(double a, double b) { return __ddiv_rn(a, b); }
PIXELKIT_HD double d_sqrt(double a) { return __dsqrt_rn(a); }
#else
PIXELKIT_HD double d_add(double a, double b) { return a + b; }
PIXELKIT_HD double d_sub(double a, double b) { return a - b; }
PIXELKIT_HD double d_mul(double a, double b) { return a * b; }
PIXELKIT_HD double d_div(double a, double b) { return a / b; }
PIXELKIT_HD double d_sqrt(double a) { return std::sqrt(a); }
#endif

/// The score of one window from its sums (see pixelkit/match.hpp for the
/// definitions, the clamping and the degenerate cases). S1 is read only by
/// ccoeff and ccoeff_normed, S2 only by the sqdiff and *_normed methods: a
/// backend may pass nullptr for what its method does not read.
PIXELKIT_HD float match_score(MatchMethod method, const TemplateStats& t, double X, const double* S1,
                              const double* S2) {
  const int C = t.channels;
  double num = 0;
  switch (method) {
    case MatchMethod::sqdiff:
    case MatchMethod::sqdiff_normed: {
      double s2 = 0;
      for (int c = 0; c < C; ++c) s2 = d_add(s2, d_add(S2[c], t.s2[c]));
      num = d_sub(s2, d_mul(2.0, X));
      if (num < 0) num = 0;  // f32 images: rounding (u8 sums are exact)
      break;
    }
    case MatchMethod::ccorr:
    case MatchMethod::ccorr_normed:
      num = X;
      break;
    case MatchMethod::ccoeff:
    case MatchMethod::ccoeff_normed: {
      double m = 0;
      for (int c = 0; c < C; ++c) m = d_add(m, d_mul(t.mean[c], S1[c]));
      num = d_sub(X, m);
      break;
    }
  }
  if (method == MatchMethod::sqdiff || method == MatchMethod::ccorr || method == MatchMethod::ccoeff)
    return static_cast<float>(num);

  // The normalised methods: OpenCV's rule for a window without energy
  // (variance, for ccoeff_normed), then clamping.
  double wnd2 = 0, wnd_mean2 = 0;
  for (int c = 0; c < C; ++c) {
    wnd2 = d_add(wnd2, S2[c]);
    if (method == MatchMethod::ccoeff_normed && t.n[c] > 0) wnd_mean2 = d_add(wnd_mean2, d_div(d_mul(S1[c], S1[c]), t.n[c]));
  }
  const double templ_norm = method == MatchMethod::ccoeff_normed ? t.norm_centred : t.norm;
  if (method == MatchMethod::ccoeff_normed && templ_norm == 0) return 1.0f;  // flat template (OpenCV)
  double diff2 = d_sub(wnd2, wnd_mean2);
  if (diff2 < 0) diff2 = 0;
  const double flat_limit = d_mul(10.0 * FLT_EPSILON, wnd2);
  const double den = (diff2 <= (flat_limit < 0.5 ? flat_limit : 0.5)) ? 0.0 : d_mul(d_sqrt(diff2), templ_norm);
  if (den == 0) return method == MatchMethod::sqdiff_normed ? 1.0f : 0.0f;
  double r = d_div(num, den);
  if (method == MatchMethod::sqdiff_normed) {
    r = r < 0 ? 0 : (r > 1 ? 1 : r);
  } else {
    r = r < -1 ? -1 : (r > 1 ? 1 : r);
  }
  return static_cast<float>(r);
}

/// True when `a` is a better score than `b` for `method` (strictly).
PIXELKIT_HD bool better_score(bool lower_is_better_, float a, float b) {
  return lower_is_better_ ? a < b : a > b;
}

/// OpenCV's 8-bit RGB -> HSV (cvtColor COLOR_RGB2HSV, H range 180): integer
/// arithmetic with 12 fractional bits; the divisions are OpenCV's tables
/// sdiv(v) = round(255 * 4096 / v) and hdiv(d) = round(180 * 4096 / (6 d)),
/// rounded half to even as cvRound does.
PIXELKIT_HD void rgb_to_hsv8(int r, int g, int b, int& h, int& s, int& v) {
  const int shift = 12;
  int vmax = b > g ? b : g;
  vmax = vmax > r ? vmax : r;
  int vmin = b < g ? b : g;
  vmin = vmin < r ? vmin : r;
  const int diff = vmax - vmin;
  const int vr = vmax == r ? -1 : 0;
  const int vg = vmax == g ? -1 : 0;
#if defined(__CUDA_ARCH__)
  const int sdiv = vmax == 0 ? 0 : __double2int_rn(1044480.0 / vmax);
  const int hdiv = diff == 0 ? 0 : __double2int_rn(737280.0 / (6.0 * diff));
#else
  const int sdiv = vmax == 0 ? 0 : static_cast<int>(std::nearbyint(1044480.0 / vmax));
  const int hdiv = diff == 0 ? 0 : static_cast<int>(std::nearbyint(737280.0 / (6.0 * diff)));
#endif
  s = (diff * sdiv + (1 << (shift - 1))) >> shift;
  int hh = (vr & (g - b)) + (~vr & ((vg & (b - r + 2 * diff)) + ((~vg) & (r - g + 4 * diff))));
  hh = (hh * hdiv + (1 << (shift - 1))) >> shift;
  hh += hh < 0 ? 180 : 0;
  h = hh > 255 ? 255 : hh;
  v = vmax;
}

PIXELKIT_HD bool hsv_in_range(const HsvRange& range, int h, int s, int v) {
  const bool hue = range.h_lo <= range.h_hi ? (h >= range.h_lo && h <= range.h_hi) : (h >= range.h_lo || h <= range.h_hi);
  return hue && s >= range.s_lo && s <= range.s_hi && v >= range.v_lo && v <= range.v_hi;
}

}  // namespace pixelkit::detail
