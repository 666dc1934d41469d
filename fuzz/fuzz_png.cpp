// Fuzz target: the libpng codec pixelkit wraps (core/png_codec.hpp): decoding
// any bytes either throws pixelkit::Error or gives an image, and an 8-bit
// image re-encoded decodes to the same pixels.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/png_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!pixelkit::detail::png_codec_available()) return 0;
  try {
    const pixelkit::Image img = pixelkit::detail::decode_png(data, size, "fuzz input");
    if (img.empty()) __builtin_trap();
    if (img.type() != pixelkit::PixelType::u8) return 0;  // 16-bit files: f32, re-encoded as 8-bit
    const auto png = pixelkit::detail::encode_png(img.cview(), "fuzz output");
    const pixelkit::Image back = pixelkit::detail::decode_png(png.data(), png.size(), "fuzz output");
    if (back.width() != img.width() || back.height() != img.height() || back.channels() != img.channels())
      __builtin_trap();
    const std::size_t row = img.cview().row_bytes();
    for (int y = 0; y < img.height(); ++y)
      if (std::memcmp(back.row<unsigned char>(y), img.row<unsigned char>(y), row) != 0) __builtin_trap();
  } catch (const pixelkit::Error&) {
  }
  return 0;
}
