#include "cli/common.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/file.hpp"
#include "pixelkit/haar.hpp"
#include "pixelkit/io.hpp"

namespace pixelkit::cli {

namespace fs = std::filesystem;

CommonOptions& common() {
  static CommonOptions options;
  return options;
}

Options library_options(RunInfo* info) {
  Options o;
  o.backend = for_option("--backend", [] { return parse_backend(common().backend); });
  PIXELKIT_EXPECTS(common().threads >= 0, Status::invalid_argument,
                   "--threads: " + std::to_string(common().threads) + " must be 0 (all cores) or more");
  o.threads = common().threads;
  o.info = info;
  return o;
}

Backend plan_backend(const Options& options) {
  const Backend planned = resolve_backend(options.backend, Memory::host);
  if (planned == Backend::cuda) {
    Timer t;
    cuda_init();
    verbose("cuda", "context created on " + cuda_device_name(), t.ms());
  }
  return planned;
}

void check_output(const std::string& option, const std::string& path, const std::vector<std::string>& inputs,
                  bool image) {
  for_option(option, [&] {
    PIXELKIT_EXPECTS(!path.empty(), Status::invalid_argument, "output path is empty");
    if (image) check_image_extension(path);
    fs::path dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw Error(Status::io, "output '" + path + "': folder '" + dir.string() + "' does not exist");
    for (const auto& in : inputs) {
      if (in.empty()) continue;
      const bool same = fs::exists(path, ec) && fs::exists(in, ec) ? fs::equivalent(path, in, ec)
                                                                   : fs::weakly_canonical(path, ec) == fs::weakly_canonical(in, ec);
      PIXELKIT_EXPECTS(!same, Status::invalid_argument,
                       "output '" + path + "' is the input '" + in + "'; refusing to overwrite an input");
    }
  });
}

void probe_output_folder(const std::string& option, const std::string& path) {
  for_option(option, [&] {
    std::string tmp;
    ::close(detail::make_temp_beside(path, tmp, "probe"));
    ::unlink(tmp.c_str());
  });
}

StagedOutputs::~StagedOutputs() {
  for (const auto& [tmp, path] : staged_) ::unlink(tmp.c_str());
}

std::string StagedOutputs::stage(const std::string& path) {
  std::string tmp;
  ::close(detail::make_temp_beside(path, tmp));  // the writers open it by name
  staged_.emplace_back(tmp, path);
  return staged_.back().first;
}

void StagedOutputs::drop(const std::string& path) {
  for (auto it = staged_.begin(); it != staged_.end();)
    if (it->second == path) {
      ::unlink(it->first.c_str());
      it = staged_.erase(it);
    } else {
      ++it;
    }
}

void StagedOutputs::commit() {
  while (!staged_.empty()) {
    const auto [tmp, path] = staged_.front();
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error(Status::io, "cannot write '" + path + "': " + std::strerror(errno));
    staged_.erase(staged_.begin());
  }
}

std::string StagedOutputs::with_destinations(std::string text) const {
  for (const auto& [tmp, path] : staged_)
    for (std::size_t at = text.find(tmp); at != std::string::npos; at = text.find(tmp, at + path.size()))
      text.replace(at, tmp.size(), path);
  return text;
}

void verbose(const std::string& step, const std::string& detail, double ms) {
  if (!common().verbose) return;
  std::fprintf(stderr, "pixelkit: %-8s %8.2f ms  %s\n", step.c_str(), ms, detail.c_str());
}

std::string number(double v, const char* fmt) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

int parse_haar_levels(const std::string& text, int width, int height, const std::string& what, bool clamp) {
  return for_option("--levels", [&] {
    const int max = haar_max_levels(width, height);
    if (text == "max") return max;
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(text.c_str(), &end, 10);
    PIXELKIT_EXPECTS(!text.empty() && end && *end == '\0' && errno == 0, Status::invalid_argument,
                     "'" + text + "' is not a level count (an integer or 'max')");
    if (clamp && v > max) return max;
    PIXELKIT_EXPECTS(v >= 1 && v <= max, Status::invalid_argument,
                     std::to_string(v) + " is outside 1.." + std::to_string(max) + " for " + what + " (after " +
                         std::to_string(max) + " levels the approximation is 1 pixel on its shorter side)");
    return static_cast<int>(v);
  });
}

MatchParams match_params(const MatchOptions& m) {
  MatchParams p;
  p.method = for_option("--method", [&] { return parse_match_method(m.method); });
  p.strategy = for_option("--strategy", [&] { return parse_match_strategy(m.strategy); });
  PIXELKIT_EXPECTS(m.top >= 1, Status::invalid_argument,
                   "--top: " + std::to_string(m.top) + " matches requested; K must be 1 or more");
  p.top_k = m.top;
  if (m.min_distance_opt && m.min_distance_opt->count() > 0) {
    PIXELKIT_EXPECTS(m.min_distance >= 1, Status::invalid_argument,
                     "--min-distance: " + std::to_string(m.min_distance) + " must be 1 or more");
    p.min_distance = m.min_distance;
  }
  if (m.hsv_opt && m.hsv_opt->count() > 0) {
    p.hsv = for_option("--hsv-range", [&] { return parse_hsv_range(m.hsv); });
    p.color_check = true;
  }
  if (m.min_fraction_opt && m.min_fraction_opt->count() > 0) {
    PIXELKIT_EXPECTS(m.min_fraction >= 0 && m.min_fraction <= 1, Status::invalid_argument,
                     "--min-fraction: " + number(m.min_fraction) + " is outside 0..1");
    PIXELKIT_EXPECTS(p.color_check, Status::invalid_argument,
                     "--min-fraction: needs --hsv-range (the fraction is of pixels in that range)");
    p.min_fraction = m.min_fraction;
  }
  return p;
}

}  // namespace pixelkit::cli
