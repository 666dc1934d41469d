// Image and array files: .npy/.npz round trips and their parsers on bad
// data, OpenCV codecs, the libpng codec (against OpenCV's decoder where both
// are built), and atomic writes that never leave partial files; the JSON text
// of the match and video reports.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

#include "core/file.hpp"
#include "core/json_text.hpp"
#include "core/png_codec.hpp"
#include "pixelkit/io.hpp"
#include "test_support.hpp"

#if PIXELKIT_TEST_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace pixelkit::test {
namespace {

template <typename F>
Status status_of(F&& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.status();
  }
  return Status::internal;
}

TEST(Npy, ImageRoundTripAllShapes) {
  const std::string dir = scratch_dir("npy");
  for (int c : {1, 3, 4})
    for (PixelType t : {PixelType::u8, PixelType::f32}) {
      const Image a = random_image(17, 9, c, t, static_cast<std::uint32_t>(c));
      const std::string p = dir + "/a.npy";
      write_image(p, a.cview().sub(1, 1, 15, 7));
      const Image b = read_image(p);
      EXPECT_EQ(b.channels(), c);
      EXPECT_EQ(b.width(), 15);
      EXPECT_TRUE(agrees(b, a.cview().sub(1, 1, 15, 7), 0.0, 0.0));
      const NpyArray arr = read_npy(p);
      EXPECT_EQ(arr.shape.size(), c == 1 ? 2u : 3u);
      EXPECT_EQ(arr.shape[0], 7u);
    }
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"a.npy"});
}

TEST(Npy, HeaderIsWhatNumpyWrites) {
  const std::uint32_t v[6] = {1, 2, 3, 4, 5, 6};
  const auto bytes = serialize_npy(NpyType::u32, {2, 3}, v);
  const std::string header(reinterpret_cast<const char*>(bytes.data()) + 10, bytes[8] | (bytes[9] << 8));
  EXPECT_EQ(header.substr(0, 59), "{'descr': '<u4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ((10 + header.size()) % 64, 0u);
  EXPECT_EQ(header.back(), '\n');
  const NpyArray a = parse_npy(bytes.data(), bytes.size(), "mem");
  EXPECT_EQ(a.type, NpyType::u32);
  EXPECT_EQ(std::memcmp(a.bytes.data(), v, sizeof v), 0);
  const auto one = serialize_npy(NpyType::f64, {5}, std::vector<double>(5, 1.0).data());
  EXPECT_NE(std::string(one.begin(), one.end()).find("'shape': (5,)"), std::string::npos);
}

TEST(Npy, MalformedDataGivesIoErrors) {
  const float v[4] = {1, 2, 3, 4};
  auto good = serialize_npy(NpyType::f32, {2, 2}, v);
  std::string msg;
  EXPECT_EQ(status_of([&] { parse_npy(good.data(), good.size() - 1, "x"); }, &msg), Status::io);
  EXPECT_NE(msg.find("truncated"), std::string::npos);
  EXPECT_EQ(status_of([&] { parse_npy(good.data(), 5, "x"); }), Status::io);
  auto bad = good;
  bad[0] = 'X';
  EXPECT_EQ(status_of([&] { parse_npy(bad.data(), bad.size(), "x"); }, &msg), Status::io);
  EXPECT_NE(msg.find("magic"), std::string::npos);
  std::string h(reinterpret_cast<char*>(good.data()), good.size());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = h;
    s.replace(s.find(from), from.size(), to);
    return std::vector<unsigned char>(s.begin(), s.end());
  };
  auto big_endian = with("'<f4'", "'>f4'");
  EXPECT_EQ(status_of([&] { parse_npy(big_endian.data(), big_endian.size(), "x"); }), Status::unsupported);
  auto fortran = with("False", "True ");
  EXPECT_EQ(status_of([&] { parse_npy(fortran.data(), fortran.size(), "x"); }), Status::unsupported);
  auto huge = with("(2, 2)", "(99999999999999999999, 2)");
  EXPECT_EQ(status_of([&] { parse_npy(huge.data(), huge.size(), "x"); }), Status::io);
  auto overflow = with("(2, 2)", "(4294967296, 4294967296)");
  EXPECT_EQ(status_of([&] { parse_npy(overflow.data(), overflow.size(), "x"); }), Status::io);
}

TEST(Npz, RoundTripAndCorruption) {
  const std::string dir = scratch_dir("npz");
  const std::string p = dir + "/c.npz";
  NpzMember a{"coeffs", {NpyType::f32, {2, 3}, {}}};
  a.array.bytes.resize(24);
  for (int i = 0; i < 24; ++i) a.array.bytes[i] = static_cast<unsigned char>(i * 7);
  NpzMember b{"levels", {NpyType::i64, {}, std::vector<unsigned char>(8, 0)}};
  b.array.bytes[0] = 3;
  write_npz(p, {a, b});
  const auto m = read_npz(p);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].name, "coeffs");
  EXPECT_EQ(m[0].array.bytes, a.array.bytes);
  EXPECT_EQ(m[1].name, "levels");
  EXPECT_EQ(m[1].array.bytes[0], 3);
  auto bytes = read_file(p);
  const std::string cut = dir + "/cut.npz";
  write_file_atomic(cut, bytes.data(), bytes.size() / 2);
  EXPECT_EQ(status_of([&] { read_npz(cut); }), Status::io);
  write_file_atomic(cut, bytes.data(), bytes.size() - 5);  // cut inside the trailing records
  EXPECT_EQ(status_of([&] { read_npz(cut); }), Status::io);
  bytes[100] ^= 0xff;  // inside the first member's data: checksum mismatch
  write_file_atomic(cut, bytes.data(), bytes.size());
  std::string msg;
  EXPECT_EQ(status_of([&] { read_npz(cut); }, &msg), Status::io);
  EXPECT_NE(msg.find("cut.npz"), std::string::npos);
}

TEST(Files, AtomicWriteLeavesNoPartialFileAndKeepsTheOld) {
  const std::string dir = scratch_dir("atomic");
  const std::string p = dir + "/keep.bin";
  write_file_atomic(p, "old", 3);
  std::string msg;
  EXPECT_EQ(status_of([&] { write_file_atomic(dir + "/missing/x.bin", "x", 1); }, &msg), Status::io);
  EXPECT_NE(msg.find("does not exist"), std::string::npos);
  // A failing write (the destination is a folder) leaves the folder alone and no temporary.
  std::filesystem::create_directory(dir + "/sub");
  EXPECT_EQ(status_of([&] { write_file_atomic(dir + "/sub", "x", 1); }), Status::io);
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"keep.bin", "sub"}));
  const auto back = read_file(p);
  EXPECT_EQ(std::string(back.begin(), back.end()), "old");
  EXPECT_EQ(status_of([&] { read_file(dir + "/nope"); }, &msg), Status::io);
  EXPECT_NE(msg.find("nope"), std::string::npos);
}

// The temporaries' names: ".NAME.tmp-XXXXXX.EXT" for what holds an output,
// ".NAME.probe-XXXXXX.EXT" for the CLI's start-up probe of a folder (the kill
// tests of test_no_data_loss wait for the first and must not stop at the
// second), NAME cut to 100 bytes, the extension kept.
TEST(Files, TemporaryNamesTellAnOutputsTemporaryFromAFolderProbe) {
  const std::string dir = scratch_dir("temp_names");
  const auto made = [&](const std::string& name, const char* kind) {
    std::string tmp;
    const int fd = kind ? pixelkit::detail::make_temp_beside(dir + "/" + name, tmp, kind)
                        : pixelkit::detail::make_temp_beside(dir + "/" + name, tmp);
    ::close(fd);
    EXPECT_TRUE(std::filesystem::is_regular_file(tmp)) << tmp;
    EXPECT_EQ(std::filesystem::file_size(tmp), 0u) << tmp;
    std::filesystem::remove(tmp);
    return std::filesystem::path(tmp).filename().string();
  };
  const auto shape = [](const std::string& n, const std::string& head, const std::string& ext) {
    // head + 6 random characters + ext
    return n.size() == head.size() + 6 + ext.size() && n.rfind(head, 0) == 0 &&
           n.compare(n.size() - ext.size(), ext.size(), ext) == 0;
  };
  EXPECT_TRUE(shape(made("out.npy", nullptr), ".out.npy.tmp-", ".npy"));
  EXPECT_TRUE(shape(made("out.npy", "tmp"), ".out.npy.tmp-", ".npy"));
  EXPECT_TRUE(shape(made("out.npy", "probe"), ".out.npy.probe-", ".npy"));
  const std::string long_name = std::string(251, 'x') + ".png";
  EXPECT_TRUE(shape(made(long_name, nullptr), "." + long_name.substr(0, 100) + ".tmp-", ".png"));
  EXPECT_TRUE(shape(made(long_name, "probe"), "." + long_name.substr(0, 100) + ".probe-", ".png"));
  EXPECT_TRUE(files_in(dir).empty());
}

TEST(ImageFiles, ReadPhotosAndRoundTripEveryFormat) {
  if (!have_image_codecs()) {
    std::string msg;
    const Image a = random_image(4, 4, 1, PixelType::u8, 1);
    EXPECT_EQ(status_of([&] { write_image(scratch_dir("nocodecs") + "/a.jpg", a); }, &msg), Status::unsupported);
    EXPECT_NE(msg.find(have_png() ? "use .png or .npy" : "use .npy"), std::string::npos) << msg;
    if (!have_png()) EXPECT_EQ(status_of([] { read_image(data_path("camera.png")); }, &msg), Status::unsupported);
    GTEST_SKIP() << "no image codecs (OpenCV) in this build: " << msg;
  }
  const Image cam = read_image(data_path("camera.png"));
  EXPECT_EQ(cam.channels(), 1);
  EXPECT_EQ(cam.width(), 512);
  const Image cat = read_image(data_path("chelsea.png"));
  EXPECT_EQ(cat.channels(), 3);
  EXPECT_EQ(cat.width(), 451);
  EXPECT_EQ(cat.height(), 300);
  const std::string dir = scratch_dir("formats");
  for (const char* ext : {".png", ".bmp", ".tif", ".ppm", ".webp", ".jpg"}) {
    const std::string p = dir + "/cat" + ext;
    write_image(p, cat);
    const Image back = read_image(p);
    EXPECT_EQ(back.width(), 451) << ext;
    const bool lossy = std::string(ext) == ".jpg" || std::string(ext) == ".webp";
    if (!lossy) {
      EXPECT_TRUE(agrees(back, cat, 0.0)) << ext;  // lossless, and RGB order preserved
    }
  }
  write_image(dir + "/cam.pgm", cam);
  EXPECT_TRUE(agrees(read_image(dir + "/cam.pgm"), cam, 0.0));
}

TEST(ImageFiles, BadFilesAndExtensions) {
  const std::string dir = scratch_dir("badfiles");
  std::string msg;
  EXPECT_EQ(status_of([&] { read_image(dir + "/none.png"); }, &msg), Status::io);
  EXPECT_NE(msg.find("none.png"), std::string::npos);
  {
    std::ofstream f(dir + "/corrupt.png", std::ios::binary);
    f << "\x89PNG\r\n\x1a\n this is not really a png";
  }
  const Status s = status_of([&] { read_image(dir + "/corrupt.png"); }, &msg);
  EXPECT_TRUE(s == Status::io || s == Status::unsupported) << msg;
  EXPECT_NE(msg.find("corrupt.png"), std::string::npos);
  const Image a = random_image(4, 4, 1, PixelType::u8, 1);
  EXPECT_EQ(status_of([&] { write_image(dir + "/x.gif", a); }, &msg), Status::invalid_argument);
  EXPECT_NE(msg.find("unsupported extension '.gif'"), std::string::npos);
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"corrupt.png"});
}

// ---- the libpng codec (core/png_codec.hpp) -------------------------------------

std::vector<unsigned char> bytes_of(const std::string& path) { return read_file(path); }

#if PIXELKIT_TEST_HAVE_OPENCV
/// OpenCV's reading of PNG bytes (IMREAD_UNCHANGED, RGB order, 16-bit as
/// f32), as read_image reads other codec files in an OpenCV build.
Image opencv_decode(const std::vector<unsigned char>& b) {
  cv::Mat m = cv::imdecode(cv::Mat(1, static_cast<int>(b.size()), CV_8U, const_cast<unsigned char*>(b.data())),
                           cv::IMREAD_UNCHANGED);
  EXPECT_FALSE(m.empty());
  if (m.depth() != CV_8U) m.convertTo(m, CV_32F);
  if (m.channels() == 3) cv::cvtColor(m, m, cv::COLOR_BGR2RGB);
  if (m.channels() == 4) cv::cvtColor(m, m, cv::COLOR_BGRA2RGBA);
  Image img(m.cols, m.rows, m.channels(), m.depth() == CV_8U ? PixelType::u8 : PixelType::f32);
  for (int y = 0; y < m.rows; ++y) std::memcpy(img.row<unsigned char>(y), m.ptr(y), img.view().row_bytes());
  return img;
}
#endif

TEST(PngCodec, ReadsThePhotosAsOpenCvDoes) {
  if (!detail::png_codec_available()) GTEST_SKIP() << "libpng was not found at build time";
  const struct { const char* name; int w, h, c; } photos[] = {
      {"astronaut.png", 512, 512, 3}, {"camera.png", 512, 512, 1}, {"chelsea.png", 451, 300, 3}, {"coffee.png", 600, 400, 3}};
  for (const auto& p : photos) {
    const auto b = bytes_of(data_path(p.name));
    const Image img = detail::decode_png(b.data(), b.size(), p.name);
    EXPECT_EQ(img.width(), p.w) << p.name;
    EXPECT_EQ(img.height(), p.h) << p.name;
    EXPECT_EQ(img.channels(), p.c) << p.name;
    EXPECT_EQ(img.type(), PixelType::u8) << p.name;
    // read_image takes this codec for PNG (OpenCV's decoder before session 42): the same pixels.
    EXPECT_TRUE(agrees(read_image(data_path(p.name)), img, 0.0)) << p.name;
#if PIXELKIT_TEST_HAVE_OPENCV
    EXPECT_TRUE(agrees(opencv_decode(b), img, 0.0)) << p.name;
#endif
  }
}

TEST(PngCodec, RoundTripsEveryChannelCountThroughSubViews) {
  if (!detail::png_codec_available()) GTEST_SKIP() << "libpng was not found at build time";
  const std::string dir = scratch_dir("pngcodec");
  for (int c : {1, 3, 4})
    for (auto [w, h] : {std::pair{1, 1}, std::pair{1, 17}, std::pair{33, 7}, std::pair{1023, 5}}) {
      const Image parent = random_image(w + 3, h + 2, c, PixelType::u8, static_cast<std::uint32_t>(c * 1000 + w));
      const ConstImageView v = parent.cview().sub(2, 1, w, h);  // pitch larger than the row
      const auto png = detail::encode_png(v, "x");
      const Image back = detail::decode_png(png.data(), png.size(), "x");
      EXPECT_EQ(back.channels(), c);
      EXPECT_TRUE(agrees(back, v, 0.0)) << c << " " << w << "x" << h;
#if PIXELKIT_TEST_HAVE_OPENCV
      EXPECT_TRUE(agrees(opencv_decode(png), v, 0.0)) << "OpenCV reads ours: " << c << " " << w << "x" << h;
#endif
      // write_image's .png (whichever codec the build uses) reads back the same.
      write_image(dir + "/a.png", v);
      EXPECT_TRUE(agrees(read_image(dir + "/a.png"), v, 0.0)) << c << " " << w << "x" << h;
    }
}

TEST(JsonText, StringsEscapeQuotesBackslashesAndControlCharacters) {
  using detail::json_string;
  EXPECT_EQ(json_string(""), "\"\"");
  EXPECT_EQ(json_string("data/a b.png"), "\"data/a b.png\"");
  EXPECT_EQ(json_string("a \"quoted\" name"), "\"a \\\"quoted\\\" name\"");
  EXPECT_EQ(json_string("C:\\dir\\f.npy"), "\"C:\\\\dir\\\\f.npy\"");
  EXPECT_EQ(json_string("1\n2\t3\r"), "\"1\\n2\\t3\\r\"");
  EXPECT_EQ(json_string(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(json_string(std::string("\0", 1)), "\"\\u0000\"");
  EXPECT_EQ(json_string("caf\xc3\xa9 \x7f"), "\"caf\xc3\xa9 \x7f\"");  // UTF-8 and DEL as they are
}

TEST(JsonText, NumbersTakeTheFormatAndNonFiniteValuesAreNull) {
  using detail::json_number;
  EXPECT_EQ(json_number(0.5), "0.5");
  EXPECT_EQ(json_number(1.0 / 3.0), "0.333333333");
  EXPECT_EQ(json_number(-1234.5678, "%.3f"), "-1234.568");
  EXPECT_EQ(json_number(2.5e-12), "2.5e-12");
  EXPECT_EQ(json_number(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(json_number(-std::numeric_limits<double>::infinity(), "%.3f"), "null");
  EXPECT_EQ(json_number(std::numeric_limits<double>::quiet_NaN()), "null");
}

TEST(PngCodec, FloatImagesAreRoundedAndSaturatedAsOpenCvConverts) {
  if (!detail::png_codec_available()) GTEST_SKIP() << "libpng was not found at build time";
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> in = {-3.2f, 0.5f, 1.5f, 2.5f, 254.49f, 254.6f, 300.0f, nan, 17.0f};
  const std::vector<unsigned char> want = {0, 0, 2, 2, 254, 255, 255, 0, 17};  // ties to even, NaN to 0
  Image f(static_cast<int>(in.size()), 1, 1, PixelType::f32);
  std::memcpy(f.row<float>(0), in.data(), in.size() * sizeof(float));
  const auto png = detail::encode_png(f.cview(), "x");
  const Image back = detail::decode_png(png.data(), png.size(), "x");
  ASSERT_EQ(back.type(), PixelType::u8);
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(back.row<unsigned char>(0)[i], want[i]) << in[i];
#if PIXELKIT_TEST_HAVE_OPENCV
  cv::Mat m(1, static_cast<int>(in.size()), CV_32F, const_cast<float*>(in.data())), u;
  m.convertTo(u, CV_8U);
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(u.at<unsigned char>(0, static_cast<int>(i)), want[i]) << in[i];
#endif
  std::string msg;
  EXPECT_EQ(status_of([] { detail::encode_png(random_image(3, 3, 2, PixelType::u8, 1).cview(), "two.png"); }, &msg),
            Status::invalid_argument);
  EXPECT_NE(msg.find("two.png"), std::string::npos) << msg;
}

#if PIXELKIT_TEST_HAVE_OPENCV
TEST(PngCodec, ReadsOpenCvsSixteenBitAndAlphaFilesAsOpenCvDoes) {
  if (!detail::png_codec_available()) GTEST_SKIP() << "libpng was not found at build time";
  cv::RNG rng(7);
  for (int type : {CV_16UC1, CV_16UC3, CV_16UC4, CV_8UC4}) {
    cv::Mat m(13, 29, type);
    rng.fill(m, cv::RNG::UNIFORM, 0, CV_MAT_DEPTH(type) == CV_16U ? 65536 : 256);
    std::vector<unsigned char> png;
    ASSERT_TRUE(cv::imencode(".png", m, png));
    const Image ours = detail::decode_png(png.data(), png.size(), "x");
    EXPECT_EQ(ours.type(), CV_MAT_DEPTH(type) == CV_16U ? PixelType::f32 : PixelType::u8);
    EXPECT_TRUE(agrees(ours, opencv_decode(png), 0.0, 0.0)) << type;
  }
}
#endif

// A PNG file built by hand: IHDR, `extra` chunks (PLTE, tRNS), one IDAT of
// stored (uncompressed) deflate blocks, IEND. `raw` is the filtered rows
// (filter byte 0 then the packed samples, 16-bit big-endian), as the format
// stores them, so the expected pixels are known without any codec.
struct PngChunk {
  const char* type;
  std::vector<unsigned char> data;
};
std::vector<unsigned char> hand_made_png(int w, int h, int depth, int color_type, bool interlaced,
                                         const std::vector<unsigned char>& raw, const std::vector<PngChunk>& extra) {
  std::vector<unsigned char> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  const auto u32 = [](std::vector<unsigned char>& v, std::uint32_t x) {
    for (int i = 0; i < 4; ++i) v.push_back(static_cast<unsigned char>(x >> (24 - 8 * i)));
  };
  const auto chunk = [&](const char* type, const std::vector<unsigned char>& data) {
    u32(out, static_cast<std::uint32_t>(data.size()));
    const std::size_t start = out.size();
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), data.begin(), data.end());
    std::uint32_t crc = 0xFFFFFFFFu;
    for (std::size_t i = start; i < out.size(); ++i) {
      crc ^= out[i];
      for (int k = 0; k < 8; ++k) crc = (crc & 1) ? 0xEDB88320u ^ (crc >> 1) : crc >> 1;
    }
    u32(out, crc ^ 0xFFFFFFFFu);
  };
  std::vector<unsigned char> ihdr;
  u32(ihdr, static_cast<std::uint32_t>(w));
  u32(ihdr, static_cast<std::uint32_t>(h));
  ihdr.insert(ihdr.end(), {static_cast<unsigned char>(depth), static_cast<unsigned char>(color_type), 0, 0,
                           static_cast<unsigned char>(interlaced ? 1 : 0)});
  chunk("IHDR", ihdr);
  for (const auto& c : extra) chunk(c.type, c.data);
  std::vector<unsigned char> z = {0x78, 0x01, 0x01};  // zlib header; one final stored block (raw < 64 KiB)
  const auto n = static_cast<std::uint16_t>(raw.size());
  z.insert(z.end(), {static_cast<unsigned char>(n & 0xff), static_cast<unsigned char>(n >> 8),
                     static_cast<unsigned char>(~n & 0xff), static_cast<unsigned char>((~n >> 8) & 0xff)});
  z.insert(z.end(), raw.begin(), raw.end());
  std::uint32_t a = 1, b = 0;  // Adler-32
  for (unsigned char c : raw) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  u32(z, (b << 16) | a);
  chunk("IDAT", z);
  chunk("IEND", {});
  return out;
}

TEST(PngCodec, ExpandsLowDepthsPalettesTransparencyAndGreyAlphaAsOpenCvDoes) {
  if (!detail::png_codec_available()) GTEST_SKIP() << "libpng was not found at build time";
  struct Case {
    const char* what;
    std::vector<unsigned char> png;
    int channels;
    std::vector<float> want;  // row-major samples
  };
  const std::vector<Case> cases = {
      // 5x2 grey, 1 bit: 10110 / 01001 -> 255 or 0.
      {"grey 1-bit", hand_made_png(5, 2, 1, 0, false, {0, 0xB0, 0, 0x48}, {}), 1,
       {255, 0, 255, 255, 0, 0, 255, 0, 0, 255}},
      // 3x1 grey, 4 bits: 0, 7, 15 -> times 17.
      {"grey 4-bit", hand_made_png(3, 1, 4, 0, false, {0, 0x07, 0xF0}, {}), 1, {0, 119, 255}},
      // 3x1 palette, 2 bits, entries 0..2, no tRNS -> RGB.
      {"palette", hand_made_png(3, 1, 2, 3, false, {0, 0x18}, {{"PLTE", {10, 20, 30, 40, 50, 60, 70, 80, 90}}}), 3,
       {10, 20, 30, 40, 50, 60, 70, 80, 90}},
      // The same with alphas 0 and 128 for entries 0 and 1 -> RGBA, entry 2 opaque.
      {"palette + tRNS",
       hand_made_png(3, 1, 2, 3, false, {0, 0x18}, {{"PLTE", {10, 20, 30, 40, 50, 60, 70, 80, 90}}, {"tRNS", {0, 128}}}),
       4, {10, 20, 30, 0, 40, 50, 60, 128, 70, 80, 90, 255}},
      // 2x1 grey + alpha -> RGBA.
      {"grey + alpha", hand_made_png(2, 1, 8, 4, false, {0, 9, 200, 250, 7}, {}), 4, {9, 9, 9, 200, 250, 250, 250, 7}},
      // 2x1 RGB, tRNS marks (1, 2, 3) transparent -> RGBA.
      {"RGB + tRNS", hand_made_png(2, 1, 8, 2, false, {0, 1, 2, 3, 4, 5, 6}, {{"tRNS", {0, 1, 0, 2, 0, 3}}}), 4,
       {1, 2, 3, 0, 4, 5, 6, 255}},
      // 2x1 grey with tRNS stays grey (OpenCV drops the transparency of grey files).
      {"grey + tRNS", hand_made_png(2, 1, 8, 0, false, {0, 5, 6}, {{"tRNS", {0, 5}}}), 1, {5, 6}},
      // 2x1 grey, 16 bits -> f32 0..65535.
      {"grey 16-bit", hand_made_png(2, 1, 16, 0, false, {0, 0x12, 0x34, 0xFF, 0xFE}, {}), 1, {0x1234, 0xFFFE}},
      // 1x1 RGB, Adam7 interlaced (one pixel: pass 1 alone).
      {"interlaced", hand_made_png(1, 1, 8, 2, true, {0, 7, 8, 9}, {}), 3, {7, 8, 9}},
  };
  for (const Case& c : cases) {
    const Image img = detail::decode_png(c.png.data(), c.png.size(), c.what);
    ASSERT_EQ(img.channels(), c.channels) << c.what;
    const bool wide = std::string(c.what).find("16-bit") != std::string::npos;
    ASSERT_EQ(img.type(), wide ? PixelType::f32 : PixelType::u8) << c.what;
    const int row = img.width() * c.channels;
    for (int y = 0; y < img.height(); ++y)
      for (int i = 0; i < row; ++i) {
        const float got = wide ? img.row<float>(y)[i] : img.row<unsigned char>(y)[i];
        EXPECT_EQ(got, c.want[static_cast<std::size_t>(y * row + i)]) << c.what << " sample " << y * row + i;
      }
#if PIXELKIT_TEST_HAVE_OPENCV
    EXPECT_TRUE(agrees(img, opencv_decode(c.png), 0.0, 0.0)) << c.what;
#endif
  }
}

// Adam7 fills each row over several passes, and 8-bit images are decoded
// straight into the image's rows, whose pitch exceeds the row's bytes at odd
// widths: an interlaced image of several rows, built by hand, pass by pass.
TEST(PngCodec, InterlacedImagesOfSeveralRowsLandInPitchedRows) {
  if (!detail::png_codec_available()) GTEST_SKIP() << "libpng was not found at build time";
  const int w = 13, h = 11, c = 3;
  std::vector<unsigned char> px(static_cast<std::size_t>(w) * h * c);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<unsigned char>(i * 37 + 11);
  // Adam7: pass p takes the pixels (x0 + k dx, y0 + j dy); each of its rows
  // is a filter byte (0) and those pixels.
  const int pass[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  std::vector<unsigned char> raw;
  for (const auto& p : pass)
    for (int y = p[1]; y < h; y += p[3]) {
      if (p[0] >= w) break;  // an empty pass has no rows
      raw.push_back(0);
      for (int x = p[0]; x < w; x += p[2])
        for (int k = 0; k < c; ++k) raw.push_back(px[(static_cast<std::size_t>(y) * w + x) * c + k]);
    }
  const std::vector<unsigned char> png = hand_made_png(w, h, 8, 2, true, raw, {});
  const Image img = detail::decode_png(png.data(), png.size(), "interlaced 13x11");
  ASSERT_EQ(img.width(), w);
  ASSERT_EQ(img.height(), h);
  ASSERT_EQ(img.channels(), c);
  ASSERT_EQ(img.type(), PixelType::u8);
  EXPECT_GT(img.pitch(), static_cast<std::ptrdiff_t>(w * c)) << "the rows should be padded for this test to mean much";
  for (int y = 0; y < h; ++y)
    ASSERT_EQ(0, std::memcmp(img.row<unsigned char>(y), px.data() + static_cast<std::size_t>(y) * w * c, w * c)) << "row " << y;
#if PIXELKIT_TEST_HAVE_OPENCV
  EXPECT_TRUE(agrees(img, opencv_decode(png), 0.0, 0.0));
#endif
}

TEST(PngCodec, CorruptDataIsAnIoErrorNamingTheSource) {
  if (!detail::png_codec_available()) GTEST_SKIP() << "libpng was not found at build time";
  const auto good = detail::encode_png(random_image(40, 30, 3, PixelType::u8, 5).cview(), "x");
  std::string msg;
  // Truncated anywhere, and damaged bytes (libpng's own checksums; read_image checks the chunk list first).
  for (std::size_t n : {std::size_t{0}, std::size_t{8}, std::size_t{20}, good.size() / 2, good.size() - 13}) {
    EXPECT_EQ(status_of([&] { detail::decode_png(good.data(), n, "cut.png"); }, &msg), Status::io) << n;
    EXPECT_NE(msg.find("cut.png"), std::string::npos) << msg;
  }
  // A header declaring 100000 x 100000 pixels over a few hundred bytes of data: refused before allocating.
  auto huge = good;
  const auto be32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) huge[at + i] = static_cast<unsigned char>(v >> (24 - 8 * i));
  };
  be32(16, 100000);  // IHDR's width and height, after the signature, length and type
  be32(20, 100000);
  std::uint32_t crc = 0xFFFFFFFFu;  // IHDR's CRC over its type and data
  for (std::size_t i = 12; i < 29; ++i) {
    crc ^= huge[i];
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? 0xEDB88320u ^ (crc >> 1) : crc >> 1;
  }
  be32(29, crc ^ 0xFFFFFFFFu);
  EXPECT_EQ(status_of([&] { detail::decode_png(huge.data(), huge.size(), "huge.png"); }, &msg), Status::io);
  EXPECT_NE(msg.find("declares 100000x100000 pixels"), std::string::npos) << msg;
  auto bad = good;
  bad[bad.size() / 2] ^= 0x5a;
  EXPECT_EQ(status_of([&] { detail::decode_png(bad.data(), bad.size(), "bad.png"); }, &msg), Status::io);
  EXPECT_NE(msg.find("bad.png is a corrupt PNG file"), std::string::npos) << msg;
}

}  // namespace
}  // namespace pixelkit::test
