// The Haar transform's one dispatch (check arguments, choose the backend, run
// it, say what ran), its layout, thresholding and coefficient files.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "haar/haar_backends.hpp"
#include "pixelkit/config.hpp"
#include "pixelkit/io.hpp"

namespace pixelkit {

// ---- names, levels, layout ---------------------------------------------------

HaarNormalize parse_haar_normalize(const std::string& text) {
  if (text == "orthonormal") return HaarNormalize::orthonormal;
  if (text == "average") return HaarNormalize::average;
  throw Error(Status::invalid_argument, "normalisation '" + text + "' is not one of orthonormal, average");
}

const char* to_string(HaarNormalize normalize) noexcept {
  return normalize == HaarNormalize::average ? "average" : "orthonormal";
}

int haar_max_levels(int width, int height) {
  PIXELKIT_EXPECTS(width > 0 && height > 0, Status::invalid_argument,
                   "haar: image " + std::to_string(width) + "x" + std::to_string(height) + " is empty");
  int n = std::min(width, height), levels = 0;
  while (n > 1) {
    n = n / 2 + n % 2;  // ceil(n / 2) without the overflow of n + 1 at INT_MAX
    ++levels;
  }
  return std::max(levels, 1);
}

std::size_t HaarLayout::detail_count() const noexcept {
  std::size_t n = 0;
  for (int k = 1; k <= levels; ++k) n += 3 * static_cast<std::size_t>(band[k].width) * band[k].height;
  return n;
}

std::size_t HaarLayout::approx_count() const noexcept {
  return levels < 1 ? 0 : static_cast<std::size_t>(band[levels].width) * band[levels].height;
}

HaarLayout haar_layout(int width, int height, int levels) {
  const int max = haar_max_levels(width, height);
  PIXELKIT_EXPECTS(levels >= 1 && levels <= max, Status::invalid_argument,
                   "haar: " + std::to_string(levels) + " levels is outside 1.." + std::to_string(max) + " for a " +
                       std::to_string(width) + "x" + std::to_string(height) +
                       " image (after " + std::to_string(max) +
                       " levels the approximation is 1 pixel on its shorter side)");
  HaarLayout l;
  l.width = width;
  l.height = height;
  l.levels = levels;
  l.band.resize(static_cast<std::size_t>(levels) + 1);
  l.band[0] = {width, height, 0, 0};
  for (int k = 1; k <= levels; ++k)
    l.band[k] = {l.band[k - 1].width / 2 + l.band[k - 1].width % 2, l.band[k - 1].height / 2 + l.band[k - 1].height % 2,
                 0, 0};
  // coeffs_to_array: the approximation's shape, grown by each level's detail
  // shape, coarsest first; a level's bands start where the coarser part ends.
  // Odd sides make the array larger than the image: check its sides in 64
  // bits before summing them in int.
  std::int64_t cw = l.band[levels].width, ch = l.band[levels].height;
  for (int k = levels; k >= 1; --k) cw += l.band[k].width, ch += l.band[k].height;
  PIXELKIT_EXPECTS(cw <= std::numeric_limits<int>::max() && ch <= std::numeric_limits<int>::max(),
                   Status::invalid_argument,
                   "haar: the coefficient array of a " + std::to_string(width) + "x" + std::to_string(height) +
                       " image at " + std::to_string(levels) + " levels would be " + std::to_string(cw) + "x" +
                       std::to_string(ch) + ", too large");
  int x = l.band[levels].width, y = l.band[levels].height;
  for (int k = levels; k >= 1; --k) {
    l.band[k].x0 = x;
    l.band[k].y0 = y;
    x += l.band[k].width;
    y += l.band[k].height;
  }
  l.coeff_width = x;
  l.coeff_height = y;
  return l;
}

// ---- dispatch ------------------------------------------------------------------

struct HaarTransform::State {
  int levels;
  HaarNormalize normalize;
  std::unique_ptr<detail::CudaHaar> cuda;  // created on the first cuda call
  detail::HaarCpuScratch cpu;              // grows to the largest image seen
};

namespace {

// Checks the image side (src of forward, dst of inverse) and the coefficient
// side against each other; returns the layout.
HaarLayout check(const char* what, const ConstImageView& image, const ConstImageView& coeffs, int levels,
                 const char* image_name) {
  const std::string op = std::string("haar ") + what + ": ";
  PIXELKIT_EXPECTS(!image.empty() && image.data != nullptr, Status::invalid_argument,
                   op + image_name + " image is empty");
  PIXELKIT_EXPECTS(image.channels == 1 || image.channels == 3 || image.channels == 4, Status::invalid_argument,
                   op + std::to_string(image.channels) + " channels (1, 3 or 4 supported)");
  HaarLayout layout;
  try {
    layout = haar_layout(image.width, image.height, levels);
  } catch (const Error& e) {
    throw Error(e.status(), op + (e.what() + std::strlen("haar: ")));
  }
  const std::string want = std::to_string(layout.coeff_width) + "x" + std::to_string(layout.coeff_height) + "x" +
                           std::to_string(image.channels) + " f32";
  PIXELKIT_EXPECTS(coeffs.data != nullptr && coeffs.type == PixelType::f32 && coeffs.channels == image.channels &&
                       coeffs.width == layout.coeff_width && coeffs.height == layout.coeff_height,
                   Status::invalid_argument,
                   op + "coefficients " + describe(coeffs) + " do not fit the " + describe(image) + " " + image_name +
                       " at " + std::to_string(levels) + " levels (expected " + want + ")");
  PIXELKIT_EXPECTS(is_host(image.memory) == is_host(coeffs.memory), Status::invalid_argument,
                   op + image_name + " in " + to_string(image.memory) + " memory but coefficients in " +
                       to_string(coeffs.memory) + " memory");
  PIXELKIT_EXPECTS(!overlaps(image, coeffs), Status::invalid_argument,
                   op + image_name + " and coefficients overlap (in-place transforms are not supported)");
  return layout;
}

enum class Direction { forward, inverse };

// Runs one direction on `backend` (already resolved) and says in
// options.info which backend and path ran. `in` is the source (forward) or the
// coefficients (inverse), `out` the coefficients or the destination. A
// template only so that it can take HaarTransform's private State.
template <typename State>
void run(Direction direction, Backend backend, const ConstImageView& in, const ImageView& out,
         const HaarLayout& layout, State& state, const Options& options) {
  const bool fwd = direction == Direction::forward;
  std::string path;
  switch (backend) {
    case Backend::ref:
      if (fwd) detail::haar_forward_ref(in, out, layout, state.normalize);
      else detail::haar_inverse_ref(in, out, layout, state.normalize);
      path = fwd ? "ref separable rows-then-columns passes, double precision"
                 : "ref separable columns-then-rows passes, double precision";
      break;
    case Backend::cpu: {
      const int threads = resolve_threads(options.threads);
      path = fwd ? detail::haar_forward_cpu(in, out, layout, state.normalize, threads, state.cpu)
                 : detail::haar_inverse_cpu(in, out, layout, state.normalize, threads, state.cpu);
      break;
    }
    case Backend::cuda:
#if PIXELKIT_WITH_CUDA
      if (!state.cuda) state.cuda = detail::make_cuda_haar();
      path = fwd ? state.cuda->forward(in, out, layout, state.normalize, options.stream)
                 : state.cuda->inverse(in, out, layout, state.normalize, options.stream);
      break;
#else
      throw Error(Status::unsupported, "backend cuda: this build of pixelkit has no CUDA backend");
#endif
    case Backend::automatic:
      throw Error(Status::internal, "haar: backend was not resolved");
  }
  if (options.info) {
    options.info->backend = backend;
    options.info->path = std::move(path);
  }
}

}  // namespace

HaarTransform::HaarTransform(int levels, HaarNormalize normalize) : state_(std::make_unique<State>()) {
  PIXELKIT_EXPECTS(levels >= 1, Status::invalid_argument,
                   "haar: " + std::to_string(levels) + " levels (at least 1 is needed)");
  state_->levels = levels;
  state_->normalize = normalize;
}
HaarTransform::~HaarTransform() = default;
HaarTransform::HaarTransform(HaarTransform&&) noexcept = default;
HaarTransform& HaarTransform::operator=(HaarTransform&&) noexcept = default;
int HaarTransform::levels() const noexcept { return state_ ? state_->levels : 0; }
HaarNormalize HaarTransform::normalize() const noexcept {
  return state_ ? state_->normalize : HaarNormalize::orthonormal;
}

void HaarTransform::forward(const ConstImageView& src, const ImageView& coeffs, const Options& options) {
  PIXELKIT_EXPECTS(state_ != nullptr, Status::invalid_argument, "haar: use of a moved-from HaarTransform");
  const HaarLayout layout = check("forward", src, coeffs, state_->levels, "source");
  run(Direction::forward, resolve_backend(options.backend, src.memory), src, coeffs, layout, *state_, options);
}

void HaarTransform::inverse(const ConstImageView& coeffs, const ImageView& dst, const Options& options) {
  PIXELKIT_EXPECTS(state_ != nullptr, Status::invalid_argument, "haar: use of a moved-from HaarTransform");
  const HaarLayout layout = check("inverse", dst, coeffs, state_->levels, "destination");
  run(Direction::inverse, resolve_backend(options.backend, dst.memory), coeffs, dst, layout, *state_, options);
}

void haar_forward(const ConstImageView& src, const ImageView& coeffs, int levels, HaarNormalize normalize,
                  const Options& options) {
  HaarTransform(levels, normalize).forward(src, coeffs, options);
}

void haar_inverse(const ConstImageView& coeffs, const ImageView& dst, int levels, HaarNormalize normalize,
                  const Options& options) {
  HaarTransform(levels, normalize).inverse(coeffs, dst, options);
}

// ---- thresholding ------------------------------------------------------------------

namespace {

void check_coeffs_match(const char* op, const ConstImageView& coeffs, const HaarLayout& layout) {
  PIXELKIT_EXPECTS(layout.levels >= 1 && static_cast<int>(layout.band.size()) == layout.levels + 1,
                   Status::invalid_argument, std::string(op) + ": layout is not one haar_layout made");
  PIXELKIT_EXPECTS(coeffs.data != nullptr && coeffs.type == PixelType::f32 && coeffs.width == layout.coeff_width &&
                       coeffs.height == layout.coeff_height &&
                       (coeffs.channels == 1 || coeffs.channels == 3 || coeffs.channels == 4),
                   Status::invalid_argument,
                   std::string(op) + ": coefficients " + describe(coeffs) + " do not match the layout (" +
                       std::to_string(layout.coeff_width) + "x" + std::to_string(layout.coeff_height) + " f32)");
  PIXELKIT_EXPECTS(is_host(coeffs.memory), Status::invalid_argument,
                   std::string(op) + ": coefficients must be in host memory");
}

// Calls f(row pointer, first element, element count) for every detail row
// segment of every band (elements = columns * channels).
template <typename F>
void for_each_detail_row(const ImageView& c, const HaarLayout& l, F&& f) {
  const int ch = c.channels;
  for (int k = 1; k <= l.levels; ++k) {
    const auto& b = l.band[k];
    for (int y = 0; y < b.height; ++y) f(c.row<float>(y), b.x0 * ch, b.width * ch);
    for (int y = 0; y < b.height; ++y) {
      float* r = c.row<float>(b.y0 + y);
      f(r, 0, b.width * ch);
      f(r, b.x0 * ch, b.width * ch);
    }
  }
}

}  // namespace

HaarKeepStats haar_keep_largest(const ImageView& coeffs, const HaarLayout& layout, double keep) {
  PIXELKIT_EXPECTS(keep > 0.0 && keep <= 1.0, Status::invalid_argument,
                   "haar keep: fraction " + std::to_string(keep) + " is outside (0, 1]");
  check_coeffs_match("haar keep", coeffs, layout);
  HaarKeepStats s;
  s.details = layout.detail_count() * static_cast<std::size_t>(coeffs.channels);
  s.approx = layout.approx_count() * static_cast<std::size_t>(coeffs.channels);
  s.kept = std::min(s.details, static_cast<std::size_t>(std::ceil(keep * static_cast<double>(s.details) - 1e-9)));
  if (s.kept == s.details) return s;
  // The kept-th largest magnitude is the threshold; ties at it are kept in
  // array order until the count is reached, so exactly `kept` survive.
  std::vector<float> mag;
  mag.reserve(s.details);
  for_each_detail_row(coeffs, layout, [&](float* r, int x0, int n) {
    for (int i = 0; i < n; ++i) mag.push_back(std::fabs(r[x0 + i]));
  });
  std::size_t above = 0;
  float t = INFINITY;
  if (s.kept > 0) {
    std::nth_element(mag.begin(), mag.begin() + static_cast<std::ptrdiff_t>(s.kept - 1), mag.end(),
                     std::greater<float>());
    t = mag[s.kept - 1];
    for (float m : mag) above += m > t;
  }
  std::size_t ties = s.kept - above;  // how many coefficients equal to t survive
  for_each_detail_row(coeffs, layout, [&](float* r, int x0, int n) {
    for (int i = 0; i < n; ++i) {
      const float m = std::fabs(r[x0 + i]);
      if (m > t) continue;
      if (m == t && ties > 0) {
        --ties;
        continue;
      }
      r[x0 + i] = 0.0f;
    }
  });
  return s;
}

// ---- coefficient files -------------------------------------------------------------

namespace {

NpzMember scalar_member(const char* name, long long v) {
  NpzMember m;
  m.name = name;
  m.array.type = NpyType::i64;
  m.array.bytes.resize(8);
  std::int64_t x = v;
  std::memcpy(m.array.bytes.data(), &x, 8);  // pixelkit's .npy is little-endian, as is every supported host
  return m;
}

NpzMember text_member(const char* name, const std::string& text) {
  NpzMember m;
  m.name = name;
  m.array.type = NpyType::u8;
  m.array.shape = {text.size()};
  m.array.bytes.assign(text.begin(), text.end());
  return m;
}

// read_npz walks the members from the front, so a file cut inside its
// trailing directory records still parses; numpy.load would refuse it. Look
// for the end-of-archive record (within the last 22 + 65535 bytes).
void check_archive_end(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return;  // read_npz reports unreadable files
  const std::streamoff size = f.tellg();
  const std::streamoff n = std::min<std::streamoff>(size, 22 + 65535);
  std::vector<char> tail(static_cast<std::size_t>(n));
  f.seekg(size - n);
  f.read(tail.data(), n);
  for (std::streamoff i = n - 22; i >= 0; --i)
    if (tail[i] == 'P' && tail[i + 1] == 'K' && tail[i + 2] == 5 && tail[i + 3] == 6) return;
  throw Error(Status::io, "'" + path + "': not a valid .npz file (truncated: no end-of-archive record)");
}

}  // namespace

void write_haar_npz(const std::string& path, const ConstImageView& coeffs, int width, int height, int levels,
                    HaarNormalize normalize, PixelType source_type) {
  const HaarLayout layout = haar_layout(width, height, levels);
  PIXELKIT_EXPECTS(coeffs.data != nullptr && coeffs.type == PixelType::f32 && coeffs.width == layout.coeff_width &&
                       coeffs.height == layout.coeff_height,
                   Status::invalid_argument,
                   "write_haar_npz: coefficients " + describe(coeffs) + " do not fit a " + std::to_string(width) +
                       "x" + std::to_string(height) + " image at " + std::to_string(levels) + " levels");
  PIXELKIT_EXPECTS(is_host(coeffs.memory), Status::invalid_argument,
                   "write_haar_npz: coefficients must be in host memory");
  NpzMember c;
  c.name = "coeffs";
  c.array.type = NpyType::f32;
  c.array.shape = {static_cast<std::size_t>(coeffs.height), static_cast<std::size_t>(coeffs.width)};
  if (coeffs.channels > 1) c.array.shape.push_back(static_cast<std::size_t>(coeffs.channels));
  c.array.bytes.resize(coeffs.row_bytes() * static_cast<std::size_t>(coeffs.height));
  for (int y = 0; y < coeffs.height; ++y)
    std::memcpy(c.array.bytes.data() + coeffs.row_bytes() * y, coeffs.row<unsigned char>(y), coeffs.row_bytes());
  write_npz(path, {std::move(c), scalar_member("levels", levels), scalar_member("height", height),
                   scalar_member("width", width), text_member("normalize", to_string(normalize)),
                   text_member("dtype", source_type == PixelType::u8 ? "uint8" : "float32"),
                   scalar_member("pixelkit_haar", 1)});
}

HaarCoefficients read_haar_npz(const std::string& path) {
  const std::vector<NpzMember> members = read_npz(path);
  check_archive_end(path);
  const std::string what = "'" + path + "'";
  const auto bad = [&](const std::string& why) {
    return Error(Status::io, what + ": not a pixelkit Haar coefficient file (" + why + ")");
  };
  const auto find = [&](const char* name) -> const NpyArray& {
    for (const auto& m : members)
      if (m.name == name) return m.array;
    throw bad(std::string("no '") + name + "' member");
  };
  const auto integer = [&](const char* name) -> long long {
    const NpyArray& a = find(name);
    if (a.count() != 1 || !a.shape.empty() || (a.type != NpyType::i64 && a.type != NpyType::i32))
      throw bad(std::string("'") + name + "' is not an integer scalar");
    if (a.type == NpyType::i32) {
      std::int32_t v;
      std::memcpy(&v, a.bytes.data(), 4);
      return v;
    }
    std::int64_t v;
    std::memcpy(&v, a.bytes.data(), 8);
    return v;
  };
  const auto text = [&](const char* name) -> std::string {
    const NpyArray& a = find(name);
    if (a.type != NpyType::u8 || a.shape.size() != 1 || a.bytes.size() > 64)
      throw bad(std::string("'") + name + "' is not short uint8 text");
    return std::string(a.bytes.begin(), a.bytes.end());
  };
  const long long version = integer("pixelkit_haar");
  if (version != 1) throw bad("format version " + std::to_string(version) + ", this pixelkit reads version 1");
  const long long width = integer("width"), height = integer("height"), levels = integer("levels");
  if (width < 1 || height < 1 || width > (1 << 30) || height > (1 << 30))
    throw bad("image size " + std::to_string(width) + "x" + std::to_string(height) + " is invalid");
  const int max = haar_max_levels(static_cast<int>(width), static_cast<int>(height));
  if (levels < 1 || levels > max)
    throw bad(std::to_string(levels) + " levels is outside 1.." + std::to_string(max) + " for a " +
              std::to_string(width) + "x" + std::to_string(height) + " image");
  HaarCoefficients r;
  r.width = static_cast<int>(width);
  r.height = static_cast<int>(height);
  r.levels = static_cast<int>(levels);
  const std::string norm = text("normalize");
  if (norm != "orthonormal" && norm != "average") throw bad("normalize '" + norm + "' is unknown");
  r.normalize = parse_haar_normalize(norm);
  const std::string dtype = text("dtype");
  if (dtype != "uint8" && dtype != "float32") throw bad("dtype '" + dtype + "' is unknown");
  r.source_type = dtype == "uint8" ? PixelType::u8 : PixelType::f32;
  const HaarLayout layout = haar_layout(r.width, r.height, r.levels);
  const NpyArray& c = find("coeffs");
  if (c.type != NpyType::f32) throw bad("'coeffs' is " + std::string(to_string(c.type)) + ", not float32");
  const std::size_t ch = c.shape.size() == 3 ? c.shape[2] : 1;
  if ((c.shape.size() != 2 && c.shape.size() != 3) || (ch != 1 && ch != 3 && ch != 4) ||
      (c.shape.size() == 3 && ch == 1) || c.shape[0] != static_cast<std::size_t>(layout.coeff_height) ||
      c.shape[1] != static_cast<std::size_t>(layout.coeff_width)) {
    std::string s;
    for (std::size_t i = 0; i < c.shape.size(); ++i) s += (i ? "x" : "") + std::to_string(c.shape[i]);
    throw bad("'coeffs' has shape " + s + ", a " + std::to_string(width) + "x" + std::to_string(height) + " image at " +
              std::to_string(levels) + " levels needs " + std::to_string(layout.coeff_height) + "x" +
              std::to_string(layout.coeff_width) + "[xC] with C in 1, 3, 4");
  }
  r.coeffs = Image(layout.coeff_width, layout.coeff_height, static_cast<int>(ch), PixelType::f32);
  const std::size_t row = r.coeffs.view().row_bytes();
  for (int y = 0; y < layout.coeff_height; ++y)
    std::memcpy(r.coeffs.row<unsigned char>(y), c.bytes.data() + row * y, row);
  return r;
}

}  // namespace pixelkit
