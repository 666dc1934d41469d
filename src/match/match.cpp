// Template matching's one dispatch: names and parsers, the prepared template,
// argument checks, the choice of backend and strategy, the Matcher's kept
// buffers, and what every backend shares after the score map (verdicts).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "match/match_backends.hpp"
#include "pixelkit/config.hpp"

namespace pixelkit {

// ---- names and parsers ----------------------------------------------------------

namespace {

constexpr const char* kMethodNames[] = {"sqdiff", "sqdiff_normed", "ccorr", "ccorr_normed", "ccoeff", "ccoeff_normed"};

std::string dims(int w, int h) { return std::to_string(w) + "x" + std::to_string(h); }

}  // namespace

const char* to_string(MatchMethod method) noexcept {
  const int i = static_cast<int>(method);
  return i >= 0 && i < 6 ? kMethodNames[i] : "?";
}

MatchMethod parse_match_method(const std::string& text) {
  for (int i = 0; i < 6; ++i)
    if (text == kMethodNames[i]) return static_cast<MatchMethod>(i);
  throw Error(Status::invalid_argument, "method '" + text +
                                            "' is not one of sqdiff, sqdiff_normed, ccorr, ccorr_normed, ccoeff, "
                                            "ccoeff_normed");
}

const char* to_string(MatchStrategy strategy) noexcept {
  switch (strategy) {
    case MatchStrategy::automatic: return "auto";
    case MatchStrategy::direct: return "direct";
    case MatchStrategy::fft: return "fft";
  }
  return "?";
}

MatchStrategy parse_match_strategy(const std::string& text) {
  if (text == "auto") return MatchStrategy::automatic;
  if (text == "direct") return MatchStrategy::direct;
  if (text == "fft") return MatchStrategy::fft;
  throw Error(Status::invalid_argument, "strategy '" + text + "' is not one of auto, direct, fft");
}

const char* to_string(Verdict verdict) noexcept {
  switch (verdict) {
    case Verdict::none: return "none";
    case Verdict::pass: return "pass";
    case Verdict::fail: return "fail";
  }
  return "?";
}

namespace {

// A strict decimal integer in [lo, hi]; `what` names it in the message.
int parse_hsv_number(const std::string& text, const std::string& part, const char* what, int hi) {
  const std::string bad = "HSV range '" + text + "': ";
  PIXELKIT_EXPECTS(!part.empty(), Status::invalid_argument, bad + what + " is missing");
  for (char ch : part)
    PIXELKIT_EXPECTS(ch >= '0' && ch <= '9', Status::invalid_argument,
                     bad + what + " '" + part + "' is not a whole number 0.." + std::to_string(hi));
  PIXELKIT_EXPECTS(part.size() <= 4, Status::invalid_argument,
                   bad + what + " " + part + " is outside 0.." + std::to_string(hi));
  const int v = std::atoi(part.c_str());
  PIXELKIT_EXPECTS(v <= hi, Status::invalid_argument, bad + what + " " + part + " is outside 0.." + std::to_string(hi));
  return v;
}

}  // namespace

HsvRange parse_hsv_range(const std::string& text) {
  const std::string bad = "HSV range '" + text + "': ";
  const std::string usage = " (expected H1,S1,V1:H2,S2,V2 with H in 0..179, S and V in 0..255)";
  const auto colon = text.find(':');
  PIXELKIT_EXPECTS(colon != std::string::npos && text.find(':', colon + 1) == std::string::npos,
                   Status::invalid_argument, bad + "needs exactly one ':' between the low and high ends" + usage);
  int v[2][3];
  const char* names[2][3] = {{"H1", "S1", "V1"}, {"H2", "S2", "V2"}};
  const int his[3] = {179, 255, 255};
  const std::string ends[2] = {text.substr(0, colon), text.substr(colon + 1)};
  for (int e = 0; e < 2; ++e) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
      const auto comma = ends[e].find(',', start);
      parts.push_back(ends[e].substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    PIXELKIT_EXPECTS(parts.size() == 3, Status::invalid_argument,
                     bad + "'" + ends[e] + "' has " + std::to_string(parts.size()) + " values, not 3" + usage);
    for (int k = 0; k < 3; ++k) v[e][k] = parse_hsv_number(text, parts[k], names[e][k], his[k]);
  }
  PIXELKIT_EXPECTS(v[0][1] <= v[1][1], Status::invalid_argument,
                   bad + "S1 " + std::to_string(v[0][1]) + " is above S2 " + std::to_string(v[1][1]) +
                       " (only the hue wraps)");
  PIXELKIT_EXPECTS(v[0][2] <= v[1][2], Status::invalid_argument,
                   bad + "V1 " + std::to_string(v[0][2]) + " is above V2 " + std::to_string(v[1][2]) +
                       " (only the hue wraps)");
  HsvRange r;
  r.h_lo = v[0][0];
  r.s_lo = v[0][1];
  r.v_lo = v[0][2];
  r.h_hi = v[1][0];
  r.s_hi = v[1][1];
  r.v_hi = v[1][2];
  return r;
}

std::string to_string(const HsvRange& r) {
  return std::to_string(r.h_lo) + "," + std::to_string(r.s_lo) + "," + std::to_string(r.v_lo) + ":" +
         std::to_string(r.h_hi) + "," + std::to_string(r.s_hi) + "," + std::to_string(r.v_hi);
}

void rgb_to_hsv(std::uint8_t r, std::uint8_t g, std::uint8_t b, std::uint8_t hsv[3]) noexcept {
  int h, s, v;
  detail::rgb_to_hsv8(r, g, b, h, s, v);
  hsv[0] = static_cast<std::uint8_t>(h);
  hsv[1] = static_cast<std::uint8_t>(s);
  hsv[2] = static_cast<std::uint8_t>(v);
}

void match_result_size(int image_width, int image_height, int templ_width, int templ_height, int& width,
                       int& height) {
  PIXELKIT_EXPECTS(image_width > 0 && image_height > 0, Status::invalid_argument,
                   "match: image " + dims(image_width, image_height) + " is empty");
  PIXELKIT_EXPECTS(templ_width > 0 && templ_height > 0, Status::invalid_argument,
                   "match: template " + dims(templ_width, templ_height) + " is empty");
  PIXELKIT_EXPECTS(templ_width <= image_width && templ_height <= image_height, Status::invalid_argument,
                   "match: the template (" + dims(templ_width, templ_height) + ") is larger than the image (" +
                       dims(image_width, image_height) + ")");
  width = image_width - templ_width + 1;
  height = image_height - templ_height + 1;
}

// ---- the prepared template ---------------------------------------------------------

namespace detail {

namespace {

template <typename T>
void template_stats(const ConstImageView& templ, const ConstImageView& mask, TemplateStats& st) {
  const int C = st.channels;
  for (int j = 0; j < st.height; ++j) {
    const T* t = templ.row<T>(j);
    const std::uint8_t* m = st.masked ? mask.row<std::uint8_t>(j) : nullptr;
    for (int i = 0; i < st.width * C; ++i) {
      if (m && !m[i]) continue;
      const double v = static_cast<double>(t[i]);
      st.n[i % C] += 1;
      st.s1[i % C] += v;
      st.s2[i % C] += v * v;
    }
  }
  double s2 = 0;
  for (int c = 0; c < C; ++c) {
    st.mean[c] = st.n[c] > 0 ? st.s1[c] / st.n[c] : 0.0;
    s2 += st.s2[c];
  }
  st.norm = std::sqrt(s2);
  // Two-pass: exactly zero for a flat template.
  double centred = 0;
  for (int j = 0; j < st.height; ++j) {
    const T* t = templ.row<T>(j);
    const std::uint8_t* m = st.masked ? mask.row<std::uint8_t>(j) : nullptr;
    for (int i = 0; i < st.width * C; ++i) {
      if (m && !m[i]) continue;
      const double d = static_cast<double>(t[i]) - st.mean[i % C];
      centred += d * d;
    }
  }
  st.norm_centred = std::sqrt(centred);
}

}  // namespace

PreparedTemplate prepare_template(const ConstImageView& templ, const ConstImageView& mask, MatchMethod method) {
  PreparedTemplate p;
  p.method = method;
  p.templ = clone(templ, Memory::host);
  TemplateStats& st = p.stats;
  st.width = templ.width;
  st.height = templ.height;
  st.channels = templ.channels;
  st.masked = mask.data != nullptr && !mask.empty();
  if (st.masked) {
    Image m = clone(mask, Memory::host);
    p.mask = Image(templ.width, templ.height, templ.channels, PixelType::u8, Memory::host);
    for (int j = 0; j < templ.height; ++j) {
      const std::uint8_t* src = m.row<std::uint8_t>(j);
      std::uint8_t* dst = p.mask.row<std::uint8_t>(j);
      for (int i = 0; i < templ.width; ++i)
        for (int c = 0; c < templ.channels; ++c)
          dst[i * templ.channels + c] = src[mask.channels == 1 ? i : i * templ.channels + c] ? 1 : 0;
    }
  }
  if (templ.type == PixelType::u8)
    template_stats<std::uint8_t>(p.templ.cview(), p.mask.cview(), st);
  else
    template_stats<float>(p.templ.cview(), p.mask.cview(), st);
  return p;
}

// ---- strategy --------------------------------------------------------------------------

bool fft_rounds_exactly(int padded_width, int padded_height, int image_width, int image_height,
                        const TemplateStats& t) {
  const double n = static_cast<double>(padded_width) * padded_height;
  const double pixels = static_cast<double>(image_width) * image_height * t.channels;
  const double norm_i = 255.0 * std::sqrt(pixels);
  double product = norm_i * t.norm;
  if (t.masked) {
    double count = 0;
    for (int c = 0; c < t.channels; ++c) count += t.n[c];
    product = std::max(product, 255.0 * 255.0 * std::sqrt(pixels) * std::sqrt(count));
  }
  const double bound = 4.0 * std::numeric_limits<double>::epsilon() * std::max(1.0, std::log2(n)) * product;
  return bound < 0.25;
}

MatchStrategy choose_match_strategy(Backend backend, int image_width, int image_height, const TemplateStats& t,
                                    PixelType type, int threads) {
  if (backend == Backend::cpu) {
    if (!cpu_match_fft_available()) return MatchStrategy::direct;
    const double direct = cpu_match_cost_ms(MatchStrategy::direct, image_width, image_height, t, type, threads);
    const double fft = cpu_match_cost_ms(MatchStrategy::fft, image_width, image_height, t, type, threads);
    return fft < direct ? MatchStrategy::fft : MatchStrategy::direct;
  }
#if PIXELKIT_WITH_CUDA
  if (backend == Backend::cuda) {
    const double direct = cuda_match_cost_ms(MatchStrategy::direct, image_width, image_height, t, type);
    const double fft = cuda_match_cost_ms(MatchStrategy::fft, image_width, image_height, t, type);
    return fft < direct ? MatchStrategy::fft : MatchStrategy::direct;
  }
#endif
  (void)threads;
  return MatchStrategy::direct;
}

}  // namespace detail

// ---- the Matcher ---------------------------------------------------------------------

namespace {

// A view of at least width x height of a grow-only scratch image.
ImageView grow(Image& scratch, int width, int height, int channels, PixelType type, Memory memory) {
  if (scratch.empty() || scratch.width() < width || scratch.height() < height || scratch.channels() != channels ||
      scratch.type() != type || scratch.memory() != memory) {
    const int w = scratch.empty() || scratch.channels() != channels || scratch.type() != type ||
                          scratch.memory() != memory
                      ? width
                      : std::max(width, scratch.width());
    const int h = scratch.empty() || scratch.channels() != channels || scratch.type() != type ||
                          scratch.memory() != memory
                      ? height
                      : std::max(height, scratch.height());
    scratch = Image();  // release first: the peak stays at one buffer
    scratch = Image(w, h, channels, type, memory);
  }
  return scratch.view().sub(0, 0, width, height);
}

}  // namespace

struct Matcher::State {
  MatchParams params;
  detail::PreparedTemplate prepared;
  int min_distance = 1;
  std::unique_ptr<detail::CpuMatcher> cpu;    // created on the first cpu call
  std::unique_ptr<detail::CudaMatcher> cuda;  // created on the first cuda call
  Image host_scores;                          // ref / cpu, when the caller gives no map
  Image device_image;                         // cuda: host images are uploaded here
  Image device_scores;                        // cuda: the map, when the caller gives no device map
};

Matcher::Matcher(const ConstImageView& templ, const MatchParams& params, const ConstImageView& mask)
    : state_(std::make_unique<State>()) {
  PIXELKIT_EXPECTS(templ.data != nullptr && !templ.empty(), Status::invalid_argument, "match: the template is empty");
  PIXELKIT_EXPECTS(templ.channels == 1 || templ.channels == 3, Status::invalid_argument,
                   "match: the template has " + std::to_string(templ.channels) +
                       " channels (1 or 3 supported; drop the alpha channel first)");
  const bool masked = mask.data != nullptr || !mask.empty();
  if (masked) {
    PIXELKIT_EXPECTS(mask.data != nullptr && !mask.empty(), Status::invalid_argument, "match: the mask is empty");
    PIXELKIT_EXPECTS(mask.type == PixelType::u8, Status::invalid_argument,
                     "match: the mask must be u8 (non-zero = the pixel counts), got " + describe(mask));
    PIXELKIT_EXPECTS(mask.width == templ.width && mask.height == templ.height, Status::invalid_argument,
                     "match: the mask is " + dims(mask.width, mask.height) + ", the template " +
                         dims(templ.width, templ.height) + " (they must be the same size)");
    PIXELKIT_EXPECTS(mask.channels == 1 || mask.channels == templ.channels, Status::invalid_argument,
                     "match: the mask has " + std::to_string(mask.channels) + " channels (1 or the template's " +
                         std::to_string(templ.channels) + ")");
  }
  PIXELKIT_EXPECTS(params.top_k >= 1, Status::invalid_argument,
                   "match: top K must be at least 1, got " + std::to_string(params.top_k));
  PIXELKIT_EXPECTS(params.min_distance != 0, Status::invalid_argument,
                   "match: the minimum distance between matches must be at least 1 (or negative for the default)");
  if (params.color_check) {
    PIXELKIT_EXPECTS(templ.channels == 3 && templ.type == PixelType::u8, Status::invalid_argument,
                     "match: the colour check needs a 3-channel u8 (RGB) image and template, got a " +
                         describe(templ) + " template");
    const HsvRange& r = params.hsv;
    PIXELKIT_EXPECTS(r.h_lo >= 0 && r.h_lo <= 179 && r.h_hi >= 0 && r.h_hi <= 179 && r.s_lo >= 0 &&
                         r.s_lo <= r.s_hi && r.s_hi <= 255 && r.v_lo >= 0 && r.v_lo <= r.v_hi && r.v_hi <= 255,
                     Status::invalid_argument, "match: HSV range " + to_string(r) + " is not valid");
  }
  PIXELKIT_EXPECTS(params.min_fraction < 0 || params.min_fraction <= 1, Status::invalid_argument,
                   "match: the minimum fraction must lie in [0, 1] (or be negative for no verdict)");
  PIXELKIT_EXPECTS(params.min_fraction < 0 || params.color_check, Status::invalid_argument,
                   "match: a minimum fraction needs the colour check (an HSV range)");
  state_->params = params;
  state_->prepared = detail::prepare_template(templ, masked ? mask : ConstImageView{}, params.method);
  if (masked) {
    double count = 0;
    for (int c = 0; c < templ.channels; ++c) count += state_->prepared.stats.n[c];
    PIXELKIT_EXPECTS(count > 0, Status::invalid_argument, "match: the mask has no non-zero pixel");
  }
  state_->min_distance =
      params.min_distance > 0 ? params.min_distance : std::max(1, std::min(templ.width, templ.height) / 2);
}

Matcher::~Matcher() = default;
Matcher::Matcher(Matcher&&) noexcept = default;
Matcher& Matcher::operator=(Matcher&&) noexcept = default;

const MatchParams& Matcher::params() const noexcept { return state_->params; }
int Matcher::template_width() const noexcept { return state_->prepared.stats.width; }
int Matcher::template_height() const noexcept { return state_->prepared.stats.height; }
int Matcher::channels() const noexcept { return state_->prepared.stats.channels; }
PixelType Matcher::type() const noexcept { return state_->prepared.templ.type(); }
bool Matcher::masked() const noexcept { return state_->prepared.stats.masked; }
int Matcher::min_distance() const noexcept { return state_->min_distance; }

MatchResult Matcher::operator()(const ConstImageView& image, const Options& options) {
  return (*this)(image, ImageView{}, options);
}

namespace {

MatchStrategy resolve_strategy(MatchStrategy requested, Backend backend, int width, int height,
                               const detail::TemplateStats& t, PixelType type, int threads) {
  if (backend == Backend::ref) return MatchStrategy::direct;  // the definition
  if (requested == MatchStrategy::fft && backend == Backend::cpu && !detail::cpu_match_fft_available())
    throw Error(Status::unsupported,
                "match: the fft strategy on the cpu backend needs a build with OpenCV (cv::dft); use --strategy "
                "direct or --backend cuda");
  if (requested != MatchStrategy::automatic) return requested;
  return detail::choose_match_strategy(backend, width, height, t, type, threads);
}

}  // namespace

MatchResult Matcher::operator()(const ConstImageView& image, const ImageView& scores, const Options& options) {
  State& s = *state_;
  const detail::TemplateStats& st = s.prepared.stats;
  PIXELKIT_EXPECTS(image.data != nullptr && !image.empty(), Status::invalid_argument, "match: the image is empty");
  PIXELKIT_EXPECTS(image.type == s.prepared.templ.type() && image.channels == st.channels, Status::invalid_argument,
                   "match: the image (" + describe(image) + ") and the template (" + describe(s.prepared.templ) +
                       ") must have the same type and channels");
  int rw = 0, rh = 0;
  match_result_size(image.width, image.height, st.width, st.height, rw, rh);
  const bool want_scores = scores.data != nullptr || !scores.empty();
  if (want_scores) {
    PIXELKIT_EXPECTS(scores.data != nullptr && scores.width == rw && scores.height == rh && scores.channels == 1 &&
                         scores.type == PixelType::f32,
                     Status::invalid_argument,
                     "match: the score map must be " + dims(rw, rh) + "x1 f32 (image " +
                         dims(image.width, image.height) + ", template " + dims(st.width, st.height) + "), got " +
                         describe(scores));
    PIXELKIT_EXPECTS(!overlaps(image, scores), Status::invalid_argument,
                     "match: the score map overlaps the image");
  }
  const Backend backend = resolve_backend(options.backend, image.memory);
  if (want_scores && scores.memory == Memory::device)
    PIXELKIT_EXPECTS(backend == Backend::cuda, Status::invalid_argument,
                     std::string("match: a device-memory score map needs the cuda backend, not ") + to_string(backend));
  const int threads = resolve_threads(options.threads);
  const MatchStrategy strategy =
      resolve_strategy(s.params.strategy, backend, image.width, image.height, st, image.type, threads);
  const bool lower = lower_is_better(s.params.method);

  MatchResult result;
  result.strategy = strategy;
  std::string path;
  if (backend == Backend::ref || backend == Backend::cpu) {
    const ImageView map = want_scores ? scores : grow(s.host_scores, rw, rh, 1, PixelType::f32, Memory::host);
    if (backend == Backend::ref) {
      detail::match_ref(image, s.prepared, map);
      path = "definition, f64 sums";
    } else {
      if (!s.cpu) s.cpu = detail::make_cpu_matcher(s.prepared);
      path = s.cpu->run(image, map, strategy, threads);
    }
    const bool profile = backend == Backend::cpu && detail::match_cpu_profiling();
    const auto t0 = std::chrono::steady_clock::now();
    result.matches = detail::select_matches(map, lower, s.params.top_k, s.min_distance,
                                            backend == Backend::cpu ? threads : 1);
    const auto t1 = std::chrono::steady_clock::now();
    if (s.params.color_check) detail::color_check(image, st.width, st.height, s.params.hsv, result.matches);
    if (profile) {
      detail::MatchCpuStages stages = detail::match_cpu_last_stages();
      stages.select_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
      stages.color_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
      detail::set_match_cpu_last_stages(stages);
    }
  } else {
#if PIXELKIT_WITH_CUDA
    if (!s.cuda) s.cuda = detail::make_cuda_matcher(s.prepared);
    ConstImageView dev_image = image;
    if (image.memory != Memory::device) {
      const ImageView staged =
          grow(s.device_image, image.width, image.height, image.channels, image.type, Memory::device);
      copy(image, staged, options.stream);
      dev_image = staged;
    }
    const ImageView dev_map = want_scores && scores.memory == Memory::device
                                  ? scores
                                  : grow(s.device_scores, rw, rh, 1, PixelType::f32, Memory::device);
    detail::MatchSelect select;
    select.lower_is_better = lower;
    select.top_k = s.params.top_k;
    select.min_distance = s.min_distance;
    select.color_check = s.params.color_check;
    select.hsv = s.params.hsv;
    path = s.cuda->run(dev_image, dev_map, strategy, select, result.matches, options.stream);
    if (want_scores && scores.memory != Memory::device) {
      copy(dev_map, scores, options.stream);
      synchronize(options.stream);
    }
#else
    throw Error(Status::unsupported, "match: this build has no CUDA backend");
#endif
  }
  detail::set_verdicts(st.width, st.height, s.params.min_fraction, result.matches);
  if (options.info) {
    options.info->backend = backend;
    options.info->path = std::string(to_string(s.params.method)) + ", " + to_string(strategy) + ": " + path;
  }
  return result;
}

void Matcher::reserve(int width, int height, const Options& options) {
  State& s = *state_;
  const detail::TemplateStats& st = s.prepared.stats;
  int rw = 0, rh = 0;
  match_result_size(width, height, st.width, st.height, rw, rh);
  const Backend backend = resolve_backend(options.backend, Memory::host);
  const int threads = resolve_threads(options.threads);
  const PixelType type = s.prepared.templ.type();
  const MatchStrategy strategy = resolve_strategy(s.params.strategy, backend, width, height, st, type, threads);
  if (backend == Backend::ref) {
    grow(s.host_scores, rw, rh, 1, PixelType::f32, Memory::host);
  } else if (backend == Backend::cpu) {
    grow(s.host_scores, rw, rh, 1, PixelType::f32, Memory::host);
    if (!s.cpu) s.cpu = detail::make_cpu_matcher(s.prepared);
    s.cpu->reserve(width, height, strategy);
  } else {
#if PIXELKIT_WITH_CUDA
    if (!s.cuda) s.cuda = detail::make_cuda_matcher(s.prepared);
    grow(s.device_scores, rw, rh, 1, PixelType::f32, Memory::device);
    s.cuda->reserve(width, height, strategy, options.stream);
#endif
  }
}

MatchResult match_template(const ConstImageView& image, const ConstImageView& templ, const MatchParams& params,
                           const ConstImageView& mask, const Options& options) {
  Matcher matcher(templ, params, mask);
  return matcher(image, options);
}

}  // namespace pixelkit
