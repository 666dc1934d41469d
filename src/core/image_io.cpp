// Image files: PNG reads through libpng (core/png_codec.hpp) where that was
// found; everything else through OpenCV's imgcodecs where the build has it
// (through the OpenCV codec module, loaded on first use:
// core/opencv_module.hpp, whose side is core/image_io_opencv.cpp), PNG writes
// too, or through libpng without it; .npy always.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/png_codec.hpp"
#include "pixelkit/config.hpp"
#include "pixelkit/io.hpp"

#if PIXELKIT_WITH_OPENCV
#include "core/opencv_module.hpp"  // imgcodecs, loaded on first use
#endif

namespace pixelkit {

#if PIXELKIT_WITH_OPENCV
namespace cvmod = detail::cvmod;
#endif

namespace {

std::string extension_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

const std::vector<std::string>& codec_extensions() {
  static const std::vector<std::string> exts = {".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff",
                                                ".pgm", ".ppm", ".pnm", ".webp"};
  return exts;
}

bool is_png(const std::vector<unsigned char>& b) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  return b.size() >= 8 && std::memcmp(b.data(), sig, 8) == 0;
}

// libpng reports corrupt data by printing to stderr before OpenCV returns an
// empty image. Walking the chunk list first (lengths, CRCs, IEND) turns the
// common corruptions (truncation, damaged bytes) into a clean error instead.
bool png_structure_ok(const std::vector<unsigned char>& b, std::string& why) {
  if (!is_png(b)) return true;  // not a PNG: let the decoders decide
  static const auto table = [] {
    std::vector<std::uint32_t> t(256);
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::size_t pos = 8;
  while (true) {
    if (b.size() - pos < 12) { why = "truncated"; return false; }
    const std::size_t len = (std::size_t{b[pos]} << 24) | (std::size_t{b[pos + 1]} << 16) | (std::size_t{b[pos + 2]} << 8) | b[pos + 3];
    if (len > b.size() - pos - 12) { why = "truncated"; return false; }
    std::uint32_t c = 0xFFFFFFFFu;
    for (std::size_t i = pos + 4; i < pos + 8 + len; ++i) c = table[(c ^ b[i]) & 0xff] ^ (c >> 8);
    c ^= 0xFFFFFFFFu;
    const std::size_t q = pos + 8 + len;
    const std::uint32_t want = (std::uint32_t{b[q]} << 24) | (std::uint32_t{b[q + 1]} << 16) | (std::uint32_t{b[q + 2]} << 8) | b[q + 3];
    if (c != want) { why = "damaged (checksum mismatch)"; return false; }
    if (std::memcmp(&b[pos + 4], "IEND", 4) == 0) return true;
    pos = q + 4;
  }
}

}  // namespace

bool have_image_codecs() noexcept { return PIXELKIT_WITH_OPENCV != 0; }

bool have_png() noexcept { return have_image_codecs() || detail::png_codec_available(); }

void check_image_extension(const std::string& path) {
  const std::string ext = extension_of(path);
  if (ext == ".npy") return;
  const auto& exts = codec_extensions();
  if (std::find(exts.begin(), exts.end(), ext) == exts.end())
    throw Error(Status::invalid_argument,
                "output '" + path + "': unsupported extension '" + ext +
                    "' (use .png, .jpg, .jpeg, .bmp, .tif, .tiff, .pgm, .ppm, .pnm, .webp or .npy)");
  if (!have_image_codecs() && !(ext == ".png" && have_png()))
    throw Error(Status::unsupported, "output '" + path + "': this build has no image codecs (OpenCV was not found); use " +
                                         (have_png() ? ".png or .npy" : ".npy"));
#if PIXELKIT_WITH_OPENCV
  (void)cvmod::opencv_module("output '" + path + "'");  // a missing module fails now, not after the work
#endif
}

Image read_image(const std::string& path, Memory memory) {
  PIXELKIT_EXPECTS(is_host(memory), Status::invalid_argument, "read_image: memory must be host or pinned");
  const auto bytes = read_file(path);
  const std::string what = "input '" + path + "'";
  static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (bytes.size() >= 6 && std::memcmp(bytes.data(), npy_magic, 6) == 0)
    return image_from_npy(parse_npy(bytes.data(), bytes.size(), what), what, memory);
  // PNG through pixelkit's libpng codec where the build has it, OpenCV or not:
  // it decodes as OpenCV does (core/png_codec.hpp; tests hold the two against
  // each other), keeps libpng's warnings off stderr (OpenCV's libpng prints
  // "iCCP: known incorrect sRGB profile" for many photos in the wild) and
  // needs no codec module.
  if (detail::png_codec_available() && is_png(bytes)) {
    std::string why;
    if (!png_structure_ok(bytes, why)) throw Error(Status::io, what + " is a corrupt PNG file (" + why + ")");
    return detail::decode_png(bytes.data(), bytes.size(), what, memory);
  }
#if PIXELKIT_WITH_OPENCV
  if (bytes.empty()) throw Error(Status::io, what + " is empty");
  std::string why;
  if (!png_structure_ok(bytes, why)) throw Error(Status::io, what + " is a corrupt PNG file (" + why + ")");
  const cvmod::Api& cv = cvmod::opencv_module(what);
  std::string error;
  const std::unique_ptr<cvmod::DecodedImage> decoded(cv.decode(bytes.data(), bytes.size(), &error));
  if (!decoded && !error.empty()) throw Error(Status::io, what + " could not be decoded: " + error);
  if (!decoded) throw Error(Status::io, what + " is not an image pixelkit can read, or it is corrupt");
  const cvmod::Pixels m = decoded->pixels();
  if (m.channels == 2) throw Error(Status::unsupported, what + " has 2 channels (1, 3 or 4 supported)");
  Image img(m.width, m.height, m.channels, m.depth == cvmod::kDepthU8 ? PixelType::u8 : PixelType::f32, memory);
  const std::size_t row = img.view().row_bytes();
  for (int y = 0; y < m.height; ++y) std::memcpy(img.row<unsigned char>(y), m.data + y * m.pitch, row);
  return img;
#else
  throw Error(Status::unsupported, what + (detail::png_codec_available()
                                               ? ": this build reads only PNG files and .npy arrays (OpenCV was not found at build time)"
                                               : ": this build reads only .npy arrays (OpenCV was not found at build time)"));
#endif
}

void write_image(const std::string& path, const ConstImageView& image) {
  PIXELKIT_EXPECTS(is_host(image.memory), Status::invalid_argument, "write_image: image must be in host memory");
  check_image_extension(path);
  const std::string ext = extension_of(path);
  if (ext == ".npy") {
    write_npy(path, image);
    return;
  }
#if PIXELKIT_WITH_OPENCV
  const cvmod::Api& cv = cvmod::opencv_module("output '" + path + "'");
  const cvmod::Pixels px = cvmod::pixels_of(image);  // read only: encode converts a copy
  // TIFF keeps f32 samples; every other format takes u8, rounded and saturated.
  const bool keep_float = (ext == ".tif" || ext == ".tiff") && image.type == PixelType::f32;
  std::vector<unsigned char> buf;
  std::string error;
  const bool ok = cv.encode(px, ext.c_str(), keep_float, &buf, &error);
  if (!ok && !error.empty()) throw Error(Status::io, "output '" + path + "': cannot encode: " + error);
  if (!ok) throw Error(Status::io, "output '" + path + "': cannot encode this image as " + ext);
  write_file_atomic(path, buf.data(), buf.size());
#else
  // check_image_extension let only .png through: libpng's codec.
  const std::vector<unsigned char> buf = detail::encode_png(image, "output '" + path + "'");
  write_file_atomic(path, buf.data(), buf.size());
#endif
}

}  // namespace pixelkit
