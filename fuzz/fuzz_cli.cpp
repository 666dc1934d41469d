// Fuzz target: the command line's option handling. The input is split at
// newlines into arguments (at most 24) and run through pixelkit::cli::run(),
// the whole program minus main(), in a private scratch folder that holds a
// small image (in.npy, in3.npy), a template (t.npy) and a kernel file (k.txt),
// so that the fuzzer can reach the subcommands' own checks. Any exit code but
// 0, 1 or 2 (3 = an unexpected exception) is a finding, as is any crash.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "pixelkit/io.hpp"

namespace {

void setup_scratch() {
  const std::string dir = "/tmp/pixelkit-fuzz-cli-" + std::to_string(getpid());
  mkdir(dir.c_str(), 0700);
  if (chdir(dir.c_str()) != 0) std::abort();
  std::vector<unsigned char> px(7 * 5 * 3);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<unsigned char>(i * 37);
  pixelkit::write_npy("in.npy", pixelkit::NpyType::u8, {5, 7}, px.data());
  pixelkit::write_npy("in3.npy", pixelkit::NpyType::u8, {5, 7, 3}, px.data());
  pixelkit::write_npy("t.npy", pixelkit::NpyType::u8, {2, 3}, px.data());
  std::FILE* f = std::fopen("k.txt", "w");
  if (f) {
    std::fputs("1 2 1\n2 4 2\n1 2 1\n/16\n", f);
    std::fclose(f);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool ready = (setup_scratch(), true);
  (void)ready;
  std::vector<std::string> args = {"pixelkit"};
  std::string cur;
  for (std::size_t i = 0; i < size && args.size() < 25; ++i) {
    if (data[i] == '\n') {
      args.push_back(cur);
      cur.clear();
    } else if (data[i] != 0) {
      cur.push_back(static_cast<char>(data[i]));
    }
  }
  if (!cur.empty() && args.size() < 25) args.push_back(cur);
  // The large-image paths would only measure the allocator: keep runs small.
  for (const auto& a : args)
    if (a.size() > 256) return 0;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  const int rc = pixelkit::cli::run(static_cast<int>(args.size()), argv.data());
  if (rc != 0 && rc != 1 && rc != 2) __builtin_trap();
  return 0;
}
