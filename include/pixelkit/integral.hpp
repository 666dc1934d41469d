// pixelkit/integral.hpp - integral images (summed-area tables), seeds 001 and 003.
//
// Tables follow OpenCV's cv::integral: for an image of W x H pixels and C
// channels a table holds (H+1) x (W+1) entries per channel, interleaved like
// the image, with a leading row and column of zeros:
//
//   sum(X, Y)    = sum of I(x, y)   over x < X, y < Y
//   sqsum(X, Y)  = sum of I(x, y)^2 over x < X, y < Y
//   tilted(X, Y) = sum of I(x, y)   over y < Y, |x - X + 1| <= Y - y - 1
//
// (the tilted table sums the 45-degree cone of pixels above and including
// pixel (X-1, Y-1), clipped to the image). The sum of the w x h rectangle of
// pixels whose top-left pixel is (x, y) is then four reads with no edge cases:
//   S(x+w, y+h) - S(x+w, y) - S(x, y+h) + S(x, y).
//
// Types (TableType):
//   u8 input:  sum and tilted u32, i64 (default) or f64; sqsum u64 (default) or f64.
//   f32 input: every table f64 (default) or f32.
// Integer tables are exact at every size: i64 and u64 cannot overflow for any
// image that fits in memory. u32 wraps modulo 2^32, and by modular arithmetic
// any rectangle whose true sum is below 2^32 still comes out exact from the
// four reads (rect_sum does the arithmetic in u32). f64 tables of u8 images are
// exact integers. f32 tables are computed in f64 and rounded once per entry.
// Any other combination throws Status::invalid_argument.
//
// Images: u8 or f32, 1, 3 or 4 interleaved channels, any view including
// sub-image views whose pitch exceeds their width.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "pixelkit/backend.hpp"
#include "pixelkit/border.hpp"  // PIXELKIT_HD
#include "pixelkit/image.hpp"

namespace pixelkit {

/// Element type of an integral table. `automatic` means "the default for the
/// input type" (see the file comment) and is resolved by the operation.
enum class TableType : std::uint8_t { automatic, u32, i64, u64, f32, f64 };

/// "auto", "u32", "i64", "u64", "f32", "f64".
const char* to_string(TableType type) noexcept;
/// Bytes per element (0 for automatic).
std::size_t element_size(TableType type) noexcept;
/// Parses the names above; throws invalid_argument naming the text otherwise.
TableType parse_table_type(const std::string& text);

template <typename T> struct table_type_of;
template <> struct table_type_of<std::uint32_t> { static constexpr TableType value = TableType::u32; };
template <> struct table_type_of<std::int64_t> { static constexpr TableType value = TableType::i64; };
template <> struct table_type_of<std::uint64_t> { static constexpr TableType value = TableType::u64; };
template <> struct table_type_of<float> { static constexpr TableType value = TableType::f32; };
template <> struct table_type_of<double> { static constexpr TableType value = TableType::f64; };

/// A typed, trivially copyable reference to a table: what kernels and inner
/// loops take by value (T may be const). `width` and `height` count table
/// entries, i.e. image width + 1 and image height + 1.
template <typename T>
struct TableRef {
  T* data;
  std::ptrdiff_t pitch;  ///< bytes between rows
  int width;             ///< W + 1
  int height;            ///< H + 1
  int channels;

  using value_type = typename std::remove_const<T>::type;

  PIXELKIT_HD T* row(int y) const {
    using Byte = typename std::conditional<std::is_const<T>::value, const unsigned char, unsigned char>::type;
    return reinterpret_cast<T*>(reinterpret_cast<Byte*>(data) + static_cast<std::ptrdiff_t>(y) * pitch);
  }
  PIXELKIT_HD T& at(int y, int x, int c) const { return row(y)[static_cast<std::ptrdiff_t>(x) * channels + c]; }

  /// Sum over the w x h pixels whose top-left pixel is (x, y), channel c: four
  /// reads, no bounds checks (0 <= x, x + w <= width - 1, same for y). In the
  /// table's own type, so u32 tables give the exact sum modulo 2^32.
  PIXELKIT_HD value_type rect_sum(int x, int y, int w, int h, int c = 0) const {
    const value_type a = at(y, x, c), b = at(y, x + w, c), d = at(y + h, x, c), e = at(y + h, x + w, c);
    return static_cast<value_type>(static_cast<value_type>(e - b) - static_cast<value_type>(d - a));
  }
};

/// A non-owning, untyped view of one table (host, pinned or device memory).
struct IntegralTableView {
  void* data = nullptr;
  int width = 0;   ///< table entries per row: image width + 1
  int height = 0;  ///< table rows: image height + 1
  int channels = 0;
  TableType type = TableType::i64;
  Memory memory = Memory::host;
  std::ptrdiff_t pitch = 0;  ///< bytes between the starts of consecutive rows

  bool empty() const noexcept { return data == nullptr || width <= 0 || height <= 0; }
  std::size_t row_bytes() const noexcept {
    return static_cast<std::size_t>(width) * channels * element_size(type);
  }
  /// The typed reference; throws invalid_argument if T is not this table's type.
  template <typename T> TableRef<T> ref() const;
};

/// An owning table. Move-only; rows are padded like Image rows. Created by
/// the operation (or by the caller, to compute into preallocated memory).
class IntegralTable {
 public:
  IntegralTable() = default;
  /// A table for an image of `image_width` x `image_height` pixels: the table
  /// itself is (image_height + 1) x (image_width + 1) x channels. Contents are
  /// uninitialised. Throws like Image's constructor.
  IntegralTable(int image_width, int image_height, int channels, TableType type, Memory memory = Memory::host);

  IntegralTableView view() const noexcept { return view_; }
  operator IntegralTableView() const noexcept { return view_; }  // NOLINT
  bool empty() const noexcept { return view_.empty(); }
  int width() const noexcept { return view_.width; }
  int height() const noexcept { return view_.height; }
  int channels() const noexcept { return view_.channels; }
  TableType type() const noexcept { return view_.type; }
  Memory memory() const noexcept { return view_.memory; }
  template <typename T> TableRef<T> ref() const { return view_.ref<T>(); }

  /// True when this table already has exactly this shape, type and memory.
  bool fits(int image_width, int image_height, int channels, TableType type, Memory memory) const noexcept;

 private:
  Image storage_;  // u8 rows of row_bytes() bytes: reuses Image's host/pinned/device allocation
  IntegralTableView view_{};
};

/// What to compute. The tilted table has the sum's type.
struct IntegralRequest {
  bool sum = true;
  bool sqsum = false;
  bool tilted = false;
  TableType sum_type = TableType::automatic;    ///< sum and tilted
  TableType sqsum_type = TableType::automatic;  ///< squared sum
};

/// Resolves `automatic` types for `input` and checks the combination. Throws
/// invalid_argument with a message naming the combination and what is
/// supported instead, or if nothing is requested.
IntegralRequest resolve_request(const IntegralRequest& request, PixelType input);

/// The result of one call: only the requested tables are non-empty.
struct IntegralTables {
  IntegralTable sum;
  IntegralTable sqsum;
  IntegralTable tilted;
};

/// Caller-provided destinations: a table with data == nullptr is not computed.
struct IntegralViews {
  IntegralTableView sum;
  IntegralTableView sqsum;
  IntegralTableView tilted;
};

/// A reusable integral operator, for video: device scratch grows to the largest
/// image seen and output tables are reused when their shape, type and memory
/// match, so frame after frame allocates nothing.
///
/// On cuda, device-resident images are processed asynchronously on
/// options.stream (tables in device memory; call synchronize(stream) before
/// reading them on the host). Host images are uploaded, processed and the
/// tables downloaded; the call returns when the tables are complete.
/// Host backends (ref, cpu) are synchronous.
class Integral {
 public:
  explicit Integral(const IntegralRequest& request = {});
  ~Integral();
  Integral(Integral&&) noexcept;
  Integral& operator=(Integral&&) noexcept;

  /// Computes the requested tables of src into `out`, (re)allocating a table
  /// only when it does not fit: in device memory for a device image, else in
  /// pageable host memory (a host-side table already allocated pinned is kept).
  /// Tables not requested are released.
  void operator()(const ConstImageView& src, IntegralTables& out, const Options& options = {});
  /// Computes into caller views, which must have the shape (H+1) x (W+1) x C,
  /// the resolved types, and memory on src's side (host or device).
  void operator()(const ConstImageView& src, const IntegralViews& out, const Options& options = {});

  /// Makes the cuda backend's device scratch large enough for images up to
  /// width x height x channels of `type` (no-op elsewhere / without CUDA).
  void reserve(int width, int height, int channels, PixelType type);

  /// The request with its types resolved for `input`.
  IntegralRequest resolved(PixelType input) const { return resolve_request(request_, input); }
  const IntegralRequest& request() const noexcept { return request_; }

 private:
  struct State;
  IntegralRequest request_;
  std::unique_ptr<State> state_;
};

/// One-shot convenience: Integral(request)(src, out, options).
void integral(const ConstImageView& src, IntegralTables& out, const IntegralRequest& request = {},
              const Options& options = {});

// ---- rectangle queries ---------------------------------------------------------

/// A rectangle of pixels: top-left (x, y), w x h (w, h >= 0).
struct Rect {
  int x = 0, y = 0, width = 0, height = 0;
};

/// The sum of one rectangle of channel `channel` from a host-side table, in
/// the table's type T (which must match: u32 gives the sum modulo 2^32).
/// Throws invalid_argument for a rectangle outside the image, a wrong T or
/// channel, and a device-memory table.
template <typename T>
T rect_sum(const IntegralTableView& table, const Rect& r, int channel = 0);
/// The same converted to double (exact below 2^53).
double rect_sum(const IntegralTableView& table, const Rect& r, int channel = 0);

/// Many rectangles at once, on the table's side: host tables are read on the
/// host, device tables by a kernel on options.stream (the call blocks until the
/// results are on the host). T must be the table's type. Checks every
/// rectangle first; throws invalid_argument naming the first bad one.
template <typename T>
std::vector<T> rect_sums(const IntegralTableView& table, const std::vector<Rect>& rects, int channel = 0,
                         const Options& options = {});

}  // namespace pixelkit
