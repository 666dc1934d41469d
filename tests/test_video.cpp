// The video pipeline: frame sources and sinks (.npy stacks and memory always,
// video files through OpenCV's videoio), VideoPipeline for filter, haar-view
// and match on every backend, the per-frame report, and `pixelkit video`.
//
// The test video slides a crop window over data/astronaut.png (a random
// picture when the build cannot read PNG) along a known path, with noise, so
// that a template cut from the photo sits at a known place in every frame.
// Frames without a codec (memory, .npy) are compared exactly; frames through
// MJPG only for their match positions, frame count and size; FFV1 (lossless)
// for exact filter output through a video file.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "pixelkit/config.hpp"
#include "pixelkit/filter.hpp"
#include "pixelkit/haar.hpp"
#include "pixelkit/io.hpp"
#include "pixelkit/match.hpp"
#include "pixelkit/video.hpp"
#include "test_support.hpp"

#define PIXELKIT_TEST_VIDEOIO (PIXELKIT_TEST_HAVE_OPENCV && PIXELKIT_WITH_VIDEOIO)
#if PIXELKIT_TEST_VIDEOIO
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include "pixelkit/opencv.hpp"
#endif

namespace pixelkit::test {
namespace {

namespace fs = std::filesystem;

#define PIXELKIT_REQUIRE_VIDEOIO()                                                      \
  do {                                                                                  \
    PIXELKIT_REQUIRE_OPENCV();                                                          \
    if (!PIXELKIT_WITH_VIDEOIO) GTEST_SKIP() << "built without OpenCV videoio";         \
  } while (0)

// ---- the test video -------------------------------------------------------------

constexpr int kW = 160, kH = 120;          // frame size
constexpr int kTx = 180, kTy = 90;         // the template's place in the photo
constexpr int kTw = 40, kTh = 32;          // the template's size

/// Where the template lies in frame i (its top-left corner).
int pos_x(int i) { return 20 + 3 * i; }
int pos_y(int i) { return 15 + 2 * i; }

const Image& photo() {
  static const Image img = [] {
    if (have_png()) return read_image(data_path("astronaut.png"));
    return random_image(512, 512, 3, PixelType::u8, 77);
  }();
  return img;
}

Image template_image() { return clone(photo().cview().sub(kTx, kTy, kTw, kTh)); }

/// Frame i: the kW x kH window of the photo placed so that the template lies
/// at (pos_x(i), pos_y(i)), plus uniform noise of +-noise grey levels.
Image make_frame(int i, int noise = 4) {
  const ConstImageView win = photo().cview().sub(kTx - pos_x(i), kTy - pos_y(i), kW, kH);
  Image f = clone(win);
  std::mt19937 rng(1000 + i);
  std::uniform_int_distribution<int> d(-noise, noise);
  for (int y = 0; y < kH; ++y) {
    std::uint8_t* r = f.row<std::uint8_t>(y);
    for (int x = 0; x < kW * 3; ++x) r[x] = static_cast<std::uint8_t>(std::clamp(r[x] + d(rng), 0, 255));
  }
  return f;
}

std::vector<Image> make_frames(int n) {
  std::vector<Image> v;
  for (int i = 0; i < n; ++i) v.push_back(make_frame(i));
  return v;
}

std::vector<Image> copies(const std::vector<Image>& frames) {
  std::vector<Image> v;
  for (const Image& f : frames) v.push_back(clone(f.cview()));
  return v;
}

std::vector<Backend> fast_backends() {
  std::vector<Backend> b = {Backend::cpu};
  if (cuda_available()) b.push_back(Backend::cuda);
  return b;
}

VideoRunOptions run_on(Backend b) {
  VideoRunOptions ro;
  ro.options.backend = b;
  return ro;
}

bool same(const ConstImageView& a, const ConstImageView& b) {
  if (a.width != b.width || a.height != b.height || a.channels != b.channels || a.type != b.type) return false;
  for (int y = 0; y < a.height; ++y)
    if (std::memcmp(a.row<unsigned char>(y), b.row<unsigned char>(y), a.row_bytes()) != 0) return false;
  return true;
}

std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> v;
  std::stringstream s(text);
  for (std::string l; std::getline(s, l);) v.push_back(l);
  return v;
}

void write_stack(const std::string& path, const std::vector<Image>& frames) {
  NpyFrameSink sink(path, frames[0].width(), frames[0].height(), frames[0].channels());
  for (const Image& f : frames) sink.write(f.cview());
  sink.finish();
}

#if PIXELKIT_TEST_VIDEOIO
/// Writes RGB frames with cv::VideoWriter (FFmpeg), as a camera file would be.
void write_video(const std::string& path, const std::vector<Image>& frames, const char* fourcc = "MJPG",
                 double fps = 25.0) {
  cv::VideoWriter w(path, cv::CAP_FFMPEG, cv::VideoWriter::fourcc(fourcc[0], fourcc[1], fourcc[2], fourcc[3]), fps,
                    cv::Size(frames[0].width(), frames[0].height()));
  ASSERT_TRUE(w.isOpened()) << path;
  cv::Mat bgr;
  for (const Image& f : frames) {
    cv::cvtColor(to_mat(f.cview()), bgr, cv::COLOR_RGB2BGR);
    w.write(bgr);
  }
  w.release();
}

/// Every frame of a video file as decoded by cv::VideoCapture, in RGB.
std::vector<Image> decode_video(const std::string& path) {
  std::vector<Image> v;
  cv::VideoCapture cap(path, cv::CAP_FFMPEG);
  EXPECT_TRUE(cap.isOpened()) << path;
  cv::Mat bgr;
  while (cap.read(bgr)) {
    Image f(bgr.cols, bgr.rows, 3, PixelType::u8);
    cv::Mat dst = to_mat(f.view());
    cv::cvtColor(bgr, dst, cv::COLOR_BGR2RGB);
    v.push_back(std::move(f));
  }
  return v;
}
#endif

// ---- sources and sinks ------------------------------------------------------------

class VideoIo : public ::testing::Test {
 protected:
  void SetUp() override { dir = scratch_dir(std::string("video_io_") + ::testing::UnitTest::GetInstance()->current_test_info()->name()); }
  void TearDown() override { fs::remove_all(dir); }
  std::string dir;
};

TEST_F(VideoIo, NpyStackRoundTrip) {
  for (const int c : {1, 3, 4}) {
    SCOPED_TRACE(c);
    std::vector<Image> frames;
    for (int i = 0; i < 5; ++i) frames.push_back(random_image(17, 9, c, PixelType::u8, 10 + i));
    const std::string p = dir + "/s" + std::to_string(c) + ".npy";
    write_stack(p, frames);
    const NpyArray a = read_npy(p);  // numpy's layout: (N, H, W) or (N, H, W, C)
    const std::vector<std::size_t> want = c == 1 ? std::vector<std::size_t>{5, 9, 17}
                                                 : std::vector<std::size_t>{5, 9, 17, static_cast<std::size_t>(c)};
    EXPECT_EQ(a.shape, want);
    NpyFrameSource src(p, 30.0);
    EXPECT_EQ(src.format().width, 17);
    EXPECT_EQ(src.format().height, 9);
    EXPECT_EQ(src.format().channels, c);
    EXPECT_EQ(src.format().frame_count, 5);
    EXPECT_EQ(src.format().fps, 30.0);
    Image f(17, 9, c, PixelType::u8);
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(src.read(f.view()));
      EXPECT_TRUE(same(f.cview(), frames[static_cast<std::size_t>(i)].cview())) << "frame " << i;
    }
    EXPECT_FALSE(src.read(f.view()));
    EXPECT_EQ(src.frames_read(), 5);
  }
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"s1.npy", "s3.npy", "s4.npy"})) << "a temporary was left";
}

TEST_F(VideoIo, NpySinkAbortLeavesNothing) {
  const std::string p = dir + "/out.npy";
  { std::ofstream(p) << "keep"; }
  {
    NpyFrameSink sink(p, 8, 8, 3);
    sink.write(random_image(8, 8, 3, PixelType::u8, 1).cview());
    EXPECT_EQ(files_in(dir).size(), 2u);  // the temporary beside the old file
  }  // destroyed without finish()
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"out.npy"});
  EXPECT_EQ(slurp(p), "keep");
  NpyFrameSink sink(p, 8, 8, 3);
  EXPECT_THROW(sink.write(random_image(9, 8, 3, PixelType::u8, 1).cview()), Error);
}

TEST_F(VideoIo, NpyTruncatedStackGivesItsCompleteFrames) {
  const std::vector<Image> frames = copies(make_frames(6));
  const std::string p = dir + "/s.npy";
  write_stack(p, frames);
  const auto size = fs::file_size(p);
  const std::size_t frame_bytes = static_cast<std::size_t>(kW) * kH * 3;
  fs::resize_file(p, size - frame_bytes - frame_bytes / 2);  // 4.5 frames left
  NpyFrameSource src(p);
  EXPECT_EQ(src.format().frame_count, 6);
  Image f(kW, kH, 3, PixelType::u8);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(src.read(f.view()));
  try {
    src.read(f.view());
    FAIL() << "no error for a truncated stack";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::io);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("4 of 6 frames"), std::string::npos) << e.what();
  }
}

TEST_F(VideoIo, NpyBadStacks) {
  const auto expect_io = [&](const std::string& p, const std::string& fragment) {
    SCOPED_TRACE(p);
    try {
      NpyFrameSource src(p);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::io) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_io(dir + "/missing.npy", "missing.npy");
  write_npy(dir + "/f32.npy", random_image(8, 4, 1, PixelType::f32, 1).cview());
  expect_io(dir + "/f32.npy", "u8");
  write_npy(dir + "/image.npy", random_image(8, 4, 1, PixelType::u8, 1).cview());  // (4, 8): one image, no stack
  expect_io(dir + "/image.npy", "(N, H, W)");
  { std::ofstream(dir + "/junk.npy") << "not numpy"; }
  expect_io(dir + "/junk.npy", "junk.npy");
}

TEST_F(VideoIo, MemorySourceRefusesFramesOfAnotherSize) {
  std::vector<Image> frames;
  frames.push_back(random_image(16, 8, 3, PixelType::u8, 1));
  frames.push_back(random_image(16, 8, 3, PixelType::u8, 2));
  frames.push_back(random_image(18, 8, 3, PixelType::u8, 3));
  MemoryFrameSource src(std::move(frames));
  Image f(16, 8, 3, PixelType::u8);
  EXPECT_TRUE(src.read(f.view()));
  EXPECT_TRUE(src.read(f.view()));
  try {
    src.read(f.view());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("frame 2 is 18x8x3"), std::string::npos) << e.what();
  }
}

TEST_F(VideoIo, SinkPathChecks) {
  EXPECT_EQ(default_fourcc("a.avi"), "MJPG");
  EXPECT_EQ(default_fourcc("a.MP4"), "mp4v");
  EXPECT_EQ(default_fourcc("a.mkv"), "XVID");
  for (const char* bad : {"a.webm", "a.gif", "a", "a.png"}) {
    try {
      check_frame_sink_path(dir + "/" + bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument) << bad;
      EXPECT_NE(std::string(e.what()).find("unsupported container"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(check_frame_sink_path(dir + "/no/such/folder/a.npy"), Error);
  EXPECT_THROW(check_frame_sink_path(dir + "/a.npy", "MJPG"), Error);  // a codec for a stack
  if (have_video_codecs()) EXPECT_THROW(check_frame_sink_path(dir + "/a.avi", "MJPEG"), Error);  // not a FourCC
  EXPECT_NO_THROW(check_frame_sink_path(dir + "/a.npy"));
  EXPECT_TRUE(files_in(dir).empty());
}

// ---- the pipeline ---------------------------------------------------------------------

TEST(VideoPipelineTest, FilterFramesEqualTheSingleImageFilter) {
  const std::vector<Image> frames = copies(make_frames(7));
  const Kernel k = parse_kernel("gaussian:5");
  for (const Backend b : fast_backends()) {
    SCOPED_TRACE(to_string(b));
    MemoryFrameSource src(copies(frames));
    MemoryFrameSink sink;
    std::vector<FrameRecord> recs;
    VideoRunOptions ro = run_on(b);
    ro.on_frame = [&](const FrameRecord& r) { recs.push_back(r); };
    const VideoSummary s = VideoPipeline::filter(k).run(src, &sink, ro);
    EXPECT_EQ(s.stop, VideoStop::end);
    EXPECT_EQ(s.frames, 7);
    EXPECT_EQ(s.backend, b);
    EXPECT_TRUE(s.output_written);
    EXPECT_TRUE(sink.finished());
    ASSERT_EQ(sink.frames().size(), 7u);
    ASSERT_EQ(recs.size(), 7u);
    for (int i = 0; i < 7; ++i) {
      Image want(kW, kH, 3, PixelType::u8);
      Options o;
      o.backend = b;
      filter2d(frames[static_cast<std::size_t>(i)].cview(), want.view(), k, {}, o);
      EXPECT_TRUE(same(sink.frames()[static_cast<std::size_t>(i)].cview(), want.cview())) << "frame " << i;
      EXPECT_EQ(recs[static_cast<std::size_t>(i)].index, i);
      EXPECT_DOUBLE_EQ(recs[static_cast<std::size_t>(i)].timestamp_ms, i * 40.0);
    }
  }
}

TEST(VideoPipelineTest, FilterOnRefSmallFrames) {
  std::vector<Image> frames;
  for (int i = 0; i < 3; ++i) frames.push_back(random_image(23, 11, 1, PixelType::u8, 40 + i));
  MemoryFrameSource src(copies(frames));
  MemoryFrameSink sink;
  const VideoSummary s = VideoPipeline::filter(Kernel::sharpen(), parse_border("replicate")).run(src, &sink, run_on(Backend::ref));
  ASSERT_EQ(s.frames, 3);
  for (int i = 0; i < 3; ++i) {
    Image want(23, 11, 1, PixelType::u8);
    Options o;
    o.backend = Backend::ref;
    filter2d(frames[static_cast<std::size_t>(i)].cview(), want.view(), Kernel::sharpen(), parse_border("replicate"), o);
    EXPECT_TRUE(same(sink.frames()[static_cast<std::size_t>(i)].cview(), want.cview()));
  }
}

void expect_known_positions(const std::vector<FrameRecord>& recs, int n, MatchMethod m) {
  ASSERT_EQ(recs.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const FrameRecord& r = recs[static_cast<std::size_t>(i)];
    EXPECT_EQ(r.index, i);
    ASSERT_EQ(r.matches.size(), 1u);
    EXPECT_EQ(r.matches[0].x, pos_x(i)) << to_string(m) << " frame " << i;
    EXPECT_EQ(r.matches[0].y, pos_y(i)) << to_string(m) << " frame " << i;
  }
}

TEST(VideoPipelineTest, MatchFindsTheKnownPathOnEveryBackend) {
  const Image templ = template_image();
  for (const MatchMethod m : {MatchMethod::ccoeff_normed, MatchMethod::sqdiff}) {
    MatchParams p;
    p.method = m;
    VideoPipeline pipe = VideoPipeline::match(templ.cview(), p);
    std::vector<Backend> bs = fast_backends();
    bs.push_back(Backend::ref);
    for (const Backend b : bs) {
      SCOPED_TRACE(to_string(b));
      const int n = b == Backend::ref ? 3 : 12;  // ref is the slow definition
      MemoryFrameSource src(make_frames(n));
      MemoryFrameSink sink;
      std::vector<FrameRecord> recs;
      VideoRunOptions ro = run_on(b);
      ro.on_frame = [&](const FrameRecord& r) { recs.push_back(r); };
      const VideoSummary s = pipe.run(src, &sink, ro);
      EXPECT_EQ(s.frames, n);
      expect_known_positions(recs, n, m);
      // The output frame is the input with a green 2-pixel rectangle at the match.
      const Image& out = sink.frames()[1];
      const std::uint8_t* px = out.row<std::uint8_t>(pos_y(1)) + 3 * pos_x(1);
      EXPECT_EQ(px[0], 0);
      EXPECT_EQ(px[1], 255);
      EXPECT_EQ(px[2], 0);
      const Image in1 = make_frame(1);
      EXPECT_TRUE(same(out.cview().sub(0, 0, kW, pos_y(1)), in1.cview().sub(0, 0, kW, pos_y(1))));
    }
  }
}

TEST(VideoPipelineTest, MatchVerdictColoursAndGreyFrames) {
  const Image templ = template_image();
  MatchParams p;
  p.method = MatchMethod::ccoeff_normed;
  p.color_check = true;
  p.hsv = parse_hsv_range("0,0,0:179,255,255");  // every pixel: fraction 1
  for (const double minf : {0.5, 1.0 + 0.0}) {
    p.min_fraction = minf;
    MemoryFrameSource src(make_frames(2));
    MemoryFrameSink sink;
    std::vector<FrameRecord> recs;
    VideoRunOptions ro = run_on(Backend::cpu);
    ro.on_frame = [&](const FrameRecord& r) { recs.push_back(r); };
    VideoPipeline::match(templ.cview(), p).run(src, &sink, ro);
    ASSERT_EQ(recs.size(), 2u);
    EXPECT_EQ(recs[0].matches[0].color_count, kTw * kTh);
    EXPECT_EQ(recs[0].matches[0].verdict, Verdict::pass);
    const std::uint8_t* px = sink.frames()[0].row<std::uint8_t>(pos_y(0)) + 3 * pos_x(0);
    EXPECT_EQ(px[1], 255);
  }
  p.hsv = parse_hsv_range("0,0,0:0,0,0");  // black only: fraction ~0 -> fail, drawn red
  p.min_fraction = 0.5;
  MemoryFrameSource src(make_frames(1));
  MemoryFrameSink sink;
  VideoPipeline::match(templ.cview(), p).run(src, &sink, run_on(Backend::cpu));
  const std::uint8_t* px = sink.frames()[0].row<std::uint8_t>(pos_y(0)) + 3 * pos_x(0);
  EXPECT_EQ(px[0], 255);
  EXPECT_EQ(px[1], 0);
  EXPECT_EQ(px[2], 0);

  // Grey frames: matched in grey, drawn on an RGB copy.
  Image gt(kTw, kTh, 1, PixelType::u8);
  std::vector<Image> grey;
  for (int i = 0; i < 3; ++i) {
    const Image f = make_frame(i, 0);
    Image g(kW, kH, 1, PixelType::u8);
    for (int y = 0; y < kH; ++y)
      for (int x = 0; x < kW; ++x) g.row<std::uint8_t>(y)[x] = f.row<std::uint8_t>(y)[3 * x + 1];
    if (i == 0)
      for (int y = 0; y < kTh; ++y)
        for (int x = 0; x < kTw; ++x) gt.row<std::uint8_t>(y)[x] = g.row<std::uint8_t>(pos_y(0) + y)[pos_x(0) + x];
    grey.push_back(std::move(g));
  }
  MatchParams gp;
  gp.method = MatchMethod::sqdiff;
  MemoryFrameSource gsrc(std::move(grey));
  MemoryFrameSink gsink;
  std::vector<FrameRecord> recs;
  VideoRunOptions ro = run_on(Backend::cpu);
  ro.on_frame = [&](const FrameRecord& r) { recs.push_back(r); };
  VideoPipeline gpipe = VideoPipeline::match(gt.cview(), gp);
  EXPECT_EQ(gpipe.output_format(gsrc.format()).channels, 3);
  gpipe.run(gsrc, &gsink, ro);
  expect_known_positions(recs, 3, gp.method);
  EXPECT_EQ(gsink.frames()[0].channels(), 3);
}

TEST(VideoPipelineTest, HaarViewEqualsTheCliPicture) {
  // An odd size: the coefficient array is larger than the frame and the
  // picture is cropped to it.
  for (const int levels : {1, 3}) {
    SCOPED_TRACE(levels);
    const std::string dir = scratch_dir("video_haar_" + std::to_string(levels));
    std::vector<Image> frames;
    for (int i = 0; i < 2; ++i) frames.push_back(random_image(37, 23, 3, PixelType::u8, 70 + i));
    for (const Backend b : fast_backends()) {
      MemoryFrameSource src(copies(frames));
      MemoryFrameSink sink;
      const VideoSummary s = VideoPipeline::haar_view(levels).run(src, &sink, run_on(b));
      ASSERT_EQ(s.frames, 2);
      for (int i = 0; i < 2; ++i) {
        const std::string fin = dir + "/f.npy", fview = dir + "/v.npy";
        write_npy(fin, frames[static_cast<std::size_t>(i)].cview());
        const CliResult r = run_cli("haar '" + fin + "' --levels " + std::to_string(levels) + " --view '" + fview +
                                    "' --backend " + to_string(b));
        ASSERT_EQ(r.code, 0) << r.err;
        const Image view = image_from_npy(read_npy(fview), fview);
        EXPECT_TRUE(same(sink.frames()[static_cast<std::size_t>(i)].cview(), view.cview().sub(0, 0, 37, 23)))
            << to_string(b) << " frame " << i;
      }
    }
    fs::remove_all(dir);
  }
  // 0 levels = the frame's maximum; too many levels is refused before any work.
  MemoryFrameSource src(make_frames(1));
  EXPECT_NO_THROW(VideoPipeline::haar_view(0).output_format(src.format()));
  try {
    VideoPipeline::haar_view(9).output_format(src.format());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("160x120"), std::string::npos) << e.what();
  }
}

TEST(VideoPipelineTest, NpyStackThroughThePipelineIsExact) {
  const std::string dir = scratch_dir("video_npy_pipe");
  const std::vector<Image> frames = copies(make_frames(5));
  write_stack(dir + "/in.npy", frames);
  NpyFrameSource src(dir + "/in.npy");
  const Kernel k = Kernel::box(3);
  VideoPipeline pipe = VideoPipeline::filter(k);
  NpyFrameSink sink(dir + "/out.npy", kW, kH, 3);
  const VideoSummary s = pipe.run(src, &sink, run_on(Backend::cpu));
  EXPECT_EQ(s.frames, 5);
  NpyFrameSource back(dir + "/out.npy");
  Image f(kW, kH, 3, PixelType::u8), want(kW, kH, 3, PixelType::u8);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(back.read(f.view()));
    filter2d(frames[static_cast<std::size_t>(i)].cview(), want.view(), k);
    EXPECT_TRUE(same(f.cview(), want.cview())) << i;
  }
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"in.npy", "out.npy"}));
  fs::remove_all(dir);
}

/// A source that fails after `good` frames, as a damaged file does.
class FailingSource : public FrameSource {
 public:
  FailingSource(int good, Status status) : good_(good), status_(status) {
    format_ = {kW, kH, 3, 25.0, 100};
  }
  const VideoFormat& format() const noexcept override { return format_; }
  bool read(const ImageView& frame) override {
    if (n_ == good_) throw Error(status_, "fake: corrupt after " + std::to_string(n_) + " frames");
    const Image f = make_frame(static_cast<int>(n_));
    copy(f.cview(), frame);
    ++n_;
    return true;
  }
  std::int64_t frames_read() const noexcept override { return n_; }
  std::string name() const override { return "fake"; }

 private:
  int good_;
  Status status_;
  std::int64_t n_ = 0;
  VideoFormat format_;
};

TEST(VideoPipelineTest, InputErrorsStopCleanlyWithTheFramesBefore) {
  const Image templ = template_image();
  for (const Backend b : fast_backends()) {
    SCOPED_TRACE(to_string(b));
    FailingSource src(5, Status::io);
    MemoryFrameSink sink;
    std::vector<FrameRecord> recs;
    VideoRunOptions ro = run_on(b);
    ro.on_frame = [&](const FrameRecord& r) { recs.push_back(r); };
    const VideoSummary s = VideoPipeline::match(templ.cview()).run(src, &sink, ro);
    EXPECT_EQ(s.stop, VideoStop::input_error);
    EXPECT_EQ(s.input_status, Status::io);
    EXPECT_NE(s.message.find("corrupt after 5"), std::string::npos);
    EXPECT_EQ(s.frames, 5);
    EXPECT_TRUE(sink.finished());
    EXPECT_EQ(sink.frames().size(), 5u);
    expect_known_positions(recs, 5, MatchMethod::sqdiff);
  }
  // Failing before the first frame: nothing is completed.
  FailingSource src(0, Status::io);
  MemoryFrameSink sink;
  const VideoSummary s = VideoPipeline::filter(Kernel::box(3)).run(src, &sink, run_on(Backend::cpu));
  EXPECT_EQ(s.stop, VideoStop::input_error);
  EXPECT_EQ(s.frames, 0);
  EXPECT_FALSE(s.output_written);
  EXPECT_FALSE(sink.finished());
}

TEST(VideoPipelineTest, SizeChangeStopsWithAClearError) {
  std::vector<Image> frames = copies(make_frames(4));
  frames.push_back(random_image(kW + 2, kH, 3, PixelType::u8, 5));
  MemoryFrameSource src(std::move(frames));
  MemoryFrameSink sink;
  const VideoSummary s = VideoPipeline::filter(Kernel::box(3)).run(src, &sink, run_on(Backend::cpu));
  EXPECT_EQ(s.stop, VideoStop::input_error);
  EXPECT_EQ(s.input_status, Status::invalid_argument);
  EXPECT_NE(s.message.find("frame 4 is 162x120x3"), std::string::npos) << s.message;
  EXPECT_EQ(sink.frames().size(), 4u);
}

TEST(VideoPipelineTest, StopFlagFinishesTheCurrentFrameAndCompletesTheOutput) {
  const std::string dir = scratch_dir("video_stop");
  for (const Backend b : fast_backends()) {
    SCOPED_TRACE(to_string(b));
    MemoryFrameSource src(make_frames(30));
    NpyFrameSink sink(dir + "/out.npy", kW, kH, 3);
    std::atomic<bool> stop{false};
    VideoRunOptions ro = run_on(b);
    ro.stop = &stop;
    ro.on_frame = [&](const FrameRecord& r) {
      if (r.index == 4) stop = true;
    };
    const VideoSummary s = VideoPipeline::filter(Kernel::box(3)).run(src, &sink, ro);
    EXPECT_EQ(s.stop, VideoStop::interrupted);
    EXPECT_GE(s.frames, 5);
    EXPECT_LT(s.frames, 30);
    EXPECT_EQ(read_npy(dir + "/out.npy").shape[0], static_cast<std::size_t>(s.frames));
  }
  fs::remove_all(dir);
}

TEST(VideoPipelineTest, MaxFramesAndPoolSizes) {
  for (const Backend b : fast_backends())
    for (const int pool : {2, 3, 8})
      for (const int streams : {1, 2, 3}) {
        SCOPED_TRACE(std::string(to_string(b)) + " pool " + std::to_string(pool) + " streams " + std::to_string(streams));
        const std::vector<Image> frames = copies(make_frames(9));
        MemoryFrameSource src(copies(frames));
        MemoryFrameSink sink;
        VideoRunOptions ro = run_on(b);
        ro.frames_in_flight = pool;
        ro.streams = streams;
        ro.max_frames = 7;
        const VideoSummary s = VideoPipeline::filter(Kernel::emboss()).run(src, &sink, ro);
        ASSERT_EQ(s.frames, 7);
        for (int i = 0; i < 7; ++i) {
          Image want(kW, kH, 3, PixelType::u8);
          Options o;
          o.backend = b;
          filter2d(frames[static_cast<std::size_t>(i)].cview(), want.view(), Kernel::emboss(), {}, o);
          EXPECT_TRUE(same(sink.frames()[static_cast<std::size_t>(i)].cview(), want.cview())) << i;
        }
      }
}

TEST(VideoPipelineTest, BadArguments) {
  const Image templ = template_image();
  MemoryFrameSource src(make_frames(1));
  const auto expect_invalid = [](auto&& f, const std::string& fragment) {
    try {
      f();
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  Image big = random_image(kW + 1, 10, 3, PixelType::u8, 1);
  expect_invalid([&] { VideoPipeline::match(big.cview()).output_format(src.format()); }, "larger than the frames");
  Image grey = random_image(8, 8, 1, PixelType::u8, 1);
  expect_invalid([&] { VideoPipeline::match(grey.cview()).output_format(src.format()); }, "channel");
  Image f32 = random_image(8, 8, 3, PixelType::f32, 1);
  expect_invalid([&] { VideoPipeline::match(f32.cview()); }, "u8");
  expect_invalid([&] { VideoPipeline::haar_view(-1); }, "levels");
  VideoRunOptions ro = run_on(Backend::cpu);
  ro.frames_in_flight = 1;
  expect_invalid([&] { VideoPipeline::filter(Kernel::box(3)).run(src, nullptr, ro); }, "frames_in_flight");
  EXPECT_EQ(parse_video_op("haar-view"), VideoOp::haar_view);
  expect_invalid([] { parse_video_op("blur"); }, "blur");
}

TEST(VideoReportTest, CsvAndJson) {
  const std::string dir = scratch_dir("video_report");
  VideoReport r;
  r.input = "in.avi";
  r.op = VideoOp::match;
  r.format = {kW, kH, 3, 25.0, 2};
  r.match.top_k = 2;
  r.match.color_check = true;
  r.match.min_fraction = 0.5;
  FrameRecord a;
  a.index = 0;
  a.matches = {Match{1, 2, 0.5f, 10, 0.25, Verdict::fail}, Match{3, 4, 0.25f, 30, 0.75, Verdict::pass}};
  FrameRecord b;
  b.index = 1;
  b.timestamp_ms = 40;
  b.matches = {Match{5, 6, 0.75f, 40, 1.0, Verdict::pass}};
  r.frames = {a, b};
  write_video_report(dir + "/r.csv", r);
  const std::vector<std::string> l = lines_of(slurp(dir + "/r.csv"));
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0], "frame,timestamp_ms,x1,y1,score1,count1,fraction1,verdict1,x2,y2,score2,count2,fraction2,verdict2");
  EXPECT_EQ(l[1], "0,0.000,1,2,0.5,10,0.250000,fail,3,4,0.25,30,0.750000,pass");
  EXPECT_EQ(l[2], "1,40.000,5,6,0.75,40,1.000000,pass,,,,,,");
  write_video_report(dir + "/r.json", r);
  const std::string j = slurp(dir + "/r.json");
  EXPECT_NE(j.find("\"rows\": ["), std::string::npos);
  EXPECT_NE(j.find("{\"frame\": 1, \"timestamp_ms\": 40.000, \"matches\": [{\"x\": 5, \"y\": 6, \"score\": 0.75, "
                   "\"count\": 40, \"fraction\": 1, \"verdict\": \"pass\"}]}"),
            std::string::npos)
      << j;
  EXPECT_THROW(write_video_report(dir + "/r.txt", r), Error);
  r.op = VideoOp::filter;
  write_video_report(dir + "/f.csv", r);
  EXPECT_EQ(lines_of(slurp(dir + "/f.csv")), (std::vector<std::string>{"frame,timestamp_ms", "0,0.000", "1,40.000"}));
  fs::remove_all(dir);
}

// ---- video files and the command line -------------------------------------------------

class CliVideo : public CliFixture {
 protected:
  CliVideo() : CliFixture("video_") {}
  std::string q(const std::string& p) { return "'" + p + "'"; }
  std::string templ_npy() {
    const std::string p = dir + "/t.npy";
    if (!fs::exists(p)) write_npy(p, template_image().cview());
    return p;
  }
  static std::vector<std::string> csv_rows(const std::string& path) {
    std::vector<std::string> l = lines_of(slurp(path));
    if (!l.empty()) l.erase(l.begin());
    return l;
  }
  static void expect_rows_at_known_positions(const std::vector<std::string>& rows) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const int n = static_cast<int>(i);
      const std::string want = std::to_string(n) + "," + std::to_string(n * 40) + ".000," + std::to_string(pos_x(n)) +
                               "," + std::to_string(pos_y(n)) + ",";
      EXPECT_EQ(rows[i].rfind(want, 0), 0u) << rows[i];
    }
  }
};

TEST_F(CliVideo, NpyStackFilterAndMatch) {
  write_stack(dir + "/v.npy", copies(make_frames(6)));
  CliResult r = run_cli("video " + q(dir + "/v.npy") + " " + q(dir + "/f.npy") + " --op filter --kernel box:3");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("6 frames 160x120"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("frames/s end to end"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");  // no progress bar when stderr is not a terminal
  EXPECT_EQ(read_npy(dir + "/f.npy").shape, (std::vector<std::size_t>{6, kH, kW, 3}));
  r = run_cli("video " + q(dir + "/v.npy") + " --op match " + q(templ_npy()) +
              " --method ccoeff_normed --report " + q(dir + "/r.csv") + " --quiet");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const std::vector<std::string> rows = csv_rows(dir + "/r.csv");
  EXPECT_EQ(rows.size(), 6u);
  expect_rows_at_known_positions(rows);
  r = run_cli("video " + q(dir + "/v.npy") + " " + q(dir + "/h.npy") + " --op haar-view --levels 2 --max-frames 2 -q");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_npy(dir + "/h.npy").shape[0], 2u);
}

TEST_F(CliVideo, BadArgumentsWriteNothing) {
  write_stack(dir + "/v.npy", copies(make_frames(2)));
  const std::string v = q(dir + "/v.npy");
  { std::ofstream(dir + "/keep.npy") << "keep"; }
  const std::string keep = q(dir + "/keep.npy");
  expect_failure("video " + v + " " + keep + " --op filter", 2, "--kernel");
  expect_failure("video " + v + " " + keep + " --op match", 2, "--op match needs the template");
  expect_failure("video " + v + " --op filter --kernel box:3", 2, "give OUT");
  expect_failure("video " + v + " --op match " + q(templ_npy()), 2, "nothing to write");
  expect_failure("video " + v + " " + keep + " --op blur", 2, "unknown video operation 'blur'");
  expect_failure("video " + v + " " + keep + " --op filter --kernel box:3 --levels 2", 2, "--levels applies to --op haar-view");
  expect_failure("video " + v + " " + q(dir + "/o.webm") + " --op filter --kernel box:3", 2, "unsupported container '.webm'");
  expect_failure("video " + v + " " + q(dir + "/o.npy") + " --op filter --kernel box:3 --report " + q(dir + "/r.txt"), 2,
                 ".csv or .json");
  expect_failure("video " + v + " " + v + " --op filter --kernel box:3", 2, "refusing to overwrite an input");
  expect_failure("video " + q(dir + "/missing.npy") + " " + keep + " --op filter --kernel box:3", 1, "missing.npy");
  expect_failure("video " + v + " " + keep + " --op haar-view --levels 12", 2,
                 "--levels: 12 is outside 1.." + std::to_string(haar_max_levels(kW, kH)) + " for " +
                     std::to_string(kW) + "x" + std::to_string(kH) + " frames");
  // A template larger than the frames: refused before the first frame, the
  // existing OUT untouched.
  write_npy(dir + "/big.npy", random_image(kW + 1, 8, 3, PixelType::u8, 1).cview());
  expect_failure("video " + v + " " + keep + " --op match " + q(dir + "/big.npy"), 2, "larger than the frames");
  EXPECT_EQ(slurp(dir + "/keep.npy"), "keep");
}

// --levels on frames smaller than the default needs: left out, the default
// (3) is lowered to what the frames take; given, it is checked as `haar`
// checks it (cli/common.hpp's parse_haar_levels).
TEST_F(CliVideo, HaarViewLevelsFitTinyFramesByDefaultAndAreCheckedWhenGiven) {
  std::vector<Image> tiny;
  for (std::uint32_t seed : {3u, 4u}) tiny.push_back(random_image(4, 4, 3, PixelType::u8, seed));
  write_stack(dir + "/t.npy", tiny);
  ASSERT_EQ(haar_max_levels(4, 4), 2);
  CliResult r = run_cli("video " + q(dir + "/t.npy") + " " + q(dir + "/d.npy") + " --op haar-view -q");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_npy(dir + "/d.npy").shape[0], 2u);
  r = run_cli("video " + q(dir + "/t.npy") + " " + q(dir + "/m.npy") + " --op haar-view --levels max -q");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(dir + "/m.npy"), slurp(dir + "/d.npy"));  // both are 2 levels
  expect_failure("video " + q(dir + "/t.npy") + " " + q(dir + "/x.npy") + " --op haar-view --levels 3", 2,
                 "--levels: 3 is outside 1..2 for 4x4 frames");
  expect_failure("video " + q(dir + "/t.npy") + " " + q(dir + "/x.npy") + " --op haar-view --levels 0", 2,
                 "--levels: 0 is outside 1..2");
  expect_failure("video " + q(dir + "/t.npy") + " " + q(dir + "/x.npy") + " --op haar-view --levels two", 2,
                 "--levels: 'two' is not a level count");
}

// `video --op match` and `match` share their match options (cli/common.hpp's
// MatchOptions): each bad value is refused by both with the same message,
// before any frame is read or any output written.
TEST_F(CliVideo, MatchOptionsAreCheckedAsTheMatchCommandChecksThem) {
  write_stack(dir + "/v.npy", copies(make_frames(2)));
  const std::string v = q(dir + "/v.npy"), t = q(templ_npy());
  { std::ofstream(dir + "/keep.csv") << "keep"; }
  const std::string keep = " --report " + q(dir + "/keep.csv");
  const std::pair<const char*, const char*> cases[] = {
      {"--top 0", "--top: 0 matches requested; K must be 1 or more"},
      {"--min-distance 0", "--min-distance: 0 must be 1 or more"},
      {"--min-fraction 0.5", "--min-fraction: needs --hsv-range"},
      {"--hsv-range 0,0,0:10,255,255 --min-fraction 1.5", "--min-fraction: 1.5 is outside 0..1"},
      {"--hsv-range 0,0,0:10,255,255 --min-fraction nan", "--min-fraction: nan is outside 0..1"},
      {"--hsv-range 1,2", "--hsv-range: HSV range '1,2'"},
      {"--method foo", "--method: method 'foo' is not one of"},
      {"--strategy bar", "--strategy: strategy 'bar' is not one of"},
  };
  for (const auto& [option, message] : cases) {
    expect_failure("video " + v + " --op match " + t + keep + " " + option, 2, message);
    const CliResult video = run_cli("video " + v + " --op match " + t + keep + " " + option);
    const CliResult match = run_cli("match " + v + " " + t + " " + option);
    EXPECT_EQ(match.code, 2) << option;
    const std::string vp = "pixelkit video: ", mp = "pixelkit match: ";
    ASSERT_EQ(video.err.rfind(vp, 0), 0u) << video.err;
    ASSERT_EQ(match.err.rfind(mp, 0), 0u) << match.err;
    EXPECT_EQ(video.err.substr(vp.size()), match.err.substr(mp.size())) << option;
  }
  EXPECT_EQ(slurp(dir + "/keep.csv"), "keep");
}

TEST_F(CliVideo, TruncatedNpyStackKeepsTheFramesBefore) {
  write_stack(dir + "/v.npy", copies(make_frames(8)));
  fs::resize_file(dir + "/v.npy", fs::file_size(dir + "/v.npy") - static_cast<std::size_t>(kW) * kH * 3 * 3);
  const CliResult r = run_cli("video " + q(dir + "/v.npy") + " " + q(dir + "/o.npy") + " --op match " +
                              q(templ_npy()) + " --report " + q(dir + "/r.json") + " -q");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("5 frames processed"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(read_npy(dir + "/o.npy").shape[0], 5u);
  const std::string j = slurp(dir + "/r.json");
  EXPECT_NE(j.find("\"frames\": 5"), std::string::npos) << j;
  EXPECT_NE(j.find("\"stop\": \"input_error\""), std::string::npos) << j;
}

TEST_F(CliVideo, CtrlCFinishesTheFrameAndClosesTheOutput) {
  // ref on larger frames is slow enough to be interrupted half-way.
  std::vector<Image> frames;
  for (int i = 0; i < 40; ++i) frames.push_back(random_image(320, 240, 3, PixelType::u8, 300 + i));
  write_stack(dir + "/v.npy", frames);
  // --foreground: timeout signals the program once (otherwise it signals it
  // and then its whole process group: a second Ctrl-C, which kills).
  const std::string cmd = "timeout --foreground --preserve-status -s INT 1 '" + std::string(cli_path()) + "' video " + q(dir + "/v.npy") + " " +
                          q(dir + "/o.npy") + " --op filter --kernel gaussian:15 --backend ref --report " +
                          q(dir + "/r.csv") + " >" + dir + "/out.txt 2>" + dir + "/err.txt";
  const int status = std::system(cmd.c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const std::string err = slurp(dir + "/err.txt");
  if (code == 0) GTEST_SKIP() << "the run finished within 1 s; nothing to interrupt";
  EXPECT_EQ(code, 130) << err;
  EXPECT_NE(err.find("interrupted after"), std::string::npos) << err;
  const std::size_t n = read_npy(dir + "/o.npy").shape[0];
  EXPECT_GE(n, 1u);
  EXPECT_LT(n, 40u);
  EXPECT_NE(err.find("after " + std::to_string(n) + " frame"), std::string::npos) << err;
  EXPECT_EQ(csv_rows(dir + "/r.csv").size(), n);
  for (const auto& f : files_in(dir)) EXPECT_EQ(f.find(".tmp-"), std::string::npos) << f;
}

TEST_F(CliVideo, VideoFileMatchReportAndOutput) {
  PIXELKIT_REQUIRE_VIDEOIO();
#if PIXELKIT_TEST_VIDEOIO
  const int n = 24;
  write_video(dir + "/in.avi", make_frames(n));
  // Every frame's match, through the decoder, on the fast backends.
  for (const Backend b : fast_backends()) {
    SCOPED_TRACE(to_string(b));
    fs::remove(dir + "/r.csv");
    const CliResult r = run_cli("video " + q(dir + "/in.avi") + " " + q(dir + "/out.avi") + " --op match " +
                                q(templ_npy()) + " --method ccoeff_normed --report " + q(dir + "/r.csv") +
                                " --backend " + to_string(b));
    ASSERT_EQ(r.code, 0) << r.err;
    const std::vector<std::string> rows = csv_rows(dir + "/r.csv");
    EXPECT_EQ(rows.size(), static_cast<std::size_t>(n));
    expect_rows_at_known_positions(rows);
    const std::vector<Image> out = decode_video(dir + "/out.avi");
    ASSERT_EQ(out.size(), static_cast<std::size_t>(n));
    EXPECT_EQ(out[0].width(), kW);
    EXPECT_EQ(out[0].height(), kH);
  }
  // ref on the first frames only, through the library.
  auto src = open_frame_source(dir + "/in.avi");
  EXPECT_EQ(src->format().frame_count, n);
  EXPECT_EQ(src->format().fps, 25.0);
  MatchParams p;
  p.method = MatchMethod::sqdiff;
  std::vector<FrameRecord> recs;
  VideoRunOptions ro = run_on(Backend::ref);
  ro.max_frames = 2;
  ro.on_frame = [&](const FrameRecord& r) { recs.push_back(r); };
  VideoPipeline::match(template_image().cview(), p).run(*src, nullptr, ro);
  expect_known_positions(recs, 2, p.method);
#endif
}

TEST_F(CliVideo, VideoFileFilterIsExactThroughALosslessCodec) {
  PIXELKIT_REQUIRE_VIDEOIO();
#if PIXELKIT_TEST_VIDEOIO
  write_video(dir + "/in.avi", make_frames(6));
  const std::vector<Image> decoded = decode_video(dir + "/in.avi");
  ASSERT_EQ(decoded.size(), 6u);
  const Kernel k = parse_kernel("gaussian:5");
  CliResult r = run_cli("video " + q(dir + "/in.avi") + " " + q(dir + "/out.avi") +
                        " --op filter --kernel gaussian:5 --codec FFV1 -q");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_cli("video " + q(dir + "/in.avi") + " " + q(dir + "/out.npy") + " --op filter --kernel gaussian:5 -q");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<Image> out = decode_video(dir + "/out.avi");
  ASSERT_EQ(out.size(), 6u);
  NpyFrameSource stack(dir + "/out.npy");
  Image f(kW, kH, 3, PixelType::u8);
  for (std::size_t i = 0; i < 6; ++i) {
    Image want(kW, kH, 3, PixelType::u8);
    filter2d(decoded[i].cview(), want.view(), k);
    EXPECT_TRUE(same(out[i].cview(), want.cview())) << "FFV1 frame " << i;
    ASSERT_TRUE(stack.read(f.view()));
    EXPECT_TRUE(same(f.cview(), want.cview())) << "npy frame " << i;
  }
  // The other containers open and hold every frame.
  for (const char* name : {"o.mp4", "o.mkv", "o.mov"}) {
    r = run_cli("video " + q(dir + "/in.avi") + " " + q(dir + "/" + name) + " --op haar-view -q");
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    EXPECT_EQ(decode_video(dir + "/" + name).size(), 6u) << name;
  }
#endif
}

TEST_F(CliVideo, TruncatedVideoFileKeepsAPlayablePartialOutput) {
  PIXELKIT_REQUIRE_VIDEOIO();
#if PIXELKIT_TEST_VIDEOIO
  const int n = 30;
  write_video(dir + "/full.avi", make_frames(n));
  fs::copy_file(dir + "/full.avi", dir + "/cut.avi");
  fs::resize_file(dir + "/cut.avi", fs::file_size(dir + "/full.avi") / 2);
  const CliResult r = run_cli("video " + q(dir + "/cut.avi") + " " + q(dir + "/out.avi") + " --op match " +
                              q(templ_npy()) + " --method ccoeff_normed --report " + q(dir + "/r.csv") + " -q");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // FFmpeg's own complaints silenced
  EXPECT_NE(r.err.find("truncated or corrupt"), std::string::npos) << r.err;
  const std::size_t at = r.err.find(" frames processed");
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::size_t start = r.err.rfind(' ', at - 1) + 1;
  const int done = std::stoi(r.err.substr(start, at - start));
  EXPECT_GT(done, 0);
  EXPECT_LT(done, n);
  EXPECT_NE(r.err.find("of the " + std::to_string(n) + " frames"), std::string::npos) << r.err;
  // The partial output is a complete, playable file with those frames.
  const std::vector<Image> out = decode_video(dir + "/out.avi");
  EXPECT_EQ(out.size(), static_cast<std::size_t>(done));
  cv::VideoCapture cap(dir + "/out.avi", cv::CAP_FFMPEG);
  EXPECT_EQ(static_cast<int>(cap.get(cv::CAP_PROP_FRAME_COUNT)), done);
  std::vector<std::string> rows = csv_rows(dir + "/r.csv");
  EXPECT_EQ(rows.size(), static_cast<std::size_t>(done));
  // The frame the cut goes through may come out of the decoder half decoded
  // (MJPEG conceals the missing part with the previous picture), as a player
  // would show it; every frame before it is intact.
  rows.pop_back();
  expect_rows_at_known_positions(rows);
#endif
}

TEST_F(CliVideo, UnreadableAndUndecodableInputs) {
  PIXELKIT_REQUIRE_VIDEOIO();
  { std::ofstream(dir + "/junk.avi") << "this is not a video"; }
  expect_failure("video " + q(dir + "/junk.avi") + " " + q(dir + "/o.avi") + " --op filter --kernel box:3", 1,
                 "cannot decode");
  expect_failure("video " + q(dir + "/none.avi") + " " + q(dir + "/o.avi") + " --op filter --kernel box:3", 1,
                 "no such file");
  expect_failure("video " + q(dir) + " " + q(dir + "/o.avi") + " --op filter --kernel box:3", 1, "folder");
}

}  // namespace
}  // namespace pixelkit::test
