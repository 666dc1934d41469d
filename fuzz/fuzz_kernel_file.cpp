// Fuzz target: a kernel file (@FILE): the input is written to a private
// temporary file and parsed through parse_kernel("@" + path).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "pixelkit/filter.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/pixelkit-fuzz-kernel-" + std::to_string(getpid()) + ".txt";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    const pixelkit::Kernel k = pixelkit::parse_kernel("@" + path);
    if (k.width < 1 || k.height < 1 || k.width > 31 || k.height > 31) __builtin_trap();
  } catch (const pixelkit::Error&) {
  }
  return 0;
}
