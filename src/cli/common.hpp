// Shared pieces of the pixelkit command-line program: subcommand registry,
// the options every subcommand takes, output-path checks and timing.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "pixelkit/backend.hpp"

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

/// Checks an output path before any work is done: known extension, existing
/// folder, not one of the inputs. Throws pixelkit::Error naming `option`.
void check_output(const std::string& option, const std::string& path, const std::vector<std::string>& inputs,
                  bool image = true);

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
