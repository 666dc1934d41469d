// Fuzz target: parse_kernel on an inline specification (box:N, gaussian:N:S,
// "1,2,1;2,4,2;1,2,1/16", ...). '@FILE' specifications are fuzz_kernel_file's.
#include <cstddef>
#include <cstdint>
#include <string>

#include "pixelkit/filter.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string spec(reinterpret_cast<const char*>(data), size);
  if (!spec.empty() && spec[0] == '@') return 0;
  try {
    const pixelkit::Kernel k = pixelkit::parse_kernel(spec);
    // A kernel that parses must be usable: sides in range, coefficients finite.
    if (k.width < 1 || k.height < 1 || k.width > 31 || k.height > 31) __builtin_trap();
  } catch (const pixelkit::Error&) {
  }
  return 0;
}
