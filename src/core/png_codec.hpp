// PNG files through libpng, pixelkit's own codec: read_image decodes every
// PNG with it where libpng was found, OpenCV or not (quiet: OpenCV's libpng
// prints warnings such as "iCCP: known incorrect sRGB profile" to stderr,
// and a PNG read needs no codec module), and builds without OpenCV (the GPU
// test machines have libpng but no OpenCV C++) write PNG with it too. Where
// OpenCV is present, write_image keeps imgcodecs; the tests hold this codec
// against OpenCV's decoder pixel for pixel.
//
// Decoding matches OpenCV's IMREAD_UNCHANGED: grey, RGB and RGBA as stored,
// palettes expanded to RGB (RGBA where the file has transparency), grey
// below 8 bits expanded, no gamma or colour-space conversion; 16-bit
// samples become f32 values 0..65535 (as read_image converts OpenCV's 16U);
// grey + alpha becomes RGBA, as OpenCV makes it.
#pragma once

#include <string>
#include <vector>

#include "pixelkit/image.hpp"

namespace pixelkit::detail {

/// True when this build has the libpng codec (PIXELKIT_WITH_PNG).
bool png_codec_available() noexcept;

/// Decodes PNG bytes into a host image of `memory`. Throws io naming `what`
/// for corrupt data, unsupported in a build without libpng.
Image decode_png(const unsigned char* data, std::size_t size, const std::string& what, Memory memory = Memory::host);

/// Encodes a host image (u8, or f32 rounded to nearest and saturated to u8;
/// 1, 3 or 4 channels) as 8-bit PNG bytes. Throws io naming `what`.
std::vector<unsigned char> encode_png(const ConstImageView& image, const std::string& what);

}  // namespace pixelkit::detail
