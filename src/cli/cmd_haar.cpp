// pixelkit haar IN [--levels L] [--normalize orthonormal|average] [--coeffs OUT.npz] [--view OUT.png]
// pixelkit haar --inverse COEFFS.npz OUT
// pixelkit haar IN --compress KEEP OUT [--levels L] [--normalize ...] [--coeffs ...] [--view ...]
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "pixelkit/haar.hpp"
#include "pixelkit/io.hpp"

namespace pixelkit::cli {

namespace {

struct HaarArgs {
  std::vector<std::string> paths;
  std::string levels = "max", normalize = "orthonormal", coeffs, view, inverse, compress;
  CLI::Option* levels_opt = nullptr;
  CLI::Option* normalize_opt = nullptr;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

double parse_keep(const std::string& text) {
  return for_option("--compress", [&] {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &end);
    PIXELKIT_EXPECTS(!text.empty() && end && *end == '\0' && errno == 0 && std::isfinite(v),
                     Status::invalid_argument, "KEEP '" + text + "' is not a number");
    PIXELKIT_EXPECTS(v > 0.0 && v <= 1.0, Status::invalid_argument,
                     "KEEP " + text + " is outside (0, 1] (the fraction of detail coefficients to keep)");
    return v;
  });
}

// Peak signal-to-noise ratio of `got` against `want` (host, same shape and
// type): peak 255 for u8, the reference's value range for f32.
double psnr(const ConstImageView& want, const ConstImageView& got) {
  double se = 0.0, lo = INFINITY, hi = -INFINITY;
  const int n = want.width * want.channels;
  for (int y = 0; y < want.height; ++y)
    for (int i = 0; i < n; ++i) {
      double a, b;
      if (want.type == PixelType::u8) {
        a = want.row<std::uint8_t>(y)[i];
        b = got.row<std::uint8_t>(y)[i];
      } else {
        a = want.row<float>(y)[i];
        b = got.row<float>(y)[i];
      }
      se += (a - b) * (a - b);
      lo = std::min(lo, a);
      hi = std::max(hi, a);
    }
  const double mse = se / (static_cast<double>(n) * want.height);
  double peak = want.type == PixelType::u8 ? 255.0 : hi - lo;
  if (!(peak > 0.0)) peak = 1.0;
  return mse == 0.0 ? INFINITY : 10.0 * std::log10(peak * peak / mse);
}

// Seed 000's picture of the transform: the approximation stretched to
// 0..255, each detail band (per channel) scaled so that its 99th percentile
// magnitude reaches +-127 around mid-grey; cells outside every band are grey.
Image make_view(const ConstImageView& co, const HaarLayout& l) {
  const int C = co.channels;
  Image v(co.width, co.height, C, PixelType::u8);
  for (int y = 0; y < co.height; ++y) std::fill_n(v.row<std::uint8_t>(y), co.width * C, std::uint8_t{128});
  struct Rect { int x, y, w, h; };
  const auto paint = [&](const Rect& r, bool approx) {
    for (int c = 0; c < C; ++c) {
      std::vector<float> vals;
      vals.reserve(static_cast<std::size_t>(r.w) * r.h);
      for (int y = r.y; y < r.y + r.h; ++y)
        for (int x = r.x; x < r.x + r.w; ++x) vals.push_back(co.row<float>(y)[x * C + c]);
      if (vals.empty()) continue;
      double off = 0.0, scale = 1.0;
      if (approx) {
        const auto [mn, mx] = std::minmax_element(vals.begin(), vals.end());
        off = *mn;
        scale = *mx > *mn ? 255.0 / (*mx - *mn) : 0.0;
      } else {
        std::vector<float> mag(vals.size());
        std::transform(vals.begin(), vals.end(), mag.begin(), [](float f) { return std::fabs(f); });
        const std::size_t k = std::min(mag.size() - 1, mag.size() * 99 / 100);
        std::nth_element(mag.begin(), mag.begin() + static_cast<std::ptrdiff_t>(k), mag.end());
        const double q = mag[k] > 0 ? mag[k] : 1.0;
        off = -128.0 * q / 127.0;
        scale = 127.0 / q;
      }
      std::size_t i = 0;
      for (int y = r.y; y < r.y + r.h; ++y)
        for (int x = r.x; x < r.x + r.w; ++x) {
          const double g = std::nearbyint((vals[i++] - off) * scale);
          v.row<std::uint8_t>(y)[x * C + c] = static_cast<std::uint8_t>(g < 0 ? 0 : (g > 255 ? 255 : g));
        }
    }
  };
  paint({0, 0, l.band[l.levels].width, l.band[l.levels].height}, true);
  for (int k = 1; k <= l.levels; ++k) {
    const auto& b = l.band[k];
    paint({b.x0, 0, b.width, b.height}, false);
    paint({0, b.y0, b.width, b.height}, false);
    paint({b.x0, b.y0, b.width, b.height}, false);
  }
  return v;
}

std::string dims(const ConstImageView& v) {
  return std::to_string(v.width) + "x" + std::to_string(v.height) + "x" + std::to_string(v.channels) + " " +
         to_string(v.type);
}

void run_inverse(const HaarArgs& a, const Options& options, RunInfo& info) {
  PIXELKIT_EXPECTS(a.paths.size() == 1, Status::invalid_argument,
                   "--inverse: give the coefficient file and one output (pixelkit haar --inverse COEFFS.npz OUT.png)");
  PIXELKIT_EXPECTS(a.levels_opt->count() == 0 && a.normalize_opt->count() == 0, Status::invalid_argument,
                   "--inverse: --levels and --normalize come from the coefficient file and cannot be given");
  PIXELKIT_EXPECTS(a.coeffs.empty() && a.view.empty() && a.compress.empty(), Status::invalid_argument,
                   "--inverse cannot be combined with --coeffs, --view or --compress");
  const std::string& out = a.paths[0];
  check_output("OUT", out, {a.inverse});
  (void)plan_backend(options);
  Timer t_read;
  HaarCoefficients hc = read_haar_npz(a.inverse);
  verbose("read", a.inverse + " " + dims(hc.coeffs.cview()) + ", " + std::to_string(hc.levels) + " levels " +
                      to_string(hc.normalize) + ", image " + std::to_string(hc.width) + "x" +
                      std::to_string(hc.height),
          t_read.ms());
  Image dst(hc.width, hc.height, hc.coeffs.channels(), hc.source_type);
  Timer t_run;
  HaarTransform(hc.levels, hc.normalize).inverse(hc.coeffs.cview(), dst.view(), options);
  verbose("inverse", std::string(to_string(info.backend)) + ": " + info.path, t_run.ms());
  Timer t_write;
  write_image(out, dst.cview());
  verbose("write", out, t_write.ms());
}

void run_forward(const HaarArgs& a, const Options& options, RunInfo& info) {
  const bool compress = !a.compress.empty();
  PIXELKIT_EXPECTS(a.paths.size() == (compress ? 2u : 1u), Status::invalid_argument,
                   compress ? "--compress: give the input and one output (pixelkit haar IN --compress KEEP OUT.png)"
                            : "give one input image (the outputs go to --coeffs and --view)");
  PIXELKIT_EXPECTS(compress || !a.coeffs.empty() || !a.view.empty(), Status::invalid_argument,
                   "nothing to write: give --coeffs OUT.npz, --view OUT.png, --compress KEEP OUT or --inverse");
  const std::string& in = a.paths[0];
  const double keep = compress ? parse_keep(a.compress) : 1.0;
  const HaarNormalize norm = for_option("--normalize", [&] { return parse_haar_normalize(a.normalize); });
  // Every output is checked before any work, so a failure writes nothing.
  if (compress) check_output("OUT", a.paths[1], {in});
  if (!a.coeffs.empty()) {
    check_output("--coeffs", a.coeffs, {in}, false);
    PIXELKIT_EXPECTS(ends_with(a.coeffs, ".npz"), Status::invalid_argument,
                     "--coeffs: '" + a.coeffs + "' must end in .npz (a NumPy archive)");
  }
  if (!a.view.empty()) check_output("--view", a.view, {in});
  std::vector<std::string> outs = {a.coeffs, a.view, compress ? a.paths[1] : std::string()};
  for (std::size_t i = 0; i < outs.size(); ++i)
    for (std::size_t j = i + 1; j < outs.size(); ++j)
      PIXELKIT_EXPECTS(outs[i].empty() || outs[i] != outs[j], Status::invalid_argument,
                       "'" + outs[i] + "' is named as two outputs");

  const Backend planned = plan_backend(options);
  const Memory mem = planned == Backend::cuda ? Memory::pinned : Memory::host;
  Timer t_read;
  Image src = read_image(in, mem);
  verbose("read", in + " " + dims(src.cview()), t_read.ms());
  const std::string picture = "a " + std::to_string(src.width()) + "x" + std::to_string(src.height()) + " image";
  const int levels = parse_haar_levels(a.levels, src.width(), src.height(), picture);
  const HaarLayout layout = haar_layout(src.width(), src.height(), levels);

  Image co(layout.coeff_width, layout.coeff_height, src.channels(), PixelType::f32, mem);
  HaarTransform haar(levels, norm);
  Timer t_run;
  haar.forward(src.cview(), co.view(), options);
  verbose("forward", std::string(to_string(info.backend)) + ": " + info.path + ", " + std::to_string(levels) +
                         " levels " + to_string(norm) + " -> " + dims(co.cview()),
          t_run.ms());

  // Every output or none: each is written to a temporary beside its
  // destination, and all are renamed into place once all are written.
  StagedOutputs outputs;
  std::function<void()> print_stats = [] {};
  if (compress) {
    Timer t_keep;
    const HaarKeepStats ks = haar_keep_largest(co.view(), layout, keep);
    verbose("keep", std::to_string(ks.kept) + " of " + std::to_string(ks.details) + " details", t_keep.ms());
    Image rec(src.width(), src.height(), src.channels(), src.type(), mem);
    Timer t_inv;
    haar.inverse(co.cview(), rec.view(), options);
    verbose("inverse", std::string(to_string(info.backend)) + ": " + info.path, t_inv.ms());
    Timer t_write;
    outputs.write(a.paths[1], [&](const std::string& tmp) { write_image(tmp, rec.cview()); });
    verbose("write", a.paths[1], t_write.ms());
    const double p = psnr(src.cview(), rec.cview());
    print_stats = [&src, ks, p] {
      const std::size_t pixels = static_cast<std::size_t>(src.width()) * src.height() * src.channels();
      const std::size_t sent = ks.kept + ks.approx;
      std::printf("kept %zu of %zu detail coefficients (%.2f%%) plus %zu approximation coefficients\n", ks.kept,
                  ks.details, ks.details ? 100.0 * static_cast<double>(ks.kept) / static_cast<double>(ks.details) : 100.0,
                  ks.approx);
      std::printf("ratio %.2f:1 (%zu values for %zu samples)\n",
                  static_cast<double>(pixels) / static_cast<double>(std::max<std::size_t>(sent, 1)), sent, pixels);
      if (std::isinf(p)) std::printf("PSNR inf dB (identical)\n");
      else std::printf("PSNR %.2f dB\n", p);
    };
  }
  if (!a.coeffs.empty()) {
    Timer t;
    outputs.write(a.coeffs, [&](const std::string& tmp) {
      write_haar_npz(tmp, co.cview(), src.width(), src.height(), levels, norm, src.type());
    });
    verbose("write", a.coeffs, t.ms());
  }
  if (!a.view.empty()) {
    Timer t;
    const Image v = make_view(co.cview(), layout);
    outputs.write(a.view, [&](const std::string& tmp) { write_image(tmp, v.cview()); });
    verbose("write", a.view, t.ms());
  }
  outputs.commit();
  print_stats();
}

Action setup(CLI::App& sub) {
  static HaarArgs a;
  a = HaarArgs{};
  sub.add_option("PATHS", a.paths,
                 "IN (an image: PNG, JPEG, ..., or .npy); with --compress: IN OUT; with --inverse: OUT");
  a.levels_opt = sub.add_option("-l,--levels", a.levels, "levels, 1..max, or 'max' (the approximation is then 1 "
                                                         "pixel on its shorter side)")
                     ->capture_default_str();
  a.normalize_opt =
      sub.add_option("-n,--normalize", a.normalize, "orthonormal (PyWavelets' haar) | average (seed 000)")
          ->capture_default_str();
  sub.add_option("--coeffs", a.coeffs, "write the coefficients, their layout and what --inverse needs (.npz)");
  sub.add_option("--view", a.view, "write a picture of the transform (approximation and scaled detail bands)");
  sub.add_option("--inverse", a.inverse, "reconstruct the image from COEFFS.npz into OUT");
  sub.add_option("--compress", a.compress,
                 "keep the largest KEEP fraction (0 < KEEP <= 1) of detail coefficients, reconstruct into OUT, "
                 "print the kept count, the ratio and the PSNR");
  return [] {
    RunInfo info;
    const Options options = library_options(&info);
    if (!a.inverse.empty()) run_inverse(a, options, info);
    else run_forward(a, options, info);
  };
}

const bool registered = register_command("haar", "Multi-level 2D Haar wavelet transform, its inverse and compression",
                                         setup);

}  // namespace
}  // namespace pixelkit::cli
