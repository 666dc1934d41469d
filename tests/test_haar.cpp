// The Haar transform: its layout against PyWavelets' (shapes and a worked
// example taken from pywt 1.1.1), every backend against ref at odd and even
// sizes for every level count up to the maximum, 1/3/4 channels, u8/f32, both
// normalisations; round trips; sub-image and device-resident views; the CUDA
// launch plans (fusion depth, tail, block size); thresholding; coefficient
// files; bad input through the library and through `pixelkit haar`.
// (tests/haar_pywt_check.py compares with PyWavelets itself, from CTest.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "haar/haar_backends.hpp"
#include "pixelkit/config.hpp"
#include "pixelkit/haar.hpp"
#include "pixelkit/io.hpp"
#include "test_support.hpp"

namespace pixelkit::test {
namespace {

std::vector<Backend> backends() {
  std::vector<Backend> b = {Backend::cpu};
  if (cuda_available()) b.push_back(Backend::cuda);
  return b;
}

Options with(Backend b) {
  Options o;
  o.backend = b;
  return o;
}

std::string label(int w, int h, int c, PixelType t, int levels, HaarNormalize n, Backend b) {
  return std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(c) + " " + to_string(t) + " levels " +
         std::to_string(levels) + " " + to_string(n) + " " + to_string(b);
}

Image forward(Backend b, const ConstImageView& src, int levels, HaarNormalize n = HaarNormalize::orthonormal) {
  const HaarLayout l = haar_layout(src.width, src.height, levels);
  Image co(l.coeff_width, l.coeff_height, src.channels, PixelType::f32);
  poison(co.view());  // every cell, gaps included, must be written
  haar_forward(src, co.view(), levels, n, with(b));
  return co;
}

Image inverse(Backend b, const ConstImageView& co, int w, int h, PixelType t, int levels,
              HaarNormalize n = HaarNormalize::orthonormal) {
  Image dst(w, h, co.channels, t);
  poison(dst.view());
  haar_inverse(co, dst.view(), levels, n, with(b));
  return dst;
}

// A host copy (clone() would also synchronise CUDA, which needs a device).
Image copy_of(const ConstImageView& v) {
  Image out(v.width, v.height, v.channels, v.type);
  copy(v, out.view());
  return out;
}

Image to_f32(const ConstImageView& v) {
  Image f(v.width, v.height, v.channels, PixelType::f32);
  convert(v, f.view());
  return f;
}

// ---- layout ---------------------------------------------------------------------

TEST(HaarLayout, MaxLevelsStopAtOnePixelOnTheShorterSide) {
  EXPECT_EQ(haar_max_levels(1, 1), 1);
  EXPECT_EQ(haar_max_levels(2, 2), 1);
  EXPECT_EQ(haar_max_levels(5, 3), 2);  // 3 -> 2 -> 1
  EXPECT_EQ(haar_max_levels(64, 64), 6);
  EXPECT_EQ(haar_max_levels(67, 129), 7);
  EXPECT_EQ(haar_max_levels(999, 1000), 10);
  EXPECT_EQ(haar_max_levels(1024, 768), 10);
  EXPECT_EQ(haar_max_levels(512, 512), 9);
  EXPECT_EQ(haar_max_levels(1, 5000), 1);
  EXPECT_EQ(haar_max_levels(8192, 8192), 13);
  EXPECT_THROW(haar_max_levels(0, 5), Error);
  for (int w : {1, 2, 3, 5, 64, 67, 129, 999}) {
    for (int h : {1, 2, 3, 5, 64, 67, 129, 1000}) {
      const int max = haar_max_levels(w, h);
      const HaarLayout l = haar_layout(w, h, max);
      EXPECT_EQ(std::min(l.band[max].width, l.band[max].height), 1) << w << "x" << h;
      if (max > 1 || std::min(w, h) > 1) {
        EXPECT_GT(std::min(l.band[max - 1].width, l.band[max - 1].height), 1) << w << "x" << h;
      }
    }
  }
}

TEST(HaarLayout, ShapesMatchPyWavelets) {
  // pywt.coeffs_to_array(pywt.wavedec2(x, 'haar', mode='periodization', level=L))[0].shape
  // for x of shape (rows, cols): {rows, cols, L, coeff rows, coeff cols}.
  const int cases[][5] = {{3, 5, 1, 4, 6},      {3, 5, 2, 4, 7},        {129, 67, 3, 132, 69},
                          {1, 1, 1, 2, 2},      {1, 5, 1, 2, 6},        {64, 64, 6, 64, 64},
                          {1000, 999, 10, 1002, 1002}, {768, 1024, 10, 769, 1024}};
  for (const auto& c : cases) {
    const HaarLayout l = haar_layout(c[1], c[0], c[2]);
    EXPECT_EQ(l.coeff_height, c[3]) << c[0] << "x" << c[1] << " L" << c[2];
    EXPECT_EQ(l.coeff_width, c[4]) << c[0] << "x" << c[1] << " L" << c[2];
  }
  // 129 rows x 67 cols at 3 levels: coeff_slices from pywt.
  const HaarLayout l = haar_layout(67, 129, 3);
  EXPECT_EQ(l.band[3].width, 9);
  EXPECT_EQ(l.band[3].height, 17);
  EXPECT_EQ(l.band[3].x0, 9);
  EXPECT_EQ(l.band[3].y0, 17);
  EXPECT_EQ(l.band[2].x0, 18);
  EXPECT_EQ(l.band[2].y0, 34);
  EXPECT_EQ(l.band[1].x0, 35);
  EXPECT_EQ(l.band[1].y0, 67);
  EXPECT_EQ(l.band[1].width, 34);
  EXPECT_EQ(l.band[1].height, 65);
}

TEST(HaarLayout, LevelsOutsideTheRangeAreRejectedNamingTheMaximum) {
  for (int bad : {0, -1, 3, 100}) {
    try {
      haar_layout(5, 3, bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("outside 1..2"), std::string::npos) << e.what();
    }
  }
}

// ---- values -----------------------------------------------------------------------

TEST(HaarRef, MatchesPyWaveletsWorkedExample) {
  // x = [[3,1,4,1,5],[9,2,6,5,3],[5,8,9,7,9]] (3 rows, 5 columns).
  const float x[3][5] = {{3, 1, 4, 1, 5}, {9, 2, 6, 5, 3}, {5, 8, 9, 7, 9}};
  Image src(5, 3, 1, PixelType::f32);
  for (int y = 0; y < 3; ++y)
    for (int i = 0; i < 5; ++i) src.row<float>(y)[i] = x[y][i];
  const std::vector<float> want1 = {7.5f, 8,  8,  4.5f, 2, 0, 13, 16, 18, -3, 2, 0,
                                    -3.5f, -3, 2, -2.5f, 1, 0, 0, 0, 0, 0, 0, 0};
  const std::vector<float> want2 = {22.25f, 26, -1.75f, 0, 4.5f, 2, 0, -6.75f, -10, 1.25f, 0, -3, 2, 0,
                                    -3.5f,  -3, 2,      0, -2.5f, 1, 0, 0,      0,   0,     0, 0, 0, 0};
  for (Backend b : {Backend::ref, Backend::cpu}) {
    const Image c1 = forward(b, src, 1), c2 = forward(b, src, 2);
    for (int y = 0; y < 4; ++y) {
      for (int i = 0; i < 6; ++i) EXPECT_NEAR(c1.row<float>(y)[i], want1[y * 6 + i], 1e-5) << y << "," << i;
      for (int i = 0; i < 7; ++i) EXPECT_NEAR(c2.row<float>(y)[i], want2[y * 7 + i], 1e-5) << y << "," << i;
    }
  }
  // 2x2: [[1, 2], [4, 8]] -> [[7.5, -2.5], [-4.5, 1.5]]; average halves it.
  Image s(2, 2, 1, PixelType::f32);
  s.row<float>(0)[0] = 1, s.row<float>(0)[1] = 2, s.row<float>(1)[0] = 4, s.row<float>(1)[1] = 8;
  const Image o = forward(Backend::ref, s, 1), a = forward(Backend::ref, s, 1, HaarNormalize::average);
  EXPECT_FLOAT_EQ(o.row<float>(0)[0], 7.5f);
  EXPECT_FLOAT_EQ(o.row<float>(0)[1], -2.5f);
  EXPECT_FLOAT_EQ(o.row<float>(1)[0], -4.5f);
  EXPECT_FLOAT_EQ(o.row<float>(1)[1], 1.5f);
  EXPECT_FLOAT_EQ(a.row<float>(0)[0], 3.75f);
  EXPECT_FLOAT_EQ(a.row<float>(1)[1], 0.75f);
}

TEST(HaarRef, AverageIsOrthonormalDividedByTwoToTheLevel) {
  const Image src = random_image(37, 29, 3, PixelType::f32, 7);
  const int L = haar_max_levels(37, 29);
  const HaarLayout l = haar_layout(37, 29, L);
  const Image o = forward(Backend::ref, src, L), a = forward(Backend::ref, src, L, HaarNormalize::average);
  const auto check = [&](int x0, int y0, int w, int h, double f) {
    for (int y = y0; y < y0 + h; ++y)
      for (int i = x0 * 3; i < (x0 + w) * 3; ++i)
        EXPECT_NEAR(a.row<float>(y)[i], o.row<float>(y)[i] * f, 1e-4 * std::fabs(o.row<float>(y)[i]) + 1e-5);
  };
  for (int k = 1; k <= L; ++k) {
    const auto& b = l.band[k];
    const double f = std::ldexp(1.0, -k);
    check(b.x0, 0, b.width, b.height, f);
    check(0, b.y0, b.width, b.height, f);
    check(b.x0, b.y0, b.width, b.height, f);
  }
  check(0, 0, l.band[L].width, l.band[L].height, std::ldexp(1.0, -L));
}

TEST(HaarRef, OrthonormalPreservesEnergy) {
  const Image src = random_image(64, 48, 1, PixelType::f32, 3);
  const Image co = forward(Backend::ref, src, 4);
  double e0 = 0, e1 = 0;
  for (int y = 0; y < 48; ++y)
    for (int x = 0; x < 64; ++x) e0 += double(src.row<float>(y)[x]) * src.row<float>(y)[x];
  for (int y = 0; y < co.height(); ++y)
    for (int x = 0; x < co.width(); ++x) e1 += double(co.row<float>(y)[x]) * co.row<float>(y)[x];
  EXPECT_NEAR(e1 / e0, 1.0, 1e-6);
}

// ---- every backend against ref ------------------------------------------------------

struct Size {
  int w, h;
};
// The sizes (width x height); the large ones check every level for
// one channel f32 and a spread of levels otherwise, to keep the runtime modest.
const Size kSizes[] = {{1, 1}, {2, 2}, {5, 3}, {3, 5}, {64, 64}, {67, 129}, {129, 67}, {999, 1000}, {1000, 999}, {1024, 768}};

std::vector<int> levels_to_test(const Size& s, int channels, PixelType t) {
  const int max = haar_max_levels(s.w, s.h);
  const bool big = static_cast<long long>(s.w) * s.h > 100000;
  std::vector<int> l;
  for (int k = 1; k <= max; ++k)
    if (!big || (channels == 1 && t == PixelType::f32) || k == 1 || k == 2 || k == max || k == max / 2) l.push_back(k);
  return l;
}

TEST(HaarBackends, AgreeWithRefForwardAndInverseEverySizeLevelAndChannelCount) {
  for (const Size& s : kSizes)
    for (int c : {1, 3, 4})
      for (PixelType t : {PixelType::f32, PixelType::u8}) {
        const bool big = static_cast<long long>(s.w) * s.h > 100000;
        if (big && c == 3 && t == PixelType::f32) continue;  // covered by the small sizes; saves time
        const Image src = random_image(s.w, s.h, c, t, static_cast<std::uint32_t>(s.w * 131 + s.h * 7 + c));
        for (int L : levels_to_test(s, c, t))
          for (HaarNormalize n : {HaarNormalize::orthonormal, HaarNormalize::average}) {
            if (big && n == HaarNormalize::average && L != 1 && L != haar_max_levels(s.w, s.h)) continue;
            const Image want = forward(Backend::ref, src, L, n);
            const Image back = inverse(Backend::ref, want, s.w, s.h, t, L, n);
            for (Backend b : backends()) {
              SCOPED_TRACE(label(s.w, s.h, c, t, L, n, b));
              const Image got = forward(b, src, L, n);
              EXPECT_TRUE(agrees(got, want, 0, 1e-5));
              const Image rec = inverse(b, want, s.w, s.h, t, L, n);
              EXPECT_TRUE(agrees(rec, back, t == PixelType::u8 ? 1.0 : 0.0, 1e-5));
            }
          }
      }
}

TEST(HaarBackends, RoundTripsRestoreTheImage) {
  for (const Size& s : kSizes)
    for (int c : {1, 3})
      for (PixelType t : {PixelType::f32, PixelType::u8}) {
        const Image src = random_image(s.w, s.h, c, t, static_cast<std::uint32_t>(s.w + s.h + c));
        const int max = haar_max_levels(s.w, s.h);
        for (int L : {1, (max + 1) / 2, max})
          for (Backend b : std::vector<Backend>{Backend::ref, Backend::cpu, Backend::cuda}) {
            if (b == Backend::cuda && !cuda_available()) continue;
            SCOPED_TRACE(label(s.w, s.h, c, t, L, HaarNormalize::orthonormal, b));
            const Image co = forward(b, src, L);
            const Image rec = inverse(b, co, s.w, s.h, t, L);
            if (t == PixelType::u8) EXPECT_TRUE(agrees(rec, src, 0.0));  // identical
            else EXPECT_TRUE(agrees(rec, src, 0.0, 1e-5));
            // f32 round trip of u8 data: exact to well under half a grey level.
            if (t == PixelType::u8) {
              const Image recf = inverse(b, co, s.w, s.h, PixelType::f32, L);
              EXPECT_TRUE(agrees(recf, to_f32(src), 0.0, 1e-5));
            }
          }
      }
}

TEST(HaarBackends, PhotosAgreeWithRefAndRoundTrip) {
  PIXELKIT_REQUIRE_PNG();
  for (const char* name : {"astronaut.png", "camera.png", "chelsea.png", "coffee.png"}) {
    const Image src = read_image(data_path(name));
    const int max = haar_max_levels(src.width(), src.height());
    for (int L : {1, 3, max}) {
      const Image want = forward(Backend::ref, src, L);
      for (Backend b : backends()) {
        SCOPED_TRACE(std::string(name) + " levels " + std::to_string(L) + " " + to_string(b));
        EXPECT_TRUE(agrees(forward(b, src, L), want, 0, 1e-5));
        EXPECT_TRUE(agrees(inverse(b, want, src.width(), src.height(), PixelType::u8, L), src, 0.0));
      }
    }
  }
}

TEST(HaarBackends, SubImageViewsInAndOut) {
  for (Backend b : std::vector<Backend>{Backend::ref, Backend::cpu, Backend::cuda}) {
    if (b == Backend::cuda && !cuda_available()) continue;
    for (int c : {1, 3, 4})
      for (PixelType t : {PixelType::u8, PixelType::f32}) {
        SCOPED_TRACE(std::string(to_string(b)) + " " + std::to_string(c) + " " + to_string(t));
        const Image big = random_image(131, 77, c, t, 11u + c);
        const ConstImageView src = big.cview().sub(3, 5, 101, 63);  // odd offsets: unaligned rows
        const Image packed = copy_of(src);
        const int L = 4;
        const HaarLayout l = haar_layout(101, 63, L);
        const Image want = forward(Backend::ref, packed, L);
        Image co_big(l.coeff_width + 9, l.coeff_height + 4, c, PixelType::f32);
        fill_random(co_big.view(), 99);
        const Image before = copy_of(co_big.cview());
        const ImageView co = co_big.view().sub(5, 3, l.coeff_width, l.coeff_height);
        haar_forward(src, co, L, HaarNormalize::orthonormal, with(b));
        EXPECT_TRUE(agrees(co, want, 0, 1e-5));
        // Nothing outside the view was touched.
        EXPECT_TRUE(agrees(co_big.cview().sub(0, 0, 5, co_big.height()), before.cview().sub(0, 0, 5, co_big.height()), 0, 0));
        EXPECT_TRUE(agrees(co_big.cview().sub(0, 0, co_big.width(), 3), before.cview().sub(0, 0, co_big.width(), 3), 0, 0));
        // Inverse from the sub-view into a sub-view.
        Image out_big(120, 80, c, t);
        poison(out_big.view());
        const ImageView out = out_big.view().sub(7, 9, 101, 63);
        haar_inverse(co, out, L, HaarNormalize::orthonormal, with(b));
        EXPECT_TRUE(agrees(out, packed, 0.0, 1e-5));
      }
  }
}

TEST(HaarBackends, ReusableTransformOnManySizes) {
  // One object over growing and shrinking sizes: scratch is reused correctly.
  for (Backend b : backends()) {
    HaarTransform f(3);
    for (const Size& s : {Size{300, 200}, Size{17, 9}, Size{640, 480}, Size{33, 65}}) {
      const Image src = random_image(s.w, s.h, 1, PixelType::f32, 5);
      const HaarLayout l = haar_layout(s.w, s.h, 3);
      Image co(l.coeff_width, l.coeff_height, 1, PixelType::f32);
      f.forward(src, co.view(), with(b));
      EXPECT_TRUE(agrees(co, forward(Backend::ref, src, 3), 0, 1e-5)) << s.w << "x" << s.h;
      Image back(s.w, s.h, 1, PixelType::f32);
      f.inverse(co, back.view(), with(b));
      EXPECT_TRUE(agrees(back, src, 0, 1e-5)) << "inverse " << s.w << "x" << s.h;
    }
  }
}

// ---- cuda ----------------------------------------------------------------------------

// PIXELKIT_TEST_SMALL=1 keeps the CUDA tests to small sizes (for runs under
// compute-sanitizer, which slows every kernel down a lot).
bool small_only() {
  const char* e = std::getenv("PIXELKIT_TEST_SMALL");
  return e && *e && std::string(e) != "0";
}

std::vector<Size> cuda_sizes(std::vector<Size> all) {
  if (!small_only()) return all;
  std::vector<Size> s;
  for (const Size& z : all)
    if (static_cast<long long>(z.w) * z.h <= 20000) s.push_back(z);
  return s;
}

TEST(HaarCuda, DeviceResidentViewsIncludingUnalignedSubViews) {
  PIXELKIT_REQUIRE_GPU();
  for (const Size& s : cuda_sizes({Size{1024, 768}, Size{129, 67}, Size{1, 1}, Size{3, 5}, Size{1000, 999}}))
    for (int c : {1, 3, 4}) {
      const Image src = random_image(s.w + 3, s.h + 2, c, PixelType::f32, 17);
      const int L = haar_max_levels(s.w, s.h);
      const HaarLayout l = haar_layout(s.w, s.h, L);
      for (int off : {0, 1}) {
        SCOPED_TRACE(std::to_string(s.w) + "x" + std::to_string(s.h) + "x" + std::to_string(c) + " offset " +
                     std::to_string(off));
        const ConstImageView hs = src.cview().sub(off, off, s.w, s.h);
        const Image want = forward(Backend::ref, copy_of(hs), L);
        const Image dsrc_all = clone(src.cview(), Memory::device);
        Image dco_all(l.coeff_width + 1, l.coeff_height + 1, c, PixelType::f32, Memory::device);
        const ImageView dco = dco_all.view().sub(off, off, l.coeff_width, l.coeff_height);
        haar_forward(dsrc_all.cview().sub(off, off, s.w, s.h), dco, L, HaarNormalize::orthonormal, with(Backend::cuda));
        synchronize(nullptr);
        EXPECT_TRUE(agrees(clone(dco), want, 0, 1e-5));
        Image dout(s.w, s.h, c, PixelType::u8, Memory::device);
        Image dout_f(s.w + 1, s.h, c, PixelType::f32, Memory::device);
        haar_inverse(dco, dout_f.view().sub(off, 0, s.w, s.h), L, HaarNormalize::orthonormal, with(Backend::cuda));
        haar_inverse(dco, dout.view(), L, HaarNormalize::orthonormal, with(Backend::cuda));
        synchronize(nullptr);
        EXPECT_TRUE(agrees(clone(dout_f.cview().sub(off, 0, s.w, s.h)), copy_of(hs), 0, 1e-5));
        // u8 from f32 data: values within float error of a .5 may round either way.
        Image want_u8 = inverse(Backend::ref, want, s.w, s.h, PixelType::u8, L);
        EXPECT_TRUE(agrees(clone(dout.cview()), want_u8, 1.0));
      }
    }
}

#if PIXELKIT_WITH_CUDA
TEST(HaarCuda, EveryLaunchPlanAgrees) {
  PIXELKIT_REQUIRE_GPU();
  // Fusion depth 1..3, tail on and off, block sizes: the same function.
  for (const Size& s : cuda_sizes({Size{1024, 768}, Size{1000, 999}, Size{129, 67}, Size{37, 5}, Size{300, 40}}))
    for (int c : {1, 4}) {
      const Image src = random_image(s.w, s.h, c, PixelType::u8, 23);
      const int L = haar_max_levels(s.w, s.h);
      const HaarLayout l = haar_layout(s.w, s.h, L);
      const Image want = forward(Backend::ref, src, L);
      for (int fuse : {1, 2, 3})
        for (int tail : {0, 6144})
          for (int threads : {32, 128, 512}) {
            SCOPED_TRACE(std::to_string(s.w) + "x" + std::to_string(s.h) + "x" + std::to_string(c) + " fuse " +
                         std::to_string(fuse) + " tail " + std::to_string(tail) + " threads " + std::to_string(threads));
            auto cuda = detail::make_cuda_haar();
            cuda->tuning() = {threads, fuse, tail, fuse};
            Image co(l.coeff_width, l.coeff_height, c, PixelType::f32);
            poison(co.view());
            cuda->forward(src, co.view(), l, HaarNormalize::orthonormal, nullptr);
            EXPECT_TRUE(agrees(co, want, 0, 1e-5));
            Image rec(s.w, s.h, c, PixelType::u8);
            poison(rec.view());
            cuda->inverse(co, rec.view(), l, HaarNormalize::orthonormal, nullptr);
            EXPECT_TRUE(agrees(rec, src, 0.0));
          }
    }
}
#endif

// ---- thresholding and files ---------------------------------------------------------------

TEST(HaarKeep, KeepsExactlyTheLargestFraction) {
  const Image src = random_image(61, 47, 3, PixelType::f32, 31);
  const int L = 3;
  const HaarLayout l = haar_layout(61, 47, L);
  for (double keep : {1.0, 0.5, 0.05, 1e-9}) {
    Image co = forward(Backend::ref, src, L);
    const Image orig = copy_of(co.cview());
    const HaarKeepStats s = haar_keep_largest(co.view(), l, keep);
    EXPECT_EQ(s.details, l.detail_count() * 3);
    EXPECT_EQ(s.approx, l.approx_count() * 3);
    EXPECT_EQ(s.kept, std::min(s.details, static_cast<std::size_t>(std::ceil(keep * s.details - 1e-9))));
    // Approximation untouched; count the surviving details; each zeroed one
    // is no larger than every survivor.
    EXPECT_TRUE(agrees(co.cview().sub(0, 0, l.band[L].width, l.band[L].height),
                       orig.cview().sub(0, 0, l.band[L].width, l.band[L].height), 0, 0));
    std::size_t alive = 0, nonzero = 0;
    float min_kept = INFINITY, max_dropped = 0;
    for (int k = 1; k <= L; ++k) {
      const auto& b = l.band[k];
      const int rects[3][2] = {{b.x0, 0}, {0, b.y0}, {b.x0, b.y0}};
      for (const auto& r : rects)
        for (int y = r[1]; y < r[1] + b.height; ++y)
          for (int i = r[0] * 3; i < (r[0] + b.width) * 3; ++i) {
            const float now = co.row<float>(y)[i], was = orig.row<float>(y)[i];
            nonzero += was != 0.0f;
            if (now != 0.0f) {
              EXPECT_EQ(now, was);
              ++alive;
              min_kept = std::min(min_kept, std::fabs(was));
            } else {
              max_dropped = std::max(max_dropped, std::fabs(was));
            }
          }
    }
    // Odd sides give exact zeros (a padded column has no x-detail); they are
    // the smallest magnitudes, so they go first.
    EXPECT_EQ(alive, std::min(s.kept, nonzero)) << keep;
    if (s.kept < s.details) EXPECT_LE(max_dropped, min_kept);
  }
  Image co = forward(Backend::ref, src, L);
  for (double bad : {0.0, -0.1, 1.5, std::nan("")}) {
    try {
      haar_keep_largest(co.view(), l, bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("outside (0, 1]"), std::string::npos) << e.what();
    }
  }
}

TEST(HaarFiles, WriteReadRoundTripAndBadFiles) {
  const std::string dir = scratch_dir("haar_files");
  const Image src = random_image(45, 31, 4, PixelType::u8, 3);
  const Image co = forward(Backend::ref, src, 5, HaarNormalize::average);
  const std::string p = dir + "/c.npz";
  write_haar_npz(p, co, 45, 31, 5, HaarNormalize::average, PixelType::u8);
  const HaarCoefficients r = read_haar_npz(p);
  EXPECT_EQ(r.width, 45);
  EXPECT_EQ(r.height, 31);
  EXPECT_EQ(r.levels, 5);
  EXPECT_EQ(r.normalize, HaarNormalize::average);
  EXPECT_EQ(r.source_type, PixelType::u8);
  EXPECT_TRUE(agrees(r.coeffs, co, 0, 0));

  const auto expect_io = [&](const std::string& path, const std::string& fragment) {
    try {
      read_haar_npz(path);
      ADD_FAILURE() << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::io) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  // Truncated at several points.
  const std::vector<unsigned char> bytes = read_file(p);
  for (std::size_t cut : {std::size_t{10}, bytes.size() / 2, bytes.size() - 30}) {
    const std::string t = dir + "/t" + std::to_string(cut) + ".npz";
    write_file_atomic(t, bytes.data(), cut);
    expect_io(t, "");
  }
  // Not an .npz at all.
  const std::string junk = dir + "/junk.npz";
  write_file_atomic(junk, "hello, world", 12);
  expect_io(junk, "");
  // A valid .npz that is not pixelkit's.
  NpzMember m;
  m.name = "coeffs";
  m.array.type = NpyType::f32;
  m.array.shape = {2, 2};
  m.array.bytes.assign(16, 0);
  const std::string foreign = dir + "/foreign.npz";
  write_npz(foreign, {m});
  expect_io(foreign, "not a pixelkit Haar coefficient file");
  // Right members, wrong coefficient shape.
  Image small(3, 3, 1, PixelType::f32);
  fill_random(small.view(), 1);
  const std::string shape = dir + "/shape.npz";
  write_haar_npz(shape, forward(Backend::ref, small, 1), 3, 3, 1, HaarNormalize::orthonormal, PixelType::f32);
  std::vector<NpzMember> mem = read_npz(shape);
  for (auto& x : mem)
    if (x.name == "width") {
      const std::int64_t w = 5;
      std::memcpy(x.array.bytes.data(), &w, 8);
    }
  write_npz(shape, mem);
  expect_io(shape, "'coeffs' has shape");
  std::filesystem::remove_all(dir);
}

TEST(HaarErrors, BadArgumentsAreRejectedClearly) {
  const Image src = random_image(20, 10, 1, PixelType::f32, 1);
  const HaarLayout l = haar_layout(20, 10, 2);
  Image co(l.coeff_width, l.coeff_height, 1, PixelType::f32);
  const auto expect = [](auto&& f, Status st, const std::string& fragment) {
    try {
      f();
      ADD_FAILURE() << "no error; expected " << fragment;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), st) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect([&] { HaarTransform(0); }, Status::invalid_argument, "at least 1");
  expect([&] { haar_forward(src, co.view(), 5); }, Status::invalid_argument, "outside 1..4");
  expect([&] { haar_forward(src, co.view(), 1); }, Status::invalid_argument, "do not fit");
  Image co3(l.coeff_width, l.coeff_height, 3, PixelType::f32);
  expect([&] { haar_forward(src, co3.view(), 2); }, Status::invalid_argument, "do not fit");
  Image two(20, 10, 2, PixelType::f32);
  expect([&] { haar_forward(two, co.view(), 2); }, Status::invalid_argument, "2 channels");
  Image dst(20, 10, 1, PixelType::f32);
  expect([&] { haar_inverse(co, dst.view().sub(0, 0, 17, 10), 2); }, Status::invalid_argument, "do not fit");
  expect([&] { parse_haar_normalize("ortho"); }, Status::invalid_argument, "not one of orthonormal, average");
  // Overlap: coefficients written over the source.
  Image shared(l.coeff_width, l.coeff_height, 1, PixelType::f32);
  expect([&] { haar_forward(shared.cview().sub(0, 0, 20, 10), shared.view(), 2); }, Status::invalid_argument,
         "overlap");
  if (!built_with_cuda()) {
    expect([&] { haar_forward(src, co.view(), 2, HaarNormalize::orthonormal, with(Backend::cuda)); },
           Status::unsupported, "cuda");
  }
}

// ---- the command line ---------------------------------------------------------------------

class CliHaar : public CliFixture {
 protected:
  CliHaar() : CliFixture("haar_") {}
};

TEST_F(CliHaar, ForwardInverseRoundTripIsExactOnEveryBackend) {
  std::vector<std::string> bs = {"ref", "cpu", "auto"};
  if (cuda_available()) bs.push_back("cuda");
  const Image src = read_image(input);
  for (const auto& b : bs)
    for (const char* norm : {"orthonormal", "average"}) {
      SCOPED_TRACE(b + " " + norm);
      const std::string c = dir + "/c_" + b + norm + ".npz", o = dir + "/o_" + b + norm + ".npy";
      CliResult r = run_cli("haar " + input + " --levels 3 --normalize " + norm + " --coeffs " + c + " --backend " + b);
      ASSERT_EQ(r.code, 0) << r.err;
      const HaarCoefficients hc = read_haar_npz(c);
      EXPECT_EQ(hc.levels, 3);
      EXPECT_EQ(hc.normalize, parse_haar_normalize(norm));
      EXPECT_TRUE(agrees(hc.coeffs, forward(Backend::ref, src, 3, parse_haar_normalize(norm)), 0, 1e-5));
      r = run_cli("haar --inverse " + c + " " + o + " --backend " + b);
      ASSERT_EQ(r.code, 0) << r.err;
      const Image back = read_image(o);
      EXPECT_EQ(back.type(), PixelType::u8);
      EXPECT_TRUE(agrees(back, src, 0.0));  // identical
    }
  // --levels max and --view.
  const std::string v = dir + "/view.npy";
  const CliResult r = run_cli("haar " + input + " --levels max --view " + v + " -v");
  ASSERT_EQ(r.code, 0) << r.err;
  const Image view = read_image(v);
  const HaarLayout l = haar_layout(37, 23, haar_max_levels(37, 23));
  EXPECT_EQ(view.width(), l.coeff_width);
  EXPECT_EQ(view.height(), l.coeff_height);
  EXPECT_NE(r.err.find("forward"), std::string::npos) << r.err;
}

TEST_F(CliHaar, PngRoundTripIsIdentical) {
  PIXELKIT_REQUIRE_PNG();
  const std::string photo = data_path("chelsea.png");  // 451x300: odd width
  const std::string c = dir + "/c.npz", o = dir + "/o.png";
  ASSERT_EQ(run_cli("haar " + photo + " --levels max --coeffs " + c).code, 0);
  ASSERT_EQ(run_cli("haar --inverse " + c + " " + o).code, 0);
  EXPECT_TRUE(agrees(read_image(o), read_image(photo), 0.0));
}

TEST_F(CliHaar, CompressReportsCountRatioAndPsnr) {
  const std::string o = dir + "/o.npy";
  CliResult r = run_cli("haar " + input + " --compress 0.05 " + o + " --levels 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("kept "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ratio "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PSNR "), std::string::npos) << r.out;
  const Image src = read_image(input), out = read_image(o);
  EXPECT_EQ(out.width(), src.width());
  EXPECT_EQ(out.type(), PixelType::u8);
  const HaarLayout l = haar_layout(37, 23, 2);
  const std::size_t details = l.detail_count() * 3;
  const std::size_t kept = static_cast<std::size_t>(std::ceil(0.05 * details - 1e-9));
  EXPECT_NE(r.out.find("kept " + std::to_string(kept) + " of " + std::to_string(details)), std::string::npos) << r.out;
  // KEEP = 1 keeps everything: the image comes back identical.
  r = run_cli("haar " + input + " --compress 1 " + o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("PSNR inf"), std::string::npos) << r.out;
  EXPECT_TRUE(agrees(read_image(o), src, 0.0));
}

TEST_F(CliHaar, BadInputFailsWithOneLineTheRightCodeAndNoOutput) {
  const std::string c = dir + "/c.npz", o = dir + "/o.npy";  // .npy: every build writes it
  expect_failure("haar " + input + " --levels 0 --coeffs " + c, 2, "--levels: 0 is outside 1..5");
  expect_failure("haar " + input + " --levels 6 --coeffs " + c, 2, "--levels: 6 is outside 1..5");
  expect_failure("haar " + input + " --levels two --coeffs " + c, 2, "not a level count");
  expect_failure("haar " + input + " --normalize l2 --coeffs " + c, 2, "--normalize");
  expect_failure("haar " + input, 2, "nothing to write");
  expect_failure("haar " + input + " --coeffs " + dir + "/c.npy", 2, "must end in .npz");
  expect_failure("haar " + input + " --coeffs " + dir + "/missing/c.npz", 1, "does not exist");
  for (const char* keep : {"0", "1.5", "-0.5", "abc", "nan"})
    expect_failure("haar " + input + " --compress " + keep + " " + o, 2, "--compress");
  expect_failure("haar " + input + " --compress 0.1", 2, "--compress");
  // Coefficient files: missing, not an archive, truncated, not pixelkit's.
  expect_failure("haar --inverse " + dir + "/nope.npz " + o, 1, "nope.npz");
  const std::string junk = dir + "/junk.npz";
  write_file_atomic(junk, "PK\x03\x04 not really", 15);
  expect_failure("haar --inverse " + junk + " " + o, 1, "junk.npz");
  ASSERT_EQ(run_cli("haar " + input + " --levels 2 --coeffs " + c).code, 0);
  const auto bytes = read_file(c);
  const std::string cut = dir + "/cut.npz";
  write_file_atomic(cut, bytes.data(), bytes.size() - 100);
  expect_failure("haar --inverse " + cut + " " + o, 1, "cut.npz");
  NpzMember m;
  m.name = "x";
  m.array.type = NpyType::f32;
  m.array.shape = {1};
  m.array.bytes.assign(4, 0);
  const std::string foreign = dir + "/foreign.npz";
  write_npz(foreign, {m});
  expect_failure("haar --inverse " + foreign + " " + o, 1, "not a pixelkit Haar coefficient file");
  expect_failure("haar --inverse " + c + " " + o + " --levels 1", 2, "come from the coefficient file");
  expect_failure("haar --inverse " + c + " " + c, 2, "unsupported extension '.npz'");
  expect_failure("haar " + input + " --compress 0.5 " + input, 2, "refusing to overwrite");
}

}  // namespace
}  // namespace pixelkit::test
