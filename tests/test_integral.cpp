// The integral: ref against the definitions (sum, squared sum, the 45-degree
// tilted cone) and against OpenCV's cv::integral; every backend against ref
// (exact for integer tables, 1e-12 relative for f64) on odd sizes, 1/3/4
// channels, every type combination, sub-image views, device-resident images;
// the 8192x8192 overflow case; rectangle queries; the box filter through the
// table; bad input; the CLI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "integral/integral_backends.hpp"
#include "integral/integral_cpu_hooks.hpp"
#include "pixelkit/config.hpp"
#include "pixelkit/filter.hpp"
#include "pixelkit/integral.hpp"
#include "pixelkit/io.hpp"
#include "test_support.hpp"

#if PIXELKIT_WITH_CUDA
#include <cuda_runtime.h>
#endif

#if PIXELKIT_TEST_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace pixelkit::test {
namespace {

// ---- helpers ----------------------------------------------------------------------

std::string label(const ConstImageView& s) {
  return std::to_string(s.width) + "x" + std::to_string(s.height) + "x" + std::to_string(s.channels) + " " +
         to_string(s.type);
}

IntegralRequest request(bool sum, bool sq, bool tilted, TableType st = TableType::automatic,
                        TableType qt = TableType::automatic) {
  IntegralRequest r;
  r.sum = sum;
  r.sqsum = sq;
  r.tilted = tilted;
  r.sum_type = st;
  r.sqsum_type = qt;
  return r;
}

// A host copy of any table (device tables are downloaded).
IntegralTable to_host(const IntegralTableView& t) {
  IntegralTable h(t.width - 1, t.height - 1, t.channels, t.type, Memory::host);
  const ImageView dst = make_view(h.view().data, static_cast<int>(t.row_bytes()), t.height, 1, PixelType::u8,
                                  Memory::host, h.view().pitch);
  ConstImageView src = make_view(t.data, static_cast<int>(t.row_bytes()), t.height, 1, PixelType::u8, t.memory, t.pitch);
  copy(src, dst, nullptr);
  synchronize(nullptr);
  return h;
}

void poison(const IntegralTableView& t) {
  std::vector<unsigned char> bytes(t.row_bytes(), 0xA5);
  for (int y = 0; y < t.height; ++y) {
    if (t.memory == Memory::device) {
      const ConstImageView src = make_view(bytes.data(), static_cast<int>(t.row_bytes()), 1, 1, PixelType::u8);
      const ImageView dst = make_view(static_cast<unsigned char*>(t.data) + y * t.pitch, static_cast<int>(t.row_bytes()),
                                      1, 1, PixelType::u8, Memory::device);
      copy(src, dst, nullptr);
    } else {
      std::memcpy(static_cast<unsigned char*>(t.data) + y * t.pitch, bytes.data(), bytes.size());
    }
  }
  if (t.memory == Memory::device) synchronize(nullptr);
}

double value_at(const IntegralTableView& t, int y, int x, int c) {
  const std::size_t i = static_cast<std::size_t>(x) * t.channels + c;
  const auto* row = static_cast<const unsigned char*>(t.data) + static_cast<std::ptrdiff_t>(y) * t.pitch;
  switch (t.type) {
    case TableType::u32: return reinterpret_cast<const std::uint32_t*>(row)[i];
    case TableType::i64: return static_cast<double>(reinterpret_cast<const std::int64_t*>(row)[i]);
    case TableType::u64: return static_cast<double>(reinterpret_cast<const std::uint64_t*>(row)[i]);
    case TableType::f32: return reinterpret_cast<const float*>(row)[i];
    case TableType::f64: return reinterpret_cast<const double*>(row)[i];
    default: return NAN;
  }
}

/// Integer tables: bit-exact. f64: within 1e-12 of the largest |entry|; f32:
/// within 1e-6 of it (both are computed in f64 and rounded once).
::testing::AssertionResult tables_agree(const IntegralTableView& got_any, const IntegralTableView& want_any,
                                        double rel64 = 1e-12, double rel32 = 1e-6) {
  const IntegralTable got_h = got_any.memory == Memory::device ? to_host(got_any) : IntegralTable();
  const IntegralTable want_h = want_any.memory == Memory::device ? to_host(want_any) : IntegralTable();
  const IntegralTableView got = got_any.memory == Memory::device ? got_h.view() : got_any;
  const IntegralTableView want = want_any.memory == Memory::device ? want_h.view() : want_any;
  if (got.width != want.width || got.height != want.height || got.channels != want.channels || got.type != want.type)
    return ::testing::AssertionFailure() << "shape/type differ: " << got.height << "x" << got.width << "x"
                                         << got.channels << " " << to_string(got.type) << " vs " << want.height << "x"
                                         << want.width << "x" << want.channels << " " << to_string(want.type);
  const bool exact = got.type == TableType::u32 || got.type == TableType::i64 || got.type == TableType::u64;
  if (exact) {
    for (int y = 0; y < got.height; ++y) {
      const auto* a = static_cast<const unsigned char*>(got.data) + y * got.pitch;
      const auto* b = static_cast<const unsigned char*>(want.data) + y * want.pitch;
      if (std::memcmp(a, b, got.row_bytes()) != 0) {
        for (int x = 0; x < got.width; ++x)
          for (int c = 0; c < got.channels; ++c)
            if (value_at(got, y, x, c) != value_at(want, y, x, c))
              return ::testing::AssertionFailure()
                     << to_string(got.type) << " entry (X=" << x << ", Y=" << y << ", c=" << c << ") is "
                     << value_at(got, y, x, c) << ", want " << value_at(want, y, x, c);
        return ::testing::AssertionFailure() << "row " << y << " differs in bits";
      }
    }
    return ::testing::AssertionSuccess();
  }
  double max_ref = 0, max_err = 0;
  int ex = -1, ey = -1, ec = -1;
  for (int y = 0; y < got.height; ++y)
    for (int x = 0; x < got.width; ++x)
      for (int c = 0; c < got.channels; ++c) {
        const double a = value_at(got, y, x, c), b = value_at(want, y, x, c);
        max_ref = std::max(max_ref, std::fabs(b));
        const double e = std::fabs(a - b);
        if (!(e <= max_err)) {  // also catches NaN
          max_err = std::isnan(e) ? INFINITY : e;
          ex = x, ey = y, ec = c;
        }
      }
  const double tol = (got.type == TableType::f64 ? rel64 : rel32) * std::max(max_ref, 1.0);
  if (max_err <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << to_string(got.type) << " max |diff| " << max_err << " > " << tol
                                       << " at (X=" << ex << ", Y=" << ey << ", c=" << ec << ")";
}

IntegralTables run(Backend backend, const ConstImageView& src, const IntegralRequest& req) {
  IntegralTables out;
  const IntegralRequest r = resolve_request(req, src.type);
  Integral op(req);
  // Preallocate and poison so that an entry the backend forgets shows up.
  const Memory mem = src.memory == Memory::device ? Memory::device : Memory::host;
  if (r.sum) { out.sum = IntegralTable(src.width, src.height, src.channels, r.sum_type, mem); poison(out.sum); }
  if (r.sqsum) { out.sqsum = IntegralTable(src.width, src.height, src.channels, r.sqsum_type, mem); poison(out.sqsum); }
  if (r.tilted) { out.tilted = IntegralTable(src.width, src.height, src.channels, r.sum_type, mem); poison(out.tilted); }
  Options o;
  o.backend = backend;
  op(src, out, o);
  if (backend == Backend::cuda || src.memory == Memory::device) synchronize(nullptr);
  return out;
}

// The definitions, directly (tiny images only).
double def_sum(const ConstImageView& s, int X, int Y, int c, bool square) {
  double acc = 0;
  for (int y = 0; y < Y; ++y)
    for (int x = 0; x < X; ++x) {
      const double v = s.type == PixelType::u8 ? s.row<std::uint8_t>(y)[x * s.channels + c] : s.row<float>(y)[x * s.channels + c];
      acc += square ? v * v : v;
    }
  return acc;
}
double def_tilted(const ConstImageView& s, int X, int Y, int c) {
  double acc = 0;
  for (int y = 0; y < Y; ++y)
    for (int x = 0; x < s.width; ++x)
      if (std::abs(x - X + 1) <= Y - y - 1)
        acc += s.type == PixelType::u8 ? s.row<std::uint8_t>(y)[x * s.channels + c] : s.row<float>(y)[x * s.channels + c];
  return acc;
}

struct Shape {
  int w, h;
};
const std::vector<Shape>& odd_shapes() {
  static const std::vector<Shape> s = {{1, 1}, {1, 4097}, {4097, 1}, {31, 33}, {1000, 999}};
  return s;
}

// ---- types and requests -------------------------------------------------------------

TEST(IntegralTypes, NamesAndDefaults) {
  for (TableType t : {TableType::u32, TableType::i64, TableType::u64, TableType::f32, TableType::f64})
    EXPECT_EQ(parse_table_type(to_string(t)), t);
  EXPECT_EQ(parse_table_type("auto"), TableType::automatic);
  EXPECT_EQ(element_size(TableType::u32), 4u);
  EXPECT_EQ(element_size(TableType::i64), 8u);
  const IntegralRequest u8 = resolve_request(request(true, true, true), PixelType::u8);
  EXPECT_EQ(u8.sum_type, TableType::i64);
  EXPECT_EQ(u8.sqsum_type, TableType::u64);
  const IntegralRequest f = resolve_request(request(true, true, false), PixelType::f32);
  EXPECT_EQ(f.sum_type, TableType::f64);
  EXPECT_EQ(f.sqsum_type, TableType::f64);
}

template <typename F>
void expect_error(F&& f, Status status, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error (expected '" << fragment << "')";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << "message '" << e.what() << "' lacks '" << fragment << "'";
  }
}

TEST(IntegralErrors, UnsupportedTypeCombinations) {
  expect_error([] { parse_table_type("i32"); }, Status::invalid_argument, "table type 'i32'");
  expect_error([] { resolve_request(request(true, false, false, TableType::u32), PixelType::f32); },
               Status::invalid_argument, "u32 sum table is not supported for f32 images (use f64 or f32)");
  expect_error([] { resolve_request(request(true, false, false, TableType::i64), PixelType::f32); },
               Status::invalid_argument, "i64 sum table is not supported for f32 images");
  expect_error([] { resolve_request(request(true, false, false, TableType::u64), PixelType::u8); },
               Status::invalid_argument, "u64 sum table is not supported for u8 images (use u32, i64 or f64)");
  expect_error([] { resolve_request(request(true, false, false, TableType::f32), PixelType::u8); },
               Status::invalid_argument, "f32 sum table is not supported for u8 images");
  expect_error([] { resolve_request(request(false, true, false, TableType::automatic, TableType::i64), PixelType::u8); },
               Status::invalid_argument, "i64 squared-sum table is not supported for u8 images (use u64 or f64)");
  expect_error([] { resolve_request(request(false, true, false, TableType::automatic, TableType::u32), PixelType::u8); },
               Status::invalid_argument, "u32 squared-sum");
  expect_error([] { resolve_request(request(false, true, false, TableType::automatic, TableType::u64), PixelType::f32); },
               Status::invalid_argument, "u64 squared-sum table is not supported for f32 images");
  expect_error([] { resolve_request(request(false, false, false), PixelType::u8); }, Status::invalid_argument,
               "nothing requested");
  expect_error([] { Integral op(request(false, false, false)); }, Status::invalid_argument, "nothing requested");
  // The tilted table has the sum's type, so it is checked even without the sum.
  expect_error([] { resolve_request(request(false, false, true, TableType::u64), PixelType::u8); },
               Status::invalid_argument, "u64 sum table");
  // And through the operation, before anything is allocated.
  const Image f = random_image(8, 8, 1, PixelType::f32, 1);
  IntegralTables out;
  expect_error([&] { integral(f, out, request(true, false, false, TableType::u32)); }, Status::invalid_argument,
               "u32 sum table is not supported for f32 images");
  EXPECT_TRUE(out.sum.empty());
}

TEST(IntegralErrors, BadImagesAndTables) {
  IntegralTables out;
  Image two(4, 4, 2, PixelType::u8);
  expect_error([&] { integral(two, out); }, Status::invalid_argument, "2 channels");
  expect_error([&] { integral(ConstImageView{}, out); }, Status::invalid_argument, "source image is empty");
  const Image a = random_image(10, 7, 3, PixelType::u8, 2);
  Integral op;
  IntegralTable wrong_shape(10, 8, 3, TableType::i64), wrong_type(10, 7, 3, TableType::f64), ok(10, 7, 3, TableType::i64);
  expect_error([&] { op(a, IntegralViews{wrong_shape.view(), {}, {}}); }, Status::invalid_argument,
               "needs 8x11x3");
  expect_error([&] { op(a, IntegralViews{wrong_type.view(), {}, {}}); }, Status::invalid_argument,
               "holds f64 but i64 was requested");
  expect_error([&] { op(a, IntegralViews{}); }, Status::invalid_argument, "sum table was requested but not given");
  Integral both(request(true, true, false));
  expect_error([&] { both(a, IntegralViews{ok.view(), ok.view(), {}}); }, Status::invalid_argument, "holds i64 but u64");
  IntegralTable sq(10, 7, 3, TableType::u64);
  IntegralTableView alias = sq.view();
  alias.type = TableType::i64;  // the same memory as the squared sum, typed to pass the type check
  expect_error([&] { both(a, IntegralViews{alias, sq.view(), {}}); }, Status::invalid_argument, "two tables overlap");
  expect_error([] { IntegralTable t(4, 4, 1, TableType::automatic); }, Status::invalid_argument, "must be resolved");
  if (!built_with_cuda()) {
    Options o;
    o.backend = Backend::cuda;
    expect_error([&] { integral(a, out, {}, o); }, Status::unsupported, "no CUDA backend");
  }
}

TEST(IntegralErrors, DeviceImageOnAHostBackend) {
  PIXELKIT_REQUIRE_GPU();
  Image d = clone(random_image(8, 8, 1, PixelType::u8, 3).cview(), Memory::device);
  IntegralTables out;
  Options o;
  o.backend = Backend::cpu;
  expect_error([&] { integral(d, out, {}, o); }, Status::invalid_argument, "device memory");
  EXPECT_TRUE(out.sum.empty());
}

// ---- ref against the definitions -------------------------------------------------------

TEST(IntegralRef, MatchesTheDefinitionsOnTinyImages) {
  std::uint32_t seed = 10;
  for (Shape s : {Shape{1, 1}, Shape{1, 6}, Shape{6, 1}, Shape{2, 2}, Shape{7, 6}, Shape{13, 9}, Shape{5, 17}})
    for (int c : {1, 3, 4})
      for (PixelType t : {PixelType::u8, PixelType::f32}) {
        const Image src = random_image(s.w, s.h, c, t, ++seed);
        const IntegralTables r = run(Backend::ref, src, request(true, true, true, TableType::f64, TableType::f64));
        for (int Y = 0; Y <= s.h; ++Y)
          for (int X = 0; X <= s.w; ++X)
            for (int ch = 0; ch < c; ++ch) {
              const double tol = t == PixelType::u8 ? 0 : 1e-9 * (1 + std::fabs(def_sum(src, X, Y, ch, true)));
              ASSERT_NEAR(value_at(r.sum.view(), Y, X, ch), def_sum(src, X, Y, ch, false), tol)
                  << "sum " << label(src) << " X=" << X << " Y=" << Y;
              ASSERT_NEAR(value_at(r.sqsum.view(), Y, X, ch), def_sum(src, X, Y, ch, true), tol)
                  << "sqsum " << label(src) << " X=" << X << " Y=" << Y;
              ASSERT_NEAR(value_at(r.tilted.view(), Y, X, ch), def_tilted(src, X, Y, ch), tol)
                  << "tilted " << label(src) << " X=" << X << " Y=" << Y;
            }
      }
}

TEST(IntegralRef, TypesAreTheExactValueConverted) {
  const Image src = random_image(37, 23, 3, PixelType::u8, 5);
  const IntegralTables a = run(Backend::ref, src, request(true, true, true, TableType::i64, TableType::u64));
  const IntegralTables b = run(Backend::ref, src, request(true, true, true, TableType::u32, TableType::f64));
  const IntegralTables d = run(Backend::ref, src, request(true, false, false, TableType::f64));
  for (int Y = 0; Y <= 23; ++Y)
    for (int X = 0; X <= 37; ++X)
      for (int c = 0; c < 3; ++c) {
        const auto s = a.sum.ref<const std::int64_t>().at(Y, X, c);
        ASSERT_EQ(b.sum.ref<const std::uint32_t>().at(Y, X, c), static_cast<std::uint32_t>(s));
        ASSERT_EQ(d.sum.ref<const double>().at(Y, X, c), static_cast<double>(s));
        ASSERT_EQ(b.sqsum.ref<const double>().at(Y, X, c), static_cast<double>(a.sqsum.ref<const std::uint64_t>().at(Y, X, c)));
        ASSERT_EQ(b.tilted.ref<const std::uint32_t>().at(Y, X, c),
                  static_cast<std::uint32_t>(a.tilted.ref<const std::int64_t>().at(Y, X, c)));
      }
}

// ---- ref against OpenCV ------------------------------------------------------------------

#if PIXELKIT_TEST_HAVE_OPENCV
cv::Mat as_mat(const ConstImageView& v) {
  return cv::Mat(v.height, v.width, CV_MAKETYPE(v.type == PixelType::u8 ? CV_8U : CV_32F, v.channels),
                 const_cast<void*>(v.data), static_cast<std::size_t>(v.pitch));
}
IntegralTableView as_view(const cv::Mat& m, TableType t) {
  IntegralTableView v;
  v.data = const_cast<unsigned char*>(m.data);
  v.width = m.cols;
  v.height = m.rows;
  v.channels = m.channels();
  v.type = t;
  v.memory = Memory::host;
  v.pitch = static_cast<std::ptrdiff_t>(m.step);
  return v;
}

void check_against_opencv(Backend backend, const ConstImageView& src) {
  const cv::Mat in = as_mat(src);
  cv::Mat sum, sq, tilted;
  if (src.type == PixelType::u8) {
    // OpenCV's CV_32S sum is our u32 bit for bit (both wrap modulo 2^32).
    cv::integral(in, sum, sq, tilted, CV_32S, CV_64F);
    const IntegralTables ours = run(backend, src, request(true, true, true, TableType::u32, TableType::f64));
    EXPECT_TRUE(tables_agree(ours.sum.view(), as_view(sum, TableType::u32))) << "sum u32 " << label(src);
    EXPECT_TRUE(tables_agree(ours.sqsum.view(), as_view(sq, TableType::f64), 0)) << "sqsum f64 " << label(src);
    EXPECT_TRUE(tables_agree(ours.tilted.view(), as_view(tilted, TableType::u32))) << "tilted u32 " << label(src);
    cv::integral(in, sum, sq, tilted, CV_64F, CV_64F);
    const IntegralTables f = run(backend, src, request(true, false, true, TableType::f64));
    EXPECT_TRUE(tables_agree(f.sum.view(), as_view(sum, TableType::f64), 0)) << "sum f64 " << label(src);
    EXPECT_TRUE(tables_agree(f.tilted.view(), as_view(tilted, TableType::f64), 0)) << "tilted f64 " << label(src);
  } else {
    cv::integral(in, sum, sq, tilted, CV_64F, CV_64F);
    const IntegralTables ours = run(backend, src, request(true, true, true));
    EXPECT_TRUE(tables_agree(ours.sum.view(), as_view(sum, TableType::f64))) << "sum f64 " << label(src);
    EXPECT_TRUE(tables_agree(ours.sqsum.view(), as_view(sq, TableType::f64))) << "sqsum f64 " << label(src);
    EXPECT_TRUE(tables_agree(ours.tilted.view(), as_view(tilted, TableType::f64))) << "tilted f64 " << label(src);
    // OpenCV accumulates f32 tables in f32; ours are f64 rounded once: close, not equal.
    cv::integral(in, sum, sq, tilted, CV_32F, CV_32F);
    const IntegralTables f = run(backend, src, request(true, true, true, TableType::f32, TableType::f32));
    EXPECT_TRUE(tables_agree(f.sum.view(), as_view(sum, TableType::f32), 0, 1e-4)) << "sum f32 " << label(src);
    EXPECT_TRUE(tables_agree(f.sqsum.view(), as_view(sq, TableType::f32), 0, 1e-4)) << "sqsum f32 " << label(src);
  }
}
#endif

TEST(IntegralOpenCV, RefAndCpuEqualCvIntegral) {
  PIXELKIT_REQUIRE_OPENCV();
#if PIXELKIT_TEST_HAVE_OPENCV
  std::uint32_t seed = 300;
  for (Shape s : odd_shapes())
    for (int c : {1, 3, 4})
      for (PixelType t : {PixelType::u8, PixelType::f32}) {
        if (s.w * s.h > 100000 && c != 3) continue;  // the large size once per type
        const Image src = random_image(s.w, s.h, c, t, ++seed);
        check_against_opencv(Backend::ref, src);
        check_against_opencv(Backend::cpu, src);
      }
#endif
}

TEST(IntegralOpenCV, PhotosInData) {
  PIXELKIT_REQUIRE_OPENCV();
#if PIXELKIT_TEST_HAVE_OPENCV
  for (const char* name : {"astronaut.png", "camera.png", "chelsea.png", "coffee.png"}) {
    const Image photo = read_image(data_path(name));
    check_against_opencv(Backend::ref, photo);
    check_against_opencv(Backend::cpu, photo);
  }
#endif
}

// ---- every backend against ref ---------------------------------------------------------

class IntegralBackend : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::cuda) PIXELKIT_REQUIRE_GPU();
  }
  void check(const ConstImageView& src, const IntegralRequest& req) {
    const IntegralTables want = run(Backend::ref, src, req);
    const IntegralTables got = run(GetParam(), src, req);
    const IntegralRequest r = resolve_request(req, src.type);
    const std::string what = std::string(to_string(GetParam())) + " vs ref, " + label(src) + " sum " +
                             to_string(r.sum_type) + " sqsum " + to_string(r.sqsum_type);
    if (r.sum) EXPECT_TRUE(tables_agree(got.sum.view(), want.sum.view())) << "sum: " << what;
    if (r.sqsum) EXPECT_TRUE(tables_agree(got.sqsum.view(), want.sqsum.view())) << "sqsum: " << what;
    if (r.tilted) EXPECT_TRUE(tables_agree(got.tilted.view(), want.tilted.view())) << "tilted: " << what;
  }
};

TEST_P(IntegralBackend, OddSizesChannelsAndEveryTypeCombination) {
  std::uint32_t seed = 500;
  for (Shape s : odd_shapes())
    for (int c : {1, 3, 4}) {
      const bool large = s.w * s.h > 100000;
      const Image u8 = random_image(s.w, s.h, c, PixelType::u8, ++seed);
      const Image f32 = random_image(s.w, s.h, c, PixelType::f32, ++seed);
      check(u8, request(true, true, true));  // i64 + u64 + tilted i64
      check(f32, request(true, true, true));  // f64
      if (large && c == 4) continue;
      check(u8, request(true, true, false, TableType::u32, TableType::f64));
      check(u8, request(true, false, true, TableType::f64));
      check(u8, request(false, true, false));  // squared sum alone
      check(f32, request(true, true, true, TableType::f32, TableType::f32));
      check(f32, request(false, true, false, TableType::automatic, TableType::f32));
    }
}

TEST_P(IntegralBackend, SmallSizesAroundTileEdges) {
  // Widths and heights around the cuda tiles (64 and 256 pixels, 64 rows) and cpu bands.
  std::uint32_t seed = 700;
  for (int w : {2, 31, 63, 64, 65, 255, 256, 257, 513})
    for (int h : {2, 17, 63, 64, 65, 130}) {
      const int c = (w + h) % 3 == 0 ? 1 : ((w + h) % 3 == 1 ? 3 : 4);
      check(random_image(w, h, c, PixelType::u8, ++seed), request(true, true, (w + h) % 2 == 0));
      if (w % 2) check(random_image(w, h, c, PixelType::f32, ++seed), request(true, true, false));
    }
}

TEST_P(IntegralBackend, Large4096) {
  // 4096x4096 u8, sum + squared sum: the production case, against ref.
  const Image src = random_image(4096, 4096, 1, PixelType::u8, 800);
  check(src, request(true, true, false));
}

TEST_P(IntegralBackend, PhotosInData) {
  if (!have_png()) GTEST_SKIP() << "no PNG codec (OpenCV or libpng) in this build";
  for (const char* name : {"astronaut.png", "camera.png", "chelsea.png", "coffee.png"})
    check(read_image(data_path(name)), request(true, true, true));
}

TEST_P(IntegralBackend, SubImageViewsReadOnlyTheirWindowAndWriteOnlyTheirTables) {
  for (PixelType t : {PixelType::u8, PixelType::f32}) {
    const Image parent = random_image(301, 203, 3, t, 21);
    const ConstImageView src = parent.cview().sub(7, 5, 257, 130);  // pitch > width, odd offsets
    Image packed(src.width, src.height, src.channels, src.type);  // a plain copy (clone() synchronises CUDA)
    for (int y = 0; y < src.height; ++y) std::memcpy(packed.row<unsigned char>(y), src.row<unsigned char>(y), src.row_bytes());
    const IntegralTables want = run(Backend::ref, packed.cview(), request(true, true, true));
    EXPECT_TRUE(tables_agree(run(GetParam(), src, request(true, true, true)).sum.view(), want.sum.view()));
    // Tables that are themselves windows of larger buffers (pitch > row).
    const IntegralRequest r = resolve_request(request(true, true, true), t);
    IntegralTable big_s(src.width + 9, src.height + 4, 3, r.sum_type), big_q(src.width + 9, src.height + 4, 3, r.sqsum_type),
        big_t(src.width + 9, src.height + 4, 3, r.sum_type);
    for (IntegralTable* b : {&big_s, &big_q, &big_t}) poison(b->view());
    auto window = [&](const IntegralTable& b) {
      IntegralTableView v = b.view();
      v.data = static_cast<unsigned char*>(v.data) + 2 * v.pitch + 5 * 3 * element_size(v.type);
      v.width = src.width + 1;
      v.height = src.height + 1;
      return v;
    };
    Options o;
    o.backend = GetParam();
    if (GetParam() == Backend::cuda) {
      // Device tables: the same windows in device memory.
      IntegralTable ds(src.width + 9, src.height + 4, 3, r.sum_type, Memory::device),
          dq(src.width + 9, src.height + 4, 3, r.sqsum_type, Memory::device),
          dt(src.width + 9, src.height + 4, 3, r.sum_type, Memory::device);
      for (IntegralTable* b : {&ds, &dq, &dt}) poison(b->view());
      const Image dsrc_parent = clone(parent.cview(), Memory::device);
      const ConstImageView dsrc = dsrc_parent.cview().sub(7, 5, 257, 130);
      Integral(request(true, true, true))(dsrc, IntegralViews{window(ds), window(dq), window(dt)}, o);
      synchronize(nullptr);
      big_s = to_host(ds.view());
      big_q = to_host(dq.view());
      big_t = to_host(dt.view());
    } else {
      Integral(request(true, true, true))(src, IntegralViews{window(big_s), window(big_q), window(big_t)}, o);
    }
    EXPECT_TRUE(tables_agree(window(big_s), want.sum.view())) << to_string(t);
    EXPECT_TRUE(tables_agree(window(big_q), want.sqsum.view())) << to_string(t);
    EXPECT_TRUE(tables_agree(window(big_t), want.tilted.view())) << to_string(t);
    // Outside the windows, the poison is untouched.
    for (const IntegralTable* b : {&big_s, &big_q, &big_t}) {
      const IntegralTableView v = b->view();
      for (int y = 0; y < v.height; ++y) {
        const auto* row = static_cast<const unsigned char*>(v.data) + y * v.pitch;
        const std::size_t es = element_size(v.type) * 3;
        const bool in_rows = y >= 2 && y < 2 + src.height + 1;
        for (std::size_t i = 0; i < v.row_bytes(); ++i) {
          const bool in_cols = i >= 5 * es && i < (5 + src.width + 1) * es;
          if (!(in_rows && in_cols)) ASSERT_EQ(row[i], 0xA5) << "table byte " << i << " of row " << y << " was written";
        }
      }
    }
  }
}

TEST_P(IntegralBackend, OperatorReuseAcrossSizesAndTypes) {
  Integral op(request(true, true, false));
  Options o;
  o.backend = GetParam();
  IntegralTables out;
  std::uint32_t seed = 900;
  for (auto [w, h, c] : {std::tuple{640, 481, 3}, {33, 17, 1}, {1000, 200, 4}, {5, 700, 3}, {640, 481, 3}}) {
    for (PixelType t : {PixelType::u8, PixelType::f32}) {
      const Image src = random_image(w, h, c, t, ++seed);
      op(src, out, o);
      if (GetParam() == Backend::cuda) synchronize(nullptr);
      const IntegralTables want = run(Backend::ref, src, request(true, true, false));
      EXPECT_TRUE(tables_agree(out.sum.view(), want.sum.view())) << w << "x" << h << "x" << c;
      EXPECT_TRUE(tables_agree(out.sqsum.view(), want.sqsum.view())) << w << "x" << h << "x" << c;
    }
  }
  // Same shape again: the tables are reused, not reallocated.
  const Image src = random_image(640, 481, 3, PixelType::f32, 1);
  op(src, out, o);
  const void* before = out.sum.view().data;
  op(src, out, o);
  EXPECT_EQ(out.sum.view().data, before);
}

TEST_P(IntegralBackend, RectangleQueriesEqualDirectSums) {
  const Image src = random_image(123, 77, 3, PixelType::u8, 41);
  for (TableType st : {TableType::u32, TableType::i64, TableType::f64}) {
    const IntegralTables t = run(GetParam(), src, request(true, false, false, st));
    std::vector<Rect> rects = {{0, 0, 123, 77}, {0, 0, 0, 0}, {122, 76, 1, 1}, {5, 9, 40, 31}, {100, 0, 23, 77}, {0, 60, 1, 17}};
    std::mt19937 rng(3);
    for (int i = 0; i < 200; ++i) {
      const int x = static_cast<int>(rng() % 123), y = static_cast<int>(rng() % 77);
      rects.push_back({x, y, static_cast<int>(rng() % (124 - x)), static_cast<int>(rng() % (78 - y))});
    }
    for (int c = 0; c < 3; ++c) {
      std::vector<double> want;
      for (const Rect& r : rects) {
        double s = 0;
        for (int y = r.y; y < r.y + r.height; ++y)
          for (int x = r.x; x < r.x + r.width; ++x) s += src.row<std::uint8_t>(y)[x * 3 + c];
        want.push_back(s);
      }
      Options o;
      o.backend = GetParam();
      auto check_all = [&](auto tag) {
        using T = decltype(tag);
        const std::vector<T> got = rect_sums<T>(t.sum.view(), rects, c, o);
        ASSERT_EQ(got.size(), rects.size());
        for (std::size_t i = 0; i < rects.size(); ++i) {
          ASSERT_EQ(static_cast<double>(got[i]), want[i]) << "rect " << i << " channel " << c << " " << to_string(st);
          if (t.sum.memory() != Memory::device) ASSERT_EQ(rect_sum(t.sum.view(), rects[i], c), want[i]);
        }
      };
      if (st == TableType::u32) check_all(std::uint32_t{});
      if (st == TableType::i64) check_all(std::int64_t{});
      if (st == TableType::f64) check_all(double{});
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, IntegralBackend, ::testing::Values(Backend::cpu, Backend::cuda),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(IntegralCuda, DeviceResidentImagesOnAStream) {
  PIXELKIT_REQUIRE_GPU();
  std::uint32_t seed = 1000;
  for (int c : {1, 3, 4})
    for (PixelType t : {PixelType::u8, PixelType::f32})
      for (Shape s : {Shape{1, 1}, Shape{700, 301}, Shape{4097, 3}, Shape{3, 2000}}) {
        const Image src = random_image(s.w, s.h, c, t, ++seed);
        const Image dsrc = clone(src.cview(), Memory::device);
        const IntegralTables got = run(Backend::cuda, dsrc, request(true, true, true));
        EXPECT_EQ(got.sum.memory(), Memory::device);
        const IntegralTables want = run(Backend::ref, src, request(true, true, true));
        EXPECT_TRUE(tables_agree(got.sum.view(), want.sum.view())) << "device " << label(src);
        EXPECT_TRUE(tables_agree(got.sqsum.view(), want.sqsum.view())) << "device " << label(src);
        EXPECT_TRUE(tables_agree(got.tilted.view(), want.tilted.view())) << "device " << label(src);
      }
}

// ---- the single pass's look-back (cuda) -------------------------------------------------------
// Tiles are 64 rows (u8) or 32 rows (f32) by 256 pixels (1 channel) or 64
// pixels (3, 4 channels); tiles wait on the tiles left of and above them.

// Checks one request on one image, cuda against ref, with device-resident input.
void check_cuda_vs_ref(const Image& src, const IntegralRequest& req, const std::string& what) {
  const IntegralTables want = run(Backend::ref, src, req);
  const Image dsrc = clone(src.cview(), Memory::device);
  const IntegralTables got = run(Backend::cuda, dsrc, req);
  const IntegralRequest r = resolve_request(req, src.type());
  const std::string where = what + " " + label(src) + " sum " + (r.sum ? to_string(r.sum_type) : "-") + " sqsum " +
                            (r.sqsum ? to_string(r.sqsum_type) : "-");
  if (r.sum) EXPECT_TRUE(tables_agree(got.sum.view(), want.sum.view())) << "sum: " << where;
  if (r.sqsum) EXPECT_TRUE(tables_agree(got.sqsum.view(), want.sqsum.view())) << "sqsum: " << where;
}

TEST(IntegralCudaLookBack, SizesAroundTileMultiplesInBothDirections) {
  PIXELKIT_REQUIRE_GPU();
  std::uint32_t seed = 3000;
  for (int c : {1, 3, 4}) {
    const int tw = c == 1 ? 256 : 64;
    for (int w : {tw - 1, tw, tw + 1, 2 * tw - 1, 2 * tw, 2 * tw + 1, 5 * tw + 3})
      for (int h : {31, 32, 33, 63, 64, 65, 127, 128, 129, 200}) {
        const PixelType t = (w + h) % 2 ? PixelType::f32 : PixelType::u8;
        const int kind = (w + h + c) % 3;  // both, sum only, sqsum only
        check_cuda_vs_ref(random_image(w, h, c, t, ++seed), request(kind != 2, kind != 1, false), "edges");
      }
  }
}

TEST(IntegralCudaLookBack, LongChainsTallThinAndWideFlat) {
  PIXELKIT_REQUIRE_GPU();
  std::uint32_t seed = 3100;
  // 1094 tiles down one column; 274 (1 channel) / 1094 (3, 4) tiles along one row.
  for (Shape s : {Shape{3, 70000}, Shape{70000, 3}, Shape{1, 4097}, Shape{4097, 1}, Shape{257, 4100}, Shape{9000, 65}})
    for (int c : {1, 3, 4})
      for (PixelType t : {PixelType::u8, PixelType::f32}) {
        const Image src = random_image(s.w, s.h, c, t, ++seed);
        check_cuda_vs_ref(src, request(true, true, false), "chains");
        if (c == 3) {
          check_cuda_vs_ref(src, request(true, false, false), "chains");
          check_cuda_vs_ref(src, request(false, true, false), "chains");
        }
      }
  // Many tiles in both directions at once, every u8 output type.
  const Image big = random_image(2049, 1999, 1, PixelType::u8, ++seed);
  check_cuda_vs_ref(big, request(true, true, false, TableType::u32, TableType::f64), "grid");
  check_cuda_vs_ref(big, request(true, true, false, TableType::f64, TableType::u64), "grid");
  const Image big3 = random_image(1001, 777, 3, PixelType::f32, ++seed);
  check_cuda_vs_ref(big3, request(true, true, false, TableType::f32, TableType::f32), "grid");
}

#if PIXELKIT_WITH_CUDA
TEST(IntegralCudaLookBack, ManyCallsAcrossTheEpochWrap) {
  PIXELKIT_REQUIRE_GPU();
  // The flags carry a per-call epoch: start an operator three calls before it
  // wraps, and alternate sizes so that stale flags of a larger grid stay in
  // the buffer across the wrap.
  detail::set_integral_cuda_first_epoch(detail::integral_cuda_epoch_limit() - 3);
  Integral op(request(true, true, false));
  detail::set_integral_cuda_first_epoch(0);
  Options o;
  o.backend = Backend::cuda;
  std::uint32_t seed = 3200;
  struct Case {
    int w, h, c;
    PixelType t;
  };
  const std::vector<Case> cases = {{1500, 700, 1, PixelType::u8}, {300, 130, 1, PixelType::u8}, {700, 300, 3, PixelType::f32},
                                   {1500, 700, 1, PixelType::u8}, {64, 64, 4, PixelType::u8},   {1500, 700, 1, PixelType::u8}};
  for (int round = 0; round < 3; ++round)
    for (const Case& k : cases) {
      const Image src = random_image(k.w, k.h, k.c, k.t, ++seed);
      const Image dsrc = clone(src.cview(), Memory::device);
      IntegralTables out;
      op(dsrc, out, o);
      synchronize(nullptr);
      const IntegralTables want = run(Backend::ref, src, request(true, true, false));
      EXPECT_TRUE(tables_agree(out.sum.view(), want.sum.view())) << "round " << round << " " << label(src);
      EXPECT_TRUE(tables_agree(out.sqsum.view(), want.sqsum.view())) << "round " << round << " " << label(src);
    }
  // Many back-to-back calls on one stream without synchronising, then check
  // the last one (and that every call before it left the state consistent).
  const Image src = random_image(1031, 517, 1, PixelType::u8, ++seed);
  const Image dsrc = clone(src.cview(), Memory::device);
  IntegralTables out;
  for (int i = 0; i < 200; ++i) op(dsrc, out, o);
  synchronize(nullptr);
  const IntegralTables want = run(Backend::ref, src, request(true, true, false));
  EXPECT_TRUE(tables_agree(out.sum.view(), want.sum.view()));
  EXPECT_TRUE(tables_agree(out.sqsum.view(), want.sqsum.view()));
}

TEST(IntegralCudaLookBack, OneOperatorOnTwoStreamsWithoutSynchronising) {
  PIXELKIT_REQUIRE_GPU();
  // The operator's scratch (ticket counter, flags, payloads) is shared by its
  // calls: alternating two non-blocking streams must neither hang nor mix the
  // calls up (the operator orders a call after the previous one on another
  // stream). Different sizes per stream, so a mix-up would show.
  cudaStream_t st[2] = {nullptr, nullptr};
  ASSERT_EQ(cudaStreamCreateWithFlags(&st[0], cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&st[1], cudaStreamNonBlocking), cudaSuccess);
  Integral op(request(true, true, false));
  const Image src[2] = {random_image(1501, 703, 1, PixelType::u8, 3400), random_image(777, 1203, 3, PixelType::u8, 3401)};
  const Image dsrc[2] = {clone(src[0].cview(), Memory::device), clone(src[1].cview(), Memory::device)};
  IntegralTables out[2][3];  // the last three calls of each stream, each with its own tables
  for (int i = 0; i < 60; ++i) {
    Options o;
    o.backend = Backend::cuda;
    o.stream = st[i % 2];
    op(dsrc[i % 2], out[i % 2][(i / 2) % 3], o);
  }
  ASSERT_EQ(cudaStreamSynchronize(st[0]), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(st[1]), cudaSuccess);
  for (int k = 0; k < 2; ++k) {
    const IntegralTables want = run(Backend::ref, src[k], request(true, true, false));
    for (int j = 0; j < 3; ++j) {
      EXPECT_TRUE(tables_agree(out[k][j].sum.view(), want.sum.view())) << "stream " << k << " slot " << j;
      EXPECT_TRUE(tables_agree(out[k][j].sqsum.view(), want.sqsum.view())) << "stream " << k << " slot " << j;
    }
  }
  cudaStreamDestroy(st[0]);
  cudaStreamDestroy(st[1]);
}

// The u8 one-channel kernel loads a lane's 8 pixels as one word where the
// image's base and pitch are 8-aligned, byte by byte otherwise (and at the
// right edge). Device views (the host path uploads into aligned rows) at every
// alignment and odd pitches, heights around both tile heights (128 rows for
// the sum alone, 256 with the squared sum), every u8 output type.
TEST(IntegralCudaLookBack, OneChannelU8AtEveryAlignmentAndTableType) {
  PIXELKIT_REQUIRE_GPU();
  std::uint32_t seed = 3400;
  for (int pad : {0, 3, 8})
    for (int off : {0, 1, 5, 8}) {
      const int w = 517 + off, h = 250 + 3 * off + pad, wp = off + w + pad;
      const Image parent = random_image(wp, h, 1, PixelType::u8, ++seed);
      std::vector<unsigned char> packed(static_cast<std::size_t>(wp) * h);
      for (int y = 0; y < h; ++y) std::memcpy(packed.data() + static_cast<std::size_t>(y) * wp, parent.cview().row<unsigned char>(y), wp);
      Image buf(static_cast<int>(packed.size()) + 16, 1, 1, PixelType::u8, Memory::device);
      ASSERT_EQ(cudaMemcpy(buf.view().data, packed.data(), packed.size(), cudaMemcpyHostToDevice), cudaSuccess);
      const ConstImageView dview =
          make_view(static_cast<unsigned char*>(buf.view().data) + off, w, h, 1, PixelType::u8, Memory::device, wp);
      const ConstImageView hview = parent.cview().sub(off, 0, w, h);
      for (TableType st : {TableType::u32, TableType::i64, TableType::f64})
        for (int kind = 0; kind < 3; ++kind) {
          const IntegralRequest req = request(kind != 2, kind != 1, false, st,
                                              st == TableType::f64 ? TableType::f64 : TableType::u64);
          const IntegralTables want = run(Backend::ref, hview, req);
          const IntegralTables got = run(Backend::cuda, dview, req);
          const std::string where = "offset " + std::to_string(off) + " pitch " + std::to_string(wp) + " " +
                                    std::to_string(w) + "x" + std::to_string(h) + " sum " + to_string(st) + " kind " +
                                    std::to_string(kind);
          if (kind != 2) EXPECT_TRUE(tables_agree(got.sum.view(), want.sum.view())) << "sum: " << where;
          if (kind != 1) EXPECT_TRUE(tables_agree(got.sqsum.view(), want.sqsum.view())) << "sqsum: " << where;
        }
    }
}

TEST(IntegralCudaLookBack, EveryBenchmarkVariantEqualsRef) {
  PIXELKIT_REQUIRE_GPU();
  std::uint32_t seed = 3300;
  for (int v = 0; v < detail::integral_cuda_variants(); ++v) {
    detail::set_integral_cuda_variant(v);
    for (Shape s : {Shape{1000, 999}, Shape{257, 65}, Shape{4097, 3}})
      for (int c : {1, 3})
        for (PixelType t : {PixelType::u8, PixelType::f32})
          check_cuda_vs_ref(random_image(s.w, s.h, c, t, ++seed), request(true, (s.w + c) % 2 == 0, false),
                            detail::integral_cuda_variant_name(v));
  }
  detail::set_integral_cuda_variant(0);
}
#endif

TEST(IntegralCuda, AutoPicksCudaForDeviceImagesAndSaysSo) {
  PIXELKIT_REQUIRE_GPU();
  const Image d = clone(random_image(64, 64, 1, PixelType::u8, 1).cview(), Memory::device);
  IntegralTables out;
  RunInfo info;
  Options o;
  o.info = &info;
  integral(d, out, {}, o);
  synchronize(nullptr);
  EXPECT_EQ(info.backend, Backend::cuda);
  EXPECT_FALSE(info.path.empty());
}

// ---- overflow: 8192 x 8192 of 255 ----------------------------------------------------------

TEST(IntegralOverflow, Image8192Of255IsExactInI64AndWrapsInU32) {
  // The whole-image sum 255 * 2^26 is about 1.7e10: beyond u32, exact in i64.
  const int n = 8192;
  Image src(n, n, 1, PixelType::u8);
  for (int y = 0; y < n; ++y) std::memset(src.row<std::uint8_t>(y), 255, n);
  const Backend backend = cuda_available() ? Backend::cuda : Backend::cpu;
  Options o;
  o.backend = backend;
  {
    IntegralTables out;
    integral(src, out, request(true, false, false, TableType::i64), o);
    const TableRef<const std::int64_t> t = out.sum.ref<const std::int64_t>();
    for (int Y = 0; Y <= n; ++Y) {
      const std::int64_t* row = t.row(Y);
      for (int X = 0; X <= n; ++X)
        if (row[X] != 255LL * X * Y) FAIL() << "i64 entry (" << X << "," << Y << ") = " << row[X];
    }
    EXPECT_EQ(t.at(n, n, 0), 17112760320LL);
    EXPECT_EQ(rect_sum<std::int64_t>(out.sum.view(), {0, 0, n, n}), 17112760320LL);
  }
  {
    IntegralTables out;
    integral(src, out, request(true, false, false, TableType::u32), o);
    const TableRef<const std::uint32_t> t = out.sum.ref<const std::uint32_t>();
    for (int Y = 0; Y <= n; Y += 7)
      for (int X = 0; X <= n; X += 5)
        ASSERT_EQ(t.at(Y, X, 0), static_cast<std::uint32_t>(255ULL * X * Y)) << X << "," << Y;
    // Entries wrap, but a rectangle whose sum is below 2^32 is still exact,
    // wherever it lies: here 4096 x 4096 x 255 = 4278190080 < 2^32.
    EXPECT_EQ(rect_sum<std::uint32_t>(out.sum.view(), {4096, 4096, 4096, 4096}), 4278190080u);
    EXPECT_EQ(rect_sum<std::uint32_t>(out.sum.view(), {4000, 100, 300, 7000}), 255u * 300u * 7000u);
    // ... and one above 2^32 comes out modulo 2^32.
    EXPECT_EQ(rect_sum<std::uint32_t>(out.sum.view(), {0, 0, n, n}), static_cast<std::uint32_t>(17112760320ULL));
  }
}

// ---- the box filter through the table --------------------------------------------------------

TEST(IntegralBox, EqualsTheFilterOnEveryBorder) {
  const std::vector<Border> borders = {{BorderMode::constant, 0.0f}, {BorderMode::constant, 7.5f},
                                       {BorderMode::replicate, 0},    {BorderMode::reflect, 0},
                                       {BorderMode::reflect101, 0},   {BorderMode::wrap, 0}};
  std::vector<Backend> backends = {Backend::cpu};
  if (cuda_available()) backends.push_back(Backend::cuda);
  std::uint32_t seed = 1200;
  for (Shape s : {Shape{1, 1}, Shape{5, 3}, Shape{64, 31}, Shape{203, 97}})
    for (int c : {1, 3, 4})
      for (PixelType t : {PixelType::u8, PixelType::f32})
        for (const Kernel& k : {Kernel::box(3), Kernel::box(15), Kernel::box(31),
                                Kernel::from_matrix(5, 9, std::vector<float>(45, 1.0f / 45), "box5x9")}) {
          // ref's cost grows with the box: keep the test quick (a few seconds on 2 cores).
          if ((s.w > 100 && (k.width > 15 || c == 4)) || (k.width > 15 && s.w * s.h * c > 64 * 31)) continue;
          const Image src = random_image(s.w, s.h, c, t, ++seed);
          for (const Border& b : borders) {
            Image want(s.w, s.h, c, t);
            Options ref;
            ref.backend = Backend::ref;
            filter2d(src, want.view(), k, b, ref);
            for (Backend be : backends) {
              Image got(s.w, s.h, c, t);
              test::poison(got.view());
              Options o;
              o.backend = be;
              detail::box_filter_via_integral(src, got.view(), k, b, be, o);
              // u8: bit-exact (see integral_box.cpp); f32: f64 rounding only.
              EXPECT_TRUE(agrees(got, want, t == PixelType::u8 && b.value == 0.0f ? 0.0 : 1.0, 1e-5))
                  << to_string(be) << " " << label(src) << " " << k.name << " " << to_string(b);
            }
          }
        }
  EXPECT_TRUE(detail::is_box_kernel(Kernel::box(5)));
  EXPECT_FALSE(detail::is_box_kernel(Kernel::gaussian(5)));
  EXPECT_FALSE(detail::box_via_integral_pays(Kernel::box(31), Backend::ref));
  EXPECT_TRUE(detail::box_via_integral_pays(Kernel::box(31), Backend::cpu));
  EXPECT_FALSE(detail::box_via_integral_pays(Kernel::box(3), Backend::cpu));
}

TEST(IntegralBox, DeviceImages) {
  PIXELKIT_REQUIRE_GPU();
  const Image src = random_image(333, 211, 3, PixelType::u8, 7);
  const Image dsrc = clone(src.cview(), Memory::device);
  for (const Border& b : {Border{BorderMode::reflect101, 0}, Border{BorderMode::constant, 3}}) {
    Image ddst(333, 211, 3, PixelType::u8, Memory::device);
    Options o;
    o.backend = Backend::cuda;
    detail::box_filter_via_integral(dsrc, ddst.view(), Kernel::box(21), b, Backend::cuda, o);
    synchronize(nullptr);
    Image want(333, 211, 3, PixelType::u8);
    Options ref;
    ref.backend = Backend::ref;
    filter2d(src, want.view(), Kernel::box(21), b, ref);
    EXPECT_TRUE(agrees(clone(ddst.cview()), want, 0.0)) << to_string(b);
  }
}

// ---- the CLI ----------------------------------------------------------------------------

struct CliResult {
  int code;
  std::string err;
};

CliResult cli(const std::string& args) {
  // Unique per process: CTest runs the tests of this file in parallel processes.
  const std::string err_path = ::testing::TempDir() + "/pk_integral_cli_err_" + std::to_string(::getpid()) + ".txt";
  const std::string cmd = std::string("'") + cli_path() + "' integral " + args + " >/dev/null 2>'" + err_path + "'";
  const int status = std::system(cmd.c_str());
  std::ifstream f(err_path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::remove(err_path.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ss.str()};
}

bool exists(const std::string& p) { return std::filesystem::exists(p); }

TEST(IntegralCli, WritesNpyTablesThatEqualTheLibrary) {
  const std::string dir = ::testing::TempDir() + "/pk_integral_cli";
  std::filesystem::create_directories(dir);
  const Image src = random_image(45, 31, 3, PixelType::u8, 77);
  write_npy(dir + "/in.npy", src);
  const CliResult r = cli("'" + dir + "/in.npy' --sum '" + dir + "/s.npy' --sqsum '" + dir + "/q.npy' --tilted '" +
                          dir + "/t.npy' --type u32 --sqtype f64 --backend cpu -v");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("integral"), std::string::npos) << r.err;  // --verbose says what ran
  const IntegralTables want = run(Backend::ref, src, request(true, true, true, TableType::u32, TableType::f64));
  for (auto [name, table, npy] : {std::tuple{"s", &want.sum, NpyType::u32}, {"q", &want.sqsum, NpyType::f64},
                                  {"t", &want.tilted, NpyType::u32}}) {
    const NpyArray a = read_npy(dir + "/" + name + ".npy");
    EXPECT_EQ(a.type, npy) << name;
    EXPECT_EQ(a.shape, (std::vector<std::size_t>{32, 46, 3})) << name;
    const IntegralTableView v = table->view();
    for (int y = 0; y < 32; ++y)
      ASSERT_EQ(std::memcmp(a.bytes.data() + y * v.row_bytes(), static_cast<const char*>(v.data) + y * v.pitch,
                            v.row_bytes()),
                0)
          << name << " row " << y;
  }
  // One channel: a 2-D array.
  const Image gray = random_image(20, 10, 1, PixelType::f32, 78);
  write_npy(dir + "/g.npy", gray);
  ASSERT_EQ(cli("'" + dir + "/g.npy' --sum '" + dir + "/gs.npy'").code, 0);
  const NpyArray g = read_npy(dir + "/gs.npy");
  EXPECT_EQ(g.type, NpyType::f64);
  EXPECT_EQ(g.shape, (std::vector<std::size_t>{11, 21}));
  std::filesystem::remove_all(dir);
}

TEST(IntegralCli, BadInputHasAClearMessageAnExitCodeAndNoOutput) {
  const std::string dir = ::testing::TempDir() + "/pk_integral_cli_bad";
  std::filesystem::create_directories(dir);
  const std::string in = dir + "/in.npy", fin = dir + "/f.npy", out = dir + "/out.npy", q = dir + "/q.npy";
  write_npy(in, random_image(9, 8, 1, PixelType::u8, 1));
  write_npy(fin, random_image(9, 8, 1, PixelType::f32, 2));
  struct Bad {
    std::string args;
    int code;
    std::string fragment;
  };
  const std::vector<Bad> cases = {
      {"'" + in + "'", 2, "--sum"},  // no output option
      {"'" + in + "' --sqsum '" + q + "'", 2, "--sum"},
      {"'" + in + "' --sum '" + out + "' --type i32", 2, "table type 'i32'"},
      {"'" + fin + "' --sum '" + out + "' --type u32", 2, "u32 sum table is not supported for f32 images"},
      {"'" + in + "' --sum '" + out + "' --sqsum '" + q + "' --sqtype i64", 2, "i64 squared-sum table is not supported"},
      {"'" + in + "' --sum '" + dir + "/missing/out.npy'", 1, "does not exist"},
      {"'" + in + "' --sum '" + out + "' --sqsum '" + dir + "/missing/q.npy'", 1, "does not exist"},
      {"'" + in + "' --sum '" + dir + "/out.png'", 2, ".npy"},
      {"'" + in + "' --sum '" + out + "' --sqsum '" + out + "'", 2, "same file"},
      {"'" + in + "' --sum '" + in + "'", 2, "is the input"},
      {"'" + dir + "/nonexistent.npy' --sum '" + out + "'", 1, "nonexistent.npy"},
      {"'" + in + "' --sum '" + out + "' --backend gpu", 2, "--backend"},
  };
  for (const Bad& b : cases) {
    const CliResult r = cli(b.args);
    EXPECT_EQ(r.code, b.code) << b.args << "\n" << r.err;
    EXPECT_NE(r.err.find(b.fragment), std::string::npos) << b.args << ": stderr '" << r.err << "' lacks '" << b.fragment << "'";
    EXPECT_FALSE(exists(out)) << b.args;
    EXPECT_FALSE(exists(q)) << b.args;
    EXPECT_FALSE(exists(dir + "/out.png")) << b.args;
  }
  if (!built_with_cuda()) {
    const CliResult r = cli("'" + in + "' --sum '" + out + "' --backend cuda");
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("no CUDA backend"), std::string::npos) << r.err;
    EXPECT_FALSE(exists(out));
  }
  std::filesystem::remove_all(dir);
}


// ---- cpu backend kernels: AVX2 and SSE2 rows, streaming stores, band pre-pass ----------------
// (integral_cpu.cpp; hooks in integral_cpu_hooks.hpp.) Every case against ref,
// integer tables bit for bit.

struct CpuHooksReset {
  ~CpuHooksReset() {
    detail::set_integral_cpu_baseline(false);
    detail::set_integral_cpu_stream_threshold(0);
  }
};

std::vector<bool> cpu_isa_paths() {  // true = forced baseline
  std::vector<bool> v{true};
  const char* env = std::getenv("PIXELKIT_CPU_BASELINE");  // forces the baseline too
  if (detail::integral_cpu_avx2_available() && !(env && *env && std::strcmp(env, "0") != 0)) v.push_back(false);
  return v;
}

::testing::AssertionResult cpu_equals_ref(const ConstImageView& src, const IntegralRequest& req, int threads,
                                          std::string* path = nullptr) {
  const IntegralTables want = run(Backend::ref, src, req);
  const IntegralRequest r = resolve_request(req, src.type);
  IntegralTables got;
  if (r.sum) { got.sum = IntegralTable(src.width, src.height, src.channels, r.sum_type); poison(got.sum); }
  if (r.sqsum) { got.sqsum = IntegralTable(src.width, src.height, src.channels, r.sqsum_type); poison(got.sqsum); }
  RunInfo info;
  Options o;
  o.backend = Backend::cpu;
  o.threads = threads;
  o.info = &info;
  Integral op(req);
  op(src, got, o);
  if (path) *path = info.path;
  const std::string what = label(src) + " sum " + to_string(r.sum_type) + " sqsum " + to_string(r.sqsum_type) +
                           ", " + std::to_string(threads) + " thread(s), " + info.path;
  if (r.sum) {
    auto a = tables_agree(got.sum.view(), want.sum.view());
    if (!a) return ::testing::AssertionFailure() << "sum: " << what << ": " << a.message();
  }
  if (r.sqsum) {
    auto a = tables_agree(got.sqsum.view(), want.sqsum.view());
    if (!a) return ::testing::AssertionFailure() << "sqsum: " << what << ": " << a.message();
  }
  return ::testing::AssertionSuccess();
}

// The u8 request combinations: sum u32 / i64 / f64 alone, with sqsum u64 / f64, sqsum alone.
std::vector<IntegralRequest> u8_requests() {
  std::vector<IntegralRequest> v;
  for (TableType st : {TableType::u32, TableType::i64, TableType::f64}) {
    v.push_back(request(true, false, false, st));
    v.push_back(request(true, true, false, st, st == TableType::f64 ? TableType::f64 : TableType::u64));
  }
  v.push_back(request(false, true, false, TableType::automatic, TableType::u64));
  v.push_back(request(false, true, false, TableType::automatic, TableType::f64));
  return v;
}

Image filled(int w, int h, int c, std::uint8_t value) {
  Image img(w, h, c, PixelType::u8);
  for (int y = 0; y < h; ++y) std::memset(img.view().row<std::uint8_t>(y), value, img.view().row_bytes());
  return img;
}

TEST(IntegralCpuKernels, BothRowPathsOddWidthsSubViewsChannelsAndEveryType) {
  CpuHooksReset reset;
  std::vector<int> widths;
  for (int w = 1; w <= 70; ++w) widths.push_back(w);
  for (int w : {79, 80, 81, 95, 96, 97, 127, 128, 129, 255, 256, 257}) widths.push_back(w);
  std::uint32_t seed = 9000;
  for (bool base : cpu_isa_paths()) {
    detail::set_integral_cpu_baseline(base);
    for (int c : {1, 3, 4})
      for (int w : widths) {
        const int h = 2 + w % 5;
        // A sub-image view: pitch > width, an odd start address.
        const Image parent = random_image(w + 5, h + 3, c, PixelType::u8, ++seed);
        const ConstImageView src = parent.cview().sub(3, 2, w, h);
        for (const IntegralRequest& req : u8_requests()) {
          std::string path;
          ASSERT_TRUE(cpu_equals_ref(src, req, 1, &path)) << (base ? "baseline" : "avx2");
          if (c == 1) EXPECT_NE(path.find(base ? "sse2" : "avx2"), std::string::npos) << path;
        }
        if (w % 7 == 0) {  // f32 images: every row path is the generic one; still vs ref
          const Image f = random_image(w, h, c, PixelType::f32, ++seed);
          ASSERT_TRUE(cpu_equals_ref(f, request(true, true, false), 1));
          ASSERT_TRUE(cpu_equals_ref(f, request(true, true, false, TableType::f32, TableType::f32), 1));
        }
      }
  }
}

TEST(IntegralCpuKernels, AllWhiteRowsAtTheWidthLimits) {
  // 255 everywhere: the largest row prefixes. 33025 is the widest row whose
  // squared-sum prefix the AVX2 kernel converts to f64 as i32; 66051 the
  // widest whose prefix fits u32 (wider rows take the generic loop).
  CpuHooksReset reset;
  for (bool base : cpu_isa_paths()) {
    detail::set_integral_cpu_baseline(base);
    for (int w : {33024, 33025, 33026, 66051, 66052})
      for (int c : {1, 3}) {
        if (c == 3 && w > 33026) continue;
        const Image src = filled(w, 3, c, 255);
        for (const IntegralRequest& req : u8_requests()) ASSERT_TRUE(cpu_equals_ref(src, req, 1));
      }
    const Image tall = filled(77, 300, 1, 255);
    for (const IntegralRequest& req : u8_requests()) ASSERT_TRUE(cpu_equals_ref(tall, req, 1));
  }
}

TEST(IntegralCpuKernels, StreamingStoresAboveTheThreshold) {
  CpuHooksReset reset;
  detail::set_integral_cpu_stream_threshold(1);  // every 8-byte table streams
  std::uint32_t seed = 9100;
  for (bool base : cpu_isa_paths()) {
    detail::set_integral_cpu_baseline(base);
    for (int w : {1, 2, 3, 5, 8, 15, 16, 17, 31, 33, 63, 64, 65, 70, 257})
      for (int threads : {1, 2}) {
        const Image parent = random_image(w + 4, 41, 1, PixelType::u8, ++seed);
        const ConstImageView src = parent.cview().sub(1, 1, w, 39);
        for (const IntegralRequest& req : u8_requests()) {
          std::string path;
          ASSERT_TRUE(cpu_equals_ref(src, req, threads, &path));
          const IntegralRequest r = resolve_request(req, PixelType::u8);
          const bool wide = !(r.sum && r.sum_type == TableType::u32);
          EXPECT_EQ(path.find("streaming stores") != std::string::npos, wide) << path;
        }
      }
    // Caller tables whose rows start off a 32-byte boundary (pitch not a multiple of 32).
    const Image img = random_image(45, 30, 1, PixelType::u8, ++seed);
    for (int shift : {8, 16, 24}) {
      IntegralTable big_s(45 + 8, 31, 1, TableType::i64), big_q(45 + 8, 31, 1, TableType::u64);
      IntegralViews v;
      v.sum = big_s.view();
      v.sqsum = big_q.view();
      for (IntegralTableView* t : {&v.sum, &v.sqsum}) {
        t->data = static_cast<unsigned char*>(t->data) + shift;
        t->width = 46;
        t->height = 31;
        t->pitch = t->pitch - 8;
      }
      poison(v.sum);
      poison(v.sqsum);
      Options o;
      o.backend = Backend::cpu;
      o.threads = 2;
      Integral op(request(true, true, false, TableType::i64, TableType::u64));
      op(img.cview(), v, o);
      const IntegralTables want = run(Backend::ref, img.cview(), request(true, true, false));
      EXPECT_TRUE(tables_agree(v.sum, want.sum.view())) << "shift " << shift;
      EXPECT_TRUE(tables_agree(v.sqsum, want.sqsum.view())) << "shift " << shift;
    }
  }
}

TEST(IntegralCpuKernels, BandPrePassAnyThreadCount) {
  // Bands taller than the pre-pass's 257-row u16 chunks, all-255 to catch an
  // overflow, thread counts that do not divide the width or the height.
  PIXELKIT_SKIP_OPENMP_TEAMS_UNDER_TSAN();
  CpuHooksReset reset;
  std::uint32_t seed = 9200;
  for (bool base : cpu_isa_paths()) {
    detail::set_integral_cpu_baseline(base);
    for (int threads : {2, 3, 5, 8}) {
      ASSERT_TRUE(cpu_equals_ref(filled(203, 1300, 1, 255), request(true, true, false), threads));
      ASSERT_TRUE(cpu_equals_ref(filled(67, 900, 3, 255), request(true, true, false, TableType::u32, TableType::f64),
                                 threads));
      for (int c : {1, 3, 4}) {
        const Image img = random_image(130 + threads, 257 * 2 + threads, c, PixelType::u8, ++seed);
        for (const IntegralRequest& req : u8_requests()) ASSERT_TRUE(cpu_equals_ref(img, req, threads));
        const Image f = random_image(90, 300, c, PixelType::f32, ++seed);
        ASSERT_TRUE(cpu_equals_ref(f, request(true, true, false), threads));
      }
    }
  }
}
// ---- end cpu backend kernels ----

}  // namespace
}  // namespace pixelkit::test
