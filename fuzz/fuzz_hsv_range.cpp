// Fuzz target: parse_hsv_range ("H1,S1,V1:H2,S2,V2").
#include <cstddef>
#include <cstdint>
#include <string>

#include "pixelkit/match.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const pixelkit::HsvRange r = pixelkit::parse_hsv_range(text);
    // What parses is in range and prints back to something that parses equal.
    if (r.h_lo < 0 || r.h_lo > 179 || r.h_hi < 0 || r.h_hi > 179 || r.s_lo < 0 || r.s_lo > r.s_hi ||
        r.s_hi > 255 || r.v_lo < 0 || r.v_lo > r.v_hi || r.v_hi > 255)
      __builtin_trap();
    const pixelkit::HsvRange again = pixelkit::parse_hsv_range(pixelkit::to_string(r));
    if (pixelkit::to_string(again) != pixelkit::to_string(r)) __builtin_trap();
  } catch (const pixelkit::Error&) {
  }
  return 0;
}
