// Template matching: every backend (cpu, cuda) and strategy (direct, fft)
// against ref, bit for bit for u8 score maps (six methods, 1 and 3 channels,
// no mask / 1-channel / 3-channel masks, odd sizes, templates from 1x1 to the
// full image) and within 1e-5 relative for f32; sub-image views, device
// images and maps, Matcher reuse; OpenCV's matchTemplate + minMaxLoc on crops
// of the photos in data/ pasted back with noise and a brightness change; the
// documented degenerate values; top-K with NMS; the colour check (OpenCV's
// RGB -> HSV on all 2^24 colours, counts, fractions, verdicts); the parsers and
// bad input. The command line is tested in test_match_cli.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "match/match_backends.hpp"
#include "pixelkit/io.hpp"
#include "pixelkit/match.hpp"
#include "test_support.hpp"

#if PIXELKIT_TEST_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "pixelkit/opencv.hpp"
#endif

namespace pixelkit::test {
namespace {

constexpr MatchMethod kMethods[] = {MatchMethod::sqdiff, MatchMethod::sqdiff_normed, MatchMethod::ccorr,
                                    MatchMethod::ccorr_normed, MatchMethod::ccoeff, MatchMethod::ccoeff_normed};

// ---- helpers ----------------------------------------------------------------------

Options with(Backend b, stream_t stream = nullptr) {
  Options o;
  o.backend = b;
  o.stream = stream;
  return o;
}

MatchParams params(MatchMethod m, MatchStrategy s = MatchStrategy::automatic, int top_k = 1, int min_distance = -1) {
  MatchParams p;
  p.method = m;
  p.strategy = s;
  p.top_k = top_k;
  p.min_distance = min_distance;
  return p;
}

/// A backend with a forced strategy.
struct Path {
  Backend backend;
  MatchStrategy strategy;
};
std::string to_string(const Path& p) {
  return std::string(pixelkit::to_string(p.backend)) + "/" + pixelkit::to_string(p.strategy);
}

bool cpu_fft() { return detail::cpu_match_fft_available(); }

/// The paths of `backend` this build runs: cpu direct, cpu fft (with OpenCV),
/// cuda direct and fft.
std::vector<Path> paths_of(Backend backend) {
  std::vector<Path> p = {{backend, MatchStrategy::direct}};
  if (backend == Backend::cuda || cpu_fft()) p.push_back({backend, MatchStrategy::fft});
  return p;
}

std::string shape_label(const ConstImageView& v) {
  return std::to_string(v.width) + "x" + std::to_string(v.height) + "x" + std::to_string(v.channels) + " " +
         pixelkit::to_string(v.type);
}

/// The score map of `image` (host f32, poisoned first) on one path.
Image score_map(const ConstImageView& image, const ConstImageView& templ, const ConstImageView& mask, MatchMethod m,
                Path path, MatchResult* result = nullptr, int top_k = 1) {
  int w = 0, h = 0;
  match_result_size(image.width, image.height, templ.width, templ.height, w, h);
  Image scores(w, h, 1, PixelType::f32);
  poison(scores.view());
  Matcher matcher(templ, params(m, path.strategy, top_k), mask);
  RunInfo info;
  Options o = with(path.backend);
  o.info = &info;
  const MatchResult r = matcher(image, scores.view(), o);
  EXPECT_EQ(info.backend, path.backend);
  if (path.backend != Backend::ref) EXPECT_EQ(r.strategy, path.strategy) << to_string(path);
  if (result) *result = r;
  return scores;
}

Image ref_map(const ConstImageView& image, const ConstImageView& templ, const ConstImageView& mask, MatchMethod m,
              MatchResult* result = nullptr, int top_k = 1) {
  return score_map(image, templ, mask, m, {Backend::ref, MatchStrategy::direct}, result, top_k);
}

/// Bit for bit equality of two host f32 maps (memcmp of every row).
::testing::AssertionResult identical(const ConstImageView& got, const ConstImageView& want) {
  if (got.width != want.width || got.height != want.height || got.channels != want.channels || got.type != want.type)
    return ::testing::AssertionFailure() << "shape " << shape_label(got) << " != " << shape_label(want);
  long long bad = 0;
  int fx = -1, fy = -1;
  for (int y = 0; y < want.height; ++y) {
    if (std::memcmp(got.row<unsigned char>(y), want.row<unsigned char>(y), want.row_bytes()) == 0) continue;
    for (int x = 0; x < want.width * want.channels; ++x)
      if (std::memcmp(got.row<float>(y) + x, want.row<float>(y) + x, sizeof(float)) != 0) {
        if (bad++ == 0) fx = x, fy = y;
      }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  char buf[160];
  std::snprintf(buf, sizeof buf, "%lld values differ; first at x=%d y=%d: got %.9g, want %.9g", bad, fx, fy,
                static_cast<double>(got.row<float>(fy)[fx]), static_cast<double>(want.row<float>(fy)[fx]));
  return ::testing::AssertionFailure() << buf;
}

bool has_nan(const ConstImageView& v) {
  for (int y = 0; y < v.height; ++y)
    for (int x = 0; x < v.width * v.channels; ++x)
      if (std::isnan(v.row<float>(y)[x])) return true;
  return false;
}

float at(const ConstImageView& v, int x, int y) { return v.row<float>(y)[x]; }

/// A random image with two flat rectangles (0 and a mid-grey), so that small
/// templates also meet windows without energy or variance.
Image scene(int w, int h, int c, PixelType t, std::uint32_t seed) {
  Image img = random_image(w, h, c, t, seed);
  const auto flat = [&](int x0, int y0, int rw, int rh, float value) {
    for (int y = y0; y < std::min(h, y0 + rh); ++y)
      for (int x = x0 * c; x < std::min(w, x0 + rw) * c; ++x) {
        if (t == PixelType::u8) img.row<std::uint8_t>(y)[x] = static_cast<std::uint8_t>(value);
        else img.row<float>(y)[x] = value;
      }
  };
  flat(w / 8, h / 8, w / 3, h / 3, 0.0f);
  flat(w / 2, h / 2, w / 3, h / 3, t == PixelType::u8 ? 200.0f : 100.5f);
  return img;
}

/// A random u8 mask with about a third of its pixels zero; the non-zero ones
/// are 1, 7 or 255 (binarised by the library, as by OpenCV).
Image random_mask(int w, int h, int c, std::uint32_t seed) {
  Image m(w, h, c, PixelType::u8);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, 5);
  const std::uint8_t values[] = {0, 0, 1, 7, 255, 255};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w * c; ++x) m.row<std::uint8_t>(y)[x] = values[d(rng)];
  m.row<std::uint8_t>(0)[0] = 255;  // never all zero
  return m;
}

/// Expects `f` to throw pixelkit::Error with `status` and a message containing `fragment`.
template <typename F>
void expect_error(F&& f, Status status, const std::string& fragment, const std::string& what = "") {
  try {
    f();
    ADD_FAILURE() << what << ": no exception, expected " << pixelkit::to_string(status) << " '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << what << ": message '" << e.what() << "' lacks '" << fragment << "'";
  }
}

struct TemplCase {
  int x, y, w, h;  // the template is the image's window at (x, y), w x h, with noise (or random when w < 0)
};

/// A template for `img`: its window at (x, y), so that some window matches
/// well, or a random one when `random_templ`.
Image make_templ(const ConstImageView& img, int x, int y, int w, int h, bool random_templ, std::uint32_t seed) {
  if (random_templ) return random_image(w, h, img.channels, img.type, seed);
  return clone(img.sub(x, y, w, h));
}

// ---- the parsers -----------------------------------------------------------------------

TEST(MatchNames, MethodsStrategiesAndVerdictsRoundTrip) {
  for (MatchMethod m : kMethods) EXPECT_EQ(parse_match_method(pixelkit::to_string(m)), m);
  EXPECT_STREQ(pixelkit::to_string(MatchMethod::ccoeff_normed), "ccoeff_normed");
  EXPECT_TRUE(lower_is_better(MatchMethod::sqdiff));
  EXPECT_TRUE(lower_is_better(MatchMethod::sqdiff_normed));
  EXPECT_FALSE(lower_is_better(MatchMethod::ccorr));
  EXPECT_FALSE(lower_is_better(MatchMethod::ccoeff_normed));
  for (MatchStrategy s : {MatchStrategy::automatic, MatchStrategy::direct, MatchStrategy::fft})
    EXPECT_EQ(parse_match_strategy(pixelkit::to_string(s)), s);
  EXPECT_STREQ(pixelkit::to_string(MatchStrategy::automatic), "auto");
  EXPECT_STREQ(pixelkit::to_string(Verdict::pass), "pass");
  EXPECT_STREQ(pixelkit::to_string(Verdict::fail), "fail");
  EXPECT_STREQ(pixelkit::to_string(Verdict::none), "none");
}

TEST(MatchNames, BadMethodsAndStrategiesAreRejectedQuotingTheText) {
  for (const char* bad : {"", "SQDIFF", "sqdiff ", "ssd", "ccoeff_norm", "TM_CCOEFF_NORMED"})
    expect_error([&] { parse_match_method(bad); }, Status::invalid_argument, std::string("method '") + bad + "'", bad);
  for (const char* bad : {"", "automatic", "FFT", "dft", "direct,fft"})
    expect_error([&] { parse_match_strategy(bad); }, Status::invalid_argument, std::string("strategy '") + bad + "'",
                 bad);
}

TEST(MatchNames, HsvRangesParseAndPrint) {
  const HsvRange r = parse_hsv_range("100,150,0:140,255,255");
  EXPECT_EQ(r.h_lo, 100);
  EXPECT_EQ(r.s_lo, 150);
  EXPECT_EQ(r.v_lo, 0);
  EXPECT_EQ(r.h_hi, 140);
  EXPECT_EQ(r.s_hi, 255);
  EXPECT_EQ(r.v_hi, 255);
  EXPECT_EQ(pixelkit::to_string(r), "100,150,0:140,255,255");
  // H1 > H2 wraps around red.
  const HsvRange w = parse_hsv_range("170,50,50:10,255,255");
  EXPECT_TRUE(w.contains(175, 100, 100));
  EXPECT_TRUE(w.contains(0, 100, 100));
  EXPECT_TRUE(w.contains(10, 100, 100));
  EXPECT_FALSE(w.contains(11, 100, 100));
  EXPECT_FALSE(w.contains(169, 100, 100));
  EXPECT_FALSE(w.contains(0, 49, 100));
  EXPECT_FALSE(w.contains(0, 100, 49));
  EXPECT_EQ(pixelkit::to_string(parse_hsv_range(pixelkit::to_string(w))), pixelkit::to_string(w));
  EXPECT_NO_THROW(parse_hsv_range("0,0,0:179,255,255"));
  EXPECT_NO_THROW(parse_hsv_range("179,255,255:0,255,255"));
}

TEST(MatchNames, MalformedHsvRangesSayWhatIsWrong) {
  struct Bad {
    const char* text;
    const char* fragment;
  };
  const Bad cases[] = {
      {"", "HSV range ''"},
      {"100,150,0", "':'"},
      {"100,150,0:140,255,255:1", "':'"},
      {"100,150:140,255,255", "has 2 values, not 3"},
      {"100,150,0,1:140,255,255", "has 4 values, not 3"},
      {"100,150,0:140,255", "has 2 values, not 3"},
      {"180,150,0:140,255,255", "H1 180 is outside 0..179"},
      {"100,150,0:140,256,255", "S2 256 is outside 0..255"},
      {"100,150,0:140,255,300", "V2 300 is outside 0..255"},
      {"-1,150,0:140,255,255", "H1 '-1' is not a whole number"},
      {"1.5,150,0:140,255,255", "H1 '1.5' is not a whole number"},
      {"a,150,0:140,255,255", "H1 'a' is not a whole number"},
      {" 1,150,0:140,255,255", "is not a whole number"},
      {"100,,0:140,255,255", "S1 is missing"},
      {"100,200,0:140,150,255", "S1 200 is above S2 150"},
      {"100,150,90:140,255,80", "V1 90 is above V2 80"},
      {"99999999999,0,0:1,1,1", "outside 0..179"},
  };
  for (const Bad& b : cases)
    expect_error([&] { parse_hsv_range(b.text); }, Status::invalid_argument, b.fragment, b.text);
}

// ---- every backend and strategy against ref: u8 bit for bit --------------------------

// Templates from 1x1 to the full image, odd and even sides, cut from the image
// (a perfect match exists) or random; masks none, 1-channel and (for colour)
// 3-channel; the six methods.
void expect_u8_identical_to_ref(const std::vector<Path>& paths) {
  const int W = 53, H = 41;
  const TemplCase templs[] = {{0, 0, 1, 1},   {7, 3, 3, 5},   {20, 11, 7, 7},  {30, 2, 16, 9},
                              {-1, 0, 27, 21}, {0, 0, 53, 41}, {0, 17, 53, 1}, {-1, 0, 1, 41}};
  int cases = 0;
  for (int c : {1, 3}) {
    const Image img = scene(W, H, c, PixelType::u8, 100 + c);
    for (const TemplCase& tc : templs) {
      const bool random_t = tc.x < 0;
      const Image templ = make_templ(img, std::max(tc.x, 0), tc.y, tc.w, tc.h, random_t, 7 * tc.w + tc.h);
      std::vector<Image> masks;
      masks.emplace_back();  // none
      masks.push_back(random_mask(tc.w, tc.h, 1, 31 + tc.w));
      if (c == 3) masks.push_back(random_mask(tc.w, tc.h, 3, 37 + tc.h));
      for (const Image& mask : masks)
        for (MatchMethod m : kMethods) {
          const std::string label = shape_label(img) + " template " + shape_label(templ) +
                                    (mask.empty() ? "" : " mask " + shape_label(mask)) + " " + pixelkit::to_string(m);
          MatchResult want_r;
          const Image want = ref_map(img, templ, mask, m, &want_r);
          ASSERT_FALSE(has_nan(want)) << label;
          for (const Path& p : paths) {
            MatchResult got_r;
            const Image got = score_map(img, templ, mask, m, p, &got_r);
            EXPECT_TRUE(identical(got, want)) << label << " on " << to_string(p);
            ASSERT_EQ(got_r.matches.size(), 1u) << label << " on " << to_string(p);
            EXPECT_EQ(got_r.matches[0].x, want_r.matches[0].x) << label << " on " << to_string(p);
            EXPECT_EQ(got_r.matches[0].y, want_r.matches[0].y) << label << " on " << to_string(p);
            EXPECT_EQ(got_r.matches[0].score, want_r.matches[0].score) << label << " on " << to_string(p);
            ++cases;
          }
        }
    }
  }
  EXPECT_GT(cases, 0);
}

TEST(MatchU8, CpuDirectAndFftMapsAreBitIdenticalToRef) { expect_u8_identical_to_ref(paths_of(Backend::cpu)); }

TEST(MatchU8, CudaDirectAndFftMapsAreBitIdenticalToRef) {
  PIXELKIT_REQUIRE_GPU();
  expect_u8_identical_to_ref(paths_of(Backend::cuda));
}

// A larger image (ref stays affordable): 201x149 colour, 31x23 and 64x47 templates.
void expect_u8_larger_identical_to_ref(const std::vector<Path>& paths) {
  const Image img = scene(201, 149, 3, PixelType::u8, 9);
  const Image t1 = clone(img.cview().sub(140, 90, 31, 23));
  const Image t2 = random_image(64, 47, 3, PixelType::u8, 10);
  const Image mask = random_mask(31, 23, 1, 11);
  for (const auto& [templ, msk] : {std::pair<const Image*, const Image*>{&t1, nullptr}, {&t1, &mask}, {&t2, nullptr}})
    for (MatchMethod m : kMethods) {
      if (templ == &t2 && m != MatchMethod::sqdiff && m != MatchMethod::ccoeff_normed) continue;
      const ConstImageView mv = msk ? msk->cview() : ConstImageView{};
      const Image want = ref_map(img, *templ, mv, m);
      for (const Path& p : paths)
        EXPECT_TRUE(identical(score_map(img, *templ, mv, m, p), want))
            << shape_label(*templ) << (msk ? " masked " : " ") << pixelkit::to_string(m) << " on " << to_string(p);
    }
}

TEST(MatchU8, LargerImageCpuIsBitIdenticalToRef) { expect_u8_larger_identical_to_ref(paths_of(Backend::cpu)); }

TEST(MatchU8, LargerImageCudaIsBitIdenticalToRef) {
  PIXELKIT_REQUIRE_GPU();
  expect_u8_larger_identical_to_ref(paths_of(Backend::cuda));
}

// Too large for ref: cpu direct against cpu fft (and cuda both ways).
TEST(MatchU8, LargeImagesDirectAndFftAgreeBitForBit) {
  const Image img = scene(401, 303, 1, PixelType::u8, 21);
  const Image templ = clone(img.cview().sub(250, 170, 47, 39));
  const Image mask = random_mask(47, 39, 1, 22);
  std::vector<Path> paths = paths_of(Backend::cpu);
  if (cuda_available())
    for (const Path& p : paths_of(Backend::cuda)) paths.push_back(p);
  if (paths.size() < 2) GTEST_SKIP() << "only cpu direct in this build (no OpenCV dft, no GPU)";
  for (const Image* msk : {static_cast<const Image*>(nullptr), &mask})
    for (MatchMethod m : {MatchMethod::sqdiff, MatchMethod::ccorr_normed, MatchMethod::ccoeff_normed}) {
      const ConstImageView mv = msk ? msk->cview() : ConstImageView{};
      const Image want = score_map(img, templ, mv, m, paths[0]);
      EXPECT_FALSE(has_nan(want));
      for (std::size_t i = 1; i < paths.size(); ++i)
        EXPECT_TRUE(identical(score_map(img, templ, mv, m, paths[i]), want))
            << pixelkit::to_string(m) << (msk ? " masked" : "") << ": " << to_string(paths[i]) << " vs "
            << to_string(paths[0]);
    }
}

TEST(MatchU8, CpuFftWithoutOpenCvIsUnsupported) {
  if (cpu_fft()) GTEST_SKIP() << "this build has OpenCV's dft: cpu fft is available (tested above)";
  const Image img = random_image(20, 20, 1, PixelType::u8, 1);
  const Image templ = random_image(5, 5, 1, PixelType::u8, 2);
  Matcher m(templ, params(MatchMethod::sqdiff, MatchStrategy::fft));
  expect_error([&] { m(img, with(Backend::cpu)); }, Status::unsupported, "fft");
}

// ---- f32 -------------------------------------------------------------------------------

void expect_f32_close_to_ref(const std::vector<Path>& paths) {
  const TemplCase templs[] = {{0, 0, 1, 1}, {5, 9, 9, 7}, {-1, 0, 20, 13}, {0, 0, 47, 35}};
  for (int c : {1, 3}) {
    const Image img = scene(47, 35, c, PixelType::f32, 200 + c);
    for (const TemplCase& tc : templs) {
      const Image templ = make_templ(img, std::max(tc.x, 0), tc.y, tc.w, tc.h, tc.x < 0, 3 * tc.w + tc.h);
      const Image mask = random_mask(tc.w, tc.h, c == 3 && tc.w > 5 ? 3 : 1, 41 + tc.w);
      for (const Image* msk : {static_cast<const Image*>(nullptr), &mask})
        for (MatchMethod m : kMethods) {
          const ConstImageView mv = msk ? msk->cview() : ConstImageView{};
          const Image want = ref_map(img, templ, mv, m);
          for (const Path& p : paths) {
            const Image got = score_map(img, templ, mv, m, p);
            EXPECT_TRUE(agrees(got, want, 0, 1e-5))
                << shape_label(img) << " template " << shape_label(templ) << (msk ? " masked " : " ")
                << pixelkit::to_string(m) << " on " << to_string(p);
          }
        }
    }
  }
}

TEST(MatchF32, CpuMapsAgreeWithRefTo1e5) { expect_f32_close_to_ref(paths_of(Backend::cpu)); }

TEST(MatchF32, CudaMapsAgreeWithRefTo1e5) {
  PIXELKIT_REQUIRE_GPU();
  expect_f32_close_to_ref(paths_of(Backend::cuda));
}

// ---- views, device memory, reuse ---------------------------------------------------------

// Image, template, mask and score map are all windows of larger images (pitch
// larger than the row); nothing outside the score window is written.
void expect_views_work(const std::vector<Path>& paths) {
  for (PixelType t : {PixelType::u8, PixelType::f32})
    for (int c : {1, 3}) {
      Image big = scene(71, 50, c, t, 300 + c);
      const ConstImageView img = big.cview().sub(5, 3, 61, 43);
      Image tbig = random_image(30, 20, c, t, 301);
      const ConstImageView templ = tbig.cview().sub(2, 1, 13, 11);
      Image mbig = random_mask(20, 15, 1, 302);
      const ConstImageView mask = mbig.cview().sub(4, 2, 13, 11);
      const Image img_packed = clone(img), templ_packed = clone(templ), mask_packed = clone(mask);
      for (const bool masked : {false, true})
        for (MatchMethod m : kMethods) {
          const ConstImageView mv = masked ? mask : ConstImageView{};
          const Image want = ref_map(img_packed, templ_packed, masked ? mask_packed.cview() : ConstImageView{}, m);
          for (const Path& p : paths) {
            Image sbig(60, 40, 1, PixelType::f32);
            for (int y = 0; y < 40; ++y) std::fill_n(sbig.row<float>(y), 60, -7.0f);
            const ImageView scores = sbig.view().sub(3, 2, 49, 33);
            Matcher matcher(templ, params(m, p.strategy), mv);
            matcher(img, scores, with(p.backend));
            const std::string label = shape_label(img) + (masked ? " masked " : " ") + pixelkit::to_string(m) +
                                      " on " + to_string(p);
            if (t == PixelType::u8) EXPECT_TRUE(identical(clone(scores), want)) << label;
            else EXPECT_TRUE(agrees(clone(scores), want, 0, 1e-5)) << label;
            int outside = 0;
            for (int y = 0; y < 40; ++y)
              for (int x = 0; x < 60; ++x)
                if ((x < 3 || x >= 52 || y < 2 || y >= 35) && sbig.row<float>(y)[x] != -7.0f) ++outside;
            EXPECT_EQ(outside, 0) << label << ": pixels outside the score view were written";
          }
        }
    }
}

TEST(MatchViews, CpuHandlesSubImageViewsWithPaddedPitch) { expect_views_work(paths_of(Backend::cpu)); }

TEST(MatchViews, CudaHandlesSubImageViewsWithPaddedPitch) {
  PIXELKIT_REQUIRE_GPU();
  expect_views_work(paths_of(Backend::cuda));
}

TEST(MatchDevice, DeviceImagesTemplatesMasksAndMapsMatchRef) {
  PIXELKIT_REQUIRE_GPU();
  for (int c : {1, 3}) {
    const Image img = scene(97, 61, c, PixelType::u8, 400 + c);
    const Image templ = clone(img.cview().sub(50, 30, 21, 17));
    const Image mask = random_mask(21, 17, c, 401);
    const Image dimg = clone(img, Memory::device), dtempl = clone(templ, Memory::device),
                dmask = clone(mask, Memory::device);
    for (const bool masked : {false, true})
      for (MatchMethod m : kMethods)
        for (const Path& p : paths_of(Backend::cuda)) {
          const std::string label = std::to_string(c) + "ch " + (masked ? "masked " : "") + pixelkit::to_string(m) +
                                    " " + to_string(p);
          MatchResult want_r;
          const Image want = ref_map(img, templ, masked ? mask.cview() : ConstImageView{}, m, &want_r, 3);
          // Device image, device template and mask, device score map (a sub-view), on a stream.
          Image dscores(80, 50, 1, PixelType::f32, Memory::device);
          const ImageView sv = dscores.view().sub(1, 1, 77, 45);
          Matcher matcher(dtempl, params(m, p.strategy, 3), masked ? dmask.cview() : ConstImageView{});
          const MatchResult r = matcher(dimg, sv, with(Backend::cuda));
          EXPECT_TRUE(identical(clone(sv), want)) << label;
          ASSERT_EQ(r.matches.size(), want_r.matches.size()) << label;
          for (std::size_t i = 0; i < r.matches.size(); ++i) {
            EXPECT_EQ(r.matches[i].x, want_r.matches[i].x) << label << " match " << i;
            EXPECT_EQ(r.matches[i].y, want_r.matches[i].y) << label << " match " << i;
            EXPECT_EQ(r.matches[i].score, want_r.matches[i].score) << label << " match " << i;
          }
          // Device image without a score map: the same matches.
          const MatchResult r2 = matcher(dimg, with(Backend::cuda));
          ASSERT_EQ(r2.matches.size(), want_r.matches.size()) << label;
          EXPECT_EQ(r2.matches[0].x, want_r.matches[0].x) << label;
          EXPECT_EQ(r2.matches[0].y, want_r.matches[0].y) << label;
        }
  }
  // A device image on a host backend, or a device map on cpu, is refused.
  const Image img = random_image(20, 20, 1, PixelType::u8, 1), templ = random_image(5, 5, 1, PixelType::u8, 2);
  const Image dimg = clone(img, Memory::device);
  Matcher m(templ);
  expect_error([&] { m(dimg, with(Backend::cpu)); }, Status::invalid_argument, "");
  Image dmap(16, 16, 1, PixelType::f32, Memory::device);
  expect_error([&] { m(img, dmap.view(), with(Backend::cpu)); }, Status::invalid_argument, "device");
}

// One Matcher over several images of the same and of different sizes (the
// grow-only buffers must not leak state between calls).
void expect_reuse_works(Backend backend) {
  const Image templ = random_image(15, 12, 3, PixelType::u8, 500);
  const Image mask = random_mask(15, 12, 1, 501);
  const int sizes[][2] = {{60, 50}, {60, 50}, {91, 40}, {33, 71}, {15, 12}, {60, 50}, {120, 90}, {60, 50}};
  for (const Path& p : paths_of(backend))
    for (MatchMethod m : {MatchMethod::sqdiff, MatchMethod::ccorr, MatchMethod::ccoeff_normed})
      for (const bool masked : {false, true}) {
        const ConstImageView mv = masked ? mask.cview() : ConstImageView{};
        Matcher matcher(templ, params(m, p.strategy, 2), mv);
        matcher.reserve(60, 50, with(backend));
        int k = 0;
        for (const auto& s : sizes) {
          const Image img = scene(s[0], s[1], 3, PixelType::u8, 510 + k++);
          int w = 0, h = 0;
          match_result_size(s[0], s[1], 15, 12, w, h);
          Image scores(w, h, 1, PixelType::f32);
          poison(scores.view());
          const MatchResult r = matcher(img, scores.view(), with(backend));
          MatchResult want_r;
          const Image want = ref_map(img, templ, mv, m, &want_r, 2);
          const std::string label = std::to_string(s[0]) + "x" + std::to_string(s[1]) + " call " + std::to_string(k) +
                                    " " + pixelkit::to_string(m) + (masked ? " masked " : " ") + to_string(p);
          EXPECT_TRUE(identical(scores, want)) << label;
          ASSERT_EQ(r.matches.size(), want_r.matches.size()) << label;
          for (std::size_t i = 0; i < r.matches.size(); ++i) {
            EXPECT_EQ(r.matches[i].x, want_r.matches[i].x) << label;
            EXPECT_EQ(r.matches[i].y, want_r.matches[i].y) << label;
          }
          // And without a score map.
          const MatchResult r2 = matcher(img, with(backend));
          ASSERT_EQ(r2.matches.size(), want_r.matches.size()) << label;
          EXPECT_EQ(r2.matches[0].x, want_r.matches[0].x) << label;
          EXPECT_EQ(r2.matches[0].score, want_r.matches[0].score) << label;
        }
      }
}

TEST(MatchReuse, CpuMatcherOverImagesOfSeveralSizes) { expect_reuse_works(Backend::cpu); }

TEST(MatchReuse, CudaMatcherOverImagesOfSeveralSizes) {
  PIXELKIT_REQUIRE_GPU();
  expect_reuse_works(Backend::cuda);
}

TEST(MatchReuse, MovedMatcherKeepsWorkingAndAccessorsDescribeIt) {
  const Image templ = random_image(9, 7, 3, PixelType::u8, 1);
  const Image mask = random_mask(9, 7, 1, 2);
  MatchParams p = params(MatchMethod::ccoeff, MatchStrategy::direct, 4);
  Matcher a(templ, p, mask);
  EXPECT_EQ(a.template_width(), 9);
  EXPECT_EQ(a.template_height(), 7);
  EXPECT_EQ(a.channels(), 3);
  EXPECT_EQ(a.type(), PixelType::u8);
  EXPECT_TRUE(a.masked());
  EXPECT_EQ(a.min_distance(), 3);  // max(1, min(9, 7) / 2)
  EXPECT_EQ(a.params().top_k, 4);
  Matcher b(std::move(a));
  const Image img = random_image(30, 20, 3, PixelType::u8, 3);
  const MatchResult r = b(img, with(Backend::cpu));
  EXPECT_EQ(r.matches.size(), 4u);
  Matcher c(random_image(2, 2, 1, PixelType::f32, 4));
  EXPECT_EQ(c.min_distance(), 1);
  EXPECT_FALSE(c.masked());
  c = std::move(b);
  EXPECT_EQ(c.template_width(), 9);
  p.min_distance = 5;
  EXPECT_EQ(Matcher(templ, p).min_distance(), 5);
}

TEST(MatchStrategyChoice, AutoRunsADefiniteStrategyAndRefIgnoresIt) {
  const Image img = random_image(100, 80, 1, PixelType::u8, 1);
  for (const int tw : {3, 40}) {
    const Image templ = random_image(tw, tw, 1, PixelType::u8, 2);
    Matcher m(templ, params(MatchMethod::sqdiff, MatchStrategy::automatic));
    const MatchResult r = m(img, with(Backend::cpu));
    EXPECT_NE(r.strategy, MatchStrategy::automatic);
    if (!cpu_fft()) EXPECT_EQ(r.strategy, MatchStrategy::direct);
    Matcher f(templ, params(MatchMethod::sqdiff, MatchStrategy::fft));
    EXPECT_EQ(f(img, with(Backend::ref)).strategy, MatchStrategy::direct);
  }
}

// ---- OpenCV ---------------------------------------------------------------------------------

#if PIXELKIT_TEST_HAVE_OPENCV

cv::Mat cv_match(const ConstImageView& img, const ConstImageView& templ, const ConstImageView& mask, MatchMethod m) {
  cv::Mat res;
  if (mask.empty()) cv::matchTemplate(to_mat(img), to_mat(templ), res, static_cast<int>(m));
  else cv::matchTemplate(to_mat(img), to_mat(templ), res, static_cast<int>(m), to_mat(mask));
  return res;
}

cv::Point cv_best(const cv::Mat& res, MatchMethod m) {
  double lo, hi;
  cv::Point lo_at, hi_at;
  cv::minMaxLoc(res, &lo, &hi, &lo_at, &hi_at);
  return lower_is_better(m) ? lo_at : hi_at;
}

/// max |ours - OpenCV| relative to the largest |OpenCV| value; windows where
/// OpenCV's masked path gives no number (it divides by zero) are skipped.
double cv_rel_diff(const ConstImageView& ours, const cv::Mat& theirs, long long* skipped = nullptr) {
  double max_abs = 0, max_ref = 0;
  long long skip = 0;
  for (int y = 0; y < ours.height; ++y)
    for (int x = 0; x < ours.width; ++x) {
      const double b = theirs.at<float>(y, x);
      if (!std::isfinite(b)) {
        ++skip;
        continue;
      }
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(at(ours, x, y)) - b));
      max_ref = std::max(max_ref, std::fabs(b));
    }
  if (skipped) *skipped = skip;
  return max_abs / std::max(max_ref, 1e-30);
}

/// A scene from a photo: the region (rx, ry, rw, rh), into which the template
/// (the photo's tw x th window at (tx, ty), outside the region) is pasted at
/// (px, py) with a brightness change (gain, offset) and Gaussian noise.
struct PhotoScene {
  Image image, templ;
  int px = 0, py = 0;
};

PhotoScene photo_scene(const std::string& name, int rx, int ry, int rw, int rh, int tx, int ty, int tw, int th,
                       int px, int py, double gain, double offset, double sigma, std::uint32_t seed) {
  const Image photo = read_image(data_path(name));
  PhotoScene s;
  s.image = clone(photo.cview().sub(rx, ry, rw, rh));
  s.templ = clone(photo.cview().sub(tx, ty, tw, th));
  s.px = px;
  s.py = py;
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, sigma);
  const int C = photo.channels();
  for (int j = 0; j < th; ++j) {
    const std::uint8_t* t = s.templ.row<std::uint8_t>(j);
    std::uint8_t* d = s.image.row<std::uint8_t>(py + j) + px * C;
    for (int i = 0; i < tw * C; ++i)
      d[i] = static_cast<std::uint8_t>(std::clamp(std::lround(gain * t[i] + offset + noise(rng)), 0L, 255L));
  }
  return s;
}

/// An elliptical mask (the template's inner ellipse) with values 0 / 1 / 200.
Image ellipse_mask(int w, int h, int c) {
  Image m(w, h, c, PixelType::u8);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const double u = (x + 0.5 - w / 2.0) / (w / 2.0), v = (y + 0.5 - h / 2.0) / (h / 2.0);
      for (int k = 0; k < c; ++k)
        m.row<std::uint8_t>(y)[x * c + k] = u * u + v * v <= 1.0 ? static_cast<std::uint8_t>((x + y + k) % 2 ? 1 : 200) : 0;
    }
  return m;
}

struct PhotoCase {
  const char* photo;
  int rx, ry, rw, rh, tx, ty, tw, th, px, py;
};
// Regions of 231x175 (odd) with a 41x33 template from elsewhere in the photo.
const PhotoCase kPhotoCases[] = {
    {"astronaut.png", 0, 0, 231, 175, 380, 330, 41, 33, 150, 120},
    {"coffee.png", 0, 200, 231, 175, 330, 90, 41, 33, 20, 30},
    {"chelsea.png", 200, 100, 231, 175, 60, 40, 41, 33, 101, 71},
    {"camera.png", 250, 300, 231, 175, 180, 80, 41, 33, 77, 13},
};

void expect_opencv_agreement(const std::vector<Path>& paths, bool masks) {
  int compared = 0;
  for (const PhotoCase& pc : kPhotoCases) {
    const PhotoScene s = photo_scene(pc.photo, pc.rx, pc.ry, pc.rw, pc.rh, pc.tx, pc.ty, pc.tw, pc.th, pc.px, pc.py,
                                     1.08, -9.0, 3.0, 17);
    const int C = s.image.channels();
    std::vector<Image> mask_list;
    if (!masks) {
      mask_list.emplace_back();
    } else {
      mask_list.push_back(ellipse_mask(pc.tw, pc.th, 1));
      if (C == 3) mask_list.push_back(ellipse_mask(pc.tw, pc.th, 3));
    }
    for (const Image& mask : mask_list)
      for (MatchMethod m : kMethods) {
        cv::Mat theirs = cv_match(s.image, s.templ, mask, m);
        // OpenCV clamps sqdiff_normed to [0, 1] without a mask but not with
        // one (docs/notes-match.md); pixelkit clamps both. Compare the clamped
        // values: everything else must agree as it is.
        if (!mask.empty() && m == MatchMethod::sqdiff_normed) theirs = cv::min(theirs, 1.0);
        const cv::Point best = cv_best(theirs, m);
        for (const Path& p : paths) {
          const std::string label = std::string(pc.photo) + (mask.empty() ? "" : " mask " + shape_label(mask)) + " " +
                                    pixelkit::to_string(m) + " " + to_string(p);
          MatchResult r;
          const Image ours = score_map(s.image, s.templ, mask, m, p, &r);
          ASSERT_EQ(theirs.rows, ours.height()) << label;
          ASSERT_EQ(theirs.cols, ours.width()) << label;
          long long skipped = 0;
          const double rel = cv_rel_diff(ours, theirs, &skipped);
          EXPECT_LE(rel, 1e-4) << label;
          EXPECT_EQ(skipped, 0) << label << ": OpenCV gave non-finite scores";
          ASSERT_EQ(r.matches.size(), 1u) << label;
          EXPECT_EQ(r.matches[0].x, best.x) << label;
          EXPECT_EQ(r.matches[0].y, best.y) << label;
          // The pasted copy is found by the methods that look for it.
          if (m != MatchMethod::ccorr && m != MatchMethod::ccoeff) {
            EXPECT_EQ(r.matches[0].x, s.px) << label;
            EXPECT_EQ(r.matches[0].y, s.py) << label;
          }
          ++compared;
        }
      }
  }
  EXPECT_GT(compared, 0);
}

TEST(MatchOpenCv, PhotoCropsRefAgreesWithMatchTemplate) {
  PIXELKIT_REQUIRE_OPENCV();
  // ref on one photo (the definition is slow); cpu and cuda on all of them below.
  const PhotoCase& pc = kPhotoCases[2];
  const PhotoScene s = photo_scene(pc.photo, pc.rx, pc.ry, pc.rw, pc.rh, pc.tx, pc.ty, pc.tw, pc.th, pc.px, pc.py,
                                   0.93, 12.0, 4.0, 5);
  const Image mask = ellipse_mask(pc.tw, pc.th, 1);
  for (const Image* msk : {static_cast<const Image*>(nullptr), &mask})
    for (MatchMethod m : kMethods) {
      const ConstImageView mv = msk ? msk->cview() : ConstImageView{};
      const cv::Mat theirs = cv_match(s.image, s.templ, mv, m);
      MatchResult r;
      const Image ours = ref_map(s.image, s.templ, mv, m, &r);
      const std::string label = std::string(msk ? "masked " : "") + pixelkit::to_string(m);
      EXPECT_LE(cv_rel_diff(ours, theirs), 1e-4) << label;
      const cv::Point best = cv_best(theirs, m);
      EXPECT_EQ(r.matches[0].x, best.x) << label;
      EXPECT_EQ(r.matches[0].y, best.y) << label;
    }
}

#endif  // PIXELKIT_TEST_HAVE_OPENCV

TEST(MatchOpenCv, PhotoCropsCpuAgreesWithMatchTemplate) {
  PIXELKIT_REQUIRE_OPENCV();
#if PIXELKIT_TEST_HAVE_OPENCV
  expect_opencv_agreement(paths_of(Backend::cpu), false);
#endif
}

TEST(MatchOpenCv, PhotoCropsCpuWithMasksAgreesWithMatchTemplate) {
  PIXELKIT_REQUIRE_OPENCV();
#if PIXELKIT_TEST_HAVE_OPENCV
  expect_opencv_agreement(paths_of(Backend::cpu), true);
#endif
}

TEST(MatchOpenCv, PhotoCropsCudaAgreesWithMatchTemplate) {
  PIXELKIT_REQUIRE_OPENCV();
  PIXELKIT_REQUIRE_GPU();
#if PIXELKIT_TEST_HAVE_OPENCV
  expect_opencv_agreement(paths_of(Backend::cuda), false);
  expect_opencv_agreement(paths_of(Backend::cuda), true);
#endif
}

TEST(MatchOpenCv, F32ImagesAgreeWithMatchTemplate) {
  PIXELKIT_REQUIRE_OPENCV();
#if PIXELKIT_TEST_HAVE_OPENCV
  const Image img = random_image(67, 51, 3, PixelType::f32, 71);
  const Image templ = clone(img.cview().sub(30, 20, 13, 11));
  std::vector<Path> paths = paths_of(Backend::cpu);
  paths.push_back({Backend::ref, MatchStrategy::direct});
  if (cuda_available())
    for (const Path& p : paths_of(Backend::cuda)) paths.push_back(p);
  for (MatchMethod m : kMethods) {
    const cv::Mat theirs = cv_match(img, templ, ConstImageView{}, m);
    const cv::Point best = cv_best(theirs, m);
    for (const Path& p : paths) {
      MatchResult r;
      const Image ours = score_map(img, templ, ConstImageView{}, m, p, &r);
      EXPECT_LE(cv_rel_diff(ours, theirs), 1e-4) << pixelkit::to_string(m) << " " << to_string(p);
      EXPECT_EQ(r.matches[0].x, best.x) << pixelkit::to_string(m) << " " << to_string(p);
      EXPECT_EQ(r.matches[0].y, best.y) << pixelkit::to_string(m) << " " << to_string(p);
    }
  }
#endif
}

// ---- degenerate windows and templates --------------------------------------------------------

// The image: random, with a zero rectangle and a flat rectangle of 200 (see
// scene()); the windows wholly inside either are degenerate.
struct Degenerate {
  Image img = scene(61, 47, 3, PixelType::u8, 600);
  // scene(): zeros over [7, 7+20) x [5, 5+15), 200 over [30, 50) x [23, 38).
  int zx = 61 / 8, zy = 47 / 8, zw = 61 / 3, zh = 47 / 3;
  int fx = 61 / 2, fy = 47 / 2, fw = 61 / 3, fh = 47 / 3;
};

std::vector<Path> all_paths() {
  std::vector<Path> p = {{Backend::ref, MatchStrategy::direct}};
  for (const Path& q : paths_of(Backend::cpu)) p.push_back(q);
  if (cuda_available())
    for (const Path& q : paths_of(Backend::cuda)) p.push_back(q);
  return p;
}

TEST(MatchDegenerate, FlatAndEmptyWindowsGiveTheDocumentedValues) {
  const Degenerate d;
  const int tw = 7, th = 5;
  const Image templ = random_image(tw, th, 3, PixelType::u8, 601);
  for (const Path& p : all_paths())
    for (MatchMethod m : kMethods) {
      const Image map = score_map(d.img, templ, ConstImageView{}, m, p);
      const std::string label = std::string(pixelkit::to_string(m)) + " " + to_string(p);
      EXPECT_FALSE(has_nan(map)) << label;
      int zero_windows = 0, flat_windows = 0;
      for (int y = 0; y < map.height(); ++y)
        for (int x = 0; x < map.width(); ++x) {
          const float v = at(map, x, y);
          const bool in_zero = x >= d.zx && y >= d.zy && x + tw <= d.zx + d.zw && y + th <= d.zy + d.zh;
          const bool in_flat = x >= d.fx && y >= d.fy && x + tw <= d.fx + d.fw && y + th <= d.fy + d.fh;
          if (in_zero) {
            ++zero_windows;
            // No energy: sqdiff_normed 1; ccorr_normed and ccoeff_normed 0; ccorr and ccoeff 0 exactly.
            if (m == MatchMethod::sqdiff_normed) EXPECT_EQ(v, 1.0f) << label << " at " << x << "," << y;
            if (m == MatchMethod::ccorr_normed || m == MatchMethod::ccoeff_normed || m == MatchMethod::ccorr ||
                m == MatchMethod::ccoeff)
              EXPECT_EQ(v, 0.0f) << label << " at " << x << "," << y;
          }
          if (in_flat) {
            ++flat_windows;
            // No variance: ccoeff_normed 0; ccoeff 0 up to the rounding of mean * S1.
            if (m == MatchMethod::ccoeff_normed) EXPECT_EQ(v, 0.0f) << label << " at " << x << "," << y;
            if (m == MatchMethod::ccoeff) EXPECT_NEAR(v, 0.0f, 1e-3) << label << " at " << x << "," << y;
          }
          if (m == MatchMethod::sqdiff_normed) EXPECT_TRUE(v >= 0.0f && v <= 1.0f) << label;
          if (m == MatchMethod::ccorr_normed || m == MatchMethod::ccoeff_normed)
            EXPECT_TRUE(v >= -1.0f && v <= 1.0f) << label;
        }
      EXPECT_GT(zero_windows, 50);
      EXPECT_GT(flat_windows, 50);
    }
}

TEST(MatchDegenerate, FlatAndZeroTemplatesGiveTheDocumentedValues) {
  const Image img = scene(45, 33, 1, PixelType::u8, 610);
  Image flat(9, 7, 1, PixelType::u8), zero(9, 7, 1, PixelType::u8);
  for (int y = 0; y < 7; ++y) {
    std::fill_n(flat.row<std::uint8_t>(y), 9, std::uint8_t{77});
    std::fill_n(zero.row<std::uint8_t>(y), 9, std::uint8_t{0});
  }
  // Flat only where the mask counts: the masked template is flat.
  Image partly = random_image(9, 7, 1, PixelType::u8, 611);
  Image mask(9, 7, 1, PixelType::u8);
  for (int y = 0; y < 7; ++y)
    for (int x = 0; x < 9; ++x) {
      const bool on = (x + y) % 3 != 0;
      mask.row<std::uint8_t>(y)[x] = on ? 255 : 0;
      if (on) partly.row<std::uint8_t>(y)[x] = 123;
    }
  for (const Path& p : all_paths()) {
    for (const auto& [templ, msk, name] : {std::tuple<const Image*, const Image*, const char*>{&flat, nullptr, "flat"},
                                           {&zero, nullptr, "zero"},
                                           {&partly, &mask, "flat under its mask"}}) {
      const ConstImageView mv = msk ? msk->cview() : ConstImageView{};
      for (MatchMethod m : kMethods) {
        const Image map = score_map(img, *templ, mv, m, p);
        const std::string label = std::string(name) + " template, " + pixelkit::to_string(m) + " " + to_string(p);
        EXPECT_FALSE(has_nan(map)) << label;
        for (int y = 0; y < map.height(); ++y)
          for (int x = 0; x < map.width(); ++x) {
            const float v = at(map, x, y);
            // A flat template: ccoeff_normed 1 everywhere (OpenCV), ccoeff 0.
            if (m == MatchMethod::ccoeff_normed) ASSERT_EQ(v, 1.0f) << label << " at " << x << "," << y;
            if (m == MatchMethod::ccoeff) ASSERT_EQ(v, 0.0f) << label << " at " << x << "," << y;
            if (templ == &zero) {
              // No template energy: sqdiff_normed 1, ccorr_normed 0, ccorr 0.
              if (m == MatchMethod::sqdiff_normed) ASSERT_EQ(v, 1.0f) << label << " at " << x << "," << y;
              if (m == MatchMethod::ccorr_normed || m == MatchMethod::ccorr)
                ASSERT_EQ(v, 0.0f) << label << " at " << x << "," << y;
            }
          }
      }
    }
  }
}

TEST(MatchDegenerate, F32FlatWindowsAndExtremeValuesNeverGiveNan) {
  Image img = scene(41, 31, 3, PixelType::f32, 620);
  // A bright region with large values and a near-flat one.
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 10 * 3; ++x) img.row<float>(y)[x] = 1.0e6f + static_cast<float>(x % 2);
  const Image templ = random_image(5, 4, 3, PixelType::f32, 621);
  Image flat(5, 4, 3, PixelType::f32);
  for (int y = 0; y < 4; ++y) std::fill_n(flat.row<float>(y), 15, 3.25f);
  for (const Path& p : all_paths())
    for (const Image* t : std::initializer_list<const Image*>{&templ, &flat})
      for (MatchMethod m : kMethods) {
        const Image map = score_map(img, *t, ConstImageView{}, m, p);
        const std::string label = std::string(pixelkit::to_string(m)) + " " + to_string(p);
        EXPECT_FALSE(has_nan(map)) << label;
        // The flat 100.5 rectangle of scene(): ccoeff_normed 0 inside it.
        if (m == MatchMethod::ccoeff_normed && t == &templ) {
          EXPECT_EQ(at(map, 41 / 2, 31 / 2), 0.0f) << label;
          EXPECT_EQ(at(map, 41 / 2 + 3, 31 / 2 + 3), 0.0f) << label;
        }
        if (m == MatchMethod::ccoeff_normed && t == &flat) EXPECT_EQ(at(map, 7, 9), 1.0f) << label;
      }
}

TEST(MatchDegenerate, AgreesWithOpenCvWhereOpenCvDefinesTheSame) {
  PIXELKIT_REQUIRE_OPENCV();
#if PIXELKIT_TEST_HAVE_OPENCV
  const Degenerate d;
  const int tw = 7, th = 5;
  const Image templ = random_image(tw, th, 3, PixelType::u8, 601);
  Image flat(tw, th, 3, PixelType::u8), zero(tw, th, 3, PixelType::u8);
  for (int y = 0; y < th; ++y) {
    std::fill_n(flat.row<std::uint8_t>(y), tw * 3, std::uint8_t{77});
    std::fill_n(zero.row<std::uint8_t>(y), tw * 3, std::uint8_t{0});
  }
  // The value a window must have by the documented rule, or NAN where the
  // window is not degenerate for this method.
  const auto documented = [&](const Image* t, MatchMethod m, int x, int y) -> float {
    const bool in_zero = x >= d.zx && y >= d.zy && x + tw <= d.zx + d.zw && y + th <= d.zy + d.zh;
    const bool in_flat = x >= d.fx && y >= d.fy && x + tw <= d.fx + d.fw && y + th <= d.fy + d.fh;
    if (m == MatchMethod::ccoeff_normed && (t == &flat || t == &zero)) return 1.0f;  // flat template
    if (t == &zero && m == MatchMethod::sqdiff_normed) return 1.0f;
    if (t == &zero && m == MatchMethod::ccorr_normed) return 0.0f;
    // A window without energy, whatever the template: zero denominator.
    if (in_zero && m == MatchMethod::sqdiff_normed) return 1.0f;
    if (in_zero && (m == MatchMethod::ccorr_normed || m == MatchMethod::ccoeff_normed)) return 0.0f;
    if (t == &templ && in_flat && m == MatchMethod::ccoeff_normed) return 0.0f;
    return NAN;
  };
  for (const Path& p : all_paths())
    for (const Image* t : std::initializer_list<const Image*>{&templ, &flat, &zero})
      for (MatchMethod m : kMethods) {
        const cv::Mat theirs = cv_match(d.img, *t, ConstImageView{}, m);
        const Image ours = score_map(d.img, *t, ConstImageView{}, m, p);
        const std::string label = std::string(t == &templ ? "random" : t == &flat ? "flat" : "zero") + " template " +
                                  pixelkit::to_string(m) + " " + to_string(p);
        double ours_max = 0, theirs_max = 0;
        for (int y = 0; y < ours.height(); ++y)
          for (int x = 0; x < ours.width(); ++x) {
            ours_max = std::max(ours_max, std::fabs(static_cast<double>(at(ours, x, y))));
            theirs_max = std::max(theirs_max, std::fabs(static_cast<double>(theirs.at<float>(y, x))));
          }
        if (ours_max == 0) {
          // ccoeff of a flat template, ccorr of a zero one: exactly 0 here; OpenCV's
          // f32 DFT leaves rounding noise, small against the largest possible sum.
          EXPECT_LE(theirs_max, 1e-6 * 255.0 * 255.0 * tw * th * 3) << label;
        } else {
          EXPECT_LE(cv_rel_diff(ours, theirs), 1e-4) << label;
        }
        int exact = 0;
        for (int y = 0; y < ours.height(); ++y)
          for (int x = 0; x < ours.width(); ++x) {
            const float want = documented(t, m, x, y);
            if (std::isnan(want)) continue;
            ++exact;
            ASSERT_EQ(at(ours, x, y), want) << label << " at " << x << "," << y;
            ASSERT_EQ(theirs.at<float>(y, x), want) << label << " (OpenCV) at " << x << "," << y;
          }
        if (m == MatchMethod::sqdiff_normed || m == MatchMethod::ccorr_normed || m == MatchMethod::ccoeff_normed)
          EXPECT_GT(exact, 0) << label;
      }
#endif
}

// ---- top-K with non-maximum suppression --------------------------------------------------------

/// Greedy NMS written out plainly on a host map: the test's own statement of
/// the documented algorithm.
std::vector<Match> greedy_nms(const ConstImageView& map, bool lower, int k, int d) {
  std::vector<Match> out;
  for (int n = 0; n < k; ++n) {
    bool found = false;
    Match best;
    for (int y = 0; y < map.height; ++y)
      for (int x = 0; x < map.width; ++x) {
        bool free = true;
        for (const Match& m : out) free = free && std::max(std::abs(x - m.x), std::abs(y - m.y)) >= d;
        if (!free) continue;
        const float v = at(map, x, y);
        if (!found || (lower ? v < best.score : v > best.score)) {
          best.x = x;
          best.y = y;
          best.score = v;
          found = true;
        }
      }
    if (!found) break;
    out.push_back(best);
  }
  return out;
}

struct Copies {
  Image img, templ;
  std::vector<std::pair<int, int>> at;  // in row-major order
};

/// A random background holding five exact copies of a random template.
Copies copies(int c) {
  Copies s;
  s.img = random_image(150, 110, c, PixelType::u8, 700 + c);
  s.templ = random_image(15, 13, c, PixelType::u8, 710 + c);
  s.at = {{10, 5}, {60, 5}, {100, 40}, {20, 70}, {120, 90}};
  for (const auto& [x, y] : s.at) copy(s.templ, s.img.view().sub(x, y, 15, 13));
  return s;
}

void expect_same_matches(const std::vector<Match>& got, const std::vector<Match>& want, const std::string& label) {
  ASSERT_EQ(got.size(), want.size()) << label;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].x, want[i].x) << label << " match " << i;
    EXPECT_EQ(got[i].y, want[i].y) << label << " match " << i;
    EXPECT_EQ(got[i].score, want[i].score) << label << " match " << i;
  }
}

TEST(MatchTopK, FindsEveryCopyInRowMajorOrderOnEveryBackend) {
  for (int c : {1, 3}) {
    const Copies s = copies(c);
    for (const Path& p : all_paths()) {
      const std::string label = std::to_string(c) + "ch " + to_string(p);
      MatchResult r;
      const Image map = score_map(s.img, s.templ, ConstImageView{}, MatchMethod::sqdiff, p, &r, 5);
      ASSERT_EQ(r.matches.size(), 5u) << label;
      for (std::size_t i = 0; i < 5; ++i) {
        // Every copy scores exactly 0; ties go to the first in row-major order.
        EXPECT_EQ(r.matches[i].x, s.at[i].first) << label << " match " << i;
        EXPECT_EQ(r.matches[i].y, s.at[i].second) << label << " match " << i;
        EXPECT_EQ(r.matches[i].score, 0.0f) << label << " match " << i;
      }
      // More than there are copies: the copies first, then the greedy rest.
      const MatchResult r8 = [&] {
        MatchResult x;
        score_map(s.img, s.templ, ConstImageView{}, MatchMethod::sqdiff, p, &x, 8);
        return x;
      }();
      expect_same_matches(r8.matches, greedy_nms(map, true, 8, 6), label + " top 8");
      for (std::size_t i = 0; i < r8.matches.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
          EXPECT_GE(std::max(std::abs(r8.matches[i].x - r8.matches[j].x), std::abs(r8.matches[i].y - r8.matches[j].y)),
                    6)
              << label << " matches " << j << " and " << i;
      // ccoeff_normed (higher is better): the copies score ~1 and come first.
      MatchResult rc;
      const Image cmap = score_map(s.img, s.templ, ConstImageView{}, MatchMethod::ccoeff_normed, p, &rc, 5);
      expect_same_matches(rc.matches, greedy_nms(cmap, false, 5, 6), label + " ccoeff_normed");
      std::vector<std::pair<int, int>> found;
      for (const Match& m : rc.matches) found.emplace_back(m.x, m.y);
      std::sort(found.begin(), found.end(), [](auto a, auto b) { return std::tie(a.second, a.first) < std::tie(b.second, b.first); });
      EXPECT_EQ(found, s.at) << label;
    }
  }
}

TEST(MatchTopK, MinDistanceIsRespectedAndCanLeaveFewerThanK) {
  const Copies s = copies(3);
  for (const Path& p : all_paths()) {
    const std::string label = to_string(p);
    // D = 55 suppresses (60,5) (50 from (10,5)) and (120,90) (50 from (100,40)).
    Matcher m(s.templ, params(MatchMethod::sqdiff, p.strategy, 3, 55));
    const MatchResult r = m(s.img, with(p.backend));
    ASSERT_EQ(r.matches.size(), 3u) << label;
    const int want[3][2] = {{10, 5}, {100, 40}, {20, 70}};
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(r.matches[i].x, want[i][0]) << label << " match " << i;
      EXPECT_EQ(r.matches[i].y, want[i][1]) << label << " match " << i;
    }
    // With K = 10 the rest follow the greedy order, each at least 55 from the others.
    MatchResult r10;
    const Image map = [&] {
      int w = 0, h = 0;
      match_result_size(150, 110, 15, 13, w, h);
      Image scores(w, h, 1, PixelType::f32);
      Matcher m10(s.templ, params(MatchMethod::sqdiff, p.strategy, 10, 55));
      r10 = m10(s.img, scores.view(), with(p.backend));
      return scores;
    }();
    const std::vector<Match> want10 = greedy_nms(map, true, 10, 55);
    EXPECT_LT(want10.size(), 10u);  // a 136x98 map holds fewer than 10 points 55 apart
    expect_same_matches(r10.matches, want10, label + " K=10 D=55");
    // A map smaller than the distance: a single match, whatever K.
    const Image small = clone(s.img.cview().sub(0, 0, 30, 24));
    Matcher one(s.templ, params(MatchMethod::sqdiff, p.strategy, 4, 16));  // map 16x12: all within 16
    EXPECT_EQ(one(small, with(p.backend)).matches.size(), 1u) << label;
    Matcher few(s.templ, params(MatchMethod::ccorr, p.strategy, 50, 8));
    int w = 0, h = 0;
    match_result_size(30, 24, 15, 13, w, h);
    Image smap(w, h, 1, PixelType::f32);
    const MatchResult rf = few(small, smap.view(), with(p.backend));
    expect_same_matches(rf.matches, greedy_nms(smap, false, 50, 8), label + " small map");
    EXPECT_GE(rf.matches.size(), 1u) << label;
    EXPECT_LE(rf.matches.size(), 4u) << label;  // 16x12 map, D = 8: at most 2 x 2
  }
}

// ---- the colour check ------------------------------------------------------------------------

TEST(MatchColor, RgbToHsvIsOpenCvsOnAllColours) {
  PIXELKIT_REQUIRE_OPENCV();
#if PIXELKIT_TEST_HAVE_OPENCV
  // 4096 x 4096 pixels: every 24-bit colour once.
  cv::Mat rgb(4096, 4096, CV_8UC3);
  for (int y = 0; y < 4096; ++y) {
    std::uint8_t* row = rgb.ptr<std::uint8_t>(y);
    for (int x = 0; x < 4096; ++x) {
      const std::uint32_t v = static_cast<std::uint32_t>(y) * 4096u + static_cast<std::uint32_t>(x);
      row[3 * x] = static_cast<std::uint8_t>(v >> 16);
      row[3 * x + 1] = static_cast<std::uint8_t>(v >> 8);
      row[3 * x + 2] = static_cast<std::uint8_t>(v);
    }
  }
  cv::Mat hsv;
  cv::cvtColor(rgb, hsv, cv::COLOR_RGB2HSV);
  long long bad = 0;
  std::string first;
  for (int y = 0; y < 4096; ++y) {
    const std::uint8_t* in = rgb.ptr<std::uint8_t>(y);
    const std::uint8_t* want = hsv.ptr<std::uint8_t>(y);
    for (int x = 0; x < 4096; ++x) {
      std::uint8_t got[3];
      rgb_to_hsv(in[3 * x], in[3 * x + 1], in[3 * x + 2], got);
      int h, s, v;
      detail::rgb_to_hsv8(in[3 * x], in[3 * x + 1], in[3 * x + 2], h, s, v);
      if (std::memcmp(got, want + 3 * x, 3) != 0 || h != got[0] || s != got[1] || v != got[2]) {
        if (bad++ == 0)
          first = "rgb(" + std::to_string(in[3 * x]) + "," + std::to_string(in[3 * x + 1]) + "," +
                  std::to_string(in[3 * x + 2]) + "): got " + std::to_string(got[0]) + "," + std::to_string(got[1]) +
                  "," + std::to_string(got[2]) + ", OpenCV " + std::to_string(want[3 * x]) + "," +
                  std::to_string(want[3 * x + 1]) + "," + std::to_string(want[3 * x + 2]);
      }
    }
  }
  EXPECT_EQ(bad, 0) << "first: " << first;
#endif
}

// Colours whose HSV (OpenCV's 8-bit scale) is known exactly.
struct Known {
  std::uint8_t r, g, b;
  int h, s, v;
};
constexpr Known kRed{255, 0, 0, 0, 255, 255};            // hue 0
constexpr Known kRedPurple{255, 0, 43, 175, 255, 255};  // hue 349.9 deg -> 175: wraps
constexpr Known kOrange{255, 43, 0, 5, 255, 255};       // hue 10.1 deg -> 5
constexpr Known kBlue{0, 0, 255, 120, 255, 255};
constexpr Known kGreen{0, 255, 0, 60, 255, 255};
constexpr Known kMagenta{255, 0, 255, 150, 255, 255};
constexpr Known kDarkRed{60, 0, 0, 0, 255, 60};   // V below 100
constexpr Known kGrey{128, 128, 128, 0, 0, 128};  // S 0

TEST(MatchColor, KnownColoursHaveTheirHsv) {
  for (const Known& k : {kRed, kRedPurple, kOrange, kBlue, kGreen, kMagenta, kDarkRed, kGrey}) {
    std::uint8_t hsv[3];
    rgb_to_hsv(k.r, k.g, k.b, hsv);
    EXPECT_EQ(hsv[0], k.h) << int(k.r) << "," << int(k.g) << "," << int(k.b);
    EXPECT_EQ(hsv[1], k.s) << int(k.r) << "," << int(k.g) << "," << int(k.b);
    EXPECT_EQ(hsv[2], k.v) << int(k.r) << "," << int(k.g) << "," << int(k.b);
  }
}

/// A 40x30 patch on a grey ramp (S = 0: never in a range with S >= 100) with
/// 7 red, 5 red-purple, 3 orange, 11 blue, 4 green, 6 magenta, 9 dark red pixels.
Image colour_patch() {
  Image p(40, 30, 3, PixelType::u8);
  for (int y = 0; y < 30; ++y)
    for (int x = 0; x < 40; ++x) {
      std::uint8_t* px = p.row<std::uint8_t>(y) + 3 * x;
      px[0] = px[1] = px[2] = static_cast<std::uint8_t>(20 + 5 * x + y);
    }
  int k = 0;
  const auto put = [&](const Known& c, int n) {
    for (int i = 0; i < n; ++i, ++k) {
      const int x = (k * 7) % 40, y = (k * 11) % 30;  // distinct positions for k < 120
      std::uint8_t* px = p.row<std::uint8_t>(y) + 3 * x;
      px[0] = c.r;
      px[1] = c.g;
      px[2] = c.b;
    }
  };
  put(kRed, 7);
  put(kRedPurple, 5);
  put(kOrange, 3);
  put(kBlue, 11);
  put(kGreen, 4);
  put(kMagenta, 6);
  put(kDarkRed, 9);
  return p;
}

TEST(MatchColor, CountsPixelsInRangeIncludingAWrappingHue) {
  const Image patch = colour_patch();
  const struct {
    const char* range;
    std::int64_t count;
  } cases[] = {
      {"170,100,100:10,255,255", 7 + 5 + 3},  // wraps: red, red-purple, orange
      {"0,100,100:10,255,255", 7 + 3},
      {"170,100,100:179,255,255", 5},
      {"100,100,100:130,255,255", 11},
      {"0,100,0:10,255,255", 7 + 3 + 9},  // dark red too (V from 0)
      {"140,100,100:60,255,255", 7 + 5 + 3 + 4 + 6},  // wraps through red to green
      {"0,0,0:179,255,255", 1200},
      {"0,1,0:179,255,255", 45},  // everything not grey
  };
  for (const auto& c : cases) {
    EXPECT_EQ(count_in_hsv_range(patch, 0, 0, 40, 30, parse_hsv_range(c.range)), c.count) << c.range;
  }
  // A sub-rectangle and a sub-view.
  EXPECT_EQ(count_in_hsv_range(patch, 0, 0, 40, 30, parse_hsv_range("0,0,0:179,0,255")), 1200 - 45);
  Image big(50, 40, 3, PixelType::u8);
  std::memset(big.row<std::uint8_t>(0), 0, static_cast<std::size_t>(big.pitch()) * 40);
  copy(patch, big.view().sub(6, 4, 40, 30));
  EXPECT_EQ(count_in_hsv_range(big.cview().sub(1, 1, 49, 39), 5, 3, 40, 30, parse_hsv_range("170,100,100:10,255,255")), 15);
  expect_error([&] { count_in_hsv_range(patch, 1, 0, 40, 30, HsvRange{}); }, Status::invalid_argument, "outside");
  expect_error([&] { count_in_hsv_range(random_image(5, 5, 1, PixelType::u8, 1), 0, 0, 5, 5, HsvRange{}); },
               Status::invalid_argument, "3-channel u8");
}

/// The colour patch pasted into a grey-noise scene at (53, 21) and (5, 60).
Image colour_scene() {
  Image img(131, 97, 3, PixelType::u8);
  std::mt19937 rng(800);
  std::uniform_int_distribution<int> d(0, 255);
  for (int y = 0; y < 97; ++y)
    for (int x = 0; x < 131; ++x) {
      std::uint8_t* px = img.row<std::uint8_t>(y) + 3 * x;
      px[0] = px[1] = px[2] = static_cast<std::uint8_t>(d(rng));
    }
  const Image patch = colour_patch();
  copy(patch, img.view().sub(53, 21, 40, 30));
  copy(patch, img.view().sub(5, 60, 40, 30));
  return img;
}

void expect_colour_check(const std::vector<Path>& paths) {
  const Image img = colour_scene();
  const Image templ = colour_patch();
  for (const Path& p : paths) {
    const std::string label = to_string(p);
    MatchParams mp = params(MatchMethod::sqdiff, p.strategy, 3);
    mp.color_check = true;
    mp.hsv = parse_hsv_range("170,100,100:10,255,255");
    // No verdict without min_fraction.
    MatchResult r = Matcher(templ, mp)(img, with(p.backend));
    ASSERT_EQ(r.matches.size(), 3u) << label;
    EXPECT_EQ(r.matches[0].x, 53) << label;
    EXPECT_EQ(r.matches[0].y, 21) << label;
    EXPECT_EQ(r.matches[1].x, 5) << label;
    EXPECT_EQ(r.matches[1].y, 60) << label;
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(r.matches[i].color_count, 15) << label;
      EXPECT_DOUBLE_EQ(r.matches[i].color_fraction, 15.0 / 1200.0) << label;
      EXPECT_EQ(r.matches[i].verdict, Verdict::none) << label;
    }
    // The third match lies on grey noise, perhaps overlapping a patch.
    EXPECT_EQ(r.matches[2].color_count,
              count_in_hsv_range(img, r.matches[2].x, r.matches[2].y, 40, 30, mp.hsv)) << label;
    // The verdict: a fraction equal to min_fraction passes.
    mp.min_fraction = 15.0 / 1200.0;
    r = Matcher(templ, mp)(img, with(p.backend));
    EXPECT_EQ(r.matches[0].verdict, Verdict::pass) << label;
    EXPECT_EQ(r.matches[1].verdict, Verdict::pass) << label;
    mp.min_fraction = 16.0 / 1200.0;
    r = Matcher(templ, mp)(img, with(p.backend));
    EXPECT_EQ(r.matches[0].verdict, Verdict::fail) << label;
    mp.min_fraction = 0;
    r = Matcher(templ, mp)(img, with(p.backend));
    for (const Match& m : r.matches) EXPECT_EQ(m.verdict, Verdict::pass) << label;
    // Other ranges, and a masked template: the count is over the whole w x h window.
    mp.min_fraction = 0.5;
    mp.hsv = parse_hsv_range("0,1,0:179,255,255");
    const Image mask = random_mask(40, 30, 1, 9);
    r = Matcher(templ, mp, mask)(img, with(p.backend));
    EXPECT_EQ(r.matches[0].x, 53) << label;
    EXPECT_EQ(r.matches[0].color_count, 45) << label;
    EXPECT_EQ(r.matches[0].verdict, Verdict::fail) << label;
    mp.hsv = parse_hsv_range("0,0,0:179,255,255");
    r = Matcher(templ, mp)(img, with(p.backend));
    EXPECT_EQ(r.matches[0].color_count, 1200) << label;
    EXPECT_EQ(r.matches[0].color_fraction, 1.0) << label;
    EXPECT_EQ(r.matches[0].verdict, Verdict::pass) << label;
    // Without the colour check: count -1, no verdict.
    r = Matcher(templ, params(MatchMethod::sqdiff, p.strategy))(img, with(p.backend));
    EXPECT_EQ(r.matches[0].color_count, -1) << label;
    EXPECT_EQ(r.matches[0].verdict, Verdict::none) << label;
  }
}

TEST(MatchColor, CountsFractionsAndVerdictsAtTheMatchesOnCpuAndRef) {
  std::vector<Path> p = paths_of(Backend::cpu);
  p.push_back({Backend::ref, MatchStrategy::direct});
  expect_colour_check(p);
}

TEST(MatchColor, CountsFractionsAndVerdictsAtTheMatchesOnCuda) {
  PIXELKIT_REQUIRE_GPU();
  expect_colour_check(paths_of(Backend::cuda));
}

TEST(MatchColor, RandomColourImagesGiveTheSameCountsOnEveryBackend) {
  // Random colours: the top-4 matches' counts equal count_in_hsv_range at
  // each match, on every path (cuda counts on the device).
  const Image img = random_image(90, 70, 3, PixelType::u8, 810);
  const Image templ = clone(img.cview().sub(40, 30, 17, 13));
  MatchParams mp = params(MatchMethod::ccoeff_normed, MatchStrategy::direct, 4);
  mp.color_check = true;
  mp.hsv = parse_hsv_range("150,60,40:30,255,255");
  mp.min_fraction = 0.2;
  MatchResult want;
  ref_map(img, templ, ConstImageView{}, mp.method, &want, 4);
  for (const Path& p : all_paths()) {
    mp.strategy = p.strategy;
    const MatchResult r = Matcher(templ, mp)(img, with(p.backend));
    ASSERT_EQ(r.matches.size(), want.matches.size()) << to_string(p);
    for (std::size_t i = 0; i < r.matches.size(); ++i) {
      const Match& m = r.matches[i];
      EXPECT_EQ(m.x, want.matches[i].x) << to_string(p);
      EXPECT_EQ(m.y, want.matches[i].y) << to_string(p);
      const std::int64_t n = count_in_hsv_range(img, m.x, m.y, 17, 13, mp.hsv);
      EXPECT_EQ(m.color_count, n) << to_string(p) << " match " << i;
      EXPECT_DOUBLE_EQ(m.color_fraction, n / 221.0) << to_string(p);
      EXPECT_EQ(m.verdict, n / 221.0 >= 0.2 ? Verdict::pass : Verdict::fail) << to_string(p);
    }
  }
}

// ---- bad input through the library ------------------------------------------------------------

TEST(MatchBadInput, TheLibraryRejectsEachWithInvalidArgument) {
  const Image img = random_image(20, 15, 3, PixelType::u8, 1);
  const Image templ = random_image(6, 5, 3, PixelType::u8, 2);
  const Image grey = random_image(20, 15, 1, PixelType::u8, 3);
  const Image fimg = random_image(20, 15, 3, PixelType::f32, 4);
  const Image rgba = random_image(6, 5, 4, PixelType::u8, 5);
  const Status bad = Status::invalid_argument;
  for (Backend b : {Backend::ref, Backend::cpu}) {
    const Options o = with(b);
    // Template larger than the image (either side).
    Matcher big(random_image(21, 5, 3, PixelType::u8, 6));
    expect_error([&] { big(img, o); }, bad, "larger than the image");
    Matcher tall(random_image(6, 16, 3, PixelType::u8, 6));
    expect_error([&] { tall(img, o); }, bad, "larger than the image");
    // Empty image and template.
    Matcher m(templ);
    expect_error([&] { m(ConstImageView{}, o); }, bad, "empty");
    expect_error([&] { Matcher e{ConstImageView{}}; }, bad, "empty");
    // Channel and type mismatch.
    expect_error([&] { m(grey, o); }, bad, "channels");
    expect_error([&] { m(fimg, o); }, bad, "type");
    expect_error([&] { Matcher x(rgba); }, bad, "channels");
    // Masks: wrong size, wrong type, wrong channels, all zero.
    expect_error([&] { Matcher x(templ, {}, random_mask(5, 5, 1, 1)); }, bad, "mask");
    expect_error([&] { Matcher x(templ, {}, random_image(6, 5, 1, PixelType::f32, 1)); }, bad, "mask must be u8");
    expect_error([&] { Matcher x(grey.cview().sub(0, 0, 6, 5), {}, random_mask(6, 5, 3, 1)); }, bad, "mask");
    Image zeros(6, 5, 1, PixelType::u8);
    for (int y = 0; y < 5; ++y) std::fill_n(zeros.row<std::uint8_t>(y), 6, std::uint8_t{0});
    expect_error([&] { Matcher x(templ, {}, zeros); }, bad, "mask has no non-zero pixel");
    // K < 1, D = 0.
    expect_error([&] { Matcher x(templ, params(MatchMethod::sqdiff, MatchStrategy::automatic, 0)); }, bad, "top K");
    expect_error([&] { Matcher x(templ, params(MatchMethod::sqdiff, MatchStrategy::automatic, -3)); }, bad, "top K");
    expect_error([&] { Matcher x(templ, params(MatchMethod::sqdiff, MatchStrategy::automatic, 1, 0)); }, bad,
                 "distance");
    // The colour check: needs 3-channel u8; a valid range; min_fraction in [0, 1] and only with it.
    MatchParams cc;
    cc.color_check = true;
    expect_error([&] { Matcher x(grey.cview().sub(0, 0, 6, 5), cc); }, bad, "3-channel u8");
    expect_error([&] { Matcher x(fimg.cview().sub(0, 0, 6, 5), cc); }, bad, "3-channel u8");
    MatchParams badrange = cc;
    badrange.hsv.h_hi = 180;
    expect_error([&] { Matcher x(templ, badrange); }, bad, "HSV range");
    badrange = cc;
    badrange.hsv.s_lo = 200;
    badrange.hsv.s_hi = 100;
    expect_error([&] { Matcher x(templ, badrange); }, bad, "HSV range");
    MatchParams frac = cc;
    for (double f : {1.5, 1.0000001, static_cast<double>(NAN)}) {
      frac.min_fraction = f;
      expect_error([&] { Matcher x(templ, frac); }, bad, "fraction", std::to_string(f));
    }
    MatchParams nocc;
    nocc.min_fraction = 0.5;
    expect_error([&] { Matcher x(templ, nocc); }, bad, "colour check");
    // Score maps of the wrong size, type or channels; a map over the image.
    Image s1(14, 11, 1, PixelType::f32), s2(15, 10, 1, PixelType::f32), s3(15, 11, 1, PixelType::u8),
        s4(15, 11, 3, PixelType::f32);
    for (Image* s : {&s1, &s2, &s3, &s4}) expect_error([&] { m(img, s->view(), o); }, bad, "score map");
    Image shared(60, 15, 1, PixelType::f32);
    fill_random(shared.view(), 1);
    Matcher fm(random_image(6, 5, 1, PixelType::f32, 1));
    expect_error([&] { fm(shared.cview().sub(0, 0, 20, 15), shared.view().sub(20, 0, 15, 11), o); }, bad, "overlaps");
  }
  // match_result_size.
  int w = 0, h = 0;
  expect_error([&] { match_result_size(10, 10, 11, 10, w, h); }, bad, "larger than the image");
  expect_error([&] { match_result_size(0, 10, 1, 1, w, h); }, bad, "empty");
  expect_error([&] { match_result_size(10, 10, 0, 1, w, h); }, bad, "empty");
  match_result_size(10, 7, 3, 2, w, h);
  EXPECT_EQ(w, 8);
  EXPECT_EQ(h, 6);
  // The one-shot function checks the same.
  expect_error([&] { match_template(img, random_image(21, 16, 3, PixelType::u8, 1)); }, bad, "larger");
  // cuda in a build without it.
  if (!built_with_cuda()) {
    Matcher m(templ);
    expect_error([&] { m(img, with(Backend::cuda)); }, Status::unsupported, "CUDA");
  }
}

TEST(MatchBadInput, NothingIsWrittenToTheScoreMapOnError) {
  const Image img = random_image(20, 15, 3, PixelType::u8, 1);
  Image scores(15, 11, 1, PixelType::f32);
  for (int y = 0; y < 11; ++y) std::fill_n(scores.row<float>(y), 15, 42.0f);
  Matcher m(random_image(6, 5, 1, PixelType::u8, 2));  // channel mismatch
  expect_error([&] { m(img, scores.view(), with(Backend::cpu)); }, Status::invalid_argument, "channels");
  for (int y = 0; y < 11; ++y)
    for (int x = 0; x < 15; ++x) ASSERT_EQ(scores.row<float>(y)[x], 42.0f);
}

TEST(MatchOneShot, MatchTemplateEqualsTheMatcher) {
  const Image img = random_image(50, 40, 3, PixelType::u8, 1);
  const Image templ = clone(img.cview().sub(11, 13, 9, 8));
  const MatchResult r = match_template(img, templ, params(MatchMethod::sqdiff_normed, MatchStrategy::automatic, 2),
                                       ConstImageView{}, with(Backend::cpu));
  ASSERT_EQ(r.matches.size(), 2u);
  EXPECT_EQ(r.matches[0].x, 11);
  EXPECT_EQ(r.matches[0].y, 13);
  EXPECT_EQ(r.matches[0].score, 0.0f);
}

}  // namespace
}  // namespace pixelkit::test
