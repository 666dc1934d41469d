#include "pixelkit/image.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "pixelkit/backend.hpp"
#include "pixelkit/config.hpp"
#if PIXELKIT_WITH_CUDA
#include "core/cuda_check.hpp"
#endif

namespace pixelkit {

const char* to_string(PixelType type) noexcept { return type == PixelType::u8 ? "u8" : "f32"; }
const char* to_string(Memory memory) noexcept {
  switch (memory) {
    case Memory::host: return "host";
    case Memory::pinned: return "pinned";
    case Memory::device: return "device";
  }
  return "?";
}
std::size_t element_size(PixelType type) noexcept { return type == PixelType::u8 ? 1 : 4; }

namespace {

constexpr std::size_t kHostAlign = 64;

[[noreturn, maybe_unused]] void need_cuda(const char* what) {
  throw Error(Status::unsupported,
              std::string(what) + " needs the CUDA backend, which this build of pixelkit does not have");
}

template <typename View>
View sub_of(const View& v, int x, int y, int w, int h) {
  PIXELKIT_EXPECTS(x >= 0 && y >= 0 && w >= 0 && h >= 0 && x <= v.width - w && y <= v.height - h,
                   Status::invalid_argument,
                   "sub-image (" + std::to_string(x) + "," + std::to_string(y) + ") " +
                       std::to_string(w) + "x" + std::to_string(h) + " does not lie inside a " +
                       std::to_string(v.width) + "x" + std::to_string(v.height) + " image");
  View s = v;
  using Byte = typename std::conditional<std::is_const<typename std::remove_pointer<decltype(v.data)>::type>::value,
                                         const unsigned char, unsigned char>::type;
  s.data = static_cast<Byte*>(v.data) + static_cast<std::ptrdiff_t>(y) * v.pitch +
           static_cast<std::ptrdiff_t>(x) * v.channels * static_cast<std::ptrdiff_t>(element_size(v.type));
  s.width = w;
  s.height = h;
  return s;
}

}  // namespace

ImageView ImageView::sub(int x, int y, int w, int h) const { return sub_of(*this, x, y, w, h); }
ConstImageView ConstImageView::sub(int x, int y, int w, int h) const { return sub_of(*this, x, y, w, h); }

std::string describe(const ConstImageView& v) {
  return std::to_string(v.width) + "x" + std::to_string(v.height) + "x" + std::to_string(v.channels) + " " +
         to_string(v.type);
}

bool overlaps(const ConstImageView& a, const ConstImageView& b) noexcept {
  if (is_host(a.memory) != is_host(b.memory) || a.empty() || b.empty()) return false;
  const auto* a0 = static_cast<const unsigned char*>(a.data);
  const auto* b0 = static_cast<const unsigned char*>(b.data);
  const auto* a1 = a0 + (a.height - 1) * a.pitch + a.row_bytes();
  const auto* b1 = b0 + (b.height - 1) * b.pitch + b.row_bytes();
  return a0 < b1 && b0 < a1;
}

void check_shape(int width, int height, int channels, PixelType type, const char* what) {
  const std::string name(what);
  PIXELKIT_EXPECTS(width > 0 && height > 0, Status::invalid_argument,
                   name + " size " + std::to_string(width) + "x" + std::to_string(height) + " is empty or negative");
  PIXELKIT_EXPECTS(channels >= 1 && channels <= 4, Status::invalid_argument,
                   name + " has " + std::to_string(channels) + " channels (1 to 4 supported)");
  // Rows are indexed with int element counts and sizes with 64-bit bytes:
  // refuse shapes whose byte counts would overflow either, before allocating.
  const std::uint64_t row_elems = static_cast<std::uint64_t>(width) * channels;
  const std::uint64_t row_bytes = row_elems * element_size(type);
  PIXELKIT_EXPECTS(row_bytes + kHostAlign < static_cast<std::uint64_t>(std::numeric_limits<int>::max()),
                   Status::invalid_argument,
                   name + " " + std::to_string(width) + "x" + std::to_string(height) + "x" +
                       std::to_string(channels) + " " + to_string(type) + ": a row of " +
                       std::to_string(row_bytes) + " bytes is too large");
  PIXELKIT_EXPECTS(static_cast<std::uint64_t>(height) <= (std::uint64_t{1} << 46) / (row_bytes + kHostAlign),
                   Status::invalid_argument,
                   name + " " + std::to_string(width) + "x" + std::to_string(height) + "x" +
                       std::to_string(channels) + " " + to_string(type) + " is too large (" +
                       std::to_string(row_bytes * static_cast<std::uint64_t>(height)) +
                       " bytes; at most 2^46 are supported)");
}

ImageView make_view(void* data, int width, int height, int channels, PixelType type, Memory memory,
                    std::ptrdiff_t pitch) {
  check_shape(width, height, channels, type, "view");
  PIXELKIT_EXPECTS(data != nullptr, Status::invalid_argument, "view data pointer is null");
  const auto row = static_cast<std::ptrdiff_t>(width) * channels * static_cast<std::ptrdiff_t>(element_size(type));
  if (pitch == 0) pitch = row;
  PIXELKIT_EXPECTS(pitch >= row, Status::invalid_argument,
                   "view pitch " + std::to_string(pitch) + " is smaller than a row (" + std::to_string(row) + " bytes)");
  ImageView v;
  v.data = data;
  v.width = width;
  v.height = height;
  v.channels = channels;
  v.type = type;
  v.memory = memory;
  v.pitch = pitch;
  return v;
}

Image::Image(int width, int height, int channels, PixelType type, Memory memory) {
  check_shape(width, height, channels, type, "image");
  const std::size_t row = static_cast<std::size_t>(width) * channels * element_size(type);
  view_.width = width;
  view_.height = height;
  view_.channels = channels;
  view_.type = type;
  view_.memory = memory;
  const std::string shape = std::to_string(width) + "x" + std::to_string(height) + "x" +
                            std::to_string(channels) + " " + to_string(type);
  if (memory == Memory::host) {
    const std::size_t pitch = (row + kHostAlign - 1) / kHostAlign * kHostAlign;
    const std::size_t bytes = pitch * static_cast<std::size_t>(height);
    void* p = std::aligned_alloc(kHostAlign, bytes);
    PIXELKIT_EXPECTS(p != nullptr, Status::out_of_memory,
                     "cannot allocate " + std::to_string(bytes) + " bytes of host memory for a " + shape + " image");
    view_.data = p;
    view_.pitch = static_cast<std::ptrdiff_t>(pitch);
    return;
  }
#if PIXELKIT_WITH_CUDA
  if (memory == Memory::pinned) {
    const std::size_t pitch = (row + kHostAlign - 1) / kHostAlign * kHostAlign;
    void* p = nullptr;
    const cudaError_t e = cudaMallocHost(&p, pitch * static_cast<std::size_t>(height));
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      throw Error(e == cudaErrorMemoryAllocation ? Status::out_of_memory : Status::cuda,
                  "cannot allocate " + std::to_string(pitch * height) + " bytes of pinned memory for a " + shape +
                      " image: " + cudaGetErrorString(e));
    }
    view_.data = p;
    view_.pitch = static_cast<std::ptrdiff_t>(pitch);
    return;
  }
  std::size_t pitch = 0;
  void* p = nullptr;
  const cudaError_t e = cudaMallocPitch(&p, &pitch, row, static_cast<std::size_t>(height));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    (void)cudaGetLastError();
    throw Error(e == cudaErrorMemoryAllocation ? Status::out_of_memory : Status::cuda,
                "cannot allocate a " + shape + " image on the GPU (" + std::to_string(row * height) +
                    " bytes needed, " + std::to_string(free_b) + " free): " + cudaGetErrorString(e));
  }
  // Zero the row padding (pitch - row bytes past each row), once: a kernel
  // that copies a row's last partial 16 bytes by a clipped cp.async (the
  // row-streaming 3x3 filter) reads only the row's bytes, but
  // compute-sanitizer's initcheck counts the instruction's whole 16 and
  // would report the padding as uninitialised. On the calling thread's
  // default stream, then synchronised (as DeviceBuffer::reserve zeroes): the
  // caller's streams do not wait for it, nor it for other threads' work.
  if (pitch > row) {
    cudaError_t z = cudaMemset2DAsync(static_cast<char*>(p) + row, pitch, 0, pitch - row,
                                      static_cast<std::size_t>(height), cudaStreamPerThread);
    if (z == cudaSuccess) z = cudaStreamSynchronize(cudaStreamPerThread);
    if (z != cudaSuccess) {
      (void)cudaGetLastError();
      cudaFree(p);
      throw Error(Status::cuda, "cannot clear the row padding of a " + shape + " image on the GPU: " +
                                    cudaGetErrorString(z));
    }
  }
  view_.data = p;
  view_.pitch = static_cast<std::ptrdiff_t>(pitch);
#else
  need_cuda(memory == Memory::pinned ? "pinned memory" : "device memory");
#endif
}

void Image::release() noexcept {
  if (!view_.data) return;
  switch (view_.memory) {
    case Memory::host: std::free(view_.data); break;
#if PIXELKIT_WITH_CUDA
    case Memory::pinned: cudaFreeHost(view_.data); break;
    case Memory::device: cudaFree(view_.data); break;
#else
    default: break;
#endif
  }
  view_ = ImageView{};
}

Image::~Image() { release(); }
Image::Image(Image&& other) noexcept : view_(other.view_) { other.view_ = ImageView{}; }
Image& Image::operator=(Image&& other) noexcept {
  if (this != &other) {
    release();
    view_ = other.view_;
    other.view_ = ImageView{};
  }
  return *this;
}

namespace {
void check_same(const ConstImageView& a, const ImageView& b, const char* op) {
  PIXELKIT_EXPECTS(a.width == b.width && a.height == b.height && a.channels == b.channels && a.type == b.type,
                   Status::invalid_argument,
                   std::string(op) + ": source " + std::to_string(a.width) + "x" + std::to_string(a.height) + "x" +
                       std::to_string(a.channels) + " " + to_string(a.type) + " and destination " +
                       std::to_string(b.width) + "x" + std::to_string(b.height) + "x" + std::to_string(b.channels) +
                       " " + to_string(b.type) + " differ");
}
}  // namespace

void copy(const ConstImageView& src, const ImageView& dst, stream_t stream) {
  check_same(src, dst, "copy");
  if (src.empty()) return;
  if (is_host(src.memory) && is_host(dst.memory)) {
    const std::size_t row = src.row_bytes();
    for (int y = 0; y < src.height; ++y) std::memcpy(dst.row<unsigned char>(y), src.row<unsigned char>(y), row);
    return;
  }
#if PIXELKIT_WITH_CUDA
  PIXELKIT_CUDA_TRY(cudaMemcpy2DAsync(dst.data, static_cast<std::size_t>(dst.pitch), src.data,
                                      static_cast<std::size_t>(src.pitch), src.row_bytes(),
                                      static_cast<std::size_t>(src.height), cudaMemcpyDefault,
                                      reinterpret_cast<cudaStream_t>(stream)));
#else
  (void)stream;
  need_cuda("copying device memory");
#endif
}

Image clone(const ConstImageView& src, Memory memory) {
  Image out(src.width, src.height, src.channels, src.type, memory);
  copy(src, out.view(), nullptr);
  if (!is_host(src.memory) || !is_host(memory)) synchronize(nullptr);
  return out;
}

void synchronize(stream_t stream) {
#if PIXELKIT_WITH_CUDA
  if (stream == nullptr && !cuda_available()) return;  // nothing can have been queued
  PIXELKIT_CUDA_TRY(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)));
#else
  (void)stream;
#endif
}

namespace {
// Moves channel ch of an interleaved image to/from plane ch of a planar one.
template <typename T>
void aos_to_soa(const ConstImageView& src, const ImageView& dst) {
  const int w = src.width, h = src.height, c = src.channels;
  for (int ch = 0; ch < c; ++ch)
    for (int y = 0; y < h; ++y) {
      const T* s = src.row<T>(y);
      T* d = dst.row<T>(ch * h + y);
      for (int x = 0; x < w; ++x) d[x] = s[x * c + ch];
    }
}
template <typename T>
void soa_to_aos(const ConstImageView& src, const ImageView& dst) {
  const int w = dst.width, h = dst.height, c = dst.channels;
  for (int ch = 0; ch < c; ++ch)
    for (int y = 0; y < h; ++y) {
      const T* s = src.row<T>(ch * h + y);
      T* d = dst.row<T>(y);
      for (int x = 0; x < w; ++x) d[x * c + ch] = s[x];
    }
}
}  // namespace

void to_planar(const ConstImageView& src, const ImageView& dst) {
  PIXELKIT_EXPECTS(is_host(src.memory) && is_host(dst.memory), Status::unsupported,
                   "to_planar: host images only");
  PIXELKIT_EXPECTS(dst.channels == 1 && dst.width == src.width && dst.height == src.height * src.channels &&
                       dst.type == src.type,
                   Status::invalid_argument, "to_planar: destination must be W x (H*C) x 1 of the same type");
  if (src.type == PixelType::u8) aos_to_soa<std::uint8_t>(src, dst);
  else aos_to_soa<float>(src, dst);
}

void from_planar(const ConstImageView& src, const ImageView& dst) {
  PIXELKIT_EXPECTS(is_host(src.memory) && is_host(dst.memory), Status::unsupported,
                   "from_planar: host images only");
  PIXELKIT_EXPECTS(src.channels == 1 && dst.width == src.width && src.height == dst.height * dst.channels &&
                       dst.type == src.type,
                   Status::invalid_argument, "from_planar: source must be W x (H*C) x 1 of the same type");
  if (src.type == PixelType::u8) soa_to_aos<std::uint8_t>(src, dst);
  else soa_to_aos<float>(src, dst);
}

void convert(const ConstImageView& src, const ImageView& dst) {
  PIXELKIT_EXPECTS(is_host(src.memory) && is_host(dst.memory), Status::unsupported, "convert: host images only");
  PIXELKIT_EXPECTS(src.width == dst.width && src.height == dst.height && src.channels == dst.channels,
                   Status::invalid_argument, "convert: source and destination shapes differ");
  const int n = src.width * src.channels;
  for (int y = 0; y < src.height; ++y) {
    if (src.type == dst.type) {
      std::memcpy(dst.row<unsigned char>(y), src.row<unsigned char>(y), src.row_bytes());
    } else if (src.type == PixelType::u8) {
      const auto* s = src.row<std::uint8_t>(y);
      float* d = dst.row<float>(y);
      for (int i = 0; i < n; ++i) d[i] = s[i];
    } else {
      const float* s = src.row<float>(y);
      auto* d = dst.row<std::uint8_t>(y);
      for (int i = 0; i < n; ++i) {
        const float v = std::nearbyint(s[i]);
        d[i] = static_cast<std::uint8_t>(v <= 0.0f ? 0.0f : (v >= 255.0f ? 255.0f : v));  // NaN -> 0
      }
    }
  }
}

}  // namespace pixelkit
