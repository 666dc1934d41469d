// Shared pieces of the pixelkit command-line program: subcommand registry,
// the options every subcommand takes, output-path checks and timing.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "pixelkit/backend.hpp"
#include "pixelkit/match.hpp"

namespace pixelkit::cli {

/// What a subcommand's setup returns: the action to run after parsing.
using Action = std::function<void()>;
/// Adds the subcommand's own options to `sub` and returns its action.
using Setup = Action (*)(CLI::App& sub);

/// Parses argv and runs the chosen subcommand; returns the exit code: 0, 2 for
/// usage errors (Status::invalid_argument), 1 for other failures,
/// kInternalError for an unexpected exception. main() is just this; each
/// subcommand's setup resets its options, so run() can be called repeatedly.
int run(int argc, char** argv);
constexpr int kInternalError = 3;

/// Registers a subcommand; called from a static initialiser in each cmd_*.cpp.
bool register_command(const char* name, const char* description, Setup setup);

/// The options every subcommand has: --backend, --threads, --verbose.
struct CommonOptions {
  std::string backend = "auto";
  int threads = 0;
  bool verbose = false;
};
CommonOptions& common();
/// Options for library calls from the common flags (throws on a bad --backend).
Options library_options(RunInfo* info = nullptr);
/// The backend `options` resolves to for host images. When it is cuda, the
/// CUDA context is created here and timed as the "cuda" step under
/// --verbose, so that the read and the first operation are timed alone.
Backend plan_backend(const Options& options);

/// `v` printed with the printf format `fmt` (one double conversion), for
/// messages: "nan" and "inf" spelled out (core/json_text.hpp's json_number
/// is the JSON form, with null).
std::string number(double v, const char* fmt = "%g");

/// The template-matching options that `match` and `video --op match` share.
/// Each command registers them with its own help text (the *_opt members are
/// what it registered, so that options the user left out keep the library's
/// defaults); match_params() checks them the same way for both.
struct MatchOptions {
  std::string method = "sqdiff", strategy = "auto", hsv;
  int top = 1;
  int min_distance = -1;     ///< read only where --min-distance was given
  double min_fraction = -1;  ///< read only where --min-fraction was given
  CLI::Option *method_opt = nullptr, *strategy_opt = nullptr, *top_opt = nullptr, *min_distance_opt = nullptr,
              *hsv_opt = nullptr, *min_fraction_opt = nullptr;
};
/// The library's MatchParams from `m`: --method, --strategy, --top,
/// --min-distance, --hsv-range and --min-fraction parsed and checked. Throws
/// pixelkit::Error (invalid_argument) naming the option that is wrong.
MatchParams match_params(const MatchOptions& m);

/// --levels of `haar` and `video --op haar-view`: "max" or an integer in
/// 1..haar_max_levels(width, height). `what` names the picture in the message
/// ("a 640x480 image", "640x480 frames"). With `clamp` (a default the user
/// did not give), a count above the maximum is lowered to it instead of
/// refused. Throws pixelkit::Error (invalid_argument) naming --levels.
int parse_haar_levels(const std::string& text, int width, int height, const std::string& what, bool clamp = false);

/// Checks an output path before any work is done: known extension, existing
/// folder, not one of the inputs. Throws pixelkit::Error naming `option`.
void check_output(const std::string& option, const std::string& path, const std::vector<std::string>& inputs,
                  bool image = true);

/// Learns early that `path`'s folder takes a new file: makes and removes an
/// empty file beside it (core/file.hpp's ".NAME.probe-XXXXXX.EXT"), so that
/// a write that would fail later fails before the work is done and before any
/// other output is written. Throws pixelkit::Error naming `option`.
void probe_output_folder(const std::string& option, const std::string& path);

/// Prints "step: detail (ms)" to stderr when --verbose is on.
void verbose(const std::string& step, const std::string& detail, double ms);

class Timer {
 public:
  Timer() : t0_(std::chrono::steady_clock::now()) {}
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

/// Several outputs of one command, written all or nothing. stage(PATH)
/// reserves a temporary file beside PATH, ".NAME.tmp-XXXXXX.EXT" (the
/// extension kept, since writers choose the format by it), and the command
/// writes that with the library's writers; commit() then renames every staged
/// file onto its destination. Before commit() no destination has changed, and
/// the destructor removes whatever was staged and not committed, so a failed
/// write (or a failed computation between writes) leaves every existing
/// output as it was.
class StagedOutputs {
 public:
  StagedOutputs() = default;
  ~StagedOutputs();
  StagedOutputs(const StagedOutputs&) = delete;
  StagedOutputs& operator=(const StagedOutputs&) = delete;

  /// Reserves the temporary for `path` and returns its name.
  std::string stage(const std::string& path);
  /// Removes the temporary of `path` (an output that is not to be written).
  void drop(const std::string& path);
  /// Runs f(temporary of path) for a freshly staged `path`.
  template <typename F>
  void write(const std::string& path, F&& f) {
    const std::string tmp = stage(path);
    naming_outputs([&] { f(tmp); });
  }
  /// Runs `f`; a pixelkit::Error that names a temporary is rethrown naming its
  /// destination instead.
  template <typename F>
  void naming_outputs(F&& f) const {
    try {
      f();
    } catch (const Error& e) {
      throw Error(e.status(), with_destinations(e.what()));
    }
  }
  /// Renames every staged file onto its destination, in the order staged.
  void commit();

 private:
  std::string with_destinations(std::string text) const;
  std::vector<std::pair<std::string, std::string>> staged_;  // (temporary, destination)
};

/// Runs `f`; rethrows a pixelkit::Error with "OPTION: " in front of its message.
template <typename F>
auto for_option(const std::string& option, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(e.status(), option + ": " + e.what());
  }
}

}  // namespace pixelkit::cli
