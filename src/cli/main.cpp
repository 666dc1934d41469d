// pixelkit command-line program. Each subcommand lives in its own cmd_*.cpp
// and registers itself; this file parses, runs, and turns errors into one
// line on stderr: exit 2 for usage errors, 1 for failures, 3 for an
// unexpected exception (a bug in pixelkit: please report it).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "core/png_codec.hpp"
#include "pixelkit/config.hpp"
#if PIXELKIT_WITH_OPENCV
#include "core/opencv_module.hpp"
#endif
#include "pixelkit/io.hpp"

namespace pixelkit::cli {

namespace {
struct Entry {
  const char* name;
  const char* description;
  Setup setup;
};
std::vector<Entry>& registry() {
  static std::vector<Entry> r;
  return r;
}

Action setup_info(CLI::App&) {
  return [] {
    std::printf("pixelkit %s\n", PIXELKIT_VERSION);
    std::printf("cuda backend : %s\n", built_with_cuda() ? "built" : "not built (no nvcc at build time)");
    const std::string dev = cuda_device_name();
    std::printf("cuda device  : %s\n", dev.empty() ? "none usable" : dev.c_str());
    std::printf("image codecs : %s\n", have_image_codecs() ? (detail::png_codec_available()
                                                                  ? "OpenCV imgcodecs (PNG reads: libpng) + .npy"
                                                                  : "OpenCV imgcodecs + .npy")
                                        : have_png()        ? "PNG (libpng) + .npy"
                                                            : ".npy only");
#if PIXELKIT_WITH_OPENCV
    std::string where;
    const bool loaded = detail::cvmod::opencv_module_available(&where);
    std::printf("codec module : %s%s\n", loaded ? "" : "not loadable: ", where.c_str());
#endif
    std::printf("cpu threads  : %d\n", resolve_threads(common().threads));
    std::printf("auto backend : %s\n", to_string(resolve_backend(Backend::automatic, Memory::host)));
  };
}
const bool info_registered = register_command("info", "Show what this build and machine offer", setup_info);
}  // namespace

bool register_command(const char* name, const char* description, Setup setup) {
  registry().push_back({name, description, setup});
  return true;
}

}  // namespace pixelkit::cli

namespace pixelkit::cli {

int run(int argc, char** argv) {
  common() = CommonOptions{};  // run() may be called more than once in a process (the CLI fuzz target)
  CLI::App app{"pixelkit: fast image filtering, integral images, Haar wavelets and template matching"};
  app.set_version_flag("--version", std::string("pixelkit ") + PIXELKIT_VERSION);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, Action>> actions;
  for (const auto& e : registry()) {
    CLI::App* sub = app.add_subcommand(e.name, e.description);
    sub->add_option("--backend", common().backend, "auto|ref|cpu|cuda (auto = cuda when a GPU is usable, else cpu)")
        ->capture_default_str();
    sub->add_option("--threads", common().threads, "cpu backend threads (0 = all cores)")->capture_default_str();
    sub->add_flag("-v,--verbose", common().verbose, "say which backend and code path ran and how long each step took");
    actions.emplace_back(sub, e.setup(*sub));
  }
  std::string which = "pixelkit";
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    std::fprintf(stderr, "pixelkit: %s (see pixelkit --help)\n", msg.c_str());
    return 2;
  }
  try {
    for (auto& [sub, action] : actions)
      if (sub->parsed()) {
        which = "pixelkit " + sub->get_name();
        action();
      }
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", which.c_str(), e.what());
    return e.status() == Status::invalid_argument ? 2 : 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: out of memory\n", which.c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", which.c_str(), e.what());
    return kInternalError;
  }
  return 0;
}

}  // namespace pixelkit::cli

#ifndef PIXELKIT_CLI_NO_MAIN
int main(int argc, char** argv) { return pixelkit::cli::run(argc, argv); }
#endif
