// Helpers shared by the tests: random images, comparisons, GPU skipping.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>
#include <unistd.h>
#include <string>

#include "pixelkit/backend.hpp"
#include "pixelkit/image.hpp"
#include "pixelkit/io.hpp"

namespace pixelkit::test {

inline const char* data_dir() { return PIXELKIT_DATA_DIR; }
inline std::string data_path(const std::string& name) { return std::string(data_dir()) + "/" + name; }
inline const char* cli_path() { return PIXELKIT_CLI_PATH; }

/// Skips the current test, visibly, when no CUDA device is usable.
#define PIXELKIT_REQUIRE_GPU()                                                      \
  do {                                                                              \
    if (!::pixelkit::cuda_available())                                              \
      GTEST_SKIP() << (::pixelkit::built_with_cuda() ? "no usable CUDA device"      \
                                                     : "built without CUDA");       \
  } while (0)

#define PIXELKIT_REQUIRE_OPENCV()                                                   \
  do {                                                                              \
    if (!PIXELKIT_TEST_HAVE_OPENCV) GTEST_SKIP() << "built without OpenCV";         \
  } while (0)
/// For tests that read or write PNG files only: OpenCV's codec, or libpng's
/// where OpenCV is absent (the GPU machines), so they run there too.
#define PIXELKIT_REQUIRE_PNG()                                                      \
  do {                                                                              \
    if (!::pixelkit::have_png()) GTEST_SKIP() << "built without a PNG codec";      \
  } while (0)

/// PIXELKIT_TEST_TSAN: defined when this test binary runs under
/// ThreadSanitizer (the tsan preset, scripts/sanitize.sh thread).
#if defined(__SANITIZE_THREAD__)
#define PIXELKIT_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PIXELKIT_TEST_TSAN 1
#endif
#endif

/// Skips, visibly, a test that asks the cpu backend for several OpenMP
/// threads when it runs under ThreadSanitizer: Debian's libgomp is not built
/// with TSan, so the barriers that end its parallel regions are invisible to
/// it and it reports the next region's use of the same stack as a race
/// (tests/tsan.supp). The test runs in the Release and ASan passes.
#ifdef PIXELKIT_TEST_TSAN
#define PIXELKIT_SKIP_OPENMP_TEAMS_UNDER_TSAN() \
  GTEST_SKIP() << "asks for OpenMP teams; libgomp is not built with ThreadSanitizer"
#else
#define PIXELKIT_SKIP_OPENMP_TEAMS_UNDER_TSAN() \
  do {                                          \
  } while (0)
#endif

/// Fills a host image with uniform random values (u8: 0..255, f32: -lo..hi).
inline void fill_random(const ImageView& v, std::uint32_t seed, float lo = -100.0f, float hi = 300.0f) {
  std::mt19937 rng(seed);
  for (int y = 0; y < v.height; ++y) {
    const int n = v.width * v.channels;
    if (v.type == PixelType::u8) {
      auto* r = v.row<std::uint8_t>(y);
      std::uniform_int_distribution<int> d(0, 255);
      for (int i = 0; i < n; ++i) r[i] = static_cast<std::uint8_t>(d(rng));
    } else {
      auto* r = v.row<float>(y);
      std::uniform_real_distribution<float> d(lo, hi);
      for (int i = 0; i < n; ++i) r[i] = d(rng);
    }
  }
}

inline Image random_image(int w, int h, int c, PixelType t, std::uint32_t seed) {
  Image img(w, h, c, t);
  fill_random(img.view(), seed);
  return img;
}

/// Fills with a value no operation should produce, to catch unwritten pixels.
inline void poison(const ImageView& v) {
  for (int y = 0; y < v.height; ++y) {
    const int n = v.width * v.channels;
    if (v.type == PixelType::u8) std::fill_n(v.row<std::uint8_t>(y), n, std::uint8_t{0xA5});
    else std::fill_n(v.row<float>(y), n, std::nanf(""));
  }
}

struct Diff {
  double max_abs = 0;   ///< largest |a - b|
  double max_ref = 0;   ///< largest |b|
  long long count = 0;  ///< elements compared
  int x = -1, y = -1, c = -1;
  bool nan = false;
  double rel() const { return max_abs / std::max(max_ref, 1e-30); }
};

/// Compares two host images element by element.
inline Diff compare(const ConstImageView& a, const ConstImageView& b) {
  Diff d;
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.height, b.height);
  EXPECT_EQ(a.channels, b.channels);
  if (a.width != b.width || a.height != b.height || a.channels != b.channels) return d;
  for (int y = 0; y < a.height; ++y)
    for (int i = 0; i < a.width * a.channels; ++i) {
      double va, vb;
      if (a.type == PixelType::u8) {
        va = a.row<std::uint8_t>(y)[i];
        vb = b.row<std::uint8_t>(y)[i];
      } else {
        va = a.row<float>(y)[i];
        vb = b.row<float>(y)[i];
      }
      if (std::isnan(va) || std::isnan(vb)) d.nan = true;
      const double e = std::fabs(va - vb);
      if (e > d.max_abs || std::isnan(e)) {
        d.max_abs = std::isnan(e) ? INFINITY : e;
        d.x = i / a.channels;
        d.y = y;
        d.c = i % a.channels;
      }
      d.max_ref = std::max(d.max_ref, std::fabs(vb));
      ++d.count;
    }
  return d;
}

inline std::string describe(const Diff& d) {
  return "max |diff| " + std::to_string(d.max_abs) + " (relative " + std::to_string(d.rel()) + ") at x=" +
         std::to_string(d.x) + " y=" + std::to_string(d.y) + " c=" + std::to_string(d.c) + (d.nan ? ", NaN seen" : "");
}

/// u8: within `grey` levels; f32: within `rel` of the reference's largest magnitude.
inline ::testing::AssertionResult agrees(const ConstImageView& got, const ConstImageView& want, double grey = 1.0,
                                         double rel = 1e-5) {
  const Diff d = compare(got, want);
  const bool ok = !d.nan && (got.type == PixelType::u8 ? d.max_abs <= grey : d.max_abs <= rel * std::max(d.max_ref, 1.0));
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << describe(d);
}

}  // namespace pixelkit::test

// ---- running the command-line program ------------------------------------------

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pixelkit::test {

struct CliResult {
  int code = -1;
  std::string out, err;
};

/// Runs `pixelkit ARGS` through the shell (ARGS is shell text), capturing
/// stdout, stderr and the exit code.
inline CliResult run_cli(const std::string& args) {
  static int counter = 0;
  const std::string base = ::testing::TempDir() + "/pk_cli_" + std::to_string(::getpid()) + "_" + std::to_string(++counter);
  const std::string cmd = std::string("'") + cli_path() + "' " + args + " >" + base + ".out 2>" + base + ".err";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const auto slurp = [](const std::string& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::filesystem::remove(base + ".out");
  std::filesystem::remove(base + ".err");
  return r;
}

/// A fresh, empty scratch folder for one test.
inline std::string scratch_dir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/pk_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

/// Files in `dir` (names only), to check that nothing (not even a temporary) was left.
inline std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// Base fixture for CLI tests: a fresh scratch folder holding a random RGB u8
/// input.npy, and expect_failure(), which checks a failing command's exit code,
/// its one-line message and that no file appeared or vanished.
class CliFixture : public ::testing::Test {
 protected:
  explicit CliFixture(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir = scratch_dir(prefix_ + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    input = dir + "/in.npy";
    write_npy(input, random_image(37, 23, 3, PixelType::u8, 5).cview());
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  void expect_failure(const std::string& args, int code, const std::string& fragment) {
    SCOPED_TRACE(args);
    const auto before = files_in(dir);
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << "stderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line expected: " << r.err;
    EXPECT_EQ(files_in(dir), before) << "a file appeared or vanished";
  }
  std::string dir, input;

 private:
  std::string prefix_;
};

}  // namespace pixelkit::test
