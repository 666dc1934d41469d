// pixelkit/image.hpp - the image model.
//
// * Image      owns a row-pitched buffer in host, pinned-host or device memory.
// * ImageView  is a cheap, non-owning, mutable window into such a buffer.
// * ConstImageView is the read-only counterpart; every ImageView converts to it.
//
// Pixels are interleaved (AoS): a row holds width * channels elements of one
// PixelType, and consecutive rows start `pitch` bytes apart. A sub-image view
// (ImageView::sub) keeps the parent's pitch, so its rows are not contiguous;
// every operation accepts such views. Planar (SoA) storage is available through
// to_planar / from_planar, which use one plane per channel stacked vertically
// (a planar image of C channels is an Image of width W, height H*C, 1 channel).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "pixelkit/error.hpp"

// The CUDA runtime defines cudaStream_t as `struct CUstream_st*`. Declaring the
// same type here keeps cuda_runtime.h out of pixelkit's public headers.
struct CUstream_st;

namespace pixelkit {

/// A CUDA stream (the same type as cudaStream_t). nullptr is the default stream.
using stream_t = CUstream_st*;

enum class PixelType : std::uint8_t { u8, f32 };
enum class Memory : std::uint8_t {
  host,    ///< pageable host memory
  pinned,  ///< page-locked host memory (asynchronous transfers); needs CUDA
  device,  ///< CUDA device memory
};

const char* to_string(PixelType type) noexcept;
const char* to_string(Memory memory) noexcept;
std::size_t element_size(PixelType type) noexcept;
inline bool is_host(Memory m) noexcept { return m != Memory::device; }

template <typename T> struct pixel_type_of;
template <> struct pixel_type_of<std::uint8_t> { static constexpr PixelType value = PixelType::u8; };
template <> struct pixel_type_of<float> { static constexpr PixelType value = PixelType::f32; };

struct ImageView {
  void* data = nullptr;
  int width = 0;
  int height = 0;
  int channels = 0;
  PixelType type = PixelType::u8;
  Memory memory = Memory::host;
  std::ptrdiff_t pitch = 0;  ///< bytes between the starts of consecutive rows

  bool empty() const noexcept { return width <= 0 || height <= 0; }
  std::size_t row_bytes() const noexcept {
    return static_cast<std::size_t>(width) * channels * element_size(type);
  }
  template <typename T> T* row(int y) const noexcept {
    return reinterpret_cast<T*>(static_cast<unsigned char*>(data) + y * pitch);
  }
  /// The w x h window whose top-left pixel is (x, y); shares this view's pitch.
  /// Throws invalid_argument if the window does not lie inside the view.
  ImageView sub(int x, int y, int w, int h) const;
};

struct ConstImageView {
  const void* data = nullptr;
  int width = 0;
  int height = 0;
  int channels = 0;
  PixelType type = PixelType::u8;
  Memory memory = Memory::host;
  std::ptrdiff_t pitch = 0;

  ConstImageView() = default;
  ConstImageView(const ImageView& v)  // NOLINT: implicit by design
      : data(v.data), width(v.width), height(v.height), channels(v.channels),
        type(v.type), memory(v.memory), pitch(v.pitch) {}

  bool empty() const noexcept { return width <= 0 || height <= 0; }
  std::size_t row_bytes() const noexcept {
    return static_cast<std::size_t>(width) * channels * element_size(type);
  }
  template <typename T> const T* row(int y) const noexcept {
    return reinterpret_cast<const T*>(static_cast<const unsigned char*>(data) + y * pitch);
  }
  ConstImageView sub(int x, int y, int w, int h) const;
};

/// Wraps caller-owned memory. pitch = 0 means tightly packed rows.
ImageView make_view(void* data, int width, int height, int channels, PixelType type,
                    Memory memory = Memory::host, std::ptrdiff_t pitch = 0);

/// "WxHxC type" (e.g. "640x480x3 u8"), for messages.
std::string describe(const ConstImageView& view);

/// True when the byte spans of two views (first byte to last byte) intersect;
/// views in host and device memory never do. Conservative: side-by-side
/// windows of one image count as overlapping. Operations use it to refuse
/// in-place calls.
bool overlaps(const ConstImageView& a, const ConstImageView& b) noexcept;

/// Checks that width, height and channels are a valid image shape and that its
/// byte size fits in memory arithmetic; throws invalid_argument naming `what`.
void check_shape(int width, int height, int channels, PixelType type, const char* what = "image");

/// An owning image. Move-only. Rows are padded to a 64-byte pitch on the host
/// (cudaMallocPitch's choice on the device), so that rows start aligned.
class Image {
 public:
  Image() = default;
  /// Allocates an uninitialised width x height x channels image (on the
  /// device, the row padding past each row's last byte is zeroed, so that
  /// compute-sanitizer's initcheck finds no uninitialised byte where a kernel's
  /// clipped 16-byte copy of a row's end passes it). Throws
  /// invalid_argument for a bad shape, out_of_memory if allocation fails,
  /// unsupported for pinned/device memory in a build without CUDA.
  Image(int width, int height, int channels, PixelType type, Memory memory = Memory::host);
  ~Image();
  Image(Image&& other) noexcept;
  Image& operator=(Image&& other) noexcept;
  Image(const Image&) = delete;
  Image& operator=(const Image&) = delete;

  ImageView view() noexcept { return view_; }
  ConstImageView view() const noexcept { return view_; }
  ConstImageView cview() const noexcept { return view_; }
  operator ImageView() noexcept { return view_; }             // NOLINT
  operator ConstImageView() const noexcept { return view_; }  // NOLINT

  int width() const noexcept { return view_.width; }
  int height() const noexcept { return view_.height; }
  int channels() const noexcept { return view_.channels; }
  PixelType type() const noexcept { return view_.type; }
  Memory memory() const noexcept { return view_.memory; }
  std::ptrdiff_t pitch() const noexcept { return view_.pitch; }
  bool empty() const noexcept { return view_.empty(); }
  template <typename T> T* row(int y) noexcept { return view_.row<T>(y); }
  template <typename T> const T* row(int y) const noexcept { return view_.row<T>(y); }

 private:
  void release() noexcept;
  ImageView view_{};
};

/// Copies pixels between any two memories (host, pinned, device), same shape
/// and type. With a device side the copy is queued on `stream`; call
/// synchronize(stream) before reading the result on the host.
void copy(const ConstImageView& src, const ImageView& dst, stream_t stream = nullptr);

/// A new image in `memory` holding a copy of src (synchronous).
Image clone(const ConstImageView& src, Memory memory = Memory::host);

/// Blocks until all work queued on `stream` is done (no-op without CUDA).
void synchronize(stream_t stream);

/// Interleaved (AoS) -> planar (SoA): dst is W x (H*C) x 1, plane c = channel c.
void to_planar(const ConstImageView& src, const ImageView& dst);
/// Planar (SoA) -> interleaved (AoS); dst must have C = src.height / dst.height.
void from_planar(const ConstImageView& src, const ImageView& dst);

/// Converts pixel types (u8 <-> f32, no scaling; f32 -> u8 rounds to nearest
/// even and saturates). Host memory only.
void convert(const ConstImageView& src, const ImageView& dst);

}  // namespace pixelkit
