// PNG through libpng (png_codec.hpp). libpng reports errors by longjmp: the
// functions that call it (decode_raw, encode_raw) hold only plain data in
// the frame of their setjmp, and hand memory out through callbacks that run
// to completion, so no C++ object is skipped by a jump.
#include "core/png_codec.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>

#include "pixelkit/config.hpp"
#include "pixelkit/error.hpp"

#if PIXELKIT_WITH_PNG
#include <png.h>
#include <zlib.h>  // Z_BEST_SPEED, Z_RLE (libpng depends on zlib)
#endif

namespace pixelkit::detail {

#if PIXELKIT_WITH_PNG
namespace {

struct Message {
  char text[200] = {0};
};

void on_error(png_structp png, png_const_charp msg) {
  auto* m = static_cast<Message*>(png_get_error_ptr(png));
  std::snprintf(m->text, sizeof m->text, "%s", msg != nullptr ? msg : "libpng error");
  png_longjmp(png, 1);
}
void on_warning(png_structp, png_const_charp) {}  // libpng's warnings are not errors; keep stderr quiet

// ---- decoding ------------------------------------------------------------------

struct Source {
  const unsigned char* data;
  std::size_t size;
  std::size_t pos;
};
void read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto* s = static_cast<Source*>(png_get_io_ptr(png));
  if (s->size - s->pos < n) png_error(png, "truncated");
  std::memcpy(out, s->data + s->pos, n);
  s->pos += n;
}

/// Deflate's largest expansion (258 bytes from about 2 bits).
constexpr double kMaxInflation = 1032.0;

struct Layout {
  int width, height, channels, bit_depth;  ///< after the transforms
  std::size_t row_bytes;
};
/// Gives decode_raw the buffer to decode into, `height` rows of
/// `layout.row_bytes` bytes, `*pitch` bytes apart, all zero; or nullptr where
/// it cannot (decode_raw then gives up).
using Allocate = unsigned char* (*)(void* ctx, const Layout& layout, std::size_t* pitch);

/// Decodes into the buffer `allocate` gives. Returns 0, or 1 with `msg` set.
/// OpenCV's channel rules (grfmt_png.cpp, IMREAD_UNCHANGED): RGB or palette
/// with a tRNS chunk and grey + alpha become RGBA; grey with tRNS stays grey.
int decode_raw(Source* src, Message* msg, Allocate allocate, void* ctx) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, msg, on_error, on_warning);
  if (png == nullptr) {
    std::snprintf(msg->text, sizeof msg->text, "out of memory");
    return 1;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr);
    return 1;
  }
  png_set_read_fn(png, src, read_bytes);
  png_read_info(png, info);
  const int color_type = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  // Deflate expands at most 1032-fold: a header declaring more rows than the
  // data could hold is refused before anything of its size is allocated.
  const double declared = (static_cast<double>(png_get_rowbytes(png, info)) + 1) * png_get_image_height(png, info);
  if (declared > kMaxInflation * static_cast<double>(src->size) + 4096) {
    std::snprintf(msg->text, sizeof msg->text, "declares %ux%u pixels, more than its %zu bytes can hold",
                  static_cast<unsigned>(png_get_image_width(png, info)),
                  static_cast<unsigned>(png_get_image_height(png, info)), src->size);
    png_longjmp(png, 1);
  }
  png_bytep trans = nullptr;
  int num_trans = 0;
  png_color_16p trans_values = nullptr;
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_get_tRNS(png, info, &trans, &num_trans, &trans_values);
  int channels = 1;
  if (color_type == PNG_COLOR_TYPE_RGB || color_type == PNG_COLOR_TYPE_PALETTE) channels = num_trans > 0 ? 4 : 3;
  else if (color_type == PNG_COLOR_TYPE_GRAY_ALPHA || color_type == PNG_COLOR_TYPE_RGB_ALPHA) channels = 4;
  if (channels < 4) png_set_strip_alpha(png);
  else png_set_tRNS_to_alpha(png);
  if (depth == 16) png_set_swap(png);  // host order (little-endian machines)
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0 && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0 && channels == 4) png_set_gray_to_rgb(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  Layout layout{static_cast<int>(png_get_image_width(png, info)), static_cast<int>(png_get_image_height(png, info)),
                channels, depth == 16 ? 16 : 8, png_get_rowbytes(png, info)};
  if (layout.row_bytes != static_cast<std::size_t>(layout.width) * channels * (layout.bit_depth / 8))
    png_error(png, "unexpected row layout");
  std::size_t pitch = layout.row_bytes;
  unsigned char* out = allocate(ctx, layout, &pitch);
  if (out == nullptr) png_error(png, "image too large for memory");
  for (int pass = 0; pass < passes; ++pass)
    for (int y = 0; y < layout.height; ++y) png_read_row(png, out + y * pitch, nullptr);
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return 0;
}

/// Where decode_png's pixels go: 8-bit samples straight into the image's
/// rows; 16-bit ones into `raw`, to become f32 afterwards. An allocation that
/// fails keeps its exception here (decode_raw only sees nullptr) so that
/// decode_png rethrows it as it is.
struct DecodeTarget {
  Memory memory = Memory::host;
  Layout layout{};
  Image image;
  std::vector<unsigned char> raw;
  std::exception_ptr failure;
};
unsigned char* allocate_target(void* ctx, const Layout& layout, std::size_t* pitch) {
  auto* t = static_cast<DecodeTarget*>(ctx);
  t->layout = layout;
  try {
    if (layout.bit_depth == 16) {
      t->raw.assign(layout.row_bytes * static_cast<std::size_t>(layout.height), 0);
      return t->raw.data();
    }
    t->image = Image(layout.width, layout.height, layout.channels, PixelType::u8, t->memory);
    // Zeroed, as the raw buffer is: an interlaced image's rows are built up
    // over several passes.
    for (int y = 0; y < layout.height; ++y) std::memset(t->image.row<unsigned char>(y), 0, layout.row_bytes);
    *pitch = static_cast<std::size_t>(t->image.pitch());
    return t->image.row<unsigned char>(0);
  } catch (...) {
    t->failure = std::current_exception();
    return nullptr;
  }
}

// ---- encoding ------------------------------------------------------------------

struct Sink {
  void* ctx;
  bool (*append)(void* ctx, const unsigned char* data, std::size_t n);
};
void write_bytes(png_structp png, png_bytep data, png_size_t n) {
  auto* s = static_cast<Sink*>(png_get_io_ptr(png));
  if (!s->append(s->ctx, data, n)) png_error(png, "out of memory");
}
void flush_bytes(png_structp) {}

/// Encodes `height` rows of `width` x `channels` u8 samples, row y at
/// rows + y * pitch. Returns 0, or 1 with `msg` set.
int encode_raw(const unsigned char* rows, std::ptrdiff_t pitch, int width, int height, int channels, Sink* sink,
               Message* msg) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, msg, on_error, on_warning);
  if (png == nullptr) {
    std::snprintf(msg->text, sizeof msg->text, "out of memory");
    return 1;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, info != nullptr ? &info : nullptr);
    return 1;
  }
  png_set_write_fn(png, sink, write_bytes, flush_bytes);
  // OpenCV's PNG settings (level 1, Z_RLE, the Sub filter alone): with the
  // same libpng and zlib its files come out byte for byte (astronaut.png
  // filtered, Debian 12), and as fast (12 ms for 512x512x3 against 17-24 ms
  // with libpng's default filter search).
  png_set_compression_level(png, Z_BEST_SPEED);
  png_set_compression_strategy(png, Z_RLE);
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
  const int color_type = channels == 1 ? PNG_COLOR_TYPE_GRAY : channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGB_ALPHA;
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, color_type,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < height; ++y) png_write_row(png, const_cast<png_bytep>(rows + y * pitch));
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return 0;
}

bool append_to_vector(void* ctx, const unsigned char* data, std::size_t n) {
  auto* v = static_cast<std::vector<unsigned char>*>(ctx);
  try {
    v->insert(v->end(), data, data + n);
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

}  // namespace

bool png_codec_available() noexcept { return true; }

Image decode_png(const unsigned char* data, std::size_t size, const std::string& what, Memory memory) {
  PIXELKIT_EXPECTS(is_host(memory), Status::invalid_argument, "decode_png: memory must be host or pinned");
  Source src{data, size, 0};
  Message msg;
  DecodeTarget target;
  target.memory = memory;
  if (decode_raw(&src, &msg, allocate_target, &target) != 0) {
    if (target.failure) std::rethrow_exception(target.failure);
    throw Error(Status::io, what + " is a corrupt PNG file (" + msg.text + ")");
  }
  const Layout& l = target.layout;
  if (l.bit_depth != 16) return std::move(target.image);
  Image img(l.width, l.height, l.channels, PixelType::f32, memory);
  for (int y = 0; y < l.height; ++y) {
    const unsigned char* in = target.raw.data() + y * l.row_bytes;
    float* out = img.row<float>(y);
    for (std::size_t i = 0; i < l.row_bytes / 2; ++i) {
      std::uint16_t v;
      std::memcpy(&v, in + 2 * i, 2);
      out[i] = static_cast<float>(v);
    }
  }
  return img;
}

std::vector<unsigned char> encode_png(const ConstImageView& image, const std::string& what) {
  PIXELKIT_EXPECTS(is_host(image.memory), Status::invalid_argument, what + ": the image must be in host memory");
  PIXELKIT_EXPECTS(image.channels == 1 || image.channels == 3 || image.channels == 4, Status::invalid_argument,
                   what + ": PNG holds 1, 3 or 4 channels, not " + std::to_string(image.channels));
  PIXELKIT_EXPECTS(!image.empty(), Status::invalid_argument, what + ": the image is empty");
  // f32: rounded to nearest (ties to even) and saturated, as OpenCV's convertTo.
  std::vector<unsigned char> narrowed;
  const unsigned char* rows = static_cast<const unsigned char*>(image.data);
  std::ptrdiff_t pitch = image.pitch;
  if (image.type == PixelType::f32) {
    const std::size_t n = static_cast<std::size_t>(image.width) * image.channels;
    narrowed.resize(n * image.height);
    for (int y = 0; y < image.height; ++y) {
      const float* in = image.row<float>(y);
      unsigned char* out = narrowed.data() + y * n;
      for (std::size_t i = 0; i < n; ++i) {
        const float v = std::nearbyint(in[i]);
        out[i] = v >= 255.0f ? 255 : v > 0.0f ? static_cast<unsigned char>(v) : 0;  // NaN -> 0
      }
    }
    rows = narrowed.data();
    pitch = static_cast<std::ptrdiff_t>(n);
  }
  std::vector<unsigned char> bytes;
  Sink sink{&bytes, append_to_vector};
  Message msg;
  if (encode_raw(rows, pitch, image.width, image.height, image.channels, &sink, &msg) != 0)
    throw Error(Status::io, what + ": cannot encode as PNG (" + msg.text + ")");
  return bytes;
}

#else  // !PIXELKIT_WITH_PNG

bool png_codec_available() noexcept { return false; }

Image decode_png(const unsigned char*, std::size_t, const std::string& what, Memory) {
  throw Error(Status::unsupported, what + ": this build has no PNG codec (neither OpenCV nor libpng was found)");
}

std::vector<unsigned char> encode_png(const ConstImageView&, const std::string& what) {
  throw Error(Status::unsupported, what + ": this build has no PNG codec (neither OpenCV nor libpng was found)");
}

#endif  // PIXELKIT_WITH_PNG

}  // namespace pixelkit::detail
