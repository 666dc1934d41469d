#include "cli/common.hpp"

#include <cstdio>
#include <filesystem>
#include <vector>

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

void verbose(const std::string& step, const std::string& detail, double ms) {
  if (!common().verbose) return;
  std::fprintf(stderr, "pixelkit: %-8s %8.2f ms  %s\n", step.c_str(), ms, detail.c_str());
}

}  // namespace pixelkit::cli
