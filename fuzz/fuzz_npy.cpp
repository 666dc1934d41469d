// Fuzz target: the .npy reader (parse_npy) and its conversion to an image.
#include <cstddef>
#include <cstdint>

#include "pixelkit/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const pixelkit::NpyArray a = pixelkit::parse_npy(data, size, "fuzz input");
    // The parsed array must be self-consistent.
    if (a.bytes.size() != a.count() * pixelkit::element_size(a.type)) __builtin_trap();
    const pixelkit::Image img = pixelkit::image_from_npy(a, "fuzz input");
    if (img.empty()) __builtin_trap();
  } catch (const pixelkit::Error&) {
  }
  return 0;
}
