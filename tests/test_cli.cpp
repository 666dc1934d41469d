// The command-line program: `pixelkit filter` on every SPEC, MODE and
// backend, and every bad input failing with one clear line, the right exit
// code and no output file (an existing one left untouched).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace pixelkit::test
