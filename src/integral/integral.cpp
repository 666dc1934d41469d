// The integral operation's one dispatch: check arguments, choose the backend,
// run it, say what ran. Also the table type, its owner, and rectangle queries.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "integral/integral_backends.hpp"
#include "pixelkit/config.hpp"

namespace pixelkit {

// ---- table types ----------------------------------------------------------------

const char* to_string(TableType type) noexcept {
  switch (type) {
    case TableType::automatic: return "auto";
    case TableType::u32: return "u32";
    case TableType::i64: return "i64";
    case TableType::u64: return "u64";
    case TableType::f32: return "f32";
    case TableType::f64: return "f64";
  }
  return "?";
}

std::size_t element_size(TableType type) noexcept {
  switch (type) {
    case TableType::u32:
    case TableType::f32: return 4;
    case TableType::i64:
    case TableType::u64:
    case TableType::f64: return 8;
    case TableType::automatic: return 0;
  }
  return 0;
}

TableType parse_table_type(const std::string& text) {
  for (TableType t : {TableType::automatic, TableType::u32, TableType::i64, TableType::u64, TableType::f32,
                      TableType::f64})
    if (text == to_string(t)) return t;
  throw Error(Status::invalid_argument, "table type '" + text + "' is not one of u32, i64, u64, f32, f64, auto");
}

template <typename T>
TableRef<T> IntegralTableView::ref() const {
  using V = typename std::remove_const<T>::type;
  PIXELKIT_EXPECTS(type == table_type_of<V>::value, Status::invalid_argument,
                   std::string("integral table: holds ") + to_string(type) + ", not " +
                       to_string(table_type_of<V>::value));
  return TableRef<T>{static_cast<T*>(data), pitch, width, height, channels};
}

#define PIXELKIT_INSTANTIATE_REF(T)                                        \
  template TableRef<T> IntegralTableView::ref<T>() const;                  \
  template TableRef<const T> IntegralTableView::ref<const T>() const;
PIXELKIT_INSTANTIATE_REF(std::uint32_t)
PIXELKIT_INSTANTIATE_REF(std::int64_t)
PIXELKIT_INSTANTIATE_REF(std::uint64_t)
PIXELKIT_INSTANTIATE_REF(float)
PIXELKIT_INSTANTIATE_REF(double)
#undef PIXELKIT_INSTANTIATE_REF

IntegralTable::IntegralTable(int image_width, int image_height, int channels, TableType type, Memory memory) {
  PIXELKIT_EXPECTS(type != TableType::automatic, Status::invalid_argument,
                   "integral table: the type must be resolved (u32, i64, u64, f32 or f64), not auto");
  check_shape(image_width, image_height, channels, PixelType::u8, "integral table's image");
  PIXELKIT_EXPECTS(image_width < (1 << 30) && image_height < (1 << 30), Status::invalid_argument,
                   "integral table: image " + std::to_string(image_width) + "x" + std::to_string(image_height) +
                       " is too large");
  const std::size_t row = static_cast<std::size_t>(image_width + 1) * channels * element_size(type);
  PIXELKIT_EXPECTS(row < (std::size_t{1} << 30), Status::invalid_argument,
                   "integral table: a row of " + std::to_string(row) + " bytes is too large");
  storage_ = Image(static_cast<int>(row), image_height + 1, 1, PixelType::u8, memory);
  view_.data = storage_.view().data;
  view_.width = image_width + 1;
  view_.height = image_height + 1;
  view_.channels = channels;
  view_.type = type;
  view_.memory = memory;
  view_.pitch = storage_.pitch();
}

bool IntegralTable::fits(int image_width, int image_height, int channels, TableType type,
                         Memory memory) const noexcept {
  return !empty() && view_.width == image_width + 1 && view_.height == image_height + 1 &&
         view_.channels == channels && view_.type == type && view_.memory == memory;
}

// ---- requests -------------------------------------------------------------------

IntegralRequest resolve_request(const IntegralRequest& request, PixelType input) {
  IntegralRequest r = request;
  PIXELKIT_EXPECTS(r.sum || r.sqsum || r.tilted, Status::invalid_argument,
                   "integral: nothing requested (ask for at least one of sum, sqsum, tilted)");
  if (input == PixelType::u8) {
    if (r.sum_type == TableType::automatic) r.sum_type = TableType::i64;
    if (r.sqsum_type == TableType::automatic) r.sqsum_type = TableType::u64;
    if (r.sum || r.tilted)
      PIXELKIT_EXPECTS(r.sum_type == TableType::u32 || r.sum_type == TableType::i64 || r.sum_type == TableType::f64,
                       Status::invalid_argument,
                       std::string("integral: a ") + to_string(r.sum_type) +
                           " sum table is not supported for u8 images (use u32, i64 or f64)");
    if (r.sqsum)
      PIXELKIT_EXPECTS(r.sqsum_type == TableType::u64 || r.sqsum_type == TableType::f64, Status::invalid_argument,
                       std::string("integral: a ") + to_string(r.sqsum_type) +
                           " squared-sum table is not supported for u8 images (use u64 or f64)");
  } else {
    if (r.sum_type == TableType::automatic) r.sum_type = TableType::f64;
    if (r.sqsum_type == TableType::automatic) r.sqsum_type = TableType::f64;
    if (r.sum || r.tilted)
      PIXELKIT_EXPECTS(r.sum_type == TableType::f64 || r.sum_type == TableType::f32, Status::invalid_argument,
                       std::string("integral: a ") + to_string(r.sum_type) +
                           " sum table is not supported for f32 images (use f64 or f32)");
    if (r.sqsum)
      PIXELKIT_EXPECTS(r.sqsum_type == TableType::f64 || r.sqsum_type == TableType::f32, Status::invalid_argument,
                       std::string("integral: a ") + to_string(r.sqsum_type) +
                           " squared-sum table is not supported for f32 images (use f64 or f32)");
  }
  return r;
}

// ---- the operator ---------------------------------------------------------------

struct Integral::State {
  std::unique_ptr<detail::CudaIntegral> cuda;  // created on the first cuda call
};

namespace {

void check_source(const ConstImageView& src) {
  PIXELKIT_EXPECTS(!src.empty() && src.data != nullptr, Status::invalid_argument, "integral: source image is empty");
  PIXELKIT_EXPECTS(src.channels == 1 || src.channels == 3 || src.channels == 4, Status::invalid_argument,
                   "integral: " + std::to_string(src.channels) + " channels (1, 3 or 4 supported)");
  PIXELKIT_EXPECTS(src.width < (1 << 30) && src.height < (1 << 30), Status::invalid_argument,
                   "integral: source " + describe(src) + " is too large");
}

void check_table(const char* name, const IntegralTableView& t, const ConstImageView& src, TableType type) {
  const std::string what = std::string("integral: the ") + name + " table";
  PIXELKIT_EXPECTS(t.width == src.width + 1 && t.height == src.height + 1 && t.channels == src.channels,
                   Status::invalid_argument,
                   what + " is " + std::to_string(t.height) + "x" + std::to_string(t.width) + "x" +
                       std::to_string(t.channels) + " but a " + describe(src) + " image needs " +
                       std::to_string(src.height + 1) + "x" + std::to_string(src.width + 1) + "x" +
                       std::to_string(src.channels));
  PIXELKIT_EXPECTS(t.type == type, Status::invalid_argument,
                   what + " holds " + to_string(t.type) + " but " + to_string(type) + " was requested");
  PIXELKIT_EXPECTS(t.pitch >= static_cast<std::ptrdiff_t>(t.row_bytes()), Status::invalid_argument,
                   what + "'s pitch " + std::to_string(t.pitch) + " is smaller than a row");
  PIXELKIT_EXPECTS(is_host(t.memory) == is_host(src.memory), Status::invalid_argument,
                   what + " is in " + to_string(t.memory) + " memory but the source in " + to_string(src.memory) +
                       " memory");
}

bool overlaps(const IntegralTableView& t, const ConstImageView& src) {
  if (t.empty() || is_host(t.memory) != is_host(src.memory)) return false;
  const auto* a0 = static_cast<const unsigned char*>(t.data);
  const auto* a1 = a0 + (t.height - 1) * t.pitch + t.row_bytes();
  const auto* b0 = static_cast<const unsigned char*>(src.data);
  const auto* b1 = b0 + (src.height - 1) * src.pitch + src.row_bytes();
  return a0 < b1 && b0 < a1;
}

bool overlaps(const IntegralTableView& a, const IntegralTableView& b) {
  if (a.empty() || b.empty() || is_host(a.memory) != is_host(b.memory)) return false;
  const auto* a0 = static_cast<const unsigned char*>(a.data);
  const auto* a1 = a0 + (a.height - 1) * a.pitch + a.row_bytes();
  const auto* b0 = static_cast<const unsigned char*>(b.data);
  const auto* b1 = b0 + (b.height - 1) * b.pitch + b.row_bytes();
  return a0 < b1 && b0 < a1;
}

void ensure(IntegralTable& t, bool wanted, const ConstImageView& src, TableType type) {
  if (!wanted) {
    t = IntegralTable();
    return;
  }
  const Memory side = src.memory == Memory::device ? Memory::device : Memory::host;
  if (!t.empty() && t.memory() == Memory::pinned && side == Memory::host &&
      t.fits(src.width, src.height, src.channels, type, Memory::pinned))
    return;
  if (t.fits(src.width, src.height, src.channels, type, side)) return;
  t = IntegralTable();  // free first: tables can be large
  t = IntegralTable(src.width, src.height, src.channels, type, side);
}

}  // namespace

Integral::Integral(const IntegralRequest& request) : request_(request), state_(std::make_unique<State>()) {
  PIXELKIT_EXPECTS(request.sum || request.sqsum || request.tilted, Status::invalid_argument,
                   "integral: nothing requested (ask for at least one of sum, sqsum, tilted)");
}
Integral::~Integral() = default;
Integral::Integral(Integral&&) noexcept = default;
Integral& Integral::operator=(Integral&&) noexcept = default;

void Integral::operator()(const ConstImageView& src, IntegralTables& out, const Options& options) {
  PIXELKIT_EXPECTS(state_ != nullptr, Status::invalid_argument, "integral: use of a moved-from Integral");
  check_source(src);
  const IntegralRequest r = resolve_request(request_, src.type);
  // Resolve (and so check) the backend before allocating anything.
  resolve_backend(options.backend, src.memory);
  ensure(out.sum, r.sum, src, r.sum_type);
  ensure(out.sqsum, r.sqsum, src, r.sqsum_type);
  ensure(out.tilted, r.tilted, src, r.sum_type);
  (*this)(src, IntegralViews{out.sum.view(), out.sqsum.view(), out.tilted.view()}, options);
}

void Integral::operator()(const ConstImageView& src, const IntegralViews& out, const Options& options) {
  PIXELKIT_EXPECTS(state_ != nullptr, Status::invalid_argument, "integral: use of a moved-from Integral");
  check_source(src);
  const IntegralRequest r = resolve_request(request_, src.type);
  PIXELKIT_EXPECTS(!r.sum || !out.sum.empty(), Status::invalid_argument, "integral: the sum table was requested but not given");
  PIXELKIT_EXPECTS(!r.sqsum || !out.sqsum.empty(), Status::invalid_argument,
                   "integral: the squared-sum table was requested but not given");
  PIXELKIT_EXPECTS(!r.tilted || !out.tilted.empty(), Status::invalid_argument,
                   "integral: the tilted table was requested but not given");
  IntegralViews v;
  if (r.sum) { check_table("sum", out.sum, src, r.sum_type); v.sum = out.sum; }
  if (r.sqsum) { check_table("squared-sum", out.sqsum, src, r.sqsum_type); v.sqsum = out.sqsum; }
  if (r.tilted) { check_table("tilted", out.tilted, src, r.sum_type); v.tilted = out.tilted; }
  for (const IntegralTableView* t : {&v.sum, &v.sqsum, &v.tilted})
    PIXELKIT_EXPECTS(!overlaps(*t, src), Status::invalid_argument, "integral: a table overlaps the source image");
  PIXELKIT_EXPECTS(!overlaps(v.sum, v.sqsum) && !overlaps(v.sum, v.tilted) && !overlaps(v.sqsum, v.tilted),
                   Status::invalid_argument, "integral: two tables overlap");

  const Backend backend = resolve_backend(options.backend, src.memory);
  std::string path;
  switch (backend) {
    case Backend::ref:
      detail::integral_ref(src, v);
      path = "ref scalar loops, exact/f64 accumulation";
      break;
    case Backend::cpu:
      path = detail::integral_cpu(src, v, resolve_threads(options.threads));
      break;
    case Backend::cuda:
#if PIXELKIT_WITH_CUDA
      if (!state_->cuda) state_->cuda = detail::make_cuda_integral();
      path = src.memory == Memory::device ? state_->cuda->run_device(src, v, options.stream)
                                          : state_->cuda->run_host(src, v, options.stream);
      break;
#else
      throw Error(Status::unsupported, "backend cuda: this build of pixelkit has no CUDA backend");
#endif
    case Backend::automatic:
      throw Error(Status::internal, "integral: backend was not resolved");
  }
  if (options.info) {
    options.info->backend = backend;
    options.info->path = std::move(path);
  }
}

void Integral::reserve(int width, int height, int channels, PixelType type) {
#if PIXELKIT_WITH_CUDA
  if (!cuda_available()) return;
  check_shape(width, height, channels, type, "integral reserve");
  if (!state_->cuda) state_->cuda = detail::make_cuda_integral();
  state_->cuda->reserve(width, height, channels, type, resolve_request(request_, type));
#else
  (void)width, (void)height, (void)channels, (void)type;
#endif
}

void integral(const ConstImageView& src, IntegralTables& out, const IntegralRequest& request,
              const Options& options) {
  Integral op(request);
  op(src, out, options);
}

// ---- rectangle queries ------------------------------------------------------------

namespace {

void check_rect(const IntegralTableView& t, const Rect& r, int channel, std::size_t index, bool many) {
  PIXELKIT_EXPECTS(!t.empty(), Status::invalid_argument, "rect_sum: the table is empty");
  PIXELKIT_EXPECTS(channel >= 0 && channel < t.channels, Status::invalid_argument,
                   "rect_sum: channel " + std::to_string(channel) + " of a " + std::to_string(t.channels) +
                       "-channel table");
  const long long W = t.width - 1, H = t.height - 1;
  PIXELKIT_EXPECTS(r.x >= 0 && r.y >= 0 && r.width >= 0 && r.height >= 0 &&
                       static_cast<long long>(r.x) + r.width <= W && static_cast<long long>(r.y) + r.height <= H,
                   Status::invalid_argument,
                   std::string("rect_sum: rectangle ") + (many ? std::to_string(index) + " " : "") + "(" +
                       std::to_string(r.x) + "," + std::to_string(r.y) + ") " + std::to_string(r.width) + "x" +
                       std::to_string(r.height) + " does not lie inside the " + std::to_string(W) + "x" +
                       std::to_string(H) + " image");
}

}  // namespace

template <typename T>
T rect_sum(const IntegralTableView& table, const Rect& r, int channel) {
  check_rect(table, r, channel, 0, false);
  PIXELKIT_EXPECTS(is_host(table.memory), Status::invalid_argument,
                   "rect_sum: the table is in device memory (use rect_sums, or TableRef::rect_sum in a kernel)");
  return table.ref<const T>().rect_sum(r.x, r.y, r.width, r.height, channel);
}

double rect_sum(const IntegralTableView& table, const Rect& r, int channel) {
  switch (table.type) {
    case TableType::u32: return static_cast<double>(rect_sum<std::uint32_t>(table, r, channel));
    case TableType::i64: return static_cast<double>(rect_sum<std::int64_t>(table, r, channel));
    case TableType::u64: return static_cast<double>(rect_sum<std::uint64_t>(table, r, channel));
    case TableType::f32: return static_cast<double>(rect_sum<float>(table, r, channel));
    case TableType::f64: return rect_sum<double>(table, r, channel);
    case TableType::automatic: break;
  }
  throw Error(Status::invalid_argument, "rect_sum: the table has no resolved type");
}

template <typename T>
std::vector<T> rect_sums(const IntegralTableView& table, const std::vector<Rect>& rects, int channel,
                         const Options& options) {
  for (std::size_t i = 0; i < rects.size(); ++i) check_rect(table, rects[i], channel, i, true);
  const TableRef<const T> ref = table.ref<const T>();  // checks T
  std::vector<T> out(rects.size());
  if (rects.empty()) return out;
  if (is_host(table.memory)) {
    for (std::size_t i = 0; i < rects.size(); ++i)
      out[i] = ref.rect_sum(rects[i].x, rects[i].y, rects[i].width, rects[i].height, channel);
    return out;
  }
#if PIXELKIT_WITH_CUDA
  detail::rect_sums_cuda<T>(table, rects.data(), rects.size(), channel, out.data(), options.stream);
  return out;
#else
  (void)options;
  throw Error(Status::unsupported, "rect_sums: a device table needs the CUDA backend, which this build lacks");
#endif
}

#define PIXELKIT_INSTANTIATE_RECT(T)                                                                   \
  template T rect_sum<T>(const IntegralTableView&, const Rect&, int);                                 \
  template std::vector<T> rect_sums<T>(const IntegralTableView&, const std::vector<Rect>&, int,       \
                                       const Options&);
PIXELKIT_INSTANTIATE_RECT(std::uint32_t)
PIXELKIT_INSTANTIATE_RECT(std::int64_t)
PIXELKIT_INSTANTIATE_RECT(std::uint64_t)
PIXELKIT_INSTANTIATE_RECT(float)
PIXELKIT_INSTANTIATE_RECT(double)
#undef PIXELKIT_INSTANTIATE_RECT

}  // namespace pixelkit
