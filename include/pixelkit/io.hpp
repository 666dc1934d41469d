// pixelkit/io.hpp - reading and writing images and arrays.
//
// Image files go through OpenCV's imgcodecs when the build has OpenCV (PNG,
// JPEG, BMP, TIFF, PGM/PPM, WebP; the writer is chosen by the extension).
// Without OpenCV, PNG files still go through libpng where the build found it
// (8-bit out; OpenCV's channel rules in).
// NumPy .npy arrays (u8 or f32, HxW or HxWxC) are pixelkit's own code and
// always available, so the CLI works where OpenCV is absent.
//
// Colour images are held in RGB(A) order in memory (OpenCV's BGR files are
// converted on the way in and out), matching NumPy/PIL conventions.
//
// Every writer is atomic: data goes to a temporary file in the destination's
// folder that is renamed over the destination only once complete, so a
// failure never leaves a partial file and never damages an existing one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pixelkit/image.hpp"

namespace pixelkit {

/// True when the build can read and write every image format above (OpenCV).
bool have_image_codecs() noexcept;
/// True when the build can read and write PNG files: through OpenCV, or
/// through libpng where OpenCV is absent.
bool have_png() noexcept;

/// Reads an image file (or a .npy array) into host memory of `memory`
/// (host or pinned). Throws io naming the path when the file is missing,
/// unreadable or corrupt, unsupported for a format this build lacks.
Image read_image(const std::string& path, Memory memory = Memory::host);

/// Writes a host image by the extension of `path` (.png .jpg .jpeg .bmp .tif
/// .tiff .pgm .ppm .pnm .webp .npy). f32 images are rounded and saturated to
/// u8 for 8-bit formats; .npy and .tif keep f32. Throws invalid_argument for an
/// unknown extension, io when the folder is missing or the write fails.
void write_image(const std::string& path, const ConstImageView& image);

/// Throws invalid_argument unless `path` has an extension write_image knows,
/// unsupported when this build (or its OpenCV codec module, loaded here if it
/// was not yet) cannot write that format: a check before any work is done.
void check_image_extension(const std::string& path);

// ---- NumPy arrays -----------------------------------------------------------

enum class NpyType : std::uint8_t { u8, u32, i32, i64, u64, f32, f64 };
const char* to_string(NpyType type) noexcept;
std::size_t element_size(NpyType type) noexcept;

/// A C-ordered n-dimensional array as read from or written to .npy.
struct NpyArray {
  NpyType type = NpyType::u8;
  std::vector<std::size_t> shape;
  std::vector<unsigned char> bytes;  ///< little-endian, C order
  std::size_t count() const noexcept;
};

/// Parses .npy data (format versions 1.0, 2.0 and 3.0; little-endian or
/// byte-order-neutral types; C order). `what` names the source in errors.
NpyArray parse_npy(const unsigned char* data, std::size_t size, const std::string& what);
/// Serialises an array to .npy (version 1.0, or 2.0 for very long headers).
std::vector<unsigned char> serialize_npy(NpyType type, const std::vector<std::size_t>& shape,
                                         const void* data);

NpyArray read_npy(const std::string& path);
/// Writes an array atomically. `data` is `count` elements, C order.
void write_npy(const std::string& path, NpyType type, const std::vector<std::size_t>& shape,
               const void* data);
/// Writes a host image as an HxW (1 channel) or HxWxC array.
void write_npy(const std::string& path, const ConstImageView& image);
/// An HxW or HxWxC u8/f32 array as an image (C in 1, 3, 4).
Image image_from_npy(const NpyArray& array, const std::string& what, Memory memory = Memory::host);

/// One .npy member of a .npz archive.
struct NpzMember {
  std::string name;  ///< without the ".npy" suffix
  NpyArray array;
};
/// Writes an uncompressed .npz (a zip of .npy files) atomically.
void write_npz(const std::string& path, const std::vector<NpzMember>& members);
/// Reads an .npz written by numpy.savez (stored, not deflated) or write_npz.
std::vector<NpzMember> read_npz(const std::string& path);
/// Parses .npz bytes (what read_npz does after reading the file); `what`
/// names the source in errors.
std::vector<NpzMember> parse_npz(const unsigned char* data, std::size_t size, const std::string& what);

// ---- files ------------------------------------------------------------------

/// Writes bytes to `path` atomically (temporary file + rename).
void write_file_atomic(const std::string& path, const void* data, std::size_t size);
/// Reads a whole file; throws io naming the path.
std::vector<unsigned char> read_file(const std::string& path);

}  // namespace pixelkit
