// pixelkit match IMAGE TEMPLATE [--method M] [--mask MASK] [--top K] [--min-distance D]
//                [--hsv-range H1,S1,V1:H2,S2,V2] [--min-fraction F] [--scores OUT.npy]
//                [--out ANNOTATED.png] [--json] [--strategy direct|fft|auto]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "core/json_text.hpp"
#include "pixelkit/io.hpp"
#include "pixelkit/match.hpp"

namespace pixelkit::cli {

namespace {

using detail::json_number;
using detail::json_string;

namespace fs = std::filesystem;

struct MatchArgs {
  std::string image, templ, mask, scores, out;
  MatchOptions match;  // --method, --strategy, --top, --min-distance, --hsv-range, --min-fraction
  bool json = false;
};

std::string shape(const ConstImageView& v) {
  return std::to_string(v.width) + "x" + std::to_string(v.height) + "x" + std::to_string(v.channels) + " " +
         to_string(v.type);
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

// The input checks, each naming the file or option at fault, so that the
// library is only called with what it accepts.
void check_inputs(const MatchArgs& a, const ConstImageView& img, const ConstImageView& templ,
                  const ConstImageView& mask, bool color_check) {
  const std::string I = "IMAGE '" + a.image + "'", T = "TEMPLATE '" + a.templ + "'";
  PIXELKIT_EXPECTS(!img.empty(), Status::invalid_argument, I + " is empty");
  PIXELKIT_EXPECTS(!templ.empty(), Status::invalid_argument, T + " is empty");
  PIXELKIT_EXPECTS(img.channels == 1 || img.channels == 3, Status::invalid_argument,
                   I + " has " + std::to_string(img.channels) + " channels; template matching takes 1 or 3");
  PIXELKIT_EXPECTS(templ.channels == img.channels, Status::invalid_argument,
                   T + " has " + std::to_string(templ.channels) + " channels but the image has " +
                       std::to_string(img.channels));
  PIXELKIT_EXPECTS(templ.type == img.type, Status::invalid_argument,
                   T + " is " + to_string(templ.type) + " but the image is " + to_string(img.type) +
                       " (both must be u8 or both f32)");
  PIXELKIT_EXPECTS(templ.width <= img.width && templ.height <= img.height, Status::invalid_argument,
                   T + " (" + std::to_string(templ.width) + "x" + std::to_string(templ.height) +
                       ") is larger than the image '" + a.image + "' (" + std::to_string(img.width) + "x" +
                       std::to_string(img.height) + ")");
  if (!a.mask.empty()) {
    const std::string M = "--mask '" + a.mask + "'";
    PIXELKIT_EXPECTS(!mask.empty(), Status::invalid_argument, M + " is empty");
    PIXELKIT_EXPECTS(mask.type == PixelType::u8, Status::invalid_argument,
                     M + " is " + to_string(mask.type) + "; a mask is u8 (non-zero = the pixel counts)");
    PIXELKIT_EXPECTS(mask.width == templ.width && mask.height == templ.height, Status::invalid_argument,
                     M + " is " + std::to_string(mask.width) + "x" + std::to_string(mask.height) +
                         " but the template is " + std::to_string(templ.width) + "x" + std::to_string(templ.height));
    PIXELKIT_EXPECTS(mask.channels == 1 || mask.channels == templ.channels, Status::invalid_argument,
                     M + " has " + std::to_string(mask.channels) + " channels; it needs 1 or the template's " +
                         std::to_string(templ.channels));
    bool any = false;
    for (int y = 0; y < mask.height && !any; ++y) {
      const std::uint8_t* m = mask.row<std::uint8_t>(y);
      for (int i = 0; i < mask.width * mask.channels; ++i) any = any || m[i] != 0;
    }
    PIXELKIT_EXPECTS(any, Status::invalid_argument, M + " has no non-zero pixel (nothing would be compared)");
  }
  if (color_check)
    PIXELKIT_EXPECTS(img.channels == 3 && img.type == PixelType::u8, Status::invalid_argument,
                     "--hsv-range: the colour check needs a 3-channel u8 (RGB) image; " + I + " is " + shape(img));
}

// The annotated copy: the image as RGB (a grey image is replicated into three
// channels) in host memory, of the image's type.
Image rgb_copy(const ConstImageView& src) {
  Image dst(src.width, src.height, 3, src.type, Memory::host);
  if (src.channels == 3) {
    copy(src, dst.view());
    return dst;
  }
  for (int y = 0; y < src.height; ++y) {
    if (src.type == PixelType::u8) {
      const auto* s = src.row<std::uint8_t>(y);
      auto* d = dst.row<std::uint8_t>(y);
      for (int x = 0; x < src.width; ++x) d[3 * x] = d[3 * x + 1] = d[3 * x + 2] = s[x];
    } else {
      const auto* s = src.row<float>(y);
      auto* d = dst.row<float>(y);
      for (int x = 0; x < src.width; ++x) d[3 * x] = d[3 * x + 1] = d[3 * x + 2] = s[x];
    }
  }
  return dst;
}

template <typename T>
void fill_rect(const ImageView& img, int x0, int y0, int x1, int y1, T g) {
  // [x0, x1) x [y0, y1), clipped to the image.
  x0 = std::max(x0, 0);
  y0 = std::max(y0, 0);
  x1 = std::min(x1, img.width);
  y1 = std::min(y1, img.height);
  for (int y = y0; y < y1; ++y) {
    T* r = img.row<T>(y);
    for (int x = x0; x < x1; ++x) {
      r[3 * x] = 0;
      r[3 * x + 1] = g;
      r[3 * x + 2] = 0;
    }
  }
}

/// Draws the outline of the w x h rectangle at (x, y), `thickness` pixels wide
/// inside the rectangle, in green (RGB 0,255,0), clipped to the image.
void draw_rectangle(const ImageView& img, int x, int y, int w, int h, int thickness) {
  const int t = std::max(1, std::min({thickness, (w + 1) / 2, (h + 1) / 2}));
  const auto draw = [&](auto g) {
    using T = decltype(g);
    fill_rect<T>(img, x, y, x + w, y + t, g);          // top
    fill_rect<T>(img, x, y + h - t, x + w, y + h, g);  // bottom
    fill_rect<T>(img, x, y, x + t, y + h, g);          // left
    fill_rect<T>(img, x + w - t, y, x + w, y + h, g);  // right
  };
  if (img.type == PixelType::u8) draw(std::uint8_t{255});
  else draw(255.0f);
}

std::string json_image(const std::string& path, const ConstImageView& v) {
  return "{\"path\": " + json_string(path) + ", \"width\": " + std::to_string(v.width) +
         ", \"height\": " + std::to_string(v.height) + ", \"channels\": " + std::to_string(v.channels) +
         ", \"type\": " + json_string(to_string(v.type)) + "}";
}

void print_text(const MatchResult& r, bool color, bool verdict) {
  for (const Match& m : r.matches) {
    std::string line = "x=" + std::to_string(m.x) + " y=" + std::to_string(m.y) + " score=" + json_number(m.score);
    if (color) {
      line += " count=" + std::to_string(m.color_count) + " fraction=" + json_number(m.color_fraction, "%.6f");
      if (verdict) line += std::string(" verdict=") + to_string(m.verdict);
    }
    std::printf("%s\n", line.c_str());
  }
}

void print_json(const MatchArgs& a, const ConstImageView& img, const ConstImageView& templ, const MatchParams& p,
                const Matcher& matcher, const MatchResult& r, Backend backend, const std::string& path) {
  const bool color = p.color_check, verdict = p.min_fraction >= 0;
  std::string s = "{\n";
  s += "  \"image\": " + json_image(a.image, img) + ",\n";
  s += "  \"template\": " + json_image(a.templ, templ) + ",\n";
  s += "  \"mask\": " + (a.mask.empty() ? std::string("null") : json_string(a.mask)) + ",\n";
  s += "  \"method\": " + json_string(to_string(p.method)) + ",\n";
  s += "  \"strategy\": " + json_string(to_string(r.strategy)) + ",\n";
  s += "  \"backend\": " + json_string(to_string(backend)) + ",\n";
  s += "  \"path\": " + json_string(path) + ",\n";
  s += "  \"top\": " + std::to_string(p.top_k) + ",\n";
  s += "  \"min_distance\": " + std::to_string(matcher.min_distance()) + ",\n";
  s += "  \"hsv_range\": " + (color ? json_string(to_string(p.hsv)) : std::string("null")) + ",\n";
  s += "  \"min_fraction\": " + (verdict ? json_number(p.min_fraction) : std::string("null")) + ",\n";
  s += "  \"matches\": [";
  for (std::size_t i = 0; i < r.matches.size(); ++i) {
    const Match& m = r.matches[i];
    s += i ? ",\n    " : "\n    ";
    s += "{\"x\": " + std::to_string(m.x) + ", \"y\": " + std::to_string(m.y) + ", \"score\": " + json_number(m.score);
    if (color) s += ", \"count\": " + std::to_string(m.color_count) + ", \"fraction\": " + json_number(m.color_fraction);
    if (verdict) s += ", \"verdict\": " + json_string(to_string(m.verdict));
    s += "}";
  }
  s += r.matches.empty() ? "]\n}\n" : "\n  ]\n}\n";
  std::fputs(s.c_str(), stdout);
}

Action setup(CLI::App& sub) {
  static MatchArgs a;
  a = MatchArgs{};  // run() may parse more than once in a process
  MatchOptions& m = a.match;
  sub.add_option("IMAGE", a.image, "image to search (PNG, JPEG, BMP, TIFF, PGM/PPM, WebP or .npy), u8 or f32, 1 or 3 channels")
      ->required();
  sub.add_option("TEMPLATE", a.templ, "template: same type and channels as the image, at most its size")->required();
  m.method_opt = sub.add_option("-m,--method", m.method,
                                "sqdiff | sqdiff_normed | ccorr | ccorr_normed | ccoeff | ccoeff_normed")
                     ->capture_default_str();
  sub.add_option("--mask", a.mask, "u8 mask of the template's size, 1 channel or the template's (non-zero = counts)");
  m.top_opt =
      sub.add_option("--top", m.top, "report the K best matches (non-maximum suppression)")->capture_default_str();
  m.min_distance_opt = sub.add_option(
      "--min-distance", m.min_distance,
      "NMS: matches at least D pixels apart (Chebyshev); default max(1, min(w, h) / 2)");
  m.hsv_opt = sub.add_option("--hsv-range", m.hsv,
                             "H1,S1,V1:H2,S2,V2 (OpenCV 8-bit HSV, H 0..179; H1 > H2 wraps around red): count the "
                             "pixels of each match in this range");
  m.min_fraction_opt = sub.add_option("--min-fraction", m.min_fraction,
                                      "with --hsv-range: a match passes when at least this fraction (0..1) is in range");
  sub.add_option("--scores", a.scores, "output .npy: the f32 score map, shape (H-h+1, W-w+1)");
  sub.add_option("-o,--out", a.out, "output image: the image with each match's rectangle drawn in green");
  sub.add_flag("--json", a.json, "print the result as one JSON document");
  m.strategy_opt = sub.add_option("--strategy", m.strategy, "auto | direct | fft (auto: the cost model chooses)")
                       ->capture_default_str();
  return [] {
    RunInfo info;
    const Options options = library_options(&info);
    const MatchParams p = match_params(a.match);
    const std::vector<std::string> inputs = {a.image, a.templ, a.mask};
    if (!a.scores.empty()) {
      check_output("--scores", a.scores, inputs, /*image=*/false);
      PIXELKIT_EXPECTS(fs::path(a.scores).extension() == ".npy", Status::invalid_argument,
                       "--scores: output '" + a.scores + "' must be a .npy file (the score map is an f32 array)");
    }
    if (!a.out.empty()) {
      check_output("--out", a.out, inputs);
      PIXELKIT_EXPECTS(a.scores.empty() || !same_file(a.scores, a.out), Status::invalid_argument,
                       "--out: output '" + a.out + "' is the same file as --scores");
    }
    if (!a.scores.empty()) probe_output_folder("--scores", a.scores);
    if (!a.out.empty()) probe_output_folder("--out", a.out);

    // Pinned host memory lets the cuda backend upload asynchronously.
    const Backend planned = plan_backend(options);
    const Memory mem = planned == Backend::cuda ? Memory::pinned : Memory::host;
    Timer t_read;
    const Image img = read_image(a.image, mem);
    const Image templ = read_image(a.templ, mem);
    const Image mask = a.mask.empty() ? Image() : read_image(a.mask);
    verbose("read",
            a.image + " " + shape(img) + ", " + a.templ + " " + shape(templ) +
                (a.mask.empty() ? std::string() : ", mask " + a.mask + " " + shape(mask)),
            t_read.ms());
    check_inputs(a, img, templ, mask, p.color_check);

    Timer t_prep;
    Matcher matcher(templ, p, mask);
    verbose("prepare", std::string(to_string(p.method)) + ", template " + shape(templ) +
                           (matcher.masked() ? ", masked" : "") + ", min distance " +
                           std::to_string(matcher.min_distance()),
            t_prep.ms());

    int sw = 0, sh = 0;
    match_result_size(img.width(), img.height(), templ.width(), templ.height(), sw, sh);
    Image scores;
    if (!a.scores.empty()) scores = Image(sw, sh, 1, PixelType::f32, Memory::host);
    Timer t_run;
    const MatchResult r = a.scores.empty() ? matcher(img, options) : matcher(img, scores.view(), options);
    verbose("match",
            std::string(to_string(info.backend)) + ": " + info.path + "; strategy " + to_string(r.strategy) + ", " +
                to_string(p.method) + ", " + std::to_string(r.matches.size()) + " match" +
                (r.matches.size() == 1 ? "" : "es") + (p.color_check ? ", colour check " + to_string(p.hsv) : ""),
            t_run.ms());

    // Write every output or none: each goes to a temporary beside its
    // destination, and only once both are written are they renamed into place.
    Timer t_write;
    std::string written;
    StagedOutputs outputs;
    if (!a.scores.empty()) {
      outputs.write(a.scores, [&](const std::string& tmp) { write_npy(tmp, scores.cview()); });
      written = a.scores;
    }
    if (!a.out.empty()) {
      Image annotated = rgb_copy(img);
      for (const Match& m : r.matches) draw_rectangle(annotated.view(), m.x, m.y, templ.width(), templ.height(), 2);
      outputs.write(a.out, [&](const std::string& tmp) { write_image(tmp, annotated.cview()); });
      written += (written.empty() ? "" : ", ") + a.out;
    }
    outputs.commit();
    if (!written.empty()) verbose("write", written, t_write.ms());

    if (a.json) print_json(a, img, templ, p, matcher, r, info.backend, info.path);
    else print_text(r, p.color_check, p.min_fraction >= 0);
  };
}

const bool registered = register_command(
    "match", "Find a template in an image (OpenCV matchTemplate methods), top-K with NMS and an HSV colour check",
    setup);

}  // namespace
}  // namespace pixelkit::cli
