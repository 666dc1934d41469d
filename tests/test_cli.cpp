// The command-line program: `pixelkit filter` on every SPEC, MODE and
// backend, and every bad input failing with one clear line, the right exit
// code and no output file (an existing one left untouched).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/png_codec.hpp"
#include "pixelkit/filter.hpp"
#include "pixelkit/io.hpp"
#include "test_support.hpp"

namespace pixelkit::test {
namespace {

class CliFilter : public CliFixture {
 protected:
  CliFilter() : CliFixture("") {}
};

TEST_F(CliFilter, EverySpecAndModeOnEveryBackendMatchesTheLibrary) {
  const std::string k_file = dir + "/k.txt";
  {
    std::ofstream f(k_file);
    f << "1 2 1\n2 4 2\n1 2 1\n/16\n";
  }
  const std::vector<std::string> specs = {"box:5", "gaussian:7", "gaussian:5:2.0", "sharpen", "edge", "laplacian",
                                          "emboss", "unsharp:5", "unsharp:3:0.5", "'1,2,1;2,4,2;1,2,1/16'", "'1,0,-1'",
                                          "@" + k_file};
  const std::vector<std::string> modes = {"constant", "constant:9", "replicate", "reflect", "reflect101", "wrap"};
  const Image src = read_image(input);
  std::vector<std::string> backends = {"ref", "cpu", "auto"};
  if (cuda_available()) backends.push_back("cuda");
  for (const auto& backend : backends)
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const std::string& mode = modes[i % modes.size()];
      const std::string out = dir + "/out_" + backend + std::to_string(i) + ".npy";
      const CliResult r = run_cli("filter " + input + " " + out + " --kernel " + specs[i] + " --border " + mode +
                                  " --backend " + backend);
      ASSERT_EQ(r.code, 0) << specs[i] << " " << r.err;
      std::string spec = specs[i];
      if (spec.front() == '\'') spec = spec.substr(1, spec.size() - 2);
      Image want(src.width(), src.height(), 3, PixelType::u8);
      Options o;
      o.backend = Backend::ref;
      filter2d(src, want.view(), parse_kernel(spec), parse_border(mode), o);
      EXPECT_TRUE(agrees(read_image(out), want)) << backend << " " << spec << " " << mode;
    }
}

TEST_F(CliFilter, VerboseSaysWhichBackendAndPathRan) {
  const CliResult r = run_cli("filter " + input + " " + dir + "/o.npy --kernel gaussian:5 --backend cpu --verbose");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("cpu"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ms"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gaussian:5"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("pixelkit: cuda "), std::string::npos) << "a cpu run made a CUDA context: " << r.err;
}

TEST_F(CliFilter, VerboseOnCudaTimesTheContextApartFromTheRead) {
  if (!cuda_available()) GTEST_SKIP() << "no usable CUDA device";
  const CliResult r = run_cli("filter " + input + " " + dir + "/o.npy --kernel gaussian:5 --backend cuda --verbose");
  ASSERT_EQ(r.code, 0) << r.err;
  // The context first, on a line of its own, then read, filter and write.
  const auto at = [&](const char* step) { return r.err.find(std::string("pixelkit: ") + step); };
  ASSERT_NE(at("cuda "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("context created on " + cuda_device_name()), std::string::npos) << r.err;
  ASSERT_NE(at("read "), std::string::npos) << r.err;
  ASSERT_NE(at("filter "), std::string::npos) << r.err;
  EXPECT_LT(at("cuda "), at("read ")) << r.err;
  EXPECT_LT(at("read "), at("filter ")) << r.err;
}

TEST_F(CliFilter, BadKernelsAndBorders) {
  const std::string out = dir + "/o.npy";
  expect_failure("filter " + input + " " + out + " --kernel blur", 2, "--kernel: kernel 'blur': unknown kernel");
  expect_failure("filter " + input + " " + out + " --kernel box:4", 2, "must be odd");
  expect_failure("filter " + input + " " + out + " --kernel box:0", 2, "must be odd");
  expect_failure("filter " + input + " " + out + " --kernel box:33", 2, "between 1 and 31");
  expect_failure("filter " + input + " " + out + " --kernel '1,2;3,4,5'", 2, "row 2 has 3 values but row 1 has 2");
  expect_failure("filter " + input + " " + out + " --kernel '1,2,1/0'", 2, "divisor is 0");
  expect_failure("filter " + input + " " + out + " --kernel '1,x,1'", 2, "'x' is not a number");
  expect_failure("filter " + input + " " + out + " --kernel @" + dir + "/nokernel.txt", 1, "nokernel.txt");
  {
    std::ofstream f(dir + "/bad.txt");
    f << "1 2 1\n1 2\n";
  }
  expect_failure("filter " + input + " " + out + " --kernel @" + dir + "/bad.txt", 2, "row 2 has 2 values");
  expect_failure("filter " + input + " " + out + " --kernel box:3 --border mirrorz", 2,
                 "--border: border 'mirrorz': unknown border mode");
  expect_failure("filter " + input + " " + out + " --kernel box:3 --backend gpu", 2, "--backend: backend 'gpu'");
  expect_failure("filter " + input + " " + out, 2, "--kernel");
  if (!built_with_cuda())
    expect_failure("filter " + input + " " + out + " --kernel box:3 --backend cuda", 1, "no CUDA backend");
}

TEST_F(CliFilter, BadFilesAndPaths) {
  expect_failure("filter " + dir + "/missing.png " + dir + "/o.npy --kernel box:3", 1, "missing.png");
  {
    std::ofstream f(dir + "/corrupt.png", std::ios::binary);
    f << "\x89PNG\r\n\x1a\nnot a png at all";
  }
  expect_failure("filter " + dir + "/corrupt.png " + dir + "/o.npy --kernel box:3", 1, "corrupt.png");
  {
    std::ofstream f(dir + "/corrupt.npy", std::ios::binary);
    f << "\x93NUMPY\x01";
  }
  expect_failure("filter " + dir + "/corrupt.npy " + dir + "/o.npy --kernel box:3", 1, "corrupt.npy");
  expect_failure("filter " + input + " " + dir + "/nofolder/o.npy --kernel box:3", 1, "does not exist");
  expect_failure("filter " + input + " " + dir + "/o.xyz --kernel box:3", 2, "unsupported extension '.xyz'");
  expect_failure("filter " + input + " " + input + " --kernel box:3", 2, "refusing to overwrite an input");
}

// libpng warns about many photos in the wild ("iCCP: known incorrect sRGB
// profile", as data/astronaut.png and chelsea.png have); pixelkit reads PNG
// through its own libpng codec, which keeps such warnings off stderr.
TEST_F(CliFilter, PhotosWithLibpngWarningsReadQuietly) {
  if (!have_png()) GTEST_SKIP() << "no PNG reader in this build";
  if (!detail::png_codec_available()) GTEST_SKIP() << "PNG through OpenCV's libpng, which prints its warnings";
  for (const char* name : {"astronaut.png", "chelsea.png"}) {
    const CliResult r = run_cli("filter " + std::string(PIXELKIT_DATA_DIR) + "/" + name + " " + dir +
                                "/o.npy --kernel box:3 --backend cpu");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "") << name;
  }
}

TEST_F(CliFilter, AFailureLeavesAnExistingOutputUntouched) {
  const std::string out = dir + "/existing.npy";
  write_image(out, random_image(5, 5, 1, PixelType::u8, 9));
  const auto before = read_file(out);
  expect_failure("filter " + dir + "/missing.npy " + out + " --kernel box:3", 1, "missing.npy");
  expect_failure("filter " + input + " " + out + " --kernel nope", 2, "nope");
  EXPECT_EQ(read_file(out), before);
}

TEST(Cli, InfoAndUsage) {
  const CliResult info = run_cli("info");
  EXPECT_EQ(info.code, 0);
  EXPECT_NE(info.out.find("cuda backend"), std::string::npos);
  const CliResult none = run_cli("");
  EXPECT_EQ(none.code, 2);
  const CliResult unknown = run_cli("frobnicate");
  EXPECT_EQ(unknown.code, 2);
  const CliResult help = run_cli("filter --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--border"), std::string::npos);
}

#if PIXELKIT_TEST_HAVE_OPENCV
// Image and video codecs live in libpixelkit_opencv.so, loaded on first use
// (src/core/opencv_module.hpp): a process that never touches a codec file
// never maps imgcodecs. This test program does not link imgcodecs itself.
bool maps_imgcodecs() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libopencv_imgcodecs") != std::string::npos) return true;
  return false;
}

TEST(CodecModule, LoadsOnTheFirstCodecFileOnly) {
  ASSERT_FALSE(maps_imgcodecs()) << "imgcodecs is mapped before any file was read";
  const Image small = random_image(9, 7, 3, PixelType::u8, 3);
  const std::string dir = scratch_dir("codec_module");
  write_image(dir + "/a.npy", small.cview());
  EXPECT_EQ(read_image(dir + "/a.npy").view().row_bytes(), small.view().row_bytes());
  EXPECT_FALSE(maps_imgcodecs()) << ".npy files need no codec";
  const Image photo = read_image(std::string(PIXELKIT_DATA_DIR) + "/camera.png");
  EXPECT_GT(photo.width(), 0);
  // PNG reads go through pixelkit's libpng codec where the build has one.
  EXPECT_EQ(maps_imgcodecs(), !detail::png_codec_available()) << "a PNG read and imgcodecs";
  write_image(dir + "/camera.bmp", photo.cview());
  EXPECT_TRUE(maps_imgcodecs()) << "a BMP was written without OpenCV's imgcodecs";
  const Image back = read_image(dir + "/camera.bmp");
  ASSERT_EQ(back.width(), photo.width());
  for (int y = 0; y < photo.height(); ++y)
    EXPECT_EQ(std::memcmp(back.row<unsigned char>(y), photo.row<unsigned char>(y), photo.view().row_bytes()), 0);
  std::filesystem::remove_all(dir);
}

class CliCodecModule : public CliFixture {
 protected:
  CliCodecModule() : CliFixture("codec_") {}
  void TearDown() override {
    ::unsetenv("PIXELKIT_OPENCV_MODULE");
    CliFixture::TearDown();
  }
};

TEST_F(CliCodecModule, InfoNamesTheModuleAndAMissingOneIsAClearErrorForCodecFilesOnly) {
  const CliResult info = run_cli("info");
  EXPECT_EQ(info.code, 0);
  EXPECT_NE(info.out.find("codec module : /"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("libpixelkit_opencv"), std::string::npos) << info.out;

  // A codec file that is not a PNG (PNG reads need no module where libpng is built).
  const std::string photo = dir + "/camera.bmp";
  write_image(photo, read_image(std::string(PIXELKIT_DATA_DIR) + "/camera.png").cview());
  ::setenv("PIXELKIT_OPENCV_MODULE", (dir + "/nowhere/libpixelkit_opencv.so").c_str(), 1);
  const CliResult none = run_cli("info");
  EXPECT_EQ(none.code, 0);
  EXPECT_NE(none.out.find("codec module : not loadable: '" + dir + "/nowhere/libpixelkit_opencv.so' does not exist"),
            std::string::npos)
      << none.out;
  // Codec files fail with one line naming the file; .npy work goes on.
  expect_failure("filter " + photo + " " + dir + "/o.npy --kernel box:3", 1,
                 "input '" + photo + "': cannot load pixelkit's OpenCV codec module");
  expect_failure("filter " + input + " " + dir + "/o.png --kernel box:3", 1,
                 "output '" + dir + "/o.png': cannot load pixelkit's OpenCV codec module");
  expect_failure("video " + input + " " + dir + "/o.avi --op filter --kernel box:3", 1,
                 "output '" + dir + "/o.avi': cannot load pixelkit's OpenCV codec module");
  const CliResult npy = run_cli("filter " + input + " " + dir + "/o.npy --kernel box:3");
  EXPECT_EQ(npy.code, 0) << npy.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/o.npy"));
  // A file that is not the module: refused, not loaded.
  ::setenv("PIXELKIT_OPENCV_MODULE", input.c_str(), 1);
  const CliResult bad = run_cli("filter " + photo + " " + dir + "/o2.npy --kernel box:3");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("cannot load pixelkit's OpenCV codec module"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/o2.npy"));
}
#endif

}  // namespace
}  // namespace pixelkit::test
