// Image and array files: .npy/.npz round trips and their parsers on bad
// data, OpenCV codecs, and atomic writes that never leave partial files.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "pixelkit/io.hpp"
#include "test_support.hpp"

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

TEST(ImageFiles, ReadPhotosAndRoundTripEveryFormat) {
  if (!have_image_codecs()) {
    std::string msg;
    EXPECT_EQ(status_of([] { read_image(data_path("camera.png")); }, &msg), Status::unsupported);
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

}  // namespace
}  // namespace pixelkit::test
