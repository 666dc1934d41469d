// Fuzz target: the .npz reader (parse_npz: zip walking, CRC, every member's .npy).
#include <cstddef>
#include <cstdint>

#include "pixelkit/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto members = pixelkit::parse_npz(data, size, "fuzz input");
    for (const auto& m : members)
      if (m.array.bytes.size() != m.array.count() * pixelkit::element_size(m.array.type)) __builtin_trap();
  } catch (const pixelkit::Error&) {
  }
  return 0;
}
