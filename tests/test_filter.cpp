// The filter: kernels and their parser, every backend against ref on odd
// sizes, every border, 1/3/4 channels, u8/f32, kernel sides 1..31 (square and
// not), sub-image views, device-resident images; ref against OpenCV.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <initializer_list>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "pixelkit/config.hpp"
#include "pixelkit/filter.hpp"
#include "pixelkit/io.hpp"
#include "test_support.hpp"

#if PIXELKIT_WITH_CUDA
#include <cuda_runtime.h>

#include "filter/filter_cuda_mma.hpp"
#include "filter/filter_cuda_stream.hpp"
#endif

#if PIXELKIT_TEST_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif
#include "test_opencv.hpp"

namespace pixelkit::test {
namespace {

Kernel random_kernel(int w, int h, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> c(static_cast<std::size_t>(w) * h);
  float sum = 0;
  for (auto& v : c) { v = d(rng); sum += std::fabs(v); }
  for (auto& v : c) v /= sum * 0.5f;  // keeps u8 results spread over 0..255 and beyond
  return Kernel::from_matrix(w, h, c, "random" + std::to_string(w) + "x" + std::to_string(h));
}

/// A random dense n x n smoothing kernel of gain 1 (coefficients 1/n^2 +-
/// 1/n^2, the benchmark's kind): the fp16 instances take it (3x3: the
/// row-streaming kernel's; 5x5: stream_regs_kernel's).
Kernel random_smoothing(int n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  const int taps = n * n;
  std::vector<float> c(static_cast<std::size_t>(taps));
  float sum = 0;
  for (auto& v : c) sum += v = d(rng);
  for (auto& v : c) v = v / taps + (1.0f - sum / taps) / taps;
  const std::string side = std::to_string(n);
  return Kernel::from_matrix(n, n, c, "smoothing" + side + "x" + side);
}
Kernel random_smoothing3(std::uint32_t seed) { return random_smoothing(3, seed); }

const std::vector<Border>& all_borders() {
  static const std::vector<Border> b = {{BorderMode::constant, 0.0f}, {BorderMode::constant, 7.0f},
                                        {BorderMode::replicate, 0},    {BorderMode::reflect, 0},
                                        {BorderMode::reflect101, 0},   {BorderMode::wrap, 0}};
  return b;
}

// Runs one backend on host images (and, for cuda, also device-resident).
Image run(Backend backend, const ConstImageView& src, const Kernel& k, const Border& border) {
  Image dst(src.width, src.height, src.channels, src.type);
  poison(dst.view());
  Options o;
  o.backend = backend;
  filter2d(src, dst.view(), k, border, o);
  return dst;
}

// The cuda backend on a device copy of src; `path`, if given, receives the
// code path it reported.
Image run_device(const ConstImageView& src, const Kernel& k, const Border& border, std::string* path = nullptr) {
  Image dsrc = clone(src, Memory::device);
  Image ddst(src.width, src.height, src.channels, src.type, Memory::device);
  RunInfo info;
  Options o;
  o.backend = Backend::cuda;
  if (path != nullptr) o.info = &info;
  Filter2D f(k, border);
  f(dsrc, ddst.view(), o);
  synchronize(nullptr);
  if (path != nullptr) *path = info.path;
  return clone(ddst.cview(), Memory::host);
}

#if PIXELKIT_WITH_CUDA
/// The current device's SM count (tests size images from it).
int sm_count() {
  int sms = 0;
  EXPECT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  return std::max(sms, 1);
}

/// The current device's peak DRAM bandwidth a SM, as the filter's band rule reads it.
double device_dram_gbps_per_sm() {
  int clock = 0, bus = 0;
  EXPECT_EQ(cudaDeviceGetAttribute(&clock, cudaDevAttrMemoryClockRate, 0), cudaSuccess);
  EXPECT_EQ(cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, 0), cudaSuccess);
  return detail::cuda_filter::peak_dram_gbps_per_sm(clock, bus, sm_count());
}
#endif

std::string label(const ConstImageView& s, const Kernel& k, const Border& b) {
  return std::to_string(s.width) + "x" + std::to_string(s.height) + "x" + std::to_string(s.channels) + " " +
         to_string(s.type) + " kernel " + k.name + " " + std::to_string(k.width) + "x" + std::to_string(k.height) +
         " border " + to_string(b);
}

// ---- kernels and the parser ----------------------------------------------------

TEST(Kernel, NamedSpecs) {
  const Kernel s = parse_kernel("sharpen");
  EXPECT_EQ(s.coeffs, (std::vector<float>{0, -1, 0, -1, 5, -1, 0, -1, 0}));
  EXPECT_EQ(parse_kernel("edge").coeffs, (std::vector<float>{-1, -1, -1, -1, 8, -1, -1, -1, -1}));
  EXPECT_EQ(parse_kernel("laplacian").coeffs, (std::vector<float>{0, 1, 0, 1, -4, 1, 0, 1, 0}));
  EXPECT_EQ(parse_kernel("emboss").coeffs, (std::vector<float>{-2, -1, 0, -1, 1, 1, 0, 1, 2}));
  const Kernel b = parse_kernel("box:5");
  EXPECT_EQ(b.width, 5);
  EXPECT_TRUE(b.separable);
  for (float c : b.coeffs) EXPECT_FLOAT_EQ(c, 1.0f / 25);
  const Kernel u = parse_kernel("unsharp:3:2");
  const auto g = gaussian_coefficients(3, 0);
  EXPECT_NEAR(u.at(1, 1), 3.0 - 2.0 * g[1] * g[1], 1e-6);
  EXPECT_NEAR(u.at(0, 0), -2.0 * g[0] * g[0], 1e-6);
  EXPECT_FALSE(u.separable);
  EXPECT_NEAR(parse_kernel("unsharp:5").at(2, 2), 2.0 - gaussian_coefficients(5, 0)[2] * gaussian_coefficients(5, 0)[2], 1e-6);
}

TEST(Kernel, GaussianMatchesOpenCVDefinition) {
  // OpenCV's fixed tables for n <= 7 and its formula beyond.
  EXPECT_EQ(gaussian_coefficients(3, 0), (std::vector<double>{0.25, 0.5, 0.25}));
  EXPECT_EQ(gaussian_coefficients(7, 0)[3], 0.28125);
  EXPECT_EQ(gaussian_coefficients(9, 0)[4], 0.234375);
  const auto g11 = gaussian_coefficients(11, 0);  // sigma = 0.3*(5-1)+0.8 = 2.0
  double sum = 0;
  for (double v : g11) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_NEAR(g11[5] / g11[4], std::exp(0.5 / (2.0 * 2.0)), 1e-12);
#if PIXELKIT_TEST_HAVE_OPENCV
  for (int n = 1; n <= 31; n += 2)
    for (double sigma : {0.0, 0.7, 2.5}) {
      const cv::Mat cvg = cv::getGaussianKernel(n, sigma, CV_64F);
      const auto ours = gaussian_coefficients(n, sigma);
      for (int i = 0; i < n; ++i) EXPECT_NEAR(ours[i], cvg.at<double>(i), 1e-15) << "n=" << n << " sigma=" << sigma;
    }
#endif
  const Kernel k = parse_kernel("gaussian:5:1.5");
  EXPECT_TRUE(k.separable);
  EXPECT_NEAR(k.at(1, 3), gaussian_coefficients(5, 1.5)[1] * gaussian_coefficients(5, 1.5)[3], 1e-7);
}

TEST(Kernel, InlineMatrixAndFile) {
  const Kernel k = parse_kernel("1,2,1;2,4,2;1,2,1/16");
  EXPECT_EQ(k.width, 3);
  EXPECT_EQ(k.height, 3);
  EXPECT_FLOAT_EQ(k.at(1, 1), 0.25f);
  EXPECT_TRUE(k.separable);
  const Kernel r = parse_kernel("1,0,-1");  // 3 wide, 1 high
  EXPECT_EQ(r.width, 3);
  EXPECT_EQ(r.height, 1);
  const Kernel c = parse_kernel("1;2;1;0;-1");  // 1 wide, 5 high
  EXPECT_EQ(c.width, 1);
  EXPECT_EQ(c.height, 5);
  const std::string path = ::testing::TempDir() + "/pk_kernel.txt";
  {
    std::ofstream f(path);
    f << "# a 3x5 kernel\n1 2 3 2 1\n2, 4, 6, 4, 2   # row 2\n1 2 3 2 1\n/36\n";
  }
  const Kernel fk = parse_kernel("@" + path);
  EXPECT_EQ(fk.width, 5);
  EXPECT_EQ(fk.height, 3);
  EXPECT_FLOAT_EQ(fk.at(1, 2), 6.0f / 36);
  std::remove(path.c_str());
}

void expect_kernel_error(const std::string& spec, const std::string& fragment) {
  try {
    parse_kernel(spec);
    ADD_FAILURE() << "no error for kernel '" << spec << "'";
  } catch (const Error& e) {
    EXPECT_TRUE(e.status() == Status::invalid_argument || e.status() == Status::io) << spec;
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << "kernel '" << spec << "': message '" << e.what() << "' lacks '" << fragment << "'";
  }
}

TEST(Kernel, BadSpecsAreRejectedWithAClearMessage) {
  expect_kernel_error("blur", "unknown kernel 'blur'");
  expect_kernel_error("box:4", "must be odd");
  expect_kernel_error("box:0", "must be odd");
  expect_kernel_error("box:33", "between 1 and 31");
  expect_kernel_error("box:x", "not a whole number");
  expect_kernel_error("box", "box:N");
  expect_kernel_error("gaussian:5:abc", "sigma 'abc' is not a number");
  expect_kernel_error("sharpen:3", "takes no arguments");
  expect_kernel_error("1,2;3", "row 2 has 1 values but row 1 has 2");
  expect_kernel_error("1,2,1;2,4,2;1,2,1/0", "divisor is 0");
  expect_kernel_error("1,2,1/x", "divisor 'x' is not a number");
  expect_kernel_error("1,a,1", "'a' is not a number");
  expect_kernel_error("1,2", "width 2 must be odd");
  expect_kernel_error("1;2", "height 2 must be odd");
  expect_kernel_error("1,,1", "");  // collapses to 1,1 -> even width
  expect_kernel_error("", "empty");
  expect_kernel_error("@/nonexistent/kernel.txt", "/nonexistent/kernel.txt");
  std::string wide = "1";
  for (int i = 0; i < 32; ++i) wide += ",1";
  expect_kernel_error(wide, "between 1 and 31");
}

TEST(Kernel, SeparabilityDetection) {
  EXPECT_TRUE(parse_kernel("1,2,1;2,4,2;1,2,1").separable);
  EXPECT_FALSE(parse_kernel("sharpen").separable);
  EXPECT_TRUE(Kernel::gaussian(31).separable);
  const Kernel k = parse_kernel("1,2,3;2,4,6;-3,-6,-9");
  EXPECT_TRUE(k.separable);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 3; ++x) EXPECT_NEAR(k.col[y] * k.row[x], k.at(y, x), 1e-6);
}

// ---- every backend against ref -------------------------------------------------

struct Case {
  int w, h, c;
  PixelType t;
};

class FilterBackend : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::cuda) PIXELKIT_REQUIRE_GPU();
  }
  void check(const ConstImageView& src, const Kernel& k, const Border& b) {
    const Image want = run(Backend::ref, src, k, b);
    const Image got = run(GetParam(), src, k, b);
    EXPECT_TRUE(agrees(got, want)) << to_string(GetParam()) << " vs ref, " << label(src, k, b);
  }
};

TEST_P(FilterBackend, SmallOddSizesEveryBorderAndChannelCount) {
  const std::vector<Case> cases = {{1, 1, 1, PixelType::u8}, {1, 17, 3, PixelType::u8}, {7, 3, 4, PixelType::u8},
                                   {33, 65, 3, PixelType::u8}, {17, 1, 1, PixelType::f32}, {7, 3, 3, PixelType::f32},
                                   {33, 65, 4, PixelType::f32}, {65, 33, 1, PixelType::u8}};
  const std::vector<Kernel> kernels = {random_kernel(3, 3, 1), Kernel::gaussian(5),  random_kernel(1, 7, 2),
                                       random_kernel(7, 1, 3), random_kernel(3, 9, 4), random_kernel(31, 31, 5),
                                       Kernel::box(1),         Kernel::box(15),        random_kernel(9, 9, 6)};
  std::uint32_t seed = 100;
  for (const auto& cs : cases) {
    const Image src = random_image(cs.w, cs.h, cs.c, cs.t, ++seed);
    for (const auto& k : kernels)
      for (const auto& b : all_borders()) check(src, k, b);
  }
}

TEST_P(FilterBackend, EveryKernelSideFrom1To31) {
  const Image rgb = random_image(61, 47, 3, PixelType::u8, 7);
  const Image gray = random_image(45, 39, 1, PixelType::f32, 8);
  for (int n = 1; n <= 31; n += 2) {
    check(rgb, random_kernel(n, n, n), {BorderMode::reflect101, 0});
    check(gray, random_kernel(n, 32 - n, 50 + n), {BorderMode::constant, 3});  // n x (32-n): 1x31 .. 31x1
    check(rgb, Kernel::gaussian(n), {BorderMode::replicate, 0});
    check(gray, Kernel::box(n), {BorderMode::wrap, 0});
  }
}

TEST_P(FilterBackend, NamedKernelsOnALargeOddImage) {
  const Image rgb = random_image(1023, 769, 3, PixelType::u8, 11);
  const Image f = random_image(1023, 769, 1, PixelType::f32, 12);
  for (const char* spec : {"sharpen", "edge", "gaussian:5", "box:9", "unsharp:5:1.5", "emboss"}) {
    check(rgb, parse_kernel(spec), {BorderMode::reflect101, 0});
    check(f, parse_kernel(spec), {BorderMode::reflect, 0});
  }
  check(rgb, random_kernel(7, 5, 13), {BorderMode::wrap, 0});
}

TEST_P(FilterBackend, SubImageViewsReadAndWriteOnlyTheirWindow) {
  for (PixelType t : {PixelType::u8, PixelType::f32}) {
    const Image parent = random_image(97, 71, 3, t, 21);
    const ConstImageView src = parent.cview().sub(5, 3, 61, 50);  // pitch > width
    Image out_parent = random_image(90, 60, 3, t, 22);
    const Image before = clone(out_parent.cview());
    const ImageView dst = out_parent.view().sub(7, 4, 61, 50);
    const Kernel k = random_kernel(5, 3, 23);
    const Border b{BorderMode::reflect101, 0};
    Options o;
    o.backend = GetParam();
    filter2d(src, dst, k, b, o);
    const Image want = run(Backend::ref, src, k, b);
    EXPECT_TRUE(agrees(dst, want.cview())) << "sub-view " << to_string(t);
    // Everything outside the destination window is untouched.
    for (int y = 0; y < 60; ++y)
      for (int x = 0; x < 90; ++x) {
        if (y >= 4 && y < 54 && x >= 7 && x < 68) continue;
        for (int c = 0; c < 3; ++c) {
          if (t == PixelType::u8)
            ASSERT_EQ(out_parent.row<std::uint8_t>(y)[x * 3 + c], before.row<std::uint8_t>(y)[x * 3 + c]) << x << "," << y;
          else
            ASSERT_EQ(out_parent.row<float>(y)[x * 3 + c], before.row<float>(y)[x * 3 + c]) << x << "," << y;
        }
      }
  }
}

TEST_P(FilterBackend, PhotosInData) {
  for (const char* name : {"astronaut.png", "camera.png", "chelsea.png", "coffee.png"}) {
    if (!have_png()) GTEST_SKIP() << "no PNG codec (OpenCV or libpng) in this build";
    const Image photo = read_image(data_path(name));
    for (const char* spec : {"gaussian:7", "edge", "unsharp:5", "box:11", "laplacian"})
      check(photo, parse_kernel(spec), {BorderMode::reflect101, 0});
  }
}

TEST_P(FilterBackend, OperatorReuseAcrossSizes) {
  // One Filter2D on images that grow and shrink: scratch is reused correctly.
  Filter2D f(Kernel::gaussian(9), {BorderMode::replicate, 0});
  Options o;
  o.backend = GetParam();
  for (auto [w, h] : {std::pair{64, 48}, {301, 207}, {17, 5}, {640, 481}, {33, 33}}) {
    const Image src = random_image(w, h, 3, PixelType::u8, static_cast<std::uint32_t>(w * h));
    Image dst(w, h, 3, PixelType::u8);
    f(src, dst.view(), o);
    EXPECT_TRUE(agrees(dst, run(Backend::ref, src, f.kernel(), f.border()))) << w << "x" << h;
  }
}

TEST_P(FilterBackend, LargeBoxesReuseTheirTableAcrossSizesAndBorders) {
  // box:25 runs through the summed-area table on cpu (past the crossover);
  // one Filter2D keeps its scratch while sizes and types change.
  for (const Border& b : {Border{BorderMode::reflect101, 0}, Border{BorderMode::constant, 4}}) {
    Filter2D f(Kernel::box(25), b);
    Options o;
    o.backend = GetParam();
    for (auto [w, h, t] : {std::tuple{200, 120, PixelType::u8}, {31, 47, PixelType::u8}, {320, 200, PixelType::f32},
                           {64, 64, PixelType::u8}}) {
      const Image src = random_image(w, h, 3, t, static_cast<std::uint32_t>(w + h));
      Image dst(w, h, 3, t);
      RunInfo info;
      o.info = &info;
      f(src, dst.view(), o);
      EXPECT_TRUE(agrees(dst, run(Backend::ref, src, f.kernel(), b))) << w << "x" << h << " " << info.path;
      if (GetParam() == Backend::cpu) EXPECT_NE(info.path.find("summed-area table"), std::string::npos) << info.path;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, FilterBackend, ::testing::Values(Backend::cpu, Backend::cuda),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(FilterCuda, DeviceResidentImagesOnAStream) {
  PIXELKIT_REQUIRE_GPU();
  for (int c : {1, 3, 4})
    for (PixelType t : {PixelType::u8, PixelType::f32}) {
      const Image src = random_image(513, 257, c, t, 31 + c);
      for (const Kernel& k : {random_kernel(3, 3, 1), random_kernel(9, 9, 2), Kernel::gaussian(31), random_kernel(5, 11, 3)})
        for (const Border& b : all_borders()) {
          const Image got = run_device(src, k, b);
          EXPECT_TRUE(agrees(got, run(Backend::ref, src, k, b))) << "device " << label(src, k, b);
        }
    }
}

TEST(FilterCuda, LargePageableHostImagesInStripsThroughPitchedSubViews) {
  PIXELKIT_REQUIRE_GPU();
  // About 19 MB of u8 RGB: several ~4 MB strips over 3 streams, the pageable
  // rows staged through pinned slots by several threads (detail::copy_rows),
  // source and destination sub-views whose pitch is larger than their rows.
  const Image parent = random_image(3011, 2107, 3, PixelType::u8, 31);
  const ConstImageView src = parent.cview().sub(3, 5, 3001, 2099);
  Image out_parent = random_image(3020, 2110, 3, PixelType::u8, 32);
  const Image before = clone(out_parent.cview());
  const ImageView dst = out_parent.view().sub(9, 2, 3001, 2099);
  for (const char* spec : {"gaussian:7", "edge"}) {
    const Kernel k = parse_kernel(spec);
    const Border b{BorderMode::reflect101, 0};
    Options o;
    o.backend = Backend::cuda;
    Filter2D f(k, b);
    f(src, dst, o);
    const Image want = run(Backend::ref, src, k, b);
    EXPECT_TRUE(agrees(dst, want.cview())) << spec;
  }
  // Rows outside the destination window are untouched (first and last rows, and the margins of a middle row).
  for (int y : {0, 1, 2101, 2109})
    ASSERT_EQ(0, std::memcmp(out_parent.row<std::uint8_t>(y), before.row<std::uint8_t>(y), 3020 * 3)) << "row " << y;
  ASSERT_EQ(0, std::memcmp(out_parent.row<std::uint8_t>(1000), before.row<std::uint8_t>(1000), 9 * 3));
  ASSERT_EQ(0, std::memcmp(out_parent.row<std::uint8_t>(1000) + 3010 * 3, before.row<std::uint8_t>(1000) + 3010 * 3, 10 * 3));
}

// The tensor-core separable path (u8; filter_cuda_mma.cuh). The environment
// switch sends every u8 separable kernel there, so the small sizes, the
// non-square shapes and every k-step count (1..3 per pass) are covered, on
// tile-edge sizes, every border and 1/3/4 channels. Its results must agree
// with ref as the FP32 kernels do: within 1 grey level, and off by one on
// almost no element (it is FP32-accurate, not fp16-accurate).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

bool device_has_tensor_core_path() {
#if PIXELKIT_WITH_CUDA
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
  return major >= 8;
#else
  return false;
#endif
}

long long count_differing(const ConstImageView& a, const ConstImageView& b) {
  long long n = 0;
  for (int y = 0; y < a.height; ++y) {
    const auto* ra = a.row<std::uint8_t>(y);
    const auto* rb = b.row<std::uint8_t>(y);
    for (int i = 0; i < a.width * a.channels; ++i) n += ra[i] != rb[i];
  }
  return n;
}

struct SweepSize { int w, h, c; };

/// Filters random u8 images of `sizes` (one seed each, seed + 1, seed + 2,
/// ...) with every kernel and every border on the device: each result agrees
/// with ref, and where `want_path` the path names `path_part` (with
/// `path_iff`, exactly where path_iff(image) holds). Returns the elements
/// that differ from ref and the elements compared, counted over the kernels
/// whose name starts with one of `counted` (weights that put no exact .5 on
/// the rounding edge, where any summation order decides; "" counts all).
std::pair<long long, long long> sweep_device_against_ref(const std::vector<SweepSize>& sizes,
                                                          const std::vector<Kernel>& kernels, std::uint32_t seed,
                                                          bool want_path, const char* path_part,
                                                          std::initializer_list<const char*> counted,
                                                          bool (*path_iff)(const ConstImageView&) = nullptr) {
  long long differing = 0, total = 0;
  for (const auto& sz : sizes) {
    const Image src = random_image(sz.w, sz.h, sz.c, PixelType::u8, ++seed);
    for (const auto& k : kernels)
      for (const auto& b : all_borders()) {
        std::string path;
        const Image got = run_device(src.cview(), k, b, &path);
        const Image want = run(Backend::ref, src, k, b);
        EXPECT_TRUE(agrees(got, want)) << path << ", " << label(src, k, b);
        if (want_path && path_iff != nullptr)
          EXPECT_EQ(path.find(path_part) != std::string::npos, path_iff(src.cview())) << path << ", " << label(src, k, b);
        else if (want_path)
          EXPECT_NE(path.find(path_part), std::string::npos) << path;
        bool count = false;
        for (const char* prefix : counted) count = count || k.name.rfind(prefix, 0) == 0;
        if (count) {
          differing += count_differing(got, want);
          total += static_cast<long long>(sz.w) * sz.h * sz.c;
        }
      }
  }
  return {differing, total};
}

/// A 1283x771 RGB image (seed `seed`) filtered with each spec through host
/// strips (several launches with y ranges): agrees with ref, Gaussians off by
/// one on at most 0.1% of the elements, and where `path_part` the path names
/// it; then a sub-view whose rows are not 4-byte aligned, on the device.
void check_host_strips_and_unaligned_sub_view(std::uint32_t seed, std::initializer_list<const char*> specs,
                                               const char* path_part) {
  const Image big = random_image(1283, 771, 3, PixelType::u8, seed);
  for (const char* spec : specs) {
    const Kernel k = parse_kernel(spec);
    const Border b{BorderMode::reflect101, 0};
    RunInfo info;
    Options o;
    o.backend = Backend::cuda;
    o.info = &info;
    Image out(big.width(), big.height(), 3, PixelType::u8);
    Filter2D f(k, b);
    f(big, out.view(), o);
    const Image want = run(Backend::ref, big, k, b);
    EXPECT_TRUE(agrees(out, want)) << spec << " " << info.path;
    if (path_part != nullptr) EXPECT_NE(info.path.find(path_part), std::string::npos) << info.path;
    if (std::string(spec).rfind("gaussian", 0) == 0)
      EXPECT_LE(count_differing(out, want), static_cast<long long>(big.width()) * big.height() * 3 / 1000) << spec;
    const ConstImageView sub = big.cview().sub(1, 2, 700, 500);
    EXPECT_TRUE(agrees(run_device(sub, k, b), run(Backend::ref, sub, k, b))) << spec << " unaligned sub-view";
  }
}

TEST(FilterCuda, TensorCoreLargeAndSmallSeparableKernelsAgreeWithRef) {
  PIXELKIT_REQUIRE_GPU();
  const bool tc = device_has_tensor_core_path();
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "on");
  std::vector<Kernel> kernels;
  for (int n = 3; n <= 31; n += 2) kernels.push_back(Kernel::gaussian(n));
  kernels.push_back(Kernel::box(9));
  // Non-square factors, signed coefficients, sides 1..31 on each axis.
  kernels.push_back(Kernel::from_factors({0.25f, -0.5f, 1.0f, 0.75f, -0.125f}, std::vector<float>(31, 1.0f / 31), "5x31"));
  kernels.push_back(Kernel::from_factors(std::vector<float>(31, 1.0f / 40), {1.0f}, "31x1"));
  kernels.push_back(Kernel::from_factors({1.0f}, {0.3f, 0.4f, 0.3f}, "1x3"));
  kernels.push_back(Kernel::from_factors({1, 2, 3, 4, 5, 4, 3, 2, 1}, {0.1f, 0.2f, 0.4f, 0.2f, 0.1f}, "9x5 (sum 2.5)"));
  const std::vector<SweepSize> sizes = {{1, 1, 3}, {7, 3, 4}, {63, 31, 1}, {65, 33, 3}, {130, 97, 4}, {129, 64, 3}};
  // Off-by-one counts only mean something without exact ties: a box or a
  // 1/40 kernel puts many exact .5 values on the rounding edge, where any
  // summation order decides; Gaussian weights do not.
  const auto [differing, total] = sweep_device_against_ref(sizes, kernels, 900, tc, "tensor cores", {"gaussian"});
  std::printf("tensor cores vs ref, Gaussians: %lld of %lld elements off by one\n", differing, total);
  EXPECT_LE(differing, total / 1000) << differing << " of " << total << " elements off by one";
  // A large image through host strips (several launches with y ranges), and
  // a sub-view whose rows are not 4-byte aligned (the unaligned load path).
  check_host_strips_and_unaligned_sub_view(77, {"gaussian:31", "gaussian:7", "box:13"}, nullptr);
}

TEST(FilterCuda, TensorCoreBlocksWalkSeveralTiles) {
  PIXELKIT_REQUIRE_GPU();
  // More tiles (32 x 10) than an H100 holds blocks at once (2 per SM): each
  // block of the persistent grid computes several, prefetching the next.
  // Small enough for racecheck (scripts/gpu-check.sh runs it there).
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "on");
  const Image src = random_image(2000, 300, 3, PixelType::u8, 41);
  for (const Border& b : {Border{BorderMode::reflect101, 0}, Border{BorderMode::constant, 9}}) {
    const Kernel k = Kernel::gaussian(9);
    EXPECT_TRUE(agrees(run_device(src, k, b), run(Backend::ref, src, k, b))) << to_string(b);
  }
}

TEST(FilterCuda, TensorCorePathDeclinesWhatItCannotDoExactly) {
  PIXELKIT_REQUIRE_GPU();
  // A constant border value that fp16 cannot hold exactly goes to the FP32
  // kernels, and so does everything with the switch off.
  const Image src = random_image(100, 60, 3, PixelType::u8, 5);
  const Kernel k = Kernel::gaussian(15);
  for (const auto& [env_value, border, want_tc] :
       {std::tuple{"on", Border{BorderMode::constant, 0.1f}, false}, std::tuple{"off", Border{BorderMode::reflect101, 0}, false},
        std::tuple{"on", Border{BorderMode::constant, 2.5f}, true}}) {
    ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", env_value);
    RunInfo info;
    Options o;
    o.backend = Backend::cuda;
    o.info = &info;
    Image out(100, 60, 3, PixelType::u8);
    Filter2D f(k, border);
    f(src, out.view(), o);
    EXPECT_TRUE(agrees(out, run(Backend::ref, src, k, border))) << info.path;
    const bool took_tc = info.path.find("tensor cores") != std::string::npos;
    EXPECT_EQ(took_tc, want_tc && device_has_tensor_core_path()) << env_value << " " << info.path;
  }
}

// The streaming tensor-core separable path (u8, sides 3..31;
// filter_cuda_mma_stream.cuh). "stream" sends every u8 separable kernel it can
// hold there: every Gaussian (both k-step counts of each pass), non-square and
// signed factors, every border, 1/3/4 channels, widths around the 64-pixel
// strip and its 16-pixel warp columns, heights around the 16-row step.
TEST(FilterCuda, TensorCoreStreamingSeparableKernelsAgreeWithRef) {
  PIXELKIT_REQUIRE_GPU();
  const bool tc = device_has_tensor_core_path();
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "stream");
  // The hi + lo instances (FP32-class: off by one on at most 0.1%); the fp16
  // ones that take most of these kernels by default have their own test
  // (TensorCoreKernelsInHalfPrecision).
  ScopedEnv half_off("PIXELKIT_CUDA_FILTER_HALF", "off");
  std::vector<Kernel> kernels;
  for (int n = 3; n <= 31; n += 2) kernels.push_back(Kernel::gaussian(n));
  kernels.push_back(Kernel::box(9));
  kernels.push_back(Kernel::from_factors({0.25f, -0.5f, 1.0f, 0.75f, -0.125f}, std::vector<float>(31, 1.0f / 31), "5x31"));
  kernels.push_back(Kernel::from_factors(std::vector<float>(31, 1.0f / 40), {0.3f, 0.4f, 0.3f}, "31x3"));
  kernels.push_back(Kernel::from_factors({1, 2, 3, 4, 5, 4, 3, 2, 1}, {0.1f, 0.2f, 0.4f, 0.2f, 0.1f}, "9x5 (sum 2.5)"));
  // Factors exact in fp16 (no lo products: OpenCV's fixed Gaussians 5..9 above,
  // and this non-square one), and a 7x7 Gaussian whose factors are not.
  kernels.push_back(Kernel::from_factors({1.0f / 32, 2.0f / 32, 3.0f / 32, 4.0f / 32, 5.0f / 32, 4.0f / 32, 3.0f / 32,
                                          2.0f / 32, 1.0f / 32},
                                         {0.125f, 0.25f, 0.25f, 0.25f, 0.125f}, "9x5 fp16-exact"));
  kernels.push_back(Kernel::gaussian(7, 1.3));
  const std::vector<SweepSize> sizes = {{1, 1, 3},   {7, 3, 4},    {63, 31, 1},  {65, 33, 3},
                                        {130, 97, 4}, {129, 64, 3}, {80, 17, 1}, {47, 100, 3}};
  const auto [differing, total] =
      sweep_device_against_ref(sizes, kernels, 1300, tc, "tensor cores streaming", {"gaussian"});
  std::printf("streaming tensor cores vs ref, Gaussians: %lld of %lld elements off by one\n", differing, total);
  EXPECT_LE(differing, total / 1000) << differing << " of " << total << " elements off by one";
  {
    // The fp16 instances for the kernels the integer ones take by default
    // (Gaussians 5..9 and the fp16-exact 9x5: no lo products).
    ScopedEnv int_off("PIXELKIT_CUDA_FILTER_INT", "off");
    const std::vector<Kernel> exact = {Kernel::gaussian(5), Kernel::gaussian(9), kernels[kernels.size() - 2]};
    const std::vector<SweepSize> few = {{7, 3, 4}, {65, 33, 3}, {129, 64, 3}, {80, 17, 1}};
    const auto [d, n] = sweep_device_against_ref(few, exact, 1400, tc, "fp16-exact factors", {"gaussian"});
    EXPECT_LE(d, n / 1000) << d << " of " << n << " elements off by one";
  }
  // A large image through host strips (several launches with y ranges), and
  // a sub-view whose rows are not 4-byte aligned (every block on the edge path).
  check_host_strips_and_unaligned_sub_view(78, {"gaussian:31", "gaussian:9", "box:13"}, tc ? "tensor cores streaming" : nullptr);
}

TEST(FilterCuda, TensorCoreStreamingBlocksWalkLongSegments) {
  PIXELKIT_REQUIRE_GPU();
  // 63 strips of 64 pixels: a GPU with a few hundred resident blocks gives
  // each strip segments of many 16-row steps, so the window's slots rotate
  // through every phase of the unrolled step loop many times. Small enough
  // for racecheck.
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "stream");
  const Image src = random_image(4000, 420, 3, PixelType::u8, 45);
  // The default layout (one segment per block), then the band walk forced in
  // 32-row bands: about 900 items, so each resident block walks several, with
  // its window and fragments carried from one to the next. gaussian:13 (lo
  // products, no half step) takes the branch-free steady-state step in the
  // interior strips' long segments, the general step at their ends, at the
  // image's top and bottom rows and in the edge strips.
  for (const char* bands : {"", "32"}) {
    ScopedEnv band_env("PIXELKIT_CUDA_FILTER_BANDS", bands);
    for (const Border& b : {Border{BorderMode::reflect101, 0}, Border{BorderMode::constant, 9}}) {
      for (const Kernel& k : {Kernel::gaussian(7), Kernel::gaussian(13), Kernel::gaussian(25)}) {
        std::string path;
        EXPECT_TRUE(agrees(run_device(src, k, b, &path), run(Backend::ref, src, k, b)))
            << to_string(b) << " " << k.name << " bands " << bands;
        if (device_has_tensor_core_path()) {
          EXPECT_NE(path.find("tensor cores streaming"), std::string::npos) << path;
          EXPECT_EQ(path.find(" in bands") != std::string::npos, *bands != '\0') << path;
        }
      }
    }
  }
}

// The lean instances of the streaming tensor-core kernel (fp16, sides 11..17
// and the half-step sizes 5..9 of non-integer factors; integer factors, such
// as gaussian:7; 1 and 3 channels: one prefetch set, 4 blocks a SM;
// mma_stream_tuning::kLeanMinSegSteps) do the same arithmetic as the
// instances of two sets: every output byte must equal theirs
// (PIXELKIT_CUDA_FILTER_LEAN=off; for gaussian:7 that is ref's) and agree
// with ref. A forced band
// walk takes the lean instance on any image; the one wave of a small image
// never does. Four channels have no lean instance (the same path either way).
TEST(FilterCuda, TensorCoreStreamingLeanInstancesEqualTheOthersBitForBit) {
  PIXELKIT_REQUIRE_GPU();
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "stream");
  const std::vector<Kernel> kernels = {Kernel::gaussian(11), Kernel::gaussian(17), Kernel::gaussian(9, 3.0), Kernel::gaussian(7),
                                       Kernel::from_factors({0.1f, 0.2f, 0.4f, 0.2f, 0.1f},
                                                            std::vector<float>(13, 1.0f / 13), "5x13")};
  std::uint32_t seed = 9100;
  for (const char* bands : {"32", ""})
    for (const auto& sz : std::vector<SweepSize>{{333, 211, 3}, {130, 97, 1}, {200, 77, 4}, {64, 40, 3}}) {
      ScopedEnv band_env("PIXELKIT_CUDA_FILTER_BANDS", bands);
      const Image src = random_image(sz.w, sz.h, sz.c, PixelType::u8, ++seed);
      for (const Kernel& k : kernels)
        for (const Border& b : {Border{BorderMode::reflect101, 0}, Border{BorderMode::constant, 7}}) {
          const std::string what = std::to_string(sz.w) + "x" + std::to_string(sz.h) + "x" + std::to_string(sz.c) +
                                   " " + k.name + " " + to_string(b) + " bands " + bands;
          std::string path, other_path;
          const Image lean = run_device(src.cview(), k, b, &path);
          const Image other = [&] {
            ScopedEnv lean_off("PIXELKIT_CUDA_FILTER_LEAN", "off");
            return run_device(src.cview(), k, b, &other_path);
          }();
          EXPECT_EQ(count_differing(lean, other), 0) << what;
          EXPECT_TRUE(agrees(lean, run(Backend::ref, src.cview(), k, b))) << what;
          EXPECT_EQ(path, other_path) << what;
          if (device_has_tensor_core_path()) EXPECT_NE(path.find("tensor cores streaming"), std::string::npos) << path;
        }
    }
}

// Replicate, reflect and reflect101 give the streaming tensor-core kernel's
// lanes beyond the image word loads of an in-image unit and then the tile
// columns of the pixels they map to (MmaStreamParams::fix_edges; notes, run
// 35); PIXELKIT_CUDA_FILTER_EDGES=bytes loads those pixels byte by byte
// through border_index, as before. Both must give the same bytes, on widths
// that leave the last strip 1 to 64 pixels inside the image (so that the
// second-to-last strip's tile reaches beyond it too, for the wider kernels),
// widths that are no multiple of 4 (a lane half inside: bytes either way),
// the narrowest width that takes the fix, a sub-view, and every instance
// family: integer (gaussian:7), hi + lo (gaussian:13), three k-steps down
// with a half step (gaussian:19) and without (gaussian:31), non-square; the
// fp16 instances (the default for 13, 19 and 31) and the hi + lo ones.
TEST(FilterCuda, TensorCoreStreamingEdgeColumnsFromSharedMemoryEqualTheByteLoads) {
  PIXELKIT_REQUIRE_GPU();
  const bool tc = device_has_tensor_core_path();
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "stream");
  const std::vector<Kernel> kernels = {
      Kernel::gaussian(7), Kernel::gaussian(13), Kernel::gaussian(19), Kernel::gaussian(31),
      Kernel::from_factors(std::vector<float>(31, 1.0f / 31), {0.25f, 0.5f, 0.25f}, "31x3"),
      Kernel::from_factors({0.25f, -0.5f, 1.0f, 0.75f, -0.125f}, std::vector<float>(17, 1.0f / 17), "5x17")};
  const std::vector<SweepSize> sizes = {{129, 40, 3}, {130, 33, 1}, {136, 35, 4}, {145, 20, 3}, {161, 18, 3},
                                        {192, 21, 3}, {131, 19, 3}, {32, 23, 3},  {33, 17, 4}, {100, 20, 1}};
  std::uint32_t seed = 8300;
  long long differing = 0, total = 0;
  bool fp32_class = false;  // count the off-by-ones only without the fp16 instances
  auto check = [&](const ConstImageView& src, const std::string& what) {
    for (const Kernel& k : kernels)
      for (BorderMode m : {BorderMode::replicate, BorderMode::reflect, BorderMode::reflect101}) {
        const Border b{m, 0};
        std::string path, bytes_path;
        const Image fixed = run_device(src, k, b, &path);
        const Image bytes = [&] {
          ScopedEnv edges("PIXELKIT_CUDA_FILTER_EDGES", "bytes");
          return run_device(src, k, b, &bytes_path);
        }();
        EXPECT_EQ(count_differing(fixed, bytes), 0) << what << " " << k.name << " " << to_string(b) << " " << path;
        const Image want = run(Backend::ref, src, k, b);
        EXPECT_TRUE(agrees(fixed, want)) << what << " " << k.name << " " << to_string(b);
        if (fp32_class) {
          differing += count_differing(fixed, want);
          total += static_cast<long long>(src.width) * src.height * src.channels;
        }
        if (tc) {
          EXPECT_NE(path.find("tensor cores streaming"), std::string::npos) << path;
          EXPECT_EQ(path, bytes_path);
        }
      }
  };
  // The fp16 instances (gaussian:13, 19, 31 by default), then the hi + lo ones.
  for (const char* half : {"", "off"}) {
    ScopedEnv half_env("PIXELKIT_CUDA_FILTER_HALF", half);
    fp32_class = *half != '\0';
    seed = 8300;
    for (const auto& sz : sizes) {
      const Image src = random_image(sz.w, sz.h, sz.c, PixelType::u8, ++seed);
      check(src.cview(), std::to_string(sz.w) + "x" + std::to_string(sz.h) + "x" + std::to_string(sz.c));
    }
    // A sub-view (4-byte aligned start: 4 pixels in, 3 channels) whose pitch
    // is larger than its width: the lanes beyond its right edge load words of
    // the view, never of the parent's columns beyond it.
    const Image parent = random_image(240, 40, 3, PixelType::u8, 8399);
    check(parent.cview().sub(4, 3, 161, 30), std::string("sub-view 161x30 of 240x40, fp16 ") + half);
  }
  // Integer outputs on the integer instance (gaussian:7) are exact; the others within one grey level, rarely.
  EXPECT_LE(differing, total / 1000) << differing << " of " << total << " elements off by one";
}

TEST(FilterCuda, TensorCoreStreamingIsTheAutomaticPathForSeparableKernelsAbove3x3) {
  PIXELKIT_REQUIRE_GPU();
  // The rule of filter_cuda.cu (runs 11 and 12 of the notes): every u8
  // separable kernel above 3x3, at every size; 3x3 stays on the row-streaming
  // kernel.
  const bool tc = device_has_tensor_core_path();
  const Image small = random_image(300, 200, 3, PixelType::u8, 9);
  const Border b{BorderMode::reflect101, 0};
  for (const auto& [spec, want] : {std::pair{"gaussian:3", false}, std::pair{"gaussian:5", true},
                                   std::pair{"gaussian:9", true}, std::pair{"gaussian:31", true},
                                   std::pair{"box:7", true}, std::pair{"1,2,1;2,4,2;1,2,1/16", false}}) {
    const Kernel k = parse_kernel(spec);
    std::string path;
    EXPECT_TRUE(agrees(run_device(small, k, b, &path), run(Backend::ref, small, k, b))) << spec << " " << path;
    EXPECT_EQ(path.find("tensor cores streaming") != std::string::npos, want && tc) << spec << " " << path;
  }
  // Whole-number factors over a power of two take the integer instances (run
  // 20): OpenCV's fixed Gaussians 5..9; not a Gaussian with its own sigma, nor
  // box:N (1/N). With those off (PIXELKIT_CUDA_FILTER_INT=off), factors exact
  // in fp16 skip the lo products instead (run 14).
  if (tc) {
    for (const char* int_env : {"", "off"}) {
      ScopedEnv int_switch("PIXELKIT_CUDA_FILTER_INT", int_env);
      const bool int_on = *int_env == '\0';
      for (const auto& [spec, exact] : {std::pair{"gaussian:5", true}, std::pair{"gaussian:7", true},
                                        std::pair{"gaussian:9", true}, std::pair{"gaussian:9:1.5", false},
                                        std::pair{"gaussian:11", false}, std::pair{"box:7", false}}) {
        std::string path;
        const Kernel k = parse_kernel(spec);
        EXPECT_TRUE(agrees(run_device(small, k, b, &path), run(Backend::ref, small, k, b))) << spec << " " << path;
        EXPECT_NE(path.find("tensor cores streaming"), std::string::npos) << spec << " " << path;
        EXPECT_EQ(path.find("integer factors") != std::string::npos, exact && int_on) << spec << " " << path;
        EXPECT_EQ(path.find("fp16-exact factors") != std::string::npos, exact && !int_on) << spec << " " << path;
      }
    }
  }
  // 16384 x 1024 = 16.8 M pixels (until run 12, 5x5 and 7x7 left the streaming kernel from 16 M).
  // On a GPU with fast DRAM (the H200) one channel's gaussian:5 walks the
  // row-streaming kernel's bands from 0.65 waves (this image: 0.78 at 20
  // warps a SM on 132 SMs; notes, run 46), not the tensor cores.
  bool fast = false;
#if PIXELKIT_WITH_CUDA
  fast = device_dram_gbps_per_sm() >= detail::cuda_filter::kStreamFastMemoryGBpsPerSM;
#endif
  const Image big = clone(random_image(16384, 1024, 1, PixelType::u8, 10).cview(), Memory::device);
  Image out(16384, 1024, 1, PixelType::u8, Memory::device);
  for (const auto& [spec, want] : {std::pair{"gaussian:5", !fast}, std::pair{"gaussian:7", true},
                                   std::pair{"gaussian:9", true}, std::pair{"gaussian:3", false}}) {
    RunInfo info;
    Options o;
    o.backend = Backend::cuda;
    o.info = &info;
    Filter2D f(parse_kernel(spec), b);
    f(big, out.view(), o);
    synchronize(nullptr);
    EXPECT_EQ(info.path.find("tensor cores streaming") != std::string::npos, want && tc) << spec << " " << info.path;
    if (tc && !want && std::string(spec) == "gaussian:5")
      EXPECT_NE(info.path.find("streaming 5x5 integer factors symmetric in bands"), std::string::npos) << info.path;
  }
}

TEST(FilterCuda, TensorCoreStreamingPathDeclinesWhatItCannotDoExactly) {
  PIXELKIT_REQUIRE_GPU();
  // Declined: a constant border value that is not a whole grey level, a 1-tap side,
  // factors that no split of the kernel's 2^24 scale keeps below 2^15 in fp16
  // (max |row| * max |col| of 64 or more), and coefficients hi + lo fp16 parts cannot
  // hold to FP32 accuracy. Each still agrees with ref on whatever path took it.
  // Large factors within that bound are taken ("9x3 large": sum |row| * 255 is beyond
  // fp16's range, the scaled intermediate is not).
  const Image src = random_image(150, 70, 3, PixelType::u8, 7);
  struct Case { Border border; Kernel k; bool want; };
  const std::vector<Case> cases = {
      {{BorderMode::constant, 0.1f}, Kernel::gaussian(15), false},
      {{BorderMode::constant, 2.5f}, Kernel::gaussian(15), false},
      {{BorderMode::constant, 300.0f}, Kernel::gaussian(15), false},
      {{BorderMode::constant, 255.0f}, Kernel::gaussian(15), true},
      {{BorderMode::reflect101, 0}, Kernel::from_factors(std::vector<float>(31, 1.0f / 40), {1.0f}, "31x1"), false},
      {{BorderMode::reflect101, 0}, Kernel::from_factors(std::vector<float>(9, 100.0f), {1.0f, 1.0f, 1.0f}, "9x3 big"), false},
      {{BorderMode::reflect101, 0}, Kernel::from_factors(std::vector<float>(9, 10.0f), {0.5f, 0.5f, 0.5f}, "9x3 large"), true},
      {{BorderMode::reflect101, 0}, Kernel::from_factors({1e-3f, 3e-3f, 1e-3f}, {1.0f, 1.0f, 1.0f}, "small"), true},
      {{BorderMode::reflect101, 0}, Kernel::from_factors({1e-6f, 1.0f, 1e-6f}, {1.0f, 1.0f, 1.0f}, "subnormal lo"), true}};
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "stream");
  for (const auto& c : cases) {
    RunInfo info;
    Options o;
    o.backend = Backend::cuda;
    o.info = &info;
    Image out(src.width(), src.height(), 3, PixelType::u8);
    Filter2D f(c.k, c.border);
    f(src, out.view(), o);
    EXPECT_TRUE(agrees(out, run(Backend::ref, src, c.k, c.border))) << c.k.name << " " << info.path;
    const bool took = info.path.find("tensor cores streaming") != std::string::npos;
    EXPECT_EQ(took, c.want && device_has_tensor_core_path()) << c.k.name << " " << info.path;
  }
}

#if PIXELKIT_WITH_CUDA
// Host side of the integer instances, no GPU needed (CI runs it): the whole
// numbers p, q and the power a with q[y] * p[x] / 2^a equal to every
// coefficient, and what is declined.
TEST(FilterCudaHost, IntegerFactorsAreFoundExactlyOrDeclined) {
  struct Want { const char* spec; std::vector<int> p, q; int a; };
  const std::vector<Want> wants = {
      {"gaussian:5", {1, 4, 6, 4, 1}, {1, 4, 6, 4, 1}, 8},
      {"gaussian:7", {2, 7, 14, 18, 14, 7, 2}, {2, 7, 14, 18, 14, 7, 2}, 12},
      {"gaussian:9", {4, 13, 30, 51, 60, 51, 30, 13, 4}, {4, 13, 30, 51, 60, 51, 30, 13, 4}, 16},
      {"1,2,1;2,4,2;1,2,1/16", {1, 2, 1}, {1, 2, 1}, 4},
      {"0,0,0;1,255,1;1,255,1/1024", {1, 255, 1}, {0, 1, 1}, 10},  // pass 1's sums reach 65535
      {"1,1,1;1,1,1;1,1,1/16", {1, 1, 1}, {1, 1, 1}, 4}};
  for (const auto& w : wants) {
    const Kernel k = parse_kernel(w.spec);
    std::vector<int> p(k.width), q(k.height);
    int a = -1;
    ASSERT_TRUE(detail::cuda_filter::mma_stream_integer_factors(k.coeffs.data(), k.width, k.height, p.data(), q.data(), &a))
        << w.spec;
    EXPECT_EQ(p, w.p) << w.spec;
    EXPECT_EQ(q, w.q) << w.spec;
    EXPECT_EQ(a, w.a) << w.spec;
  }
  // Declined: negative factors, a gain above 1 (outputs beyond 255), pass 1's
  // sums beyond 16 bits, a factor beyond 255, sides above 17, factors that are
  // no whole numbers over a power of two, an all-zero kernel.
  std::vector<Kernel> declined = {parse_kernel("1,-2,1;2,-4,2;1,-2,1/16"), parse_kernel("1,2,1;2,4,2;1,2,1/8"),
                                  parse_kernel("255,255,255;0,0,0;0,0,0/65536"), parse_kernel("1,256,1/512"),
                                  Kernel::from_factors(std::vector<float>(19, 1.0f / 32), {0.25f, 0.5f, 0.25f}, "19x3"),
                                  Kernel::from_factors({0.25f, 0.5f, 0.25f}, std::vector<float>(19, 1.0f / 32), "3x19"),
                                  Kernel::gaussian(9, 1.5), Kernel::box(5), parse_kernel("0,0,0;0,0,0;0,0,0")};
  for (const Kernel& k : declined) {
    std::vector<int> p(k.width), q(k.height);
    int a = -1;
    EXPECT_FALSE(detail::cuda_filter::mma_stream_integer_factors(k.coeffs.data(), k.width, k.height, p.data(), q.data(), &a))
        << k.name;
  }
}

// Host side of the row-streaming kernel's fp16 instance, no GPU needed: the
// error bound against values worked by hand, and which kernels it admits.
TEST(FilterCudaHost, HalfPrecisionBoundAdmitsSmoothingKernelsOnly) {
  using detail::cuda_filter::kStreamHalfMaxError;
  using detail::cuda_filter::stream_half_error_bound;
  // The identity: the four operations before the 1 reach nothing (half the
  // subnormal spacing, 2^-25, at the instance's scale of 2^-10: 2^-15 each),
  // the 1 and the four after it 255 (half a unit in the last place there,
  // 2^(7 - 11) = 1/16, each), though every result is exact in fact: a bound,
  // not an estimate.
  const float identity[9] = {0, 0, 0, 0, 1, 0, 0, 0, 0};
  EXPECT_DOUBLE_EQ(stream_half_error_bound(identity), 4 * std::ldexp(1.0, -15) + 5.0 / 16);
  // Admitted: smoothing kernels of gain 1 (products and sums below 256).
  for (const char* spec : {"1,2,1;2,5,2;1,2,1/17", "0,1,0;1,4,1;0,1,0/8", "1,1,1;1,2,1;1,1,1/10"}) {
    const Kernel k = parse_kernel(spec);
    ASSERT_FALSE(k.separable) << spec;
    const double e = stream_half_error_bound(k.coeffs.data());
    EXPECT_GT(e, 0.0) << spec;
    EXPECT_LE(e, kStreamHalfMaxError) << spec;
  }
  // Declined by the bound: sums that reach beyond 256 on the way (emboss: up
  // to 5 * 255; a gain of 2).
  for (const char* spec : {"emboss", "1,2,1;2,5,2;1,2,1/8.5"}) {
    const double e = stream_half_error_bound(parse_kernel(spec).coeffs.data());
    EXPECT_GT(e, kStreamHalfMaxError) << spec;
    EXPECT_LT(e, 100.0) << spec;
  }
  // Declined outright (HUGE_VAL): a coefficient of magnitude 4 or more, beyond
  // fp16's 65504 once scaled by 2^14 (sharpen's 5, edge's 8, laplacian's -4),
  // and one that is not finite. 3.99 still fits.
  for (const char* spec : {"sharpen", "edge", "laplacian", "0,0,0;0,1,0;0,0,4"})
    EXPECT_EQ(stream_half_error_bound(parse_kernel(spec).coeffs.data()), HUGE_VAL) << spec;
  const float nan[9] = {0, 0, 0, 0, 1, 0, 0, 0, std::nanf("")};
  EXPECT_EQ(stream_half_error_bound(nan), HUGE_VAL);
  const float fits[9] = {0, 0, 0, 0, 3.99f, 0, 0, 0, 0};
  EXPECT_LT(stream_half_error_bound(fits), 100.0);
}

// Host side of the row-streaming kernel's 5x5 instances (notes, run 46), no
// GPU needed: which whole-number kernels take int5sym (factors symmetric with
// outer ones 1 once scaled to the divisor 2^8: q[y] p[x] / 2^8); the rest
// keep int5, and PIXELKIT_CUDA_FILTER_SYM=off (allow_sym false) keeps every
// kernel there. (The GPU test StreamingFiveByFiveWholeNumberKernelsAreExact-
// InBands runs them.)
TEST(FilterCudaHost, StreamingSymmetricInstanceTakesOuterOnesOnly) {
  using detail::cuda_filter::stream_kernel_for;
  const std::vector<std::pair<Kernel, bool>> kernels = {
      {parse_kernel("gaussian:5"), true},  // [1 4 6 4 1] x [1 4 6 4 1] / 2^8
      {parse_kernel("1,4,6,4,1;4,16,24,16,4;6,24,36,24,6;4,16,24,16,4;1,4,6,4,1/256"), true},
      {Kernel::from_factors({1.f / 8, 2.f / 8, 2.f / 8, 2.f / 8, 1.f / 8}, {1.f / 32, 6.f / 32, 18.f / 32, 6.f / 32, 1.f / 32},
                            "[1 2 2 2 1] x [1 6 18 6 1]"),
       true},
      // A divisor of 2^7: q is held times 2, so its outer factors are 2.
      {Kernel::from_factors({1.f / 8, 2.f / 8, 2.f / 8, 2.f / 8, 1.f / 8}, {1.f / 16, 4.f / 16, 6.f / 16, 4.f / 16, 1.f / 16},
                            "binomial x [1 2 2 2 1]"),
       false},
      {Kernel::from_factors({1.f / 16, 4.f / 16, 6.f / 16, 4.f / 16, 1.f / 16}, {1.f / 16, 4.f / 16, 6.f / 16, 3.f / 16, 2.f / 16},
                            "outer ones, lopsided"),
       false},
      {Kernel::from_factors({0.f, 1.f / 8, 2.f / 8, 3.f / 8, 2.f / 8}, {1.f / 4, 0.f, 2.f / 4, 0.f, 1.f / 4}, "lopsided"),
       false},
  };
  for (const auto& [k, sym] : kernels)
    for (int channels : {1, 3, 4}) {
      const auto info = stream_kernel_for(channels, k, true, true, true);
      ASSERT_NE(info.fn, nullptr) << k.name;
      EXPECT_TRUE(info.integer) << k.name;
      EXPECT_EQ(info.side, 5) << k.name;
      EXPECT_EQ(info.symmetric, sym) << k.name;
      const auto general = stream_kernel_for(channels, k, true, true, false);
      EXPECT_FALSE(general.symmetric) << k.name;
      EXPECT_NE(general.fn, nullptr) << k.name;
      EXPECT_EQ(info.fn == general.fn, !sym) << k.name;
    }
  // Not whole numbers over a power of two: int5, which make_stream_coeffs
  // then declines (the tensor-core kernels take it).
  EXPECT_FALSE(stream_kernel_for(3, parse_kernel("gaussian:5:1.5"), true, true, true).symmetric);
}

// Host side of the row-streaming kernel's layout rule (notes, run 45), no GPU
// needed: the peak DRAM bandwidth a SM from the attributes the H100 and H200
// report, and where each walks bands, at the wave fractions run 45 measured
// (waves of 3168 warps: the RGB fp16 band instance's 6 blocks of 4 on 132 SMs).
TEST(FilterCudaHost, StreamingBandRuleFollowsTheMemory) {
  using detail::cuda_filter::peak_dram_gbps_per_sm;
  using detail::cuda_filter::stream_bands_by_rule;
  const double h100 = peak_dram_gbps_per_sm(2619000, 5120, 132);  // 3352 GB/s
  const double h200 = peak_dram_gbps_per_sm(3201000, 6016, 132);  // 4814 GB/s (2 x 3201 MHz x 752 bytes)
  EXPECT_NEAR(h100 * 132, 3352.3, 0.1);
  EXPECT_NEAR(h200 * 132, 4814.3, 0.1);
  EXPECT_EQ(peak_dram_gbps_per_sm(0, 5120, 132), 0.0);  // unknown: the H100's rule
  EXPECT_EQ(peak_dram_gbps_per_sm(2619000, 5120, 0), 0.0);
  constexpr long long kWave = 3168;
  struct Case {
    long long segs16;  // 16-row segments over all strips
    bool h100, h200;   // bands?
  };
  for (const Case& c : {Case{1350, false, false},   // 1440p RGB, 0.43 waves
                        Case{2800, false, false},   // 0.88: the 16-row bands would leave SMs idle
                        Case{3105, false, true},    // 4K RGB, 0.98
                        Case{kWave, false, true},   // exactly one wave
                        Case{3485, false, false},   // 1.10 (4K four channels)
                        Case{4050, false, false},   // 1.28 (8K one channel)
                        Case{4850, false, false},   // 1.53
                        Case{5400, false, true},    // 5K RGB, 1.70
                        Case{6180, false, true},    // 1.95 (5K four channels)
                        Case{3 * kWave, true, true},
                        Case{12150, true, true}}) {  // 8K RGB, 3.8
    for (int channels : {1, 3, 4}) {
      EXPECT_EQ(stream_bands_by_rule(3, c.segs16, kWave, h100, channels), c.h100) << c.segs16;
      EXPECT_EQ(stream_bands_by_rule(3, c.segs16, kWave, h200, channels), c.h200) << c.segs16;
      EXPECT_EQ(stream_bands_by_rule(3, c.segs16, kWave, 0.0, channels), c.h100) << c.segs16;
    }
  }
  // The 5x5 integer instances (5 blocks of 4 warps a SM: waves of 2640
  // warps): from 1.5 waves, and on fast memory for 1 and 4 channels from 0.65
  // (notes, run 46: the H200 points measured).
  constexpr long long kWave5 = 2640;
  struct Case5 {
    int channels;
    long long segs16;
    bool h100, h200;
  };
  for (const Case5& c : {Case5{1, 1080, false, false},   // 4K one channel, 0.41 waves
                         Case5{1, 1458, false, false},   // 0.55
                         Case5{1, 1800, false, true},    // 5K one channel, 0.68
                         Case5{4, 1800, false, true},    // 1440p four channels, 0.68
                         Case5{1, 2340, false, true},    // 0.89
                         Case5{4, 3240, false, true},    // 1.23
                         Case5{3, 1734, false, false},   // 0.66
                         Case5{3, 2562, false, false},   // 0.97
                         Case5{3, 3105, false, false},   // 4K RGB, 1.18
                         Case5{3, 4266, true, true},     // 1.62
                         Case5{1, 4050, true, true},     // 8K one channel, 1.53
                         Case5{4, 4050, true, true}}) {  // 4K four channels, 1.53
    EXPECT_EQ(stream_bands_by_rule(5, c.segs16, kWave5, h100, c.channels), c.h100) << c.channels << " " << c.segs16;
    EXPECT_EQ(stream_bands_by_rule(5, c.segs16, kWave5, h200, c.channels), c.h200) << c.channels << " " << c.segs16;
  }
}

// Host side of the tensor-core kernels' fp16 instances (notes, run 44), no
// GPU needed: both error bounds against values worked by hand, and which
// kernels they admit.
TEST(FilterCudaHost, TensorCoreHalfPrecisionBoundsAdmitSmoothingKernelsOnly) {
  using detail::cuda_filter::kStreamHalfMaxError;
  using detail::cuda_filter::mma_dense_half_error_bound;
  using detail::cuda_filter::mma_stream_half_bound;
  // Dense: 0.1 is 0.0999755859375 in fp16; nine of them miss 9 times the
  // difference on 255, and nine fp32 sums of at most 255 * 9 * 0.09998 lose
  // 4 units in the last place (2^-21 of it) each.
  const float tenth[9] = {0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f};
  const double h = 0.0999755859375;
  EXPECT_DOUBLE_EQ(mma_dense_half_error_bound(tenth, 9),
                   255.0 * 9 * (static_cast<double>(0.1f) - h) + 9 * std::ldexp(255.0 * 9 * h, -21));
  // Separable: [1 2 1] / 4 each way is exact in fp16, so only pass 1's result
  // rounds: at most 255, held times 2^(15 - 24) (the row factors' scale is
  // 2^15, since 0.5 < 1), where fp16's half unit in the last place is 2^-13,
  // i.e. 2^-4 of a grey level; plus the fp32 sums of 3 terms each way.
  const std::vector<float> b3 = {0.25f, 0.5f, 0.25f};
  const double e1 = 3 * std::ldexp(255.0, -21) + 1.0 / 16;
  EXPECT_DOUBLE_EQ(mma_stream_half_bound(b3.data(), 3, b3.data(), 3), e1 + 3 * std::ldexp(255.0 + e1, -21));
  // Admitted: Gaussians of every side, with their own sigma, boxes, random
  // dense kernels of gain 2 (the tests' random_kernel) and gain 1 (the
  // benchmark's kind).
  for (int n = 5; n <= 31; n += 2) {
    const Kernel k = Kernel::gaussian(n);
    const double e = mma_stream_half_bound(k.row.data(), n, k.col.data(), n);
    EXPECT_GT(e, 0.0) << k.name;
    EXPECT_LE(e, kStreamHalfMaxError) << k.name;
  }
  for (const Kernel& k : {Kernel::gaussian(7, 1.3), Kernel::box(13), Kernel::gaussian(21, 9.0)})
    EXPECT_LE(mma_stream_half_bound(k.row.data(), k.width, k.col.data(), k.height), kStreamHalfMaxError) << k.name;
  for (int n : {3, 5, 7, 9}) {
    const Kernel k = random_kernel(n, n, 60 + n);
    EXPECT_LE(mma_dense_half_error_bound(k.coeffs.data(), n * n), kStreamHalfMaxError) << k.name;
  }
  // Declined by the bound: a gain of 135 (the intermediate reaches 255 * 90,
  // where fp16's unit is 16), a dense kernel of gain 50; outright (HUGE_VAL):
  // factors make_mma_stream_coeffs declines, a coefficient beyond fp16.
  const std::vector<float> tens(9, 10.0f), halves = {0.5f, 0.5f, 0.5f};
  EXPECT_GT(mma_stream_half_bound(tens.data(), 9, halves.data(), 3), kStreamHalfMaxError);
  const Kernel loud = random_kernel(5, 5, 66);
  std::vector<float> louder(loud.coeffs.begin(), loud.coeffs.end());
  for (float& c : louder) c *= 25.0f;
  EXPECT_GT(mma_dense_half_error_bound(louder.data(), 25), kStreamHalfMaxError);
  const std::vector<float> hundreds(9, 100.0f), ones = {1.0f, 1.0f, 1.0f};
  EXPECT_EQ(mma_stream_half_bound(hundreds.data(), 9, ones.data(), 3), HUGE_VAL);
  const float big[1] = {70000.0f};
  EXPECT_EQ(mma_dense_half_error_bound(big, 1), HUGE_VAL);
}
#endif

// The tensor-core kernels in fp16 where the bounds above allow (notes, run
// 44): the streaming kernel's F16 instances (fp16 factors, pass 1's result
// rounded to fp16, no lo parts) for square separable kernels, two k-steps
// each way (box:13, gaussian:11) or three (gaussian:21, 31), with a half last
// step (gaussian:7 with its own sigma, 21) or not; the dense kernel's fp16
// coefficients for dense kernels up to 9x9. Every output within 1 of ref's on
// every size, border and channel count of the hi + lo instances' sweeps, the
// path naming it; the same bytes in one wave and in bands of 32 rows (each
// block walking several items with its fragments); with
// PIXELKIT_CUDA_FILTER_HALF=off the hi + lo instances, and never for a
// non-square separable kernel (no instance) or a kernel beyond the bound.
TEST(FilterCuda, TensorCoreKernelsInHalfPrecision) {
  PIXELKIT_REQUIRE_GPU();
  const bool tc = device_has_tensor_core_path();
  const std::vector<SweepSize> sizes = {{1, 1, 3},   {7, 3, 4},    {63, 31, 1},  {65, 33, 3},
                                        {130, 97, 4}, {129, 64, 3}, {80, 17, 1}, {47, 100, 3}};
  {
    ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "stream");
    const std::vector<Kernel> kernels = {Kernel::box(13), Kernel::gaussian(11), Kernel::gaussian(7, 1.3),
                                         Kernel::gaussian(21), Kernel::gaussian(31)};
#if PIXELKIT_WITH_CUDA
    for (const Kernel& k : kernels)
      ASSERT_LE(detail::cuda_filter::mma_stream_half_bound(k.row.data(), k.width, k.col.data(), k.height),
                detail::cuda_filter::kStreamHalfMaxError)
          << k.name;
#endif
    const auto [differing, total] = sweep_device_against_ref(sizes, kernels, 1500, tc, " in fp16", {""});
    std::printf("streaming tensor cores in fp16 vs ref: %lld of %lld elements off by one\n", differing, total);
    EXPECT_LE(differing, total / 5) << differing << " of " << total << " elements off by one";
    // 63 strips, long segments in one wave, then about 900 items in 32-row bands.
    const Image src = random_image(4000, 420, 3, PixelType::u8, 1600);
    for (const Kernel& k : {Kernel::gaussian(13), Kernel::gaussian(25)}) {
      const Border b{BorderMode::reflect101, 0};
      std::string wave_path, band_path;
      const Image wave = run_device(src.cview(), k, b, &wave_path);
      Image banded;
      {
        ScopedEnv band_env("PIXELKIT_CUDA_FILTER_BANDS", "32");
        banded = run_device(src.cview(), k, b, &band_path);
      }
      EXPECT_EQ(count_differing(wave.cview(), banded.cview()), 0) << k.name << " " << wave_path << " / " << band_path;
      EXPECT_TRUE(agrees(wave, run(Backend::cpu, src, k, b))) << k.name << " " << wave_path;
      if (tc) {
        EXPECT_NE(wave_path.find(" in fp16"), std::string::npos) << wave_path;
        EXPECT_NE(band_path.find(" in fp16 in bands"), std::string::npos) << band_path;
      }
    }
    // The switch, and a non-square kernel (no F16 instance: hi + lo).
    const Image small = random_image(150, 70, 3, PixelType::u8, 1700);
    for (const char* half : {"", "off"}) {
      ScopedEnv half_env("PIXELKIT_CUDA_FILTER_HALF", half);
      for (const Kernel& k : {Kernel::gaussian(15), Kernel::from_factors(std::vector<float>(31, 1.0f / 31),
                                                                         {0.25f, 0.5f, 0.25f}, "31x3")}) {
        std::string path;
        EXPECT_TRUE(agrees(run_device(small.cview(), k, Border{}, &path), run(Backend::ref, small, k, Border{})))
            << path;
        if (tc) {
          EXPECT_NE(path.find("tensor cores streaming"), std::string::npos) << path;
          EXPECT_EQ(path.find(" in fp16") != std::string::npos, *half == '\0' && k.name != "31x3") << half << path;
        }
      }
    }
  }
  {
    ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "dense");
    std::vector<Kernel> kernels;
    std::uint32_t kseed = 1800;
    for (int n : {3, 5, 7, 9}) kernels.push_back(random_kernel(n, n, ++kseed));
    kernels.push_back(random_kernel(5, 9, ++kseed));
#if PIXELKIT_WITH_CUDA
    for (const Kernel& k : kernels)
      ASSERT_LE(detail::cuda_filter::mma_dense_half_error_bound(k.coeffs.data(), k.width * k.height),
                detail::cuda_filter::kStreamHalfMaxError)
          << k.name;
#endif
    const auto [differing, total] = sweep_device_against_ref(sizes, kernels, 1900, tc, " in fp16", {""});
    std::printf("dense tensor cores in fp16 vs ref: %lld of %lld elements off by one\n", differing, total);
    EXPECT_LE(differing, total / 5) << differing << " of " << total << " elements off by one";
    {
      // Tiles of 16 rows (the instance with tile heights at run time).
      ScopedEnv rows_env("PIXELKIT_CUDA_FILTER_DENSE_ROWS", "16");
      const std::vector<SweepSize> few = {{97, 70, 3}, {70, 17, 4}};
      const auto [d, n] =
          sweep_device_against_ref(few, {kernels[1], kernels[2]}, 2000, tc, " in fp16 in 16-row tiles", {""});
      EXPECT_LE(d, n / 5) << d << " of " << n << " elements off by one";
    }
    // The switch, and a kernel of gain 50 (beyond the bound: hi + lo).
    std::vector<float> loud(kernels[1].coeffs.begin(), kernels[1].coeffs.end());
    for (float& c : loud) c *= 25.0f;
    const Kernel louder = Kernel::from_matrix(5, 5, loud, "random5x5 times 25");
    const Image small = random_image(150, 70, 3, PixelType::u8, 2100);
    for (const char* half : {"", "off"}) {
      ScopedEnv half_env("PIXELKIT_CUDA_FILTER_HALF", half);
      for (const Kernel& k : {kernels[1], louder}) {
        std::string path;
        EXPECT_TRUE(agrees(run_device(small.cview(), k, Border{}, &path), run(Backend::ref, small, k, Border{})))
            << path;
        if (tc) {
          EXPECT_NE(path.find("dense tensor cores"), std::string::npos) << path;
          EXPECT_EQ(path.find(" in fp16") != std::string::npos, *half == '\0' && k.name != louder.name) << half << path;
        }
      }
    }
  }
}

// The streaming kernel's integer instances (run 20 of the notes): kernels that
// are exactly q[y] * p[x] / 2^a with whole numbers 0..255 run on u8 x u8
// products with exact sums, rounded once (ties to even, as ref), so they agree
// with ref exactly, not within one grey level: OpenCV's fixed Gaussians 5..9,
// binomials, non-square ones, sides up to 17, every border, 1/3/4 channels,
// widths around the 64-pixel strip, heights around the 16-row step, and a
// random image with many exact .5 ties (a 3x3 binomial over 16).
TEST(FilterCuda, TensorCoreStreamingIntegerKernelsAreExact) {
  PIXELKIT_REQUIRE_GPU();
  const bool tc = device_has_tensor_core_path();
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "stream");
  const std::vector<Kernel> kernels = {
      Kernel::gaussian(5), Kernel::gaussian(7), Kernel::gaussian(9), parse_kernel("1,2,1;2,4,2;1,2,1/16"),
      Kernel::from_factors({1.0f / 16, 4.0f / 16, 6.0f / 16, 4.0f / 16, 1.0f / 16}, {0.25f, 0.5f, 0.25f}, "5x3"),
      Kernel::from_factors({0.5f, 0.5f, 0.0f}, std::vector<float>(17, 1.0f / 32), "3x17"),
      Kernel::from_factors(std::vector<float>(17, 3.0f / 64), {0.125f, 0.25f, 0.25f, 0.25f, 0.125f}, "17x5"),
      Kernel::from_factors({1, 255, 1}, {1.0f / 1024, 1.0f / 1024, 0.0f}, "3x3 large p")};
  const std::vector<SweepSize> sizes = {{1, 1, 3},   {7, 3, 4},    {63, 31, 1},  {65, 33, 3},
                                        {130, 97, 4}, {129, 64, 3}, {80, 17, 1}, {47, 100, 3}};
  std::uint32_t seed = 1500;
  for (const auto& sz : sizes) {
    const Image src = random_image(sz.w, sz.h, sz.c, PixelType::u8, ++seed);
    for (const auto& k : kernels)
      for (const auto& b : all_borders()) {
        std::string path;
        const Image got = run_device(src.cview(), k, b, &path);
        const Image want = run(Backend::ref, src, k, b);
        EXPECT_EQ(count_differing(got, want), 0) << path << ", " << label(src, k, b);
        if (tc) EXPECT_NE(path.find("integer factors"), std::string::npos) << path << ", " << label(src, k, b);
      }
  }
  // Long segments and the band walk (blocks carry their window from item to
  // item), the steady rows of a tall image, a constant border of 255.
  const Image tall = random_image(1000, 1200, 3, PixelType::u8, 1600);
  for (const char* bands : {"", "32"}) {
    ScopedEnv band_env("PIXELKIT_CUDA_FILTER_BANDS", bands);
    for (const Border& b : {Border{BorderMode::reflect101, 0}, Border{BorderMode::constant, 255}}) {
      std::string path;
      const Kernel k = Kernel::gaussian(9);
      EXPECT_EQ(count_differing(run_device(tall, k, b, &path), run(Backend::ref, tall, k, b)), 0)
          << to_string(b) << " bands " << bands << " " << path;
      if (tc) EXPECT_NE(path.find("integer factors"), std::string::npos) << path;
    }
  }
  // Declined, each still within one grey level of ref on the fp16 instances:
  // negative factors, a gain above 1 (outputs beyond 255), pass 1's sums beyond
  // 16 bits (255 * 3 * 255), a side of 19, factors that are no whole numbers
  // over a power of two.
  const Image src = random_image(150, 70, 3, PixelType::u8, 1601);
  const Border b{BorderMode::reflect101, 0};
  for (const Kernel& k : {parse_kernel("1,-2,1;2,-4,2;1,-2,1/16"), parse_kernel("1,2,1;2,4,2;1,2,1/8"),
                          Kernel::from_factors({255, 255, 255}, {1.0f / 65536, 0.0f, 0.0f}, "3x3 sums beyond 16 bits"),
                          Kernel::from_factors(std::vector<float>(19, 1.0f / 32), {0.25f, 0.5f, 0.25f}, "19x3"),
                          Kernel::gaussian(9, 1.5), Kernel::box(5)}) {
    std::string path;
    EXPECT_TRUE(agrees(run_device(src, k, b, &path), run(Backend::ref, src, k, b))) << k.name << " " << path;
    EXPECT_EQ(path.find("integer factors"), std::string::npos) << k.name << " " << path;
    if (tc) EXPECT_NE(path.find("tensor cores streaming"), std::string::npos) << k.name << " " << path;
  }
}

// The dense tensor-core path (u8, sides up to 9; filter_cuda_mma_dense.cuh).
// "dense" sends every u8 kernel up to 9x9 there, separable ones too, so both
// tile layouts (interleaved for a reach of at most 4 elements, planar
// beyond), every kernel height, kernels with and without fp16-inexact
// coefficients, every border and 1/3/4 channels are covered, on sizes around
// the 64x64 tile and its 16-pixel fast-path margin.
TEST(FilterCuda, TensorCoreDenseKernelsAgreeWithRef) {
  PIXELKIT_REQUIRE_GPU();
  const bool tc = device_has_tensor_core_path();
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "dense");
  // hi + lo coefficients (FP32-class); fp16 ones: TensorCoreKernelsInHalfPrecision.
  ScopedEnv half_off("PIXELKIT_CUDA_FILTER_HALF", "off");
  std::vector<Kernel> kernels;
  std::uint32_t kseed = 70;
  for (int n : {3, 5, 7, 9}) kernels.push_back(random_kernel(n, n, ++kseed));
  for (auto [w, h] : {std::pair{1, 9}, std::pair{9, 1}, std::pair{3, 7}, std::pair{7, 3}, std::pair{5, 9}, std::pair{1, 1}})
    kernels.push_back(random_kernel(w, h, ++kseed));
  for (const char* spec : {"sharpen", "edge", "emboss", "gaussian:3", "gaussian:5", "gaussian:9", "box:3", "unsharp:5"})
    kernels.push_back(parse_kernel(spec));
  const std::vector<SweepSize> sizes = {{1, 1, 3},   {7, 3, 4},    {63, 31, 1},  {97, 70, 3},
                                        {200, 130, 3}, {161, 129, 4}, {300, 140, 1}};
  // Random and Gaussian weights put no exact .5 on the rounding edge.
  const auto [differing, total] =
      sweep_device_against_ref(sizes, kernels, 1900, tc, "dense tensor cores", {"random", "gaussian"});
  std::printf("dense tensor cores vs ref: %lld of %lld elements off by one\n", differing, total);
  EXPECT_LE(differing, total / 1000) << differing << " of " << total << " elements off by one";
  // The automatic rule (filter_cuda.cu) on a 1283x771 image, 21 x 13 tiles
  // of 64 rows: fewer than one wave on an sm_80+ GPU. 5x5, 7x7, 9x9 and
  // non-square kernels take the tensor cores at any size
  // (TensorCoreDenseTakesFiveByFiveAtEverySize); 3x3 only from 12 waves,
  // gaussian:7 from one. Host images go through strips (several launches, y
  // ranges).
  const Image big = random_image(1283, 771, 3, PixelType::u8, 78);
  struct Auto { Kernel k; bool want_tc; };
  const std::vector<Auto> autos = {{random_kernel(9, 9, 79), true},
                                   {parse_kernel("1,2,3,4,5,6,7;7,6,5,4,3,2,1;0,1,0,1,0,1,0/29"), true},
                                   {parse_kernel("edge"), false},
                                   {random_kernel(5, 5, 80), true},
                                   {parse_kernel("gaussian:7"), false}};
  for (const auto& [k, want_tc] : autos) {
    ScopedEnv automatic("PIXELKIT_CUDA_FILTER_MMA", "");
    const Border b{BorderMode::reflect101, 0};
    std::string path;
    const Image on_device = run_device(big.cview(), k, b, &path);
    EXPECT_EQ(path.find("dense tensor cores") != std::string::npos, want_tc && tc) << k.name << " " << path;
    EXPECT_TRUE(agrees(on_device, run(Backend::ref, big, k, b))) << k.name << " " << path;
    Image from_host(big.width(), big.height(), 3, PixelType::u8);
    Options o;
    o.backend = Backend::cuda;
    filter2d(big, from_host.view(), k, b, o);
    EXPECT_TRUE(agrees(from_host, run(Backend::ref, big, k, b))) << k.name << " (host strips)";
  }
}

// The automatic rule sends dense 5x5 to the tensor cores at every size with
// 3 and 4 channels (mma_dense_tuning::auto_min_waves; notes, run 38), and
// picks the tile height from the waves of 64-row tiles (tile_rows; notes, run
// 40): 64 rows from 4 waves, 48 from one, and below one 16 where 16-row tiles
// make at most two rounds, else 32. The images are sized from this GPU's SM
// count for 5, 2, 0.8 and 0.1 waves at an H100's 3 blocks per SM (3
// channels).
TEST(FilterCuda, TensorCoreDenseTakesFiveByFiveAtEverySize) {
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_WITH_CUDA
  const bool tc = device_has_tensor_core_path();
  const int sms = sm_count();
  const Kernel k = random_kernel(5, 5, 81);
  const Border b{BorderMode::reflect101, 0};
  struct Case { int waves10; const char* rows; };  // waves10: tenths of a wave
  for (const auto& [waves10, rows] : {Case{50, ""}, Case{20, " in 48-row tiles"}, Case{8, " in 32-row tiles"},
                                      Case{1, " in 16-row tiles"}}) {
    ScopedEnv automatic("PIXELKIT_CUDA_FILTER_MMA", "");
    const int tiles_y = (waves10 * 3 * sms + 399) / 400;  // 40 tiles across
    const Image src = random_image(40 * 64 - 5, tiles_y * 64 - 9, 3, PixelType::u8, 82 + waves10);
    std::string path;
    const Image got = run_device(src.cview(), k, b, &path);
    if (tc) {
      EXPECT_NE(path.find("dense tensor cores 5x5"), std::string::npos) << waves10 << " tenths of a wave: " << path;
      if (*rows != '\0') EXPECT_NE(path.find(rows), std::string::npos) << waves10 << " tenths of a wave: " << path;
      else EXPECT_EQ(path.find("-row tiles"), std::string::npos) << waves10 << " tenths of a wave: " << path;
    }
    EXPECT_TRUE(agrees(got, run(Backend::ref, src, k, b))) << waves10 << " tenths of a wave: " << path;
  }
  // One channel has 64-row tiles only (mma_dense_tuning::has_short_tiles), so
  // its 5x5 keeps the FP32 tiled kernel below 4 waves (6 and 2 waves here).
  for (const auto& [waves, want_tc] : {std::pair{6, true}, std::pair{2, false}}) {
    ScopedEnv automatic("PIXELKIT_CUDA_FILTER_MMA", "");
    const int tiles_y = (waves * 3 * sms + 39) / 40;
    const Image src = random_image(40 * 64 - 5, tiles_y * 64 - 9, 1, PixelType::u8, 90 + waves);
    std::string path;
    const Image got = run_device(src.cview(), k, b, &path);
    EXPECT_EQ(path.find("dense tensor cores") != std::string::npos, want_tc && tc) << waves << " waves, C1: " << path;
    EXPECT_EQ(path.find("-row tiles"), std::string::npos) << path;
    EXPECT_TRUE(agrees(got, run(Backend::ref, src, k, b))) << waves << " waves, C1: " << path;
  }
#endif
}

// 9x9 takes 32-row tiles below one wave of 64-row tiles, 64-row tiles where
// those make at most 1.5 rounds, 48 rows up to 4 waves
// (mma_dense_tuning::tile_rows; notes, run 40). Sized from this GPU's SM count
// at an H100's 3 blocks per SM (40 tiles across): 32-row tiles about half a
// wave; 64-row tiles just under a wave (32-row ones then twice that), about
// 1.3 waves, and about 2.
TEST(FilterCuda, TensorCoreDenseNineByNineTakesFullTilesJustAboveOneWaveAndShortOnesBelow) {
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_WITH_CUDA
  const bool tc = device_has_tensor_core_path();
  const int sms = sm_count();
  // The hi + lo instance's 3 blocks per SM (its fp16-coefficient one, the
  // default for this kernel, holds another number and so other tiles).
  ScopedEnv half_off("PIXELKIT_CUDA_FILTER_HALF", "off");
  const Kernel k = random_kernel(9, 9, 8800);
  const Border b{BorderMode::replicate, 0};
  const int half_wave32 = std::max(1, 3 * sms / 2 / 40);  // 32-row tile rows for about half a wave
  const int wave64 = std::max(1, (3 * sms - 1) / 40);     // 64-row tile rows for just under a wave
  for (const auto& [height, rows] : {std::pair{half_wave32 * 32 - 5, " in 32-row tiles"},
                                     std::pair{wave64 * 64 - 9, " in 32-row tiles"},
                                     std::pair{(wave64 + 1 + wave64 / 3) * 64 - 9, ""},
                                     std::pair{(2 * wave64 + 2) * 64 - 9, " in 48-row tiles"}}) {
    ScopedEnv automatic("PIXELKIT_CUDA_FILTER_MMA", "");
    const Image src = random_image(40 * 64 - 5, height, 3, PixelType::u8, 8801 + height);
    std::string path;
    const Image got = run_device(src.cview(), k, b, &path);
    if (tc) {
      EXPECT_NE(path.find(std::string("dense tensor cores 9x9") + rows), std::string::npos) << height << ": " << path;
      if (*rows == '\0') EXPECT_EQ(path.find("-row tiles"), std::string::npos) << height << ": " << path;
    }
    EXPECT_TRUE(agrees(got, run(Backend::ref, src, k, b))) << height << " rows: " << path;
  }
#endif
}

// The dense tensor-core kernel's tiles of 16, 32 and 48 rows (what shared
// memory holds for 64; PIXELKIT_CUDA_FILTER_DENSE_ROWS, else
// mma_dense_tuning::tile_rows), in the instances that have them (3 and 4
// channels, planar, 5 to 9 rows: mma_dense_tuning::has_short_tiles): the
// input rows a tile loads, converts and maps through the border, the warps'
// units and the output rows all follow the tile's height. Odd sizes whose
// last tile is partial (its 16-byte stores leave out the rows past the
// image), every border; one image walks several tiles a block.
// 1 channel and 3x3 keep 64-row tiles.
TEST(FilterCuda, TensorCoreDenseShortTilesAgreeWithRef) {
  PIXELKIT_REQUIRE_GPU();
  const bool tc = device_has_tensor_core_path();
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "dense");
  ScopedEnv half_off("PIXELKIT_CUDA_FILTER_HALF", "off");  // hi + lo: off by one on at most 0.1%
  std::vector<Kernel> kernels;
  std::uint32_t kseed = 8500;
  for (int n : {5, 7, 9}) kernels.push_back(random_kernel(n, n, ++kseed));
  kernels.push_back(random_kernel(5, 7, ++kseed));
  kernels.push_back(random_kernel(9, 5, ++kseed));
  kernels.push_back(parse_kernel("unsharp:5"));
  const std::vector<SweepSize> sizes = {{5, 3, 3}, {97, 70, 3}, {161, 129, 4}, {130, 50, 3}, {70, 17, 4}};
  for (const char* rows : {"16", "32", "48"}) {
    ScopedEnv rows_env("PIXELKIT_CUDA_FILTER_DENSE_ROWS", rows);
    const std::string part = std::string(" in ") + rows + "-row tiles";
    const auto [differing, total] = sweep_device_against_ref(sizes, kernels, 8600, tc, part.c_str(), {"random"});
    EXPECT_LE(differing, total / 1000) << rows << "-row tiles: " << differing << " of " << total << " off by one";
    // 2600 x 600: 41 x 13..38 tiles, several a block.
    const Image src = random_image(2600, 600, 3, PixelType::u8, 8700);
    for (const Border& b : {Border{BorderMode::reflect101, 0}, Border{BorderMode::constant, 9}}) {
      const Kernel k = random_kernel(7, 7, 8701);
      std::string path;
      const Image got = run_device(src, k, b, &path);
      if (tc) EXPECT_NE(path.find(part), std::string::npos) << path;
      EXPECT_TRUE(agrees(got, run(Backend::cpu, src, k, b))) << rows << " rows, " << to_string(b) << " " << path;
    }
    // No short tiles: 1 channel, and 3x3 (element-domain tile).
    const Image gray = random_image(97, 70, 1, PixelType::u8, 8702);
    const Image rgb = random_image(97, 70, 3, PixelType::u8, 8703);
    for (const auto& [img, k] : {std::pair{&gray, random_kernel(7, 7, 8704)}, std::pair{&rgb, random_kernel(3, 3, 8705)}}) {
      const Border b{BorderMode::reflect, 0};
      std::string path;
      const Image got = run_device(img->cview(), k, b, &path);
      if (tc) EXPECT_NE(path.find("dense tensor cores"), std::string::npos) << path;
      EXPECT_EQ(path.find("-row tiles"), std::string::npos) << path;
      EXPECT_TRUE(agrees(got, run(Backend::ref, *img, k, b))) << label(*img, k, b) << " " << path;
    }
  }
}

// 64-row tiles of 3 and 4 channels, forced on images whose tiles are partial
// on both axes (and on one smaller than the kernel): the fp16 instances pack
// the planes of a warp's column half in registers and stage them interleaved
// (mma_dense_tuning::packs_planes), the hi + lo ones store each plane's
// bytes; every border, 5x5 to 9x9 and non-square kernels. Then a 2600x600
// RGB image, several tiles a block.
TEST(FilterCuda, TensorCoreDenseSixtyFourRowTilesPackThePlanes) {
  PIXELKIT_REQUIRE_GPU();
  const bool tc = device_has_tensor_core_path();
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "dense");
  ScopedEnv rows_env("PIXELKIT_CUDA_FILTER_DENSE_ROWS", "64");
  std::vector<Kernel> kernels;
  std::uint32_t kseed = 8900;
  for (int n : {5, 7, 9}) kernels.push_back(random_kernel(n, n, ++kseed));
  kernels.push_back(random_kernel(5, 9, ++kseed));
  kernels.push_back(random_kernel(9, 7, ++kseed));
  const std::vector<SweepSize> sizes = {{5, 3, 3}, {97, 70, 3}, {130, 129, 3}, {200, 65, 3}, {97, 70, 4}, {130, 65, 4}};
  const Image big = random_image(2600, 600, 3, PixelType::u8, 8960);
  for (const char* half : {"", "off"}) {
    ScopedEnv half_env("PIXELKIT_CUDA_FILTER_HALF", half);
    const bool f16 = *half == '\0';
    const auto [differing, total] =
        sweep_device_against_ref(sizes, kernels, 8950, tc, f16 ? " in fp16" : "dense tensor cores", {"random"});
    // fp16 coefficients: within 1 grey level, off by one more often
    // (TensorCoreKernelsInHalfPrecision); hi + lo: at most 0.1%.
    EXPECT_LE(differing, total / (f16 ? 5 : 1000)) << half << ": " << differing << " of " << total << " off by one";
    for (const Border& b : {Border{BorderMode::reflect101, 0}, Border{BorderMode::constant, 9}}) {
      std::string path;
      const Image got = run_device(big.cview(), kernels[2], b, &path);
      if (tc) EXPECT_NE(path.find("dense tensor cores 9x9"), std::string::npos) << path;
      EXPECT_EQ(path.find("-row tiles"), std::string::npos) << path;
      EXPECT_TRUE(agrees(got, run(Backend::cpu, big, kernels[2], b))) << half << " " << to_string(b) << " " << path;
    }
  }
}

TEST(FilterCuda, TensorCoreDenseBlocksWalkSeveralTiles) {
  PIXELKIT_REQUIRE_GPU();
  // More tiles (41 x 10) than an H100 holds blocks at once (3 per SM): each
  // block of the persistent grid computes several while the next one's rows
  // arrive by cp.async (a static grid, its tile order rotated so that the
  // edge tiles go to blocks of one tile). Small enough for racecheck.
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "dense");
  const Image src = random_image(2600, 600, 3, PixelType::u8, 43);
  for (const Border& b : {Border{BorderMode::reflect101, 0}, Border{BorderMode::constant, 9}}) {
    for (const Kernel& k : {parse_kernel("edge"), random_kernel(9, 9, 44)})
      EXPECT_TRUE(agrees(run_device(src, k, b), run(Backend::ref, src, k, b))) << to_string(b) << " " << k.name;
  }
}

TEST(FilterCuda, TensorCoreDenseLargeStaticGridGivesItsEdgeTilesToBlocksOfOneTile) {
  PIXELKIT_REQUIRE_GPU();
  // 1080p RGB: 30 x 17 tiles of 64 x 64 for 396 resident blocks on an H100,
  // under 4 waves, so the grid hands tiles out statically, in an order
  // rotated so that the 34 edge tiles go to blocks that take only one tile
  // (notes, run 33). Every tile, whichever block takes it, must come out right.
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "");
  const Image src = random_image(1920, 1080, 3, PixelType::u8, 8400);
  for (const Border& b : {Border{BorderMode::reflect101, 0}, Border{BorderMode::constant, 9}}) {
    for (const Kernel& k : {random_kernel(9, 9, 8401), random_kernel(7, 7, 8402)}) {
      std::string path;
      const Image got = run_device(src, k, b, &path);
      if (device_has_tensor_core_path()) EXPECT_NE(path.find("dense tensor cores"), std::string::npos) << path;
      EXPECT_TRUE(agrees(got, run(Backend::cpu, src, k, b))) << to_string(b) << " " << k.name << " " << path;
    }
  }
}

TEST(FilterCuda, TensorCoreDenseLaunchesOnManyStreamsKeepTheirTiles) {
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_WITH_CUDA
  // The dense kernel hands tiles out through a counter that its last block
  // zeroes; launches on one stream share a counter slot, launches on other
  // streams get their own, and streams beyond the first 32 walk their tiles
  // in a fixed order. One Filter2D, 40 streams, three launches each, queued
  // before any is waited for; 47 x 41 tiles, more than 4 per block that an
  // H100 or H200 holds at once (3 per SM), so on the first 32 streams blocks
  // take their tiles from the counter (mma_dense_tuning::kDynamicMinRounds).
  ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", "dense");
  const Image host = random_image(3000, 2600, 3, PixelType::u8, 91);
  const Kernel k = random_kernel(9, 9, 92);
  const Border b{BorderMode::reflect101, 0};
  const Image want = run(Backend::ref, host, k, b);
  const Image src = clone(host.cview(), Memory::device);
  Filter2D f(k, b);
  constexpr int kStreams = 40, kRounds = 3;
  std::vector<cudaStream_t> streams(kStreams);
  for (auto& st : streams) ASSERT_EQ(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), cudaSuccess);
  std::vector<Image> dst;
  for (int i = 0; i < kStreams; ++i) dst.emplace_back(host.width(), host.height(), 3, PixelType::u8, Memory::device);
  RunInfo info;
  for (int r = 0; r < kRounds; ++r)
    for (int i = 0; i < kStreams; ++i) {
      Options o;
      o.backend = Backend::cuda;
      o.stream = reinterpret_cast<stream_t>(streams[static_cast<std::size_t>(i)]);
      o.info = &info;
      // Each launch's output starts poisoned, so a tile the last round
      // skipped cannot hide behind an earlier round's result.
      const ImageView d = dst[static_cast<std::size_t>(i)].view();
      ASSERT_EQ(cudaMemset2DAsync(d.data, static_cast<std::size_t>(d.pitch), 0x5a, static_cast<std::size_t>(d.width) * 3,
                                  static_cast<std::size_t>(d.height), streams[static_cast<std::size_t>(i)]),
                cudaSuccess);
      f(src.cview(), d, o);
    }
  EXPECT_NE(info.path.find("dense tensor cores"), std::string::npos) << info.path;
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_EQ(cudaStreamSynchronize(streams[static_cast<std::size_t>(i)]), cudaSuccess);
    EXPECT_TRUE(agrees(clone(dst[static_cast<std::size_t>(i)].cview(), Memory::host), want)) << "stream " << i;
  }
  for (auto& st : streams) cudaStreamDestroy(st);
#endif
}

TEST(FilterCuda, ChainedLaunchesOnOneStreamReadEachOthersOutput) {
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_WITH_CUDA
  if (!device_has_tensor_core_path()) GTEST_SKIP() << "the chained paths need compute capability 8.0 or newer";
  // Every filter kernel is launched with programmatic dependent launch on
  // sm_90 up (CudaFilterImpl::launch_kernel): each may be scheduled while the
  // kernel before it on the stream still runs, and must wait for it
  // (pdl_begin) before reading its output. Here each launch reads the image
  // the launch before it wrote, on one stream, with nothing waited for
  // between them: a chain of 14 through every kernel (row streaming dense and
  // separable 3x3, in one wave and in bands, and its 5x5 integer instance; the
  // streaming tensor-core kernel's integer, fp16 and three-k-step instances;
  // the dense tensor-core kernel; the tiled separable tensor-core kernel; the
  // FP32 dense tiled and separable fused kernels). Every output starts
  // poisoned, and each must agree with ref applied to the image its launch
  // read, so a launch that read its input early fails.
  struct Step {
    Kernel kernel;
    const char* mma;    // PIXELKIT_CUDA_FILTER_MMA while the filter is set up, or nullptr
    const char* bands;  // PIXELKIT_CUDA_FILTER_BANDS, or nullptr
    const char* path;   // a part of the path it must report
  };
  const std::vector<Step> steps = {
      {random_kernel(3, 3, 71), nullptr, nullptr, "dense streaming 3x3"},
      {Kernel::gaussian(9), nullptr, nullptr, "tensor cores streaming 9x9 integer"},
      {random_kernel(9, 9, 72), "dense", nullptr, "dense tensor cores"},
      {Kernel::gaussian(17), nullptr, nullptr, "tensor cores streaming 17x17"},
      {Kernel::gaussian(3), nullptr, "on", "separable streaming 3x3 integer factors in bands"},
      {Kernel::gaussian(3, 0.8), nullptr, nullptr, "separable streaming 3x3 (u8"},
      {Kernel::gaussian(3), nullptr, nullptr, "separable streaming 3x3 integer factors (u8"},
      {Kernel::gaussian(31), nullptr, "on", "tensor cores streaming 31x31"},
      {Kernel::gaussian(11), "on", nullptr, "separable tensor cores 11x11"},
      {Kernel::gaussian(5), nullptr, "on", "streaming 5x5 integer factors symmetric in bands"},
      {random_kernel(3, 3, 73), nullptr, "on", "dense streaming 3x3 in bands"},
      {Kernel::gaussian(7), nullptr, nullptr, "tensor cores streaming 7x7 integer"},
      {random_kernel(5, 5, 74), "dense", nullptr, "dense tensor cores"},
      {Kernel::gaussian(21), nullptr, nullptr, "tensor cores streaming 21x21"},
      {Kernel::gaussian(13), "off", nullptr, "separable fused 13x13"},
      {random_kernel(7, 7, 76), "off", nullptr, "dense tiled 7x7"},
      {random_smoothing3(77), nullptr, nullptr, "dense streaming 3x3 in fp16 (u8"},
      {random_smoothing3(78), nullptr, "on", "dense streaming 3x3 in fp16 in bands"},
  };
  const Border b{BorderMode::reflect101, 0};
  const int w = 777, h = 389;
  std::vector<Image> img;
  img.push_back(clone(random_image(w, h, 3, PixelType::u8, 75).cview(), Memory::device));
  for (std::size_t i = 0; i < steps.size(); ++i) {
    img.emplace_back(w, h, 3, PixelType::u8, Memory::device);
    const ImageView d = img.back().view();
    ASSERT_EQ(cudaMemset2D(d.data, static_cast<std::size_t>(d.pitch), 0xA5, static_cast<std::size_t>(w) * 3,
                           static_cast<std::size_t>(h)),
              cudaSuccess);
  }
  // Each filter is set up (on its first call, under its switches) and its
  // path checked before the chain.
  std::vector<Filter2D> filters;
  Image scratch(w, h, 3, PixelType::u8, Memory::device);
  for (const Step& st : steps) {
    std::unique_ptr<ScopedEnv> mma, bands;
    if (st.mma != nullptr) mma = std::make_unique<ScopedEnv>("PIXELKIT_CUDA_FILTER_MMA", st.mma);
    if (st.bands != nullptr) bands = std::make_unique<ScopedEnv>("PIXELKIT_CUDA_FILTER_BANDS", st.bands);
    filters.emplace_back(st.kernel, b);
    RunInfo info;
    Options o;
    o.backend = Backend::cuda;
    o.info = &info;
    filters.back()(img[0].cview(), scratch.view(), o);
    EXPECT_NE(info.path.find(st.path), std::string::npos) << st.kernel.name << ": " << info.path;
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    Options o;
    o.backend = Backend::cuda;
    o.stream = reinterpret_cast<stream_t>(stream);
    filters[i](img[i].cview(), img[i + 1].view(), o);
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Image in = clone(img[i].cview(), Memory::host);
    const Image got = clone(img[i + 1].cview(), Memory::host);
    EXPECT_TRUE(agrees(got, run(Backend::ref, in, steps[i].kernel, b))) << "step " << i << " " << steps[i].kernel.name;
  }
#endif
}

TEST(FilterCuda, TensorCoreDensePathDeclinesWhatItCannotDoExactly) {
  PIXELKIT_REQUIRE_GPU();
  // Declined: a constant border value fp16 cannot hold, a source whose rows
  // are not 16-byte aligned (cp.async copies 16 bytes), sides above 9, and
  // everything with the switch off. Each still agrees with ref.
  const Image parent = random_image(300, 90, 3, PixelType::u8, 6);
  struct Case { const char* env; Border border; bool shifted; Kernel k; bool want_tc; };
  const std::vector<Case> cases = {
      {"dense", {BorderMode::constant, 0.1f}, false, parse_kernel("edge"), false},
      {"dense", {BorderMode::constant, 2.5f}, false, parse_kernel("edge"), true},
      {"dense", {BorderMode::reflect101, 0}, true, parse_kernel("edge"), false},
      {"dense", {BorderMode::reflect101, 0}, false, random_kernel(11, 11, 8), false},
      {"off", {BorderMode::reflect101, 0}, false, parse_kernel("edge"), false}};
  for (const auto& c : cases) {
    ScopedEnv env("PIXELKIT_CUDA_FILTER_MMA", c.env);
    const Image dparent = clone(parent.cview(), Memory::device);
    const ConstImageView src = c.shifted ? parent.cview().sub(1, 0, 299, 90) : parent.cview();
    const ConstImageView dsrc = c.shifted ? dparent.cview().sub(1, 0, 299, 90) : dparent.cview();
    Image ddst(src.width, src.height, 3, PixelType::u8, Memory::device);
    RunInfo info;
    Options o;
    o.backend = Backend::cuda;
    o.info = &info;
    Filter2D f(c.k, c.border);
    f(dsrc, ddst.view(), o);
    synchronize(nullptr);
    EXPECT_TRUE(agrees(clone(ddst.cview(), Memory::host), run(Backend::ref, src, c.k, c.border))) << info.path;
    const bool took_tc = info.path.find("dense tensor cores") != std::string::npos;
    EXPECT_EQ(took_tc, c.want_tc && device_has_tensor_core_path()) << c.env << " " << c.k.name << " " << info.path;
  }
}

// The row-streaming path (u8 3x3, dense and separable; filter_cuda_stream.cuh).
// A warp owns a strip of 512 bytes (16 a lane) and a segment of rows, so the
// sizes put row ends at, just past and just before strip and lane boundaries
// (170 * 3 = 510, 171 * 3 = 513, 128 * 4 = 512, 257 * 1, 65 * 4 = 260 bytes),
// images narrower and shorter than the kernel, and segments of one row up to
// hundreds.
/// The path string of the row-streaming kernel (not the streaming
/// tensor-core one, "cuda separable tensor cores streaming ...").
bool row_streaming_path(const std::string& path) {
  return path.rfind("cuda dense streaming", 0) == 0 || path.rfind("cuda separable streaming", 0) == 0;
}

TEST(FilterCuda, StreamingKernelsAgreeWithRef) {
  PIXELKIT_REQUIRE_GPU();
  const bool sm80 = device_has_tensor_core_path();
  ScopedEnv env("PIXELKIT_CUDA_FILTER_STREAM", "");  // the default rule
  std::vector<Kernel> kernels = {random_kernel(3, 3, 91), random_kernel(3, 3, 92)};
  for (const char* spec : {"sharpen", "edge", "emboss", "laplacian", "unsharp:3", "unsharp:3:0.5", "box:3", "gaussian:3",
                           "gaussian:3:2.5", "1,2,1;2,4,2;1,2,1/16"})
    kernels.push_back(parse_kernel(spec));
  kernels.push_back(Kernel::from_factors({0.3f, -0.8f, 1.4f}, {-0.25f, 1.5f, 0.125f}, "signed factors"));
  const std::vector<SweepSize> sizes = {{1, 1, 3},   {2, 1, 1},   {1, 17, 4},   {7, 3, 3},   {170, 9, 3},
                                        {171, 40, 3}, {128, 5, 4}, {257, 33, 1}, {65, 70, 4}, {700, 61, 3}};
  const auto [differing, total] =
      sweep_device_against_ref(sizes, kernels, 3100, sm80, "streaming", {"random", "gaussian"});
  std::printf("row streaming vs ref: %lld of %lld elements off by one\n", differing, total);
  EXPECT_LE(differing, total / 1000) << differing << " of " << total << " elements off by one";
  // Host images go through strips (several launches with y ranges); a
  // sub-view 16 bytes in keeps the path, one byte in declines it.
  const Image big = random_image(1283, 771, 3, PixelType::u8, 3200);
  for (const char* spec : {"edge", "gaussian:3"}) {
    const Kernel k = parse_kernel(spec);
    const Border b{BorderMode::reflect101, 0};
    Image out(big.width(), big.height(), 3, PixelType::u8);
    Options o;
    o.backend = Backend::cuda;
    filter2d(big, out.view(), k, b, o);
    EXPECT_TRUE(agrees(out, run(Backend::ref, big, k, b))) << spec << " (host strips)";
    const Image dbig = clone(big.cview(), Memory::device);
    for (const auto& [x, want_stream] : {std::pair{16, true}, std::pair{1, false}}) {
      const ConstImageView sub = big.cview().sub(x, 5, 600, 300);
      const ConstImageView dsub = dbig.cview().sub(x, 5, 600, 300);
      Image ddst(600, 300, 3, PixelType::u8, Memory::device);
      RunInfo info;
      Options od;
      od.backend = Backend::cuda;
      od.info = &info;
      filter2d(dsub, ddst.view(), k, b, od);
      synchronize(nullptr);
      EXPECT_TRUE(agrees(clone(ddst.cview(), Memory::host), run(Backend::ref, sub, k, b))) << spec << " sub-view " << x;
      EXPECT_EQ(row_streaming_path(info.path), want_stream && sm80) << spec << " " << info.path;
    }
  }
}

TEST(FilterCuda, StreamingDenseThreeByThreeInHalfPrecision) {
  PIXELKIT_REQUIRE_GPU();
  // Dense 3x3 kernels whose fp16 error bound is at most kStreamHalfMaxError
  // run on packed fp16 pairs (products_h): every output within 1 of ref's on
  // every size, border and channel count of the FP32 instance's sweep, the
  // path naming it; with PIXELKIT_CUDA_FILTER_HALF=off the same kernels run
  // in FP32. Kernels beyond the bound (sharpen: a coefficient of 5, beyond
  // fp16 once scaled by 2^14) never take it.
  const bool sm80 = device_has_tensor_core_path();
  ScopedEnv env("PIXELKIT_CUDA_FILTER_STREAM", "");
  std::vector<Kernel> kernels = {random_smoothing3(93), random_smoothing3(94), parse_kernel("1,2,1;2,5,2;1,2,1/17")};
#if PIXELKIT_WITH_CUDA
  for (const Kernel& k : kernels)
    ASSERT_LE(detail::cuda_filter::stream_half_error_bound(k.coeffs.data()), detail::cuda_filter::kStreamHalfMaxError)
        << k.name;
#endif
  const std::vector<SweepSize> sizes = {{1, 1, 3},    {2, 1, 1},   {1, 17, 4}, {7, 3, 3},  {170, 9, 3},
                                        {171, 40, 3}, {128, 5, 4}, {257, 33, 1}, {65, 70, 4}, {700, 61, 3}};
  const auto [differing, total] = sweep_device_against_ref(sizes, kernels, 3300, sm80, "3x3 in fp16", {""});
  std::printf("row streaming in fp16 vs ref: %lld of %lld elements off by one\n", differing, total);
  // The bound allows 1 everywhere; the errors are far smaller on average.
  EXPECT_LE(differing, total / 5) << differing << " of " << total << " elements off by one";
  const Image src = random_image(300, 90, 3, PixelType::u8, 3400);
  for (const char* half : {"", "off"}) {
    ScopedEnv half_env("PIXELKIT_CUDA_FILTER_HALF", half);
    for (const Kernel& k : {kernels[0], parse_kernel("sharpen")}) {
      std::string path;
      const Image got = run_device(src.cview(), k, Border{}, &path);
      const Image want = run(Backend::ref, src, k, Border{});
      EXPECT_TRUE(agrees(got, want)) << path;
      const bool fp16 = *half == '\0' && k.name != "sharpen";
      if (sm80) {
        EXPECT_EQ(path.find(" in fp16") != std::string::npos, fp16) << half << " " << k.name << " " << path;
        EXPECT_TRUE(row_streaming_path(path)) << path;
      }
      // In FP32 the sums are taken in ref's order (off by one only where a
      // contracted multiply-add rounds across a half: 12 of 4.4 M elements
      // in StreamingKernelsAgreeWithRef); in fp16 on ~5% of them.
      const long long n = static_cast<long long>(src.width()) * src.height() * 3;
      EXPECT_LE(count_differing(got.cview(), want.cview()), fp16 ? n / 5 : n / 1000) << half << " " << k.name << " " << path;
    }
  }
}

#if PIXELKIT_WITH_CUDA
// PRMT (__byte_perm) as the GPU runs it for selector nibbles 0..7: byte k of
// the result is byte (sel >> 4k) & 7 of b:a.
unsigned byte_perm(unsigned a, unsigned b, unsigned sel) {
  const unsigned long long x = static_cast<unsigned long long>(b) << 32 | a;
  unsigned v = 0u;
  for (int k = 0; k < 4; ++k) v |= static_cast<unsigned>((x >> (8 * ((sel >> (4 * k)) & 7u))) & 0xffu) << (8 * k);
  return v;
}

// stream_regs_kernel's row ends (replicate, reflect, reflect101) copy the
// bytes beyond a row from the row's own first or last 16-byte chunk: each side
// byte within the reach selects the chunk's byte that border_index maps it to,
// and that byte lies in the chunk, for 1, 3 and 4 channels, the 3x3 and 5x5
// reaches and every row of whole chunks up to 4096 bytes; the mode's own
// instance's constant byte permutations give the same bytes. Host code:
// this runs without a GPU.
template <int C, int SW>
void expect_regs_side_selectors() {
  for (const BorderMode mode : {BorderMode::replicate, BorderMode::reflect, BorderMode::reflect101})
    for (int rb = 16; rb <= 4096; rb += 16) {
      if (rb % C != 0) continue;
      const int width = rb / C;
      for (const bool right : {false, true}) {
        const int x = right ? rb - 16 : 0;
        const unsigned sel = detail::cuda_filter::regs_side_selectors<C, SW>(right, x, width, mode);
        for (int b = 0; b < 4 * SW; ++b) {
          const int d = right ? 16 + b : b - 4 * SW;  // from the chunk's first byte
          if (right ? b >= SW * C : -d > SW * C) continue;  // beyond the reach: no output reads it
          const int e = x + d, px = e < 0 ? (e + 1) / C - 1 : e / C;
          const int want = border_index(px, width, mode) * C + (e - px * C) - x;
          const std::string where = "C" + std::to_string(C) + " reach " + std::to_string(SW) + " " +
                                    to_string(mode) + " row of " + std::to_string(rb) + " bytes, " +
                                    (right ? "right" : "left") + " byte " + std::to_string(b);
          ASSERT_GE(want, 0) << where;
          ASSERT_LT(want, 16) << where;
          EXPECT_EQ((sel >> (4 * b)) & 15u, static_cast<unsigned>(want)) << where;
          // The mode's own instance: its constant byte permutations of the
          // chunk's words, run here on a chunk whose bytes are 0..15, give
          // the same byte.
          const detail::cuda_filter::RegsSideWord plan =
              detail::cuda_filter::regs_fixed_side_word<C, SW>(detail::cuda_filter::regs_border_for(mode), right, b / 4);
          ASSERT_GE(plan.w0, 0) << where;
          const unsigned cw[4] = {0x03020100u, 0x07060504u, 0x0b0a0908u, 0x0f0e0d0cu};
          unsigned v = byte_perm(cw[plan.w0], cw[plan.w1], plan.sel);
          if (plan.w2 >= 0) v = byte_perm(v, cw[plan.w2], plan.sel2);
          EXPECT_EQ((v >> (8 * (b % 4))) & 0xffu, static_cast<unsigned>(want)) << where << " (the mode's instance)";
        }
      }
    }
}

// The rows a fixed stream_regs_kernel instance reads (regs_fixed_row, the
// kernel's own function): a thread with NR = 2 or 4 output rows from any y0 in
// the image reads rows y0 - RY .. y0 + NR - 1 + RY (RY = 1 or 2). From the
// height the host takes the instance at (every height for replicate,
// kRegsMirrorMinHeight for reflect and reflect101) every such row lands in the
// image, and the rows a stored output reads (up to height - 1 + RY) are
// border_index's. Below it, reflect101 reads outside (session 53: memcheck
// caught a 3-row image's thread reading row -1). Host code: runs without a GPU.
TEST(FilterCuda, StreamingRegistersFixedInstancesReadRowsInTheImage) {
  using detail::cuda_filter::RegsBorder;
  const int min_mirror = detail::cuda_filter::kRegsMirrorMinHeight;
  for (const BorderMode mode : {BorderMode::replicate, BorderMode::reflect, BorderMode::reflect101}) {
    const RegsBorder rb = detail::cuda_filter::regs_border_for(mode);
    ASSERT_NE(rb, RegsBorder::general);
    for (int height = mode == BorderMode::replicate ? 1 : min_mirror; height <= 70; ++height)
      for (const int nr : {2, 4})
        for (const int ry : {1, 2})
          for (int y0 = 0; y0 < height; ++y0)
            for (int iy = y0 - ry; iy <= y0 + nr - 1 + ry; ++iy) {
              const int sy = detail::cuda_filter::regs_fixed_row(rb, iy, height);
              const std::string where = std::string(to_string(mode)) + " height " + std::to_string(height) + " NR " +
                                        std::to_string(nr) + " row " + std::to_string(iy);
              ASSERT_GE(sy, 0) << where;
              ASSERT_LT(sy, height) << where;
              if (iy <= height - 1 + ry) ASSERT_EQ(sy, border_index(iy, height, mode)) << where;
            }
  }
  // One row less: the last 4-row thread of a 5-row image reads row 9, which
  // reflect101 mirrors to -1.
  EXPECT_LT(detail::cuda_filter::regs_fixed_row(RegsBorder::reflect101, 9, min_mirror - 1), 0);
}

TEST(FilterCuda, StreamingRegistersRowEndsCopyTheirOwnChunk) {
  expect_regs_side_selectors<1, 1>();
  expect_regs_side_selectors<1, 2>();
  expect_regs_side_selectors<3, 1>();
  expect_regs_side_selectors<3, 2>();
  expect_regs_side_selectors<4, 1>();
  expect_regs_side_selectors<4, 2>();
}
#endif

// The sizes of the stream_regs_kernel tests: rows of whole 16-byte chunks
// (1, 2, 3, 9, 32, 33, 63 and 132 chunks; 1, 3 and 4 channels; heights of 1
// to 61), and some that are not (which the kernel does not take).
std::vector<SweepSize> regs_sweep_sizes() {
  return {{16, 1, 3}, {16, 2, 1}, {4, 3, 4},   {32, 1, 1},  {8, 5, 4},   {16, 6, 3},   {32, 7, 3},  {48, 9, 3},
          {4, 17, 4}, {32, 4, 1}, {36, 10, 4}, {128, 7, 4}, {176, 10, 3}, {336, 5, 3}, {256, 33, 1}, {704, 61, 3},
          {1, 1, 3},  {5, 6, 3},  {13, 9, 3},  {20, 6, 1},  {129, 6, 4},  {700, 61, 3}};
}
// Whether stream_regs_kernel can take v: rows of whole 16-byte chunks.
bool whole_chunks(const ConstImageView& v) { return v.width * v.channels % 16 == 0; }
// Whether b has stream_regs_kernel instances of its own, which the host takes
// by default (replicate, reflect, reflect101; constant and wrap: the general
// one, only with PIXELKIT_CUDA_FILTER_REGS=on or always).
// Reflect's and reflect101's take images of 6 rows or more
// (kRegsMirrorMinHeight: one reflection reaches every row a thread reads).
bool own_instance(const Border& b, int height) {
  return b.mode == BorderMode::replicate ||
         ((b.mode == BorderMode::reflect || b.mode == BorderMode::reflect101) && height >= 6);
}

// The fp16 dense 3x3 instance without the ring (stream_regs_kernel; notes,
// runs 54 and 57), which the host takes with PIXELKIT_CUDA_FILTER_REGS=on
// where the one-wave layout's segments would be short (every size here) and
// the rows are whole 16-byte chunks, forms products_h's sums in the same
// order: its outputs equal the ring walk's (the switch off) bit for bit on
// every border and 1, 3 and 4 channels, and agree with ref. With the switch
// unset (the default) replicate, reflect and reflect101 take their own
// instances, constant and wrap the ring; all equal the ring's output bit for
// bit too. The
// sizes put rows of 1, 2, 3, 9, 32 (a warp), 33 and more chunks, one chunk
// being both row ends, under heights of 1 to 3 rows and ones that leave the
// last thread 1 to 3 of its 2 or 4 rows, and a sub-view whose pitch exceeds
// its width; the rest, rows that are not whole chunks, walk the ring.
TEST(FilterCuda, StreamingRegistersEqualTheRingBitForBit) {
  PIXELKIT_REQUIRE_GPU();
  const bool sm80 = device_has_tensor_core_path();
  ScopedEnv env("PIXELKIT_CUDA_FILTER_STREAM", "");
  ScopedEnv half_env("PIXELKIT_CUDA_FILTER_HALF", "");
  const std::vector<Kernel> kernels = {random_smoothing3(95), parse_kernel("1,2,1;2,5,2;1,2,1/17")};
  const std::vector<SweepSize> sizes = regs_sweep_sizes();
  std::uint32_t seed = 3500;
  // The cuda backend on the device view dsrc; *path gets its path.
  auto on_device = [](const ConstImageView& dsrc, const Kernel& k, const Border& b, std::string* path) {
    Image ddst(dsrc.width, dsrc.height, dsrc.channels, PixelType::u8, Memory::device);
    RunInfo info;
    Options o;
    o.backend = Backend::cuda;
    o.info = &info;
    Filter2D(k, b)(dsrc, ddst.view(), o);
    synchronize(nullptr);
    *path = info.path;
    return clone(ddst.cview(), Memory::host);
  };
  auto check = [&](const ConstImageView& src, const ConstImageView& dsrc, const std::string& what) {
    for (const Kernel& k : kernels)
      for (const Border& b : all_borders()) {
        std::string regs_path, ring_path, default_path;
        auto with_switch = [&](const char* regs, std::string* path) {
          ScopedEnv e("PIXELKIT_CUDA_FILTER_REGS", regs);
          return on_device(dsrc, k, b, path);
        };
        const Image regs = with_switch("on", &regs_path);
        const Image ring = with_switch("off", &ring_path);
        const Image by_default = with_switch("", &default_path);
        const std::string where = what + " " + k.name + " " + to_string(b) + ": " + regs_path;
        EXPECT_EQ(count_differing(regs.cview(), ring.cview()), 0) << where;
        EXPECT_EQ(count_differing(by_default.cview(), ring.cview()), 0) << where << "; by default " << default_path;
        EXPECT_TRUE(agrees(regs, run(Backend::ref, src, k, b))) << where;
        if (sm80) {
          EXPECT_EQ(regs_path.find("dense streaming 3x3 in fp16 in registers") != std::string::npos,
                    whole_chunks(dsrc))
              << where;
          EXPECT_EQ(default_path.find("dense streaming 3x3 in fp16 in registers") != std::string::npos,
                    whole_chunks(dsrc) && own_instance(b, dsrc.height))
              << where << "; by default " << default_path;
          EXPECT_NE(ring_path.find("dense streaming 3x3 in fp16"), std::string::npos) << ring_path;
          EXPECT_EQ(ring_path.find("in registers"), std::string::npos) << ring_path;
        }
      }
  };
  for (const auto& sz : sizes) {
    const Image src = random_image(sz.w, sz.h, sz.c, PixelType::u8, ++seed);
    const Image dsrc = clone(src.cview(), Memory::device);
    check(src.cview(), dsrc.cview(), std::to_string(sz.w) + "x" + std::to_string(sz.h) + "x" + std::to_string(sz.c));
  }
  // A sub-view 16 bytes in, whose pitch exceeds its width (the streaming
  // kernels take 16-byte aligned rows).
  const Image parent = random_image(400, 40, 4, PixelType::u8, ++seed);
  const Image dparent = clone(parent.cview(), Memory::device);
  check(parent.cview().sub(4, 3, 300, 30), dparent.cview().sub(4, 3, 300, 30), "sub-view 300x30 of 400x40x4");
  check(parent.cview().sub(4, 3, 301, 30), dparent.cview().sub(4, 3, 301, 30), "sub-view 301x30 of 400x40x4");
  // A host image: the cuda backend's pinned, chunked path (row ranges).
  ScopedEnv regs_on("PIXELKIT_CUDA_FILTER_REGS", "on");
  const Image host = random_image(336, 517, 3, PixelType::u8, ++seed);
  for (const Border& b : all_borders())
    EXPECT_TRUE(agrees(run(Backend::cuda, host.cview(), kernels[0], b), run(Backend::ref, host.cview(), kernels[0], b)))
        << to_string(b);
}

// Dense 5x5 kernels whose fp16 error bound in stream_regs_kernel's order
// (each kernel row summed, then the rows) is at most kStreamHalfMaxError run
// on it with PIXELKIT_CUDA_FILTER_REGS=on (notes, runs 54 and 57): within 1
// of ref's on every border, 1, 3 and 4 channels and the sizes above, the path
// naming it where the rows are whole 16-byte chunks (the rest take the dense
// tensor-core kernel; so do constant and wrap with the switch unset, the
// default, and every mode with it off); kernels beyond the bound never take
// it. The benchmark's random dense 5x5
// (coefficients 1/25 +- 1/25) is bound by 0.54 in this order, 0.99 in
// row-major order.
TEST(FilterCuda, StreamingRegistersDenseFiveByFiveAgreeWithRef) {
  PIXELKIT_REQUIRE_GPU();
  const bool sm80 = device_has_tensor_core_path();
  ScopedEnv env("PIXELKIT_CUDA_FILTER_STREAM", "");
  ScopedEnv half_env("PIXELKIT_CUDA_FILTER_HALF", "");
  auto regs_on = std::make_unique<ScopedEnv>("PIXELKIT_CUDA_FILTER_REGS", "on");
  const std::vector<Kernel> kernels = {random_smoothing(5, 1005), random_smoothing(5, 96),
                                       parse_kernel("0,1,1,1,0;1,1,1,1,1;1,1,1,1,1;1,1,1,1,1;0,1,1,1,0/21")};
#if PIXELKIT_WITH_CUDA
  for (const Kernel& k : kernels) {
    const std::vector<float>& c = k.coeffs;
    ASSERT_LE(detail::cuda_filter::stream_regs5_half_error_bound(c.data()), detail::cuda_filter::kStreamHalfMaxError)
        << k.name;
  }
  EXPECT_GT(detail::cuda_filter::stream_regs5_half_error_bound(random_kernel(5, 5, 97).coeffs.data()),
            detail::cuda_filter::kStreamHalfMaxError);
#endif
  const std::vector<SweepSize> sizes = regs_sweep_sizes();
  std::uint32_t seed = 3600;
  const auto [differing, total] = sweep_device_against_ref(
      sizes, kernels, seed, sm80, "dense streaming 5x5 in fp16 in registers", {""}, whole_chunks);
  seed += static_cast<std::uint32_t>(sizes.size());
  std::printf("dense 5x5 in fp16 in registers vs ref: %lld of %lld elements off by one\n", differing, total);
  EXPECT_LE(differing, total / 5);
  // The sub-view of the 3x3 test, and the switches.
  const Image parent = random_image(400, 40, 4, PixelType::u8, ++seed);
  const Image dparent = clone(parent.cview(), Memory::device);
  for (const int sub_w : {300, 301}) {
    const Image sub_host = clone(parent.cview().sub(4, 3, sub_w, 30), Memory::host);
    Image ddst(sub_w, 30, 4, PixelType::u8, Memory::device);
    RunInfo info;
    Options o;
    o.backend = Backend::cuda;
    o.info = &info;
    Filter2D(kernels[0], Border{})(dparent.cview().sub(4, 3, sub_w, 30), ddst.view(), o);
    synchronize(nullptr);
    EXPECT_TRUE(agrees(clone(ddst.cview(), Memory::host), run(Backend::ref, sub_host.cview(), kernels[0], Border{})))
        << sub_w << " " << info.path;
    if (sm80) EXPECT_EQ(info.path.find("in registers") != std::string::npos, sub_w == 300) << info.path;
  }
  regs_on.reset();
  const Image src = random_image(320, 90, 3, PixelType::u8, ++seed);
  for (const std::string regs : {"on", "off", ""})
    for (const Border& b : {Border{}, Border{BorderMode::replicate, 0}, Border{BorderMode::constant, 7}}) {
      ScopedEnv regs_env("PIXELKIT_CUDA_FILTER_REGS", regs.c_str());
      for (const Kernel& k : {kernels[0], random_kernel(5, 5, 97)}) {
        std::string path;
        const Image got = run_device(src.cview(), k, b, &path);
        const std::string where = "switch '" + regs + "' " + to_string(b) + " " + k.name + ": " + path;
        EXPECT_TRUE(agrees(got, run(Backend::ref, src, k, b))) << where;
        const bool fp16_regs = k.name == kernels[0].name && (regs == "on" || (regs == "" && own_instance(b, src.height())));
        if (sm80) EXPECT_EQ(path.find("in registers") != std::string::npos, fp16_regs) << where;
      }
    }
}

TEST(FilterCuda, StreamingWarpsWalkLongSegments) {
  PIXELKIT_REQUIRE_GPU();
  // 2000 x 600 RGB: 12 strips, segments of tens of rows, so each warp's ring
  // of row slots wraps many times. Small enough for racecheck.
  ScopedEnv env("PIXELKIT_CUDA_FILTER_STREAM", "");  // the default rule
  // The ring walk: reflect101's own stream_regs_kernel instance would take
  // the fp16 kernel (rows of 6000 bytes, whole 16-byte chunks) in any layout.
  ScopedEnv regs_env("PIXELKIT_CUDA_FILTER_REGS", "off");
  const Image src = random_image(2000, 600, 3, PixelType::u8, 45);
  // The default layout (one wave of tall segments at this size), then the
  // band walk of large images (short segments, strip fastest), forced, at
  // its own height and at 5 rows (the last segment partial). The band walk
  // at its own height sends the dense kernels' interior segments through
  // their own path (stream_kernel's BAND instance), which forms every sum
  // with the same operations in the same order as the general walk: its
  // output must equal the default layout's bit for bit.
  const std::vector<Kernel> kernels = {parse_kernel("edge"), random_kernel(3, 3, 46), parse_kernel("gaussian:3"),
                                       random_smoothing3(47)};  // the last in fp16
  const std::vector<Border> borders = {Border{BorderMode::reflect101, 0}, Border{BorderMode::constant, 9}};
  std::vector<Image> one_wave;
  for (const char* bands : {"", "on", "5"}) {
    ScopedEnv band_env("PIXELKIT_CUDA_FILTER_BANDS", bands);
    std::size_t i = 0;
    for (const Border& b : borders)
      for (const Kernel& k : kernels) {
        std::string path;
        Image out = run_device(src, k, b, &path);
        EXPECT_TRUE(agrees(out, run(Backend::ref, src, k, b))) << to_string(b) << " " << k.name << " bands " << bands;
        if (device_has_tensor_core_path()) EXPECT_EQ(path.find(" in bands") != std::string::npos, *bands != '\0') << path;
        if (*bands == '\0')
          one_wave.push_back(std::move(out));
        else
          EXPECT_EQ(count_differing(out.cview(), one_wave[i].cview()), 0) << to_string(b) << " " << k.name << " bands " << bands;
        ++i;
      }
  }
}

/// The row-streaming kernel's integer instances (`side`: "3x3" or "5x5") on
/// small images, in each layout of `band_modes` (PIXELKIT_CUDA_FILTER_BANDS;
/// "" = the rule, one wave at these sizes): every output of every kernel,
/// size and border equals ref's, and on sm_80 up the path names the instance
/// and says " in bands" iff the band walk was forced.
void expect_streaming_integer_exact(const std::vector<Kernel>& kernels, std::initializer_list<const char*> band_modes,
                                    std::uint32_t seed, const std::string& side, bool symmetric = false) {
  const std::vector<SweepSize> sizes = {{1, 1, 3}, {5, 3, 1}, {7, 40, 4}, {171, 40, 3}, {257, 33, 1}, {700, 61, 3},
                                        {600, 70, 4}};
  for (const char* bands : band_modes) {
    ScopedEnv band_env("PIXELKIT_CUDA_FILTER_BANDS", bands);
    const std::string part =
        "cuda separable streaming " + side + " integer factors" + (symmetric ? " symmetric" : "") +
        (*bands != '\0' ? " in bands (" : " (");
    const auto [differing, total] =
        sweep_device_against_ref(sizes, kernels, seed, device_has_tensor_core_path(), part.c_str(), {""});
    EXPECT_EQ(differing, 0) << differing << " of " << total << " elements differ from ref, bands " << bands;
  }
}

TEST(FilterCuda, StreamingFiveByFiveWholeNumberKernelsAreExactInBands) {
  PIXELKIT_REQUIRE_GPU();
  // The row-streaming kernel's 5x5 instances (whole-number factors on packed
  // 16-bit lanes) run only in the band layout of large images; forced here on
  // small ones: at the band height (the interior path of 16-row segments) and
  // at 5 rows (the general walk). Every output equals ref's: the sums are
  // whole numbers and the rounding is ref's (half to even).
  ScopedEnv env("PIXELKIT_CUDA_FILTER_STREAM", "");  // the default rule
  // General factors (int5): outer ones other than 1 once scaled to the
  // divisor 2^8, or not symmetric.
  const std::vector<Kernel> kernels = {
      Kernel::from_factors({1.f / 8, 2.f / 8, 2.f / 8, 2.f / 8, 1.f / 8}, {1.f / 16, 4.f / 16, 6.f / 16, 4.f / 16, 1.f / 16},
                           "binomial x [1 2 2 2 1]"),
      Kernel::from_factors({0.f, 1.f / 8, 2.f / 8, 3.f / 8, 2.f / 8}, {1.f / 4, 0.f, 2.f / 4, 0.f, 1.f / 4},
                           "lopsided"),
  };
  expect_streaming_integer_exact(kernels, {"on", "5"}, 5100, "5x5");
  // Symmetric factors with outer ones 1 over 2^8 (int5sym; gaussian:5), and
  // the same kernels on int5 with PIXELKIT_CUDA_FILTER_SYM=off.
  const std::vector<Kernel> symmetric = {
      parse_kernel("gaussian:5"),  // OpenCV's [1 4 6 4 1] / 16 each way
      parse_kernel("1,4,6,4,1;4,16,24,16,4;6,24,36,24,6;4,16,24,16,4;1,4,6,4,1/256"),  // gaussian:5 as a matrix
      Kernel::from_factors({1.f / 8, 2.f / 8, 2.f / 8, 2.f / 8, 1.f / 8}, {1.f / 32, 6.f / 32, 18.f / 32, 6.f / 32, 1.f / 32},
                           "[1 2 2 2 1] x [1 6 18 6 1]"),
      Kernel::from_factors({1.f / 16, 0.f, 14.f / 16, 0.f, 1.f / 16}, {1.f / 16, 4.f / 16, 6.f / 16, 4.f / 16, 1.f / 16},
                           "[1 0 14 0 1] x binomial"),
  };
  expect_streaming_integer_exact(symmetric, {"on", "5"}, 5150, "5x5", true);
  {
    ScopedEnv sym_env("PIXELKIT_CUDA_FILTER_SYM", "off");
    expect_streaming_integer_exact(symmetric, {"on"}, 5160, "5x5");
  }
  // Declined, and so left to the tensor-core kernels: factors that are not
  // whole numbers over a power of two, a gain above 1, and the default layout
  // of a small image (one wave, where the tensor-core kernel is faster).
  const Image src = random_image(300, 200, 3, PixelType::u8, 5200);
  const Border b{BorderMode::reflect101, 0};
  for (const auto& [bands, k] :
       {std::pair{"on", parse_kernel("gaussian:5:1.5")},
        std::pair{"on", Kernel::from_factors({0.25f, 0.5f, 0.5f, 0.5f, 0.25f}, {1.f / 16, 4.f / 16, 6.f / 16, 4.f / 16, 1.f / 16},
                                             "gain 2")},
        std::pair{"", parse_kernel("gaussian:5")}}) {
    ScopedEnv band_env("PIXELKIT_CUDA_FILTER_BANDS", bands);
    std::string path;
    EXPECT_TRUE(agrees(run_device(src.cview(), k, b, &path), run(Backend::ref, src, k, b))) << k.name << " " << path;
    EXPECT_EQ(path.find("cuda separable streaming 5x5"), std::string::npos) << k.name << " " << path;
  }
  // PIXELKIT_CUDA_FILTER_INT=off turns the instances off with the other integer ones.
  {
    ScopedEnv band_env("PIXELKIT_CUDA_FILTER_BANDS", "on");
    ScopedEnv int_env("PIXELKIT_CUDA_FILTER_INT", "off");
    std::string path;
    EXPECT_TRUE(agrees(run_device(src.cview(), parse_kernel("gaussian:5"), b, &path),
                       run(Backend::ref, src, parse_kernel("gaussian:5"), b)));
    EXPECT_EQ(path.find("integer factors"), std::string::npos) << path;
  }
}

TEST(FilterCuda, StreamingThreeByThreeWholeNumberKernelsAreExact) {
  PIXELKIT_REQUIRE_GPU();
  // Separable 3x3 kernels of whole-number factors over a power of two
  // (gaussian:3 is [1 2 1] / 4 each way) take the row-streaming kernel's
  // integer instance (products5's packed 16-bit sums) in either layout: one
  // wave (the default for these sizes), bands at their own height (the
  // interior path) and 5-row bands (the general walk). Every output equals
  // ref's.
  ScopedEnv env("PIXELKIT_CUDA_FILTER_STREAM", "");
  const bool sm80 = device_has_tensor_core_path();
  const std::vector<Kernel> kernels = {
      parse_kernel("gaussian:3"),
      parse_kernel("1,2,1;2,4,2;1,2,1/16"),  // the same as a matrix
      Kernel::from_factors({0.25f, 0.5f, 0.25f}, {0.f, 0.5f, 0.5f}, "half-row step"),
      Kernel::from_factors({0.125f, 0.375f, 0.f}, {0.25f, 0.5f, 0.25f}, "gain 1/2"),
      Kernel::from_factors({1.f, 0.f, 0.f}, {0.f, 0.f, 1.f}, "shift"),
  };
  expect_streaming_integer_exact(kernels, {"", "on", "5"}, 5400, "3x3");
  // Declined, to the FP32 instance: factors that are not whole numbers over
  // a power of two, a gain above 1, and any kernel with
  // PIXELKIT_CUDA_FILTER_INT=off.
  const Image src = random_image(300, 200, 3, PixelType::u8, 5500);
  const Border b{BorderMode::reflect101, 0};
  for (const auto& [int_env, k] :
       {std::pair{"", parse_kernel("gaussian:3:0.8")},
        std::pair{"", Kernel::from_factors({0.5f, 1.f, 0.5f}, {0.25f, 0.5f, 0.25f}, "gain 2")},
        std::pair{"off", parse_kernel("gaussian:3")}}) {
    ScopedEnv int_switch("PIXELKIT_CUDA_FILTER_INT", int_env);
    std::string path;
    EXPECT_TRUE(agrees(run_device(src.cview(), k, b, &path), run(Backend::ref, src, k, b))) << k.name << " " << path;
    if (sm80) EXPECT_EQ(path.rfind("cuda separable streaming 3x3 (", 0), 0u) << k.name << " " << path;
  }
}

// The rule walks 5x5 integer kernels in bands from 1.5 waves of 16-row
// segments (stream_tuning::bands_by_rule; notes, run 30), 3x3 kernels from 3;
// on fast memory 3x3 from 1.65 and 5x5 of 1 or 4 channels from 0.65 (runs 45,
// 46). Images sized from this GPU's SM count in waves of 20 warps per SM (the
// kernel's launch bound of 5 blocks of 4; up to 32 if its registers allow):
// 2.5 such waves take the bands for gaussian:5 (1.56-2.5 real waves) and one
// wave for edge (under 3, over 1.65 on fast memory); 1 wave keeps gaussian:5
// on the tensor-core kernel except on fast memory; half a wave keeps it
// there. Four channels, where the bands gain most.
TEST(FilterCuda, StreamingFiveByFiveTakesBandsFromOneAndAHalfWaves) {
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_WITH_CUDA
  if (!device_has_tensor_core_path()) GTEST_SKIP() << "the streaming kernels need sm_80";
  const int sms = sm_count();
  ScopedEnv stream_env("PIXELKIT_CUDA_FILTER_STREAM", "");
  ScopedEnv band_env("PIXELKIT_CUDA_FILTER_BANDS", "");
  const Border b{BorderMode::replicate, 0};
  constexpr int kStrips = 8;  // 1024 pixels of 4 bytes: 8 strips of 512 bytes
  // On a GPU with fast DRAM (the H200) the 3x3 instances take bands from
  // 1.65 waves (stream_tuning::bands_by_rule), so edge's 2.5 waves take them,
  // and the 5x5 ones of four channels (as these) from 0.65 waves, so one
  // wave takes them; half a wave does not.
  const bool fast = device_dram_gbps_per_sm() >= detail::cuda_filter::kStreamFastMemoryGBpsPerSM;
  for (const auto& [half_waves, kernel, want_bands] :
       {std::tuple{5, "gaussian:5", true}, std::tuple{5, "edge", fast}, std::tuple{2, "gaussian:5", fast},
        std::tuple{1, "gaussian:5", false}}) {
    const int segs = (half_waves * 10 * sms + kStrips - 1) / kStrips;
    const Image src = random_image(kStrips * 128, 16 * segs - 3, 4, PixelType::u8, 5300 + half_waves);
    const Kernel k = parse_kernel(kernel);
    std::string path;
    const Image got = run_device(src.cview(), k, b, &path);
    const std::string what = std::to_string(half_waves) + "/2 waves, " + kernel + ": " + path;
    EXPECT_EQ(path.find("in bands") != std::string::npos, want_bands) << what;
    EXPECT_EQ(path.find("5x5 integer factors") != std::string::npos, std::string(kernel) == "gaussian:5") << what;
    EXPECT_EQ(count_differing(got, run(Backend::ref, src, k, b)), 0) << what;  // both paths are exact here
  }
#endif
}

#if PIXELKIT_WITH_CUDA
// A streaming kernel's layout rule on `src`: its path must contain
// `kernel_path` and walk bands iff `want_bands`, and its output must equal
// the other layout's (forced with PIXELKIT_CUDA_FILTER_BANDS) bit for bit and
// agree with the cpu backend.
void expect_band_rule(const Image& src, const Kernel& k, const Border& b, const std::string& kernel_path,
                      bool want_bands) {
  std::string path, other_path;
  Image got, other;
  {
    ScopedEnv band_env("PIXELKIT_CUDA_FILTER_BANDS", "");
    got = run_device(src.cview(), k, b, &path);
  }
  {
    ScopedEnv band_env("PIXELKIT_CUDA_FILTER_BANDS", want_bands ? "off" : "on");
    other = run_device(src.cview(), k, b, &other_path);
  }
  const std::string what = label(src.cview(), k, b) + ": " + path;
  EXPECT_NE(path.find(kernel_path), std::string::npos) << what;
  EXPECT_EQ(path.find(" in bands") != std::string::npos, want_bands) << what;
  EXPECT_EQ(other_path.find(" in bands") != std::string::npos, !want_bands) << other_path;
  EXPECT_EQ(count_differing(got.cview(), other.cview()), 0) << what;
  EXPECT_TRUE(agrees(got, run(Backend::cpu, src, k, b))) << what;
}
#endif

// On a GPU with fast DRAM (the H200) the 3x3 instances walk bands from 1.65
// waves of 16-row segments, elsewhere from 3 (stream_tuning::bands_by_rule;
// notes, run 45). An image of 56 16-row segments a SM is 2.8 waves at 5
// blocks of 4 warps a SM, 2.33 at 6 and 2.0 at 7 (the fp16 instance's
// occupancy depends on its registers, which differ by channel count): bands
// on the H200, one wave on the H100 at any of them. The fp16 dense 3x3
// instance, whose output must equal the other layout's bit for bit.
TEST(FilterCuda, StreamingThreeByThreeTakesBandsEarlierOnFastMemory) {
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_WITH_CUDA
  if (!device_has_tensor_core_path()) GTEST_SKIP() << "the streaming kernels need sm_80";
  ScopedEnv stream_env("PIXELKIT_CUDA_FILTER_STREAM", "");
  ScopedEnv half_env("PIXELKIT_CUDA_FILTER_HALF", "");
  ScopedEnv regs_env("PIXELKIT_CUDA_FILTER_REGS", "off");  // the ring walk (rows of whole 16-byte chunks)
  const bool fast = device_dram_gbps_per_sm() >= detail::cuda_filter::kStreamFastMemoryGBpsPerSM;
  const Border b{BorderMode::reflect101, 0};
  constexpr int kStrips = 8;  // 1024 pixels of 4 bytes
  const int segs = 56 * sm_count() / kStrips;
  const Image src = random_image(kStrips * 128, 16 * segs - 3, 4, PixelType::u8, 5400);
  SCOPED_TRACE("peak DRAM " + std::to_string(device_dram_gbps_per_sm()) + " GB/s a SM");
  expect_band_rule(src, parse_kernel("1,2,1;2,5,2;1,2,1/17"), b, "cuda dense streaming 3x3 in fp16", fast);
#endif
}

// The tensor-core streaming kernel's three-k-step instances (vertical sides
// 19..31) run one wave of long segments where that wave fills the GPU, and
// walk bands of 192 rows where it would fill less than 85% of the blocks'
// slots (mma_stream_tuning::walk_bands; notes, run 32). Images
// sized from this GPU's SM count at the instance's 2 blocks of 128 threads
// per SM (its launch bound; at over 170 registers no GPU holds 3): strips
// for 0.7 of those blocks take the bands, strips for half of them (two
// segments each) one wave. Both layouts form every output the same way:
// the rule's output must equal the other layout's bit for bit, and agree
// with the cpu backend.
TEST(FilterCuda, TensorCoreStreamingThreeDownWalksBandsWhereOneWaveLeavesSMsIdle) {
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_WITH_CUDA
  if (!device_has_tensor_core_path()) GTEST_SKIP() << "the tensor-core kernels need sm_80";
  ScopedEnv mma_env("PIXELKIT_CUDA_FILTER_MMA", "");
  ScopedEnv half_off("PIXELKIT_CUDA_FILTER_HALF", "off");  // the hi + lo instance (its fp16 one holds 3 blocks)
  const int resident = 2 * sm_count();
  // Interior strips (64 pixels each) so that with the 2 edge strips, each
  // counted 6 times (kEdgeSegFactorThreeDown), they make `units` items a segment.
  for (const auto& [units, rows, want_bands] :
       {std::tuple{(7 * resident + 9) / 10, 800, true}, std::tuple{resident / 2, 1100, false}}) {
    const Image src = random_image((units - 12 + 2) * 64 - 5, rows, 3, PixelType::u8, 8100 + units);
    expect_band_rule(src, Kernel::gaussian(21), Border{BorderMode::reflect101, 0}, "tensor cores streaming 21x21", want_bands);
  }
#endif
}

TEST(FilterCuda, TensorCoreStreamingTwoDownWalksBandsWhereOneWaveLeavesSMsIdle) {
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_WITH_CUDA
  if (!device_has_tensor_core_path()) GTEST_SKIP() << "the tensor-core kernels need sm_80";
  ScopedEnv mma_env("PIXELKIT_CUDA_FILTER_MMA", "");
  // The two-k-step instances (sides up to 17) at 3 channels run 3 blocks per
  // SM. Interior strips (64 pixels each) such that with the 2 edge strips,
  // each counted 2 times (reflect101 takes its edge columns from shared
  // memory: kEdgeSegFactorFixed), one segment a strip takes just over half
  // the resident blocks: one wave would give every strip one segment of all
  // its rows and leave nearly half the blocks idle, so both the integer
  // instance (gaussian:9) and the hi + lo one (gaussian:13) walk bands
  // (mma_stream_tuning::walk_bands; notes, runs 33 and 35). Without the lean
  // instance (4 blocks per SM, which gaussian:13 would take here and whose
  // one wave fills its slots: notes, run 47).
  ScopedEnv lean_env("PIXELKIT_CUDA_FILTER_LEAN", "off");
  const int units = 3 * sm_count() / 2 + 1;
  const Image src = random_image((units - 4 + 2) * 64 - 3, 50 * 16 - 7, 3, PixelType::u8, 8200);
  expect_band_rule(src, Kernel::gaussian(9), Border{BorderMode::reflect101, 0}, "tensor cores streaming 9x9 integer factors", true);
  expect_band_rule(src, Kernel::gaussian(13), Border{BorderMode::reflect101, 0}, "tensor cores streaming 13x13", true);
#endif
}

// The one-wave layout cuts every strip at the same rows, so its items seldom
// fill the resident blocks' slots; where a tail band ends sooner
// (mma_stream_tuning::tail_plan; notes, run 40) the blocks left over walk the
// items of a last, short band in turn while the others take one tall item
// each. An image about 8K RGB's width (120 strips on an H100's 132 SMs at 3
// blocks each: 122 items a band, 3 bands for 396 slots) and 1597 rows takes
// it; the same bytes come out as in the plain wave
// (PIXELKIT_CUDA_FILTER_TAIL=off), and agree with cpu: the integer instance
// (gaussian:9) and the hi + lo one with its steady-state step (gaussian:13),
// the edge strips' columns from shared memory (reflect101, in halves) and as
// bytes (constant, in quarters).
TEST(FilterCuda, TensorCoreStreamingOneWaveTakesATailBandWhereItsItemsLeaveSlotsEmpty) {
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_WITH_CUDA
  if (!device_has_tensor_core_path()) GTEST_SKIP() << "the tensor-core kernels need sm_80";
  ScopedEnv mma_env("PIXELKIT_CUDA_FILTER_MMA", "");
  const int strips = 10 * sm_count() / 11;
  const Image src = random_image(strips * 64 - 5, 1597, 3, PixelType::u8, 8300);
  for (const Border& b : {Border{BorderMode::reflect101, 0}, Border{BorderMode::constant, 9}}) {
    for (const Kernel& k : {Kernel::gaussian(9), Kernel::gaussian(13)}) {
      std::string path, plain_path;
      const Image got = run_device(src.cview(), k, b, &path);
      Image plain;
      {
        ScopedEnv tail_env("PIXELKIT_CUDA_FILTER_TAIL", "off");
        plain = run_device(src.cview(), k, b, &plain_path);
      }
      const std::string what = label(src.cview(), k, b) + ": " + path;
      EXPECT_NE(path.find("tensor cores streaming"), std::string::npos) << what;
      EXPECT_EQ(path.find(" in bands"), std::string::npos) << what;
      if (b.mode == BorderMode::reflect101) EXPECT_NE(path.find(" with a tail band"), std::string::npos) << what;
      EXPECT_EQ(plain_path.find(" with a tail band"), std::string::npos) << plain_path;
      EXPECT_EQ(count_differing(got.cview(), plain.cview()), 0) << what;
      EXPECT_TRUE(agrees(got, run(Backend::cpu, src, k, b))) << what;
    }
  }
#endif
}

TEST(FilterCuda, StreamingPathDeclinesWhatItCannotDo) {
  PIXELKIT_REQUIRE_GPU();
  // Declined: a constant border value that is not a whole grey level (the
  // kernel holds borders as bytes), shapes other than 3x3, f32, and
  // everything with the switch off or the tensor-core switch forcing those
  // kernels. Each still agrees with ref.
  const Image src = random_image(130, 50, 3, PixelType::u8, 47);
  struct Case { const char* env; const char* mma; Border border; Kernel k; bool want; };
  const std::vector<Case> cases = {
      {"", "", {BorderMode::constant, 2.5f}, parse_kernel("edge"), false},
      {"", "", {BorderMode::constant, 300.0f}, parse_kernel("edge"), false},
      {"", "", {BorderMode::constant, 255.0f}, parse_kernel("edge"), true},
      {"", "", {BorderMode::reflect101, 0}, random_kernel(5, 5, 48), false},
      {"", "", {BorderMode::reflect101, 0}, random_kernel(3, 5, 49), false},
      {"", "", {BorderMode::reflect101, 0}, random_kernel(1, 3, 51), false},
      {"", "", {BorderMode::reflect101, 0}, parse_kernel("gaussian:5"), false},
      {"", "", {BorderMode::wrap, 0}, parse_kernel("box:3"), true},
      {"", "dense", {BorderMode::reflect101, 0}, parse_kernel("edge"), false},
      {"off", "", {BorderMode::reflect101, 0}, parse_kernel("edge"), false}};
  for (const auto& c : cases) {
    ScopedEnv env("PIXELKIT_CUDA_FILTER_STREAM", c.env);
    ScopedEnv mma("PIXELKIT_CUDA_FILTER_MMA", c.mma);
    std::string path;
    const Image got = run_device(src.cview(), c.k, c.border, &path);
    EXPECT_TRUE(agrees(got, run(Backend::ref, src, c.k, c.border))) << path;
    EXPECT_EQ(row_streaming_path(path), c.want && device_has_tensor_core_path())
        << c.env << " " << c.k.name << " " << to_string(c.border) << " " << path;
  }
  const Image f = random_image(64, 40, 3, PixelType::f32, 50);
  ScopedEnv env("PIXELKIT_CUDA_FILTER_STREAM", "");  // the default rule
  std::string path;
  const Image got = run_device(f.cview(), parse_kernel("edge"), Border{}, &path);
  EXPECT_TRUE(agrees(got, run(Backend::ref, f, parse_kernel("edge"), Border{}))) << path;
  EXPECT_FALSE(row_streaming_path(path)) << path;
}

TEST(FilterCuda, AutoPicksCudaForDeviceImagesAndSaysSo) {
  PIXELKIT_REQUIRE_GPU();
  const Image src = random_image(64, 64, 1, PixelType::u8, 1);
  Image d = clone(src.cview(), Memory::device);
  Image o(64, 64, 1, PixelType::u8, Memory::device);
  RunInfo info;
  Options opt;
  opt.info = &info;
  filter2d(d, o.view(), Kernel::box(3), {}, opt);
  synchronize(nullptr);
  EXPECT_EQ(info.backend, Backend::cuda);
  EXPECT_FALSE(info.path.empty());
}

// ---- ref against OpenCV's filter2D --------------------------------------------

#if PIXELKIT_TEST_HAVE_OPENCV
// cv::filter2D takes no border value and refuses BORDER_WRAP, so the image is
// padded with copyMakeBorder (which supports both) and filtered isolated.
Image opencv_filter(const ConstImageView& src, const Kernel& k, const Border& b) {
  const int depth = src.type == PixelType::u8 ? CV_8U : CV_32F;
  const cv::Mat in(src.height, src.width, CV_MAKETYPE(depth, src.channels), const_cast<void*>(src.data),
                   static_cast<std::size_t>(src.pitch));
  cv::Mat padded, out;
  const int rx = k.radius_x(), ry = k.radius_y();
  cv::copyMakeBorder(in, padded, ry, ry, rx, rx, cv_border(b.mode), cv::Scalar::all(b.value));
  const cv::Mat kernel(k.height, k.width, CV_32F, const_cast<float*>(k.coeffs.data()));
  cv::filter2D(padded, out, -1, kernel, cv::Point(-1, -1), 0, cv::BORDER_CONSTANT | cv::BORDER_ISOLATED);
  Image res(src.width, src.height, src.channels, src.type);
  const cv::Mat crop = out(cv::Rect(rx, ry, src.width, src.height));
  for (int y = 0; y < src.height; ++y) std::memcpy(res.row<unsigned char>(y), crop.ptr(y), res.view().row_bytes());
  return res;
}
#endif

TEST(FilterOpenCV, RefAndCpuAgreeWithFilter2DOnEveryBorder) {
  PIXELKIT_REQUIRE_OPENCV();
#if PIXELKIT_TEST_HAVE_OPENCV
  std::uint32_t seed = 900;
  for (const Case cs : {Case{37, 29, 1, PixelType::u8}, Case{64, 31, 3, PixelType::u8}, Case{23, 41, 4, PixelType::u8},
                        Case{37, 29, 1, PixelType::f32}, Case{64, 31, 3, PixelType::f32}, Case{5, 3, 3, PixelType::u8}})
    for (const Kernel& k : {random_kernel(3, 3, 1), Kernel::gaussian(7), random_kernel(5, 9, 2), parse_kernel("sharpen"),
                            Kernel::box(11), random_kernel(15, 15, 3)})
      for (const Border& b : all_borders()) {
        const Image src = random_image(cs.w, cs.h, cs.c, cs.t, ++seed);
        const Image cv = opencv_filter(src, k, b);
        EXPECT_TRUE(agrees(run(Backend::ref, src, k, b), cv)) << "ref vs OpenCV, " << label(src, k, b);
        EXPECT_TRUE(agrees(run(Backend::cpu, src, k, b), cv)) << "cpu vs OpenCV, " << label(src, k, b);
      }
#endif
}

TEST(FilterOpenCV, PhotosAgreeWithFilter2D) {
  PIXELKIT_REQUIRE_OPENCV();
#if PIXELKIT_TEST_HAVE_OPENCV
  for (const char* name : {"astronaut.png", "camera.png", "chelsea.png", "coffee.png"}) {
    const Image photo = read_image(data_path(name));
    for (const char* spec : {"gaussian:5", "edge", "sharpen", "unsharp:7:0.8", "emboss", "box:3"}) {
      const Kernel k = parse_kernel(spec);
      const Border b{BorderMode::reflect101, 0};
      EXPECT_TRUE(agrees(run(Backend::ref, photo, k, b), opencv_filter(photo, k, b))) << name << " " << spec;
    }
  }
#endif
}

// ---- invalid calls --------------------------------------------------------------

template <typename F>
void expect_error(F&& f, Status status, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(FilterErrors, MismatchedOverlappingAndMisplacedImages) {
  Image a(10, 10, 3, PixelType::u8), b(10, 9, 3, PixelType::u8), c(10, 10, 3, PixelType::f32);
  const Kernel k = Kernel::box(3);
  expect_error([&] { filter2d(a, b.view(), k); }, Status::invalid_argument, "differ");
  expect_error([&] { filter2d(a, c.view(), k); }, Status::invalid_argument, "differ");
  expect_error([&] { filter2d(a, a.view(), k); }, Status::invalid_argument, "overlap");
  expect_error([&] { filter2d(a.cview().sub(0, 0, 5, 5), a.view().sub(4, 4, 5, 5), k); }, Status::invalid_argument, "overlap");
  Image two(4, 4, 2, PixelType::u8), two_out(4, 4, 2, PixelType::u8);
  expect_error([&] { filter2d(two, two_out.view(), k); }, Status::invalid_argument, "2 channels");
  if (!built_with_cuda()) {
    Options o;
    o.backend = Backend::cuda;
    Image d(10, 10, 3, PixelType::u8);
    expect_error([&] { filter2d(a, d.view(), k, {}, o); }, Status::unsupported, "no CUDA backend");
  }
  Kernel even;
  even.width = 2;
  even.height = 3;
  even.coeffs.assign(6, 1.0f);
  expect_error([&] { Filter2D f(even); }, Status::invalid_argument, "odd");
}

TEST(FilterErrors, DeviceImageOnAHostBackend) {
  PIXELKIT_REQUIRE_GPU();
  Image d(8, 8, 1, PixelType::u8, Memory::device), e(8, 8, 1, PixelType::u8, Memory::device);
  Options o;
  o.backend = Backend::cpu;
  expect_error([&] { filter2d(d, e.view(), Kernel::box(3), {}, o); }, Status::invalid_argument, "device memory");
}

}  // namespace
}  // namespace pixelkit::test
