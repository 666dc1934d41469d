// Limits (issue 8): sizes whose byte counts overflow 32 or 64 bits, zero-sized
// images, kernels and templates larger than the image, too many Haar levels,
// .npy/.npz headers that declare huge shapes, and images too large for the
// GPU. Each gives a clear error naming the size before anything is allocated
// (or, where the size is representable, out_of_memory naming the bytes), never
// a crash.
//
// Host allocations that must fail are made in a forked child whose address
// space is capped (RLIMIT_AS), so that the result does not depend on the
// machine's memory or overcommit policy; those tests skip under sanitizers,
// whose shadow memory does not work with RLIMIT_AS.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "pixelkit/filter.hpp"
#include "pixelkit/haar.hpp"
#include "pixelkit/integral.hpp"
#include "pixelkit/io.hpp"
#include "pixelkit/match.hpp"
#include "test_support.hpp"

#if PIXELKIT_TEST_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif
#include "test_opencv.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PK_LIMITS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define PK_LIMITS_SANITIZED 1
#endif
#endif
#ifndef PK_LIMITS_SANITIZED
#define PK_LIMITS_SANITIZED 0
#endif

namespace pixelkit::test {
namespace {

template <typename F>
void expect_error(F&& f, Status status, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no error (expected '" << (fragments.empty() ? "" : fragments[0]) << "')";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    for (const auto& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << "message '" << e.what() << "' lacks '" << f << "'";
  }
}

// ---- a child process with a capped address space ---------------------------------

std::size_t vm_size_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  return 0;
}

struct ChildOutcome {
  std::string kind;  ///< "ok", "error", "bad_alloc", "other" or "crashed"
  Status status = Status::internal;
  std::string message;
};

/// Runs f in a forked child whose address space may grow by `headroom` bytes at
/// most, and reports what it threw. An allocation of the sizes under test then
/// fails for certain, and an attempt to allocate what a header merely declares
/// shows up as bad_alloc / out_of_memory instead of the expected error.
ChildOutcome in_capped_child(std::size_t headroom, const std::function<void()>& f) {
  int fds[2];
  if (::pipe(fds) != 0) return {"crashed", Status::internal, "pipe failed"};
  const std::size_t cap = vm_size_bytes() + headroom;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    struct rlimit rl {};
    rl.rlim_cur = rl.rlim_max = cap;
    std::string out;
    if (::setrlimit(RLIMIT_AS, &rl) != 0) {
      out = "other|setrlimit failed";
    } else {
      try {
        f();
        out = "ok|";
      } catch (const Error& e) {
        out = "error|" + std::to_string(static_cast<int>(e.status())) + "|" + e.what();
      } catch (const std::bad_alloc&) {
        out = "bad_alloc|";
      } catch (const std::exception& e) {
        out = std::string("other|") + e.what();
      }
    }
    const char* p = out.data();
    std::size_t left = out.size();
    while (left > 0) {
      const ssize_t n = ::write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  ChildOutcome r;
  if (!WIFEXITED(wstatus) || got.empty()) {
    r.kind = "crashed";
    r.message = "child ended with status " + std::to_string(wstatus);
    return r;
  }
  const auto bar = got.find('|');
  r.kind = got.substr(0, bar);
  std::string rest = got.substr(bar + 1);
  if (r.kind == "error") {
    const auto bar2 = rest.find('|');
    r.status = static_cast<Status>(std::stoi(rest.substr(0, bar2)));
    rest = rest.substr(bar2 + 1);
  }
  r.message = rest;
  return r;
}

#define PK_REQUIRE_UNSANITIZED()                                                              \
  do {                                                                                        \
    if (PK_LIMITS_SANITIZED) GTEST_SKIP() << "sanitizer shadow memory does not work with RLIMIT_AS"; \
  } while (0)

void expect_child_error(const ChildOutcome& r, Status status, const std::vector<std::string>& fragments) {
  ASSERT_EQ(r.kind, "error") << r.message;
  EXPECT_EQ(r.status, status) << r.message;
  for (const auto& f : fragments)
    EXPECT_NE(r.message.find(f), std::string::npos) << "message '" << r.message << "' lacks '" << f << "'";
}

constexpr std::size_t kHeadroom = std::size_t{512} << 20;  // what a capped child may still allocate

// ---- image shapes -------------------------------------------------------------------

TEST(LimitsImage, BytesBeyond32BitsAreCountedIn64Bits) {
  // 70000 x 70000 x 4 f32 = 78,400,000,000 bytes: more than 2^32 but a valid
  // shape; the allocation itself decides.
  EXPECT_NO_THROW(check_shape(70000, 70000, 4, PixelType::f32));
  EXPECT_NO_THROW(check_shape(70000, 70000, 4, PixelType::u8));
}

TEST(LimitsImage, HostImageBeyondMemoryIsOutOfMemoryNamingTheBytes) {
  PK_REQUIRE_UNSANITIZED();
  const ChildOutcome r = in_capped_child(kHeadroom, [] { Image big(70000, 70000, 4, PixelType::f32); });
  expect_child_error(r, Status::out_of_memory, {"78400000000 bytes", "70000x70000x4 f32"});
  // u8: 70000 * 4 = 280000 bytes per row, padded to 280000 (a multiple of 64).
  const ChildOutcome r8 = in_capped_child(kHeadroom, [] { Image big(70000, 70000, 4, PixelType::u8); });
  expect_child_error(r8, Status::out_of_memory, {"19600000000 bytes", "70000x70000x4 u8"});
}

TEST(LimitsImage, RowsBeyond31BitsAreRefusedBeforeAllocating) {
  // INT_MAX x INT_MAX x 4 f32 is 2^66 bytes: beyond 64-bit arithmetic too. The
  // row alone (34,359,738,352 bytes) is refused, for every memory kind, before
  // any allocation (so also in a build without CUDA).
  for (const Memory m : {Memory::host, Memory::pinned, Memory::device}) {
    SCOPED_TRACE(to_string(m));
    expect_error([&] { Image big(INT_MAX, INT_MAX, 4, PixelType::f32, m); }, Status::invalid_argument,
                 {"2147483647x2147483647x4 f32", "34359738352 bytes"});
    expect_error([&] { Image wide(600000000, 1, 4, PixelType::f32, m); }, Status::invalid_argument,
                 {"600000000x1x4 f32", "9600000000 bytes"});
  }
  unsigned char byte = 0;
  expect_error([&] { make_view(&byte, INT_MAX, INT_MAX, 4, PixelType::f32); }, Status::invalid_argument,
               {"2147483647x2147483647x4 f32"});
  expect_error([&] { check_shape(INT_MAX, 1, 1, PixelType::u8, "thing"); }, Status::invalid_argument,
               {"thing 2147483647x1x1 u8"});
}

TEST(LimitsImage, TotalsBeyond2To46BytesAreRefusedNamingTheBytes) {
  // Rows of 100,000 bytes, 10^9 of them: 10^14 bytes (more than any machine).
  for (const Memory m : {Memory::host, Memory::pinned, Memory::device}) {
    SCOPED_TRACE(to_string(m));
    expect_error([&] { Image tall(100000, 1000000000, 1, PixelType::u8, m); }, Status::invalid_argument,
                 {"100000x1000000000x1 u8", "100000000000000 bytes"});
  }
}

TEST(LimitsImage, ZeroAndNegativeSizesAreRefused) {
  struct Shape {
    int w, h, c;
    const char* fragment;
  };
  for (const Shape s : {Shape{0, 5, 1, "0x5"}, Shape{5, 0, 3, "5x0"}, Shape{-1, 5, 1, "-1x5"}, Shape{5, -7, 1, "5x-7"},
                        Shape{INT_MIN, 1, 1, "-2147483648x1"}, Shape{0, 0, 1, "0x0"}, Shape{4, 4, 0, "0 channels"},
                        Shape{4, 4, 5, "5 channels"}, Shape{4, 4, -1, "-1 channels"}})
    for (const Memory m : {Memory::host, Memory::pinned, Memory::device}) {
      SCOPED_TRACE(std::string(s.fragment) + " " + to_string(m));
      expect_error([&] { Image img(s.w, s.h, s.c, PixelType::u8, m); }, Status::invalid_argument, {s.fragment});
    }
  unsigned char byte = 0;
  expect_error([&] { make_view(&byte, 0, 1, 1, PixelType::u8); }, Status::invalid_argument, {"0x1"});
  expect_error([&] { IntegralTable t(0, 4, 1, TableType::i64); }, Status::invalid_argument, {"0x4"});
}

// ---- images too large for the GPU --------------------------------------------------

// 150000 x 150000 x 4 f32: 360,000,000,000 bytes, more than any current GPU
// (an H200 has 141 GB) and more than the GPU machines' host memory.
constexpr int kHugeSide = 150000;
const char* const kHugeBytes = "360000000000";

TEST(LimitsGpu, DeviceImageLargerThanTheGpuIsOutOfMemoryNamingTheBytes) {
  PIXELKIT_REQUIRE_GPU();
  expect_error([] { Image big(kHugeSide, kHugeSide, 4, PixelType::f32, Memory::device); }, Status::out_of_memory,
               {"150000x150000x4 f32", std::string(kHugeBytes) + " bytes needed", "free"});
}

TEST(LimitsGpu, DeviceImageOf70000SquaredFitsOrIsOutOfMemoryNamingTheBytes) {
  PIXELKIT_REQUIRE_GPU();
  // 78.4 GB: fits on an H200, and on an H100 only when nearly all of it is free.
  try {
    Image big(70000, 70000, 4, PixelType::f32, Memory::device);
    EXPECT_EQ(big.width(), 70000);
    EXPECT_EQ(big.height(), 70000);
    EXPECT_GE(static_cast<std::uint64_t>(big.pitch()) * 70000u, 78400000000ull);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::out_of_memory) << e.what();
    EXPECT_NE(std::string(e.what()).find("78400000000 bytes needed"), std::string::npos) << e.what();
  }
}

TEST(LimitsGpu, PinnedImageLargerThanHostMemoryIsOutOfMemoryNamingTheBytes) {
  PIXELKIT_REQUIRE_GPU();
  expect_error([] { Image big(kHugeSide, kHugeSide, 4, PixelType::f32, Memory::pinned); }, Status::out_of_memory,
               {"150000x150000x4 f32", kHugeBytes});
}

// After an allocation failure the library (and the CUDA context) must still work.
void expect_cuda_filter_works() {
  const Image src = random_image(61, 37, 3, PixelType::u8, 7);
  Image want(61, 37, 3, PixelType::u8), got(61, 37, 3, PixelType::u8);
  Options ref;
  ref.backend = Backend::ref;
  filter2d(src, want.view(), Kernel::gaussian(5), {}, ref);
  Image dsrc = clone(src, Memory::device), ddst(61, 37, 3, PixelType::u8, Memory::device);
  Options cuda;
  cuda.backend = Backend::cuda;
  filter2d(dsrc, ddst.view(), Kernel::gaussian(5), {}, cuda);
  copy(ddst, got.view());
  synchronize(nullptr);
  EXPECT_TRUE(agrees(got, want));
}

TEST(LimitsGpu, LibraryWorksAfterADeviceOutOfMemory) {
  PIXELKIT_REQUIRE_GPU();
  for (int i = 0; i < 3; ++i) {
    EXPECT_THROW(Image(kHugeSide, kHugeSide, 4, PixelType::f32, Memory::device), Error);
    expect_cuda_filter_works();
  }
}

TEST(LimitsGpu, ScratchTooLargeForTheGpuIsOutOfMemoryAndLeavesTheOperatorUsable) {
  PIXELKIT_REQUIRE_GPU();
  Options cuda;
  cuda.backend = Backend::cuda;
  // The matcher's device score map for a 150000^2 image: ~90 GB... x4 bytes.
  const Image templ = random_image(9, 7, 1, PixelType::u8, 3);
  Matcher matcher(templ);
  expect_error([&] { matcher.reserve(kHugeSide, kHugeSide, cuda); }, Status::out_of_memory, {"bytes"});
  const Image img = random_image(80, 60, 1, PixelType::u8, 4);
  Options ref;
  ref.backend = Backend::ref;
  const MatchResult a = matcher(img, cuda), b = matcher(img, ref);
  ASSERT_EQ(a.matches.size(), 1u);
  ASSERT_EQ(b.matches.size(), 1u);
  EXPECT_EQ(a.matches[0].x, b.matches[0].x);
  EXPECT_EQ(a.matches[0].y, b.matches[0].y);
  // The integral's device buffers for a 150000^2 x 4 f32 image (an upload of
  // 360 GB alone).
  Integral op;
  expect_error([&] { op.reserve(kHugeSide, kHugeSide, 4, PixelType::f32); }, Status::out_of_memory, {"bytes"});
  IntegralTables t1, t2;
  op(img, t1, cuda);
  op(img, t2, ref);
  EXPECT_EQ(rect_sum(t1.sum.view(), Rect{3, 4, 50, 40}), rect_sum(t2.sum.view(), Rect{3, 4, 50, 40}));
  expect_cuda_filter_works();
}

// ---- .npy / .npz headers declaring huge shapes ----------------------------------------

std::vector<unsigned char> npy_bytes(const std::string& shape, const std::string& descr, std::size_t body_bytes) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const std::size_t pad = (64 - (10 + dict.size() + 1) % 64) % 64;
  dict.append(pad, ' ');
  dict += '\n';
  std::string text = "\x93NUMPY";
  text += {'\x01', '\x00', static_cast<char>(dict.size() & 0xff), static_cast<char>(dict.size() >> 8)};
  text += dict;
  for (std::size_t i = 0; i < body_bytes; ++i) text += static_cast<char>(i * 7);
  return std::vector<unsigned char>(text.begin(), text.end());
}

void save(const std::string& path, const std::vector<unsigned char>& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

struct HugeHeader {
  std::string shape, descr, fragment;
};
// Each is a tiny file whose header declares far more data than it holds.
const std::vector<HugeHeader>& huge_headers() {
  static const std::vector<HugeHeader> h = {
      {"(100000, 100000, 4)", "|u1", "64 of 40000000000 bytes"},
      {"(100000, 100000, 4)", "<f4", "64 of 160000000000 bytes"},
      {"(70000, 70000)", "<f4", "64 of 19600000000 bytes"},
      {"(18446744073709551615, 2, 4)", "|u1", "shape overflows"},
      {"(4294967296, 4294967296, 4)", "|u1", "shape overflows"},
      {"(4611686018427387904,)", "<f4", "shape overflows"},  // count fits, count * 4 does not
      {"(99999999999999999999999, 3)", "|u1", "dimension too large"},
  };
  return h;
}

TEST(LimitsNpy, HugeDeclaredShapesAreRefusedBeforeAllocating) {
  for (const HugeHeader& h : huge_headers()) {
    SCOPED_TRACE(h.shape + " " + h.descr);
    const auto b = npy_bytes(h.shape, h.descr, 64);
    expect_error([&] { parse_npy(b.data(), b.size(), "'x.npy'"); }, Status::io, {"'x.npy'", h.fragment});
  }
}

TEST(LimitsNpy, HugeDeclaredShapesAllocateNothingInACappedProcess) {
  PK_REQUIRE_UNSANITIZED();
  const std::string dir = scratch_dir("limits_npy_capped");
  for (const HugeHeader& h : huge_headers()) {
    SCOPED_TRACE(h.shape + " " + h.descr);
    const std::string path = dir + "/huge.npy";
    save(path, npy_bytes(h.shape, h.descr, 64));
    // An allocation of the declared size would surface as bad_alloc or
    // out_of_memory; the reader must answer with the io error instead.
    expect_child_error(in_capped_child(kHeadroom, [&] { read_npy(path); }), Status::io, {h.fragment});
    expect_child_error(in_capped_child(kHeadroom, [&] { read_image(path); }), Status::io, {"huge.npy", h.fragment});
  }
  std::filesystem::remove_all(dir);
}

TEST(LimitsNpy, ZeroDimensionsParseButAreNoImage) {
  const auto b = npy_bytes("(0, 5, 3)", "|u1", 0);
  const NpyArray a = parse_npy(b.data(), b.size(), "'z.npy'");
  EXPECT_EQ(a.count(), 0u);
  EXPECT_TRUE(a.bytes.empty());
  const std::string dir = scratch_dir("limits_npy_zero");
  for (const char* shape : {"(0, 5, 3)", "(5, 0)", "(0, 0)", "(0,)"}) {
    SCOPED_TRACE(shape);
    save(dir + "/z.npy", npy_bytes(shape, "|u1", 0));
    // As for the other arrays that are no image (2 channels, 4 dimensions):
    // invalid_argument, exit code 2 on the command line.
    expect_error([&] { read_image(dir + "/z.npy"); }, Status::invalid_argument, {"z.npy"});
  }
  save(dir + "/z.npy", npy_bytes("(0, 5, 3)", "|u1", 0));
  expect_error([&] { read_image(dir + "/z.npy"); }, Status::invalid_argument, {"0 rows", "empty"});
  std::filesystem::remove_all(dir);
}

std::uint32_t crc32_of(const unsigned char* p, std::size_t n) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

// An .npz whose member's header declares `shape` while holding 6 bytes, with
// correct checksums (so that the header, not the checksum, is what is refused).
std::vector<unsigned char> npz_with_member_shape(const std::string& dir, const std::string& shape) {
  NpyArray small;
  small.type = NpyType::u8;
  small.shape = {2, 3};
  small.bytes = {1, 2, 3, 4, 5, 6};
  write_npz(dir + "/base.npz", {{"coeffs", small}});
  std::vector<unsigned char> z = read_file(dir + "/base.npz");
  const std::string text(z.begin(), z.end());
  const std::string from = "'shape': (2, 3), }";
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos);
  std::string to = "'shape': " + shape + ", }";
  const auto spaces = text.find_first_not_of(' ', at + from.size());
  EXPECT_LE(to.size(), spaces - at) << "not enough header padding";
  to.append(spaces - at - to.size(), ' ');
  std::copy(to.begin(), to.end(), z.begin() + static_cast<std::ptrdiff_t>(at));
  // Fix the CRC in the local header (offset 14) and the central directory (16).
  const std::size_t name_len = z[26] | (z[27] << 8), extra_len = z[28] | (z[29] << 8);
  const std::size_t body = 30 + name_len + extra_len;
  const std::size_t central = text.find("PK\x01\x02");
  const std::size_t size = 128 + 6;  // serialize_npy's 128-byte header for this dict, then the data
  const std::uint32_t crc = crc32_of(z.data() + body, size);
  for (int k = 0; k < 4; ++k) {
    z[14 + k] = static_cast<unsigned char>(crc >> (8 * k));
    z[central + 16 + k] = static_cast<unsigned char>(crc >> (8 * k));
  }
  return z;
}

TEST(LimitsNpy, NpzMembersDeclaringHugeShapesAreRefused) {
  const std::string dir = scratch_dir("limits_npz");
  for (const auto& [shape, fragment] : std::vector<std::pair<std::string, std::string>>{
           {"(100000, 100000, 4)", "6 of 40000000000 bytes"},
           {"(18446744073709551615, 3)", "shape overflows"}}) {
    SCOPED_TRACE(shape);
    const auto z = npz_with_member_shape(dir, shape);
    expect_error([&] { parse_npz(z.data(), z.size(), "'c.npz'"); }, Status::io, {"member 'coeffs'", fragment});
    save(dir + "/c.npz", z);
    expect_error([&] { read_haar_npz(dir + "/c.npz"); }, Status::io, {"c.npz", fragment});
  }
  std::filesystem::remove_all(dir);
}

// ---- the command line on such files ---------------------------------------------------

struct Spawned {
  int code = -1;
  std::string err;
  long max_rss_kb = 0;
};

/// Runs the CLI (no shell) and reports its exit code, stderr and peak memory.
Spawned spawn_cli(const std::vector<std::string>& args, const std::string& err_path) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(fd, 2);
    ::dup2(null, 1);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(cli_path()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(cli_path(), argv.data());
    ::_exit(127);
  }
  Spawned s;
  int status = 0;
  struct rusage ru {};
  ::wait4(pid, &status, 0, &ru);
  s.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  s.max_rss_kb = ru.ru_maxrss;
  std::ifstream f(err_path);
  s.err.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  std::filesystem::remove(err_path);
  return s;
}

class LimitsCli : public CliFixture {
 protected:
  LimitsCli() : CliFixture("limits_") {}
  /// Runs a command expected to fail: exit code, one line naming `fragment`,
  /// no file created or removed, a peak resident size far below any huge
  /// allocation (the CLI itself needs some tens of MB).
  void expect_clean_failure(const std::vector<std::string>& args, int code, const std::string& fragment) {
    std::string line;
    for (const auto& a : args) line += a + " ";
    SCOPED_TRACE(line);
    const auto before = files_in(dir);
    const Spawned r = spawn_cli(args, ::testing::TempDir() + "/pk_limits_err_" + std::to_string(::getpid()));
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << "stderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line expected: " << r.err;
    EXPECT_EQ(files_in(dir), before) << "a file appeared or vanished";
    EXPECT_LT(r.max_rss_kb, 1024 * 1024) << "peak resident size " << r.max_rss_kb << " KB";
  }
};

TEST_F(LimitsCli, EveryCommandRefusesNpyInputsDeclaringHugeShapes) {
  const std::string huge = dir + "/huge.npy", big_f32 = dir + "/big.npy", ovf = dir + "/ovf.npy";
  save(huge, npy_bytes("(100000, 100000, 4)", "|u1", 64));
  save(big_f32, npy_bytes("(70000, 70000)", "<f4", 64));
  save(ovf, npy_bytes("(18446744073709551615, 2, 4)", "|u1", 64));
  for (const auto& [path, fragment] : std::vector<std::pair<std::string, std::string>>{
           {huge, "40000000000 bytes"}, {big_f32, "19600000000 bytes"}, {ovf, "shape overflows"}}) {
    expect_clean_failure({"filter", path, dir + "/out.npy", "--kernel", "box:3"}, 1, fragment);
    expect_clean_failure({"integral", path, "--sum", dir + "/sum.npy"}, 1, fragment);
    expect_clean_failure({"haar", path, "--coeffs", dir + "/c.npz"}, 1, fragment);
    expect_clean_failure({"match", path, input, "--scores", dir + "/s.npy"}, 1, fragment);
    expect_clean_failure({"match", input, path}, 1, fragment);
  }
  for (const char* shape : {"(0, 5, 3)", "(5, 0)"}) {
    save(dir + "/zero.npy", npy_bytes(shape, "|u1", 0));
    expect_clean_failure({"filter", dir + "/zero.npy", dir + "/out.npy", "--kernel", "box:3"}, 2, "is empty");
  }
  std::filesystem::remove(dir + "/zero.npy");
  save(dir + "/c.npz", npz_with_member_shape(dir, "(100000, 100000, 4)"));
  std::filesystem::remove(dir + "/base.npz");
  expect_clean_failure({"haar", "--inverse", dir + "/c.npz", dir + "/back.npy"}, 1, "40000000000 bytes");
}

TEST_F(LimitsCli, VideoRefusesFrameStacksDeclaringHugeShapes) {
  // 3 GB and 100 GB declared, a few KB present: the stack is reported as
  // truncated after its complete frames, and nothing near the declared size
  // is allocated.
  const std::string a = dir + "/a.npy", b = dir + "/b.npy", c = dir + "/c.npy";
  save(a, npy_bytes("(3000, 1000, 1000)", "|u1", 5000));
  save(b, npy_bytes("(100000, 1000, 1000, 3)", "|u1", 5000));
  save(c, npy_bytes("(18446744073709551615, 1000, 1000)", "|u1", 5000));
  expect_clean_failure({"video", a, dir + "/o.npy", "--op", "filter", "--kernel", "box:3"}, 1,
                       "0 of 3000 frames present");
  expect_clean_failure({"video", b, dir + "/o.npy", "--op", "filter", "--kernel", "box:3"}, 1,
                       "0 of 100000 frames present");
  expect_clean_failure({"video", c, dir + "/o.npy", "--op", "filter", "--kernel", "box:3"}, 1, "shape overflows");
}

// ---- operations on zero-sized views ---------------------------------------------------

std::vector<Backend> host_backends() { return {Backend::ref, Backend::cpu, Backend::automatic}; }

TEST(LimitsOps, EveryOperationRefusesZeroSizedViews) {
  Image img(16, 12, 3, PixelType::u8), out(16, 12, 3, PixelType::u8);
  fill_random(img.view(), 1);
  const std::vector<ConstImageView> empties = {img.cview().sub(0, 0, 0, 12), img.cview().sub(0, 0, 16, 0),
                                               img.cview().sub(5, 5, 0, 0), ConstImageView{}};
  for (const Backend be : host_backends()) {
    Options o;
    o.backend = be;
    SCOPED_TRACE(to_string(be));
    for (const ConstImageView& e : empties) {
      SCOPED_TRACE(describe(e));
      expect_error([&] { filter2d(e, out.view().sub(0, 0, e.width, e.height), Kernel::box(3), {}, o); },
                   Status::invalid_argument, {"filter: source image is empty"});
      IntegralTables t;
      expect_error([&] { integral(e, t, {}, o); }, Status::invalid_argument, {"integral: source image is empty"});
      Image co(16, 12, 3, PixelType::f32);
      expect_error([&] { haar_forward(e, co.view(), 1, HaarNormalize::orthonormal, o); }, Status::invalid_argument,
                   {"image is empty"});
      expect_error([&] { match_template(e, img.cview().sub(0, 0, 3, 3), {}, {}, o); }, Status::invalid_argument,
                   {"the image is empty"});
      expect_error([&] { match_template(img, e, {}, {}, o); }, Status::invalid_argument, {"the template is empty"});
    }
    // A non-empty source into an empty destination.
    expect_error([&] { filter2d(img, out.view().sub(0, 0, 0, 0), Kernel::box(3), {}, o); }, Status::invalid_argument,
                 {"differ"});
    Image co(16, 12, 3, PixelType::f32);
    expect_error([&] { haar_inverse(co, out.view().sub(0, 0, 0, 12), 1, HaarNormalize::orthonormal, o); },
                 Status::invalid_argument, {"empty"});
  }
  expect_error([] { haar_max_levels(0, 8); }, Status::invalid_argument, {"0x8"});
  expect_error([] { haar_layout(8, 0, 1); }, Status::invalid_argument, {"8x0"});
  int w = 0, h = 0;
  expect_error([&] { match_result_size(0, 5, 1, 1, w, h); }, Status::invalid_argument, {"image 0x5"});
  expect_error([&] { match_result_size(5, 5, 0, 1, w, h); }, Status::invalid_argument, {"template 0x1"});
}

// ---- kernels larger than the image --------------------------------------------------------

// OpenCV's filter2D accepts kernels larger than the image (the border rule is
// applied again and again), and so does pixelkit: every backend must give
// ref's result, in every border mode.
std::vector<Border> all_borders() {
  return {{BorderMode::constant, 0.0f}, {BorderMode::constant, 9.0f}, {BorderMode::replicate, 0},
          {BorderMode::reflect, 0},     {BorderMode::reflect101, 0},  {BorderMode::wrap, 0}};
}

Kernel random_kernel(int w, int h, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> c(static_cast<std::size_t>(w) * h);
  float sum = 0;
  for (auto& v : c) {
    v = d(rng);
    sum += std::fabs(v);
  }
  for (auto& v : c) v /= sum * 0.5f;
  return Kernel::from_matrix(w, h, c, "random" + std::to_string(w) + "x" + std::to_string(h));
}

struct TinyCase {
  int w, h, c;
  PixelType t;
};
const std::vector<TinyCase>& tiny_cases() {
  static const std::vector<TinyCase> c = {{3, 3, 1, PixelType::u8},  {3, 3, 3, PixelType::u8}, {3, 3, 4, PixelType::f32},
                                          {1, 1, 1, PixelType::u8},  {1, 1, 3, PixelType::f32}, {2, 5, 1, PixelType::u8},
                                          {5, 2, 3, PixelType::u8},  {1, 7, 1, PixelType::f32}, {7, 1, 4, PixelType::u8}};
  return c;
}
std::vector<Kernel> big_kernels() {
  return {random_kernel(7, 7, 11), random_kernel(31, 31, 12), random_kernel(31, 1, 13), random_kernel(1, 31, 14),
          Kernel::box(31),  // the cpu backend runs boxes this large through the integral image
          Kernel::gaussian(15), random_kernel(9, 5, 15)};
}

Image run_filter(Backend be, const ConstImageView& src, const Kernel& k, const Border& b) {
  Options o;
  o.backend = be;
  if (be == Backend::cuda) {
    Image d = clone(src, Memory::device), dd(src.width, src.height, src.channels, src.type, Memory::device);
    filter2d(d, dd.view(), k, b, o);
    return clone(dd, Memory::host);
  }
  Image out(src.width, src.height, src.channels, src.type);
  poison(out.view());
  filter2d(src, out.view(), k, b, o);
  return out;
}

void expect_big_kernels_match_ref(Backend be) {
  std::uint32_t seed = 300;
  for (const TinyCase& tc : tiny_cases())
    for (const Kernel& k : big_kernels())
      for (const Border& b : all_borders()) {
        const Image src = random_image(tc.w, tc.h, tc.c, tc.t, ++seed);
        const Image want = run_filter(Backend::ref, src, k, b);
        EXPECT_TRUE(agrees(run_filter(be, src, k, b), want))
            << to_string(be) << " " << describe(src.cview()) << " kernel " << k.name << " " << k.width << "x"
            << k.height << " border " << to_string(b);
      }
}

TEST(LimitsFilter, KernelsLargerThanTheImageMatchRefOnEveryBorderCpu) { expect_big_kernels_match_ref(Backend::cpu); }

TEST(LimitsGpu, KernelsLargerThanTheImageMatchRefOnEveryBorderCuda) {
  PIXELKIT_REQUIRE_GPU();
  expect_big_kernels_match_ref(Backend::cuda);
}

TEST(LimitsFilter, KernelsLargerThanTheImageFollowTheBorderRule) {
  // A 1x1 image: every border except constant extends it with its one pixel,
  // so any kernel gives pixel * sum(kernel); constant:V gives pixel * k(centre)
  // + V * (sum(kernel) - k(centre)).
  Image one(1, 1, 1, PixelType::f32);
  one.row<float>(0)[0] = 10.0f;
  const Kernel k = random_kernel(7, 7, 21);
  double sum = 0;
  for (float c : k.coeffs) sum += c;
  const double centre = k.at(3, 3);
  for (const Border& b : all_borders()) {
    const Image out = run_filter(Backend::ref, one, k, b);
    const double want = b.mode == BorderMode::constant ? 10.0 * centre + b.value * (sum - centre) : 10.0 * sum;
    EXPECT_NEAR(out.row<float>(0)[0], want, 1e-4) << to_string(b);
  }
}

#if PIXELKIT_TEST_HAVE_OPENCV
// cv::filter2D directly where it takes the border (constant 0, replicate,
// reflect, reflect101); copyMakeBorder, then an isolated filter2D, for wrap and
// constant:V, which filter2D does not take.
Image opencv_filter(const ConstImageView& src, const Kernel& k, const Border& b) {
  const int depth = src.type == PixelType::u8 ? CV_8U : CV_32F;
  const cv::Mat in(src.height, src.width, CV_MAKETYPE(depth, src.channels), const_cast<void*>(src.data),
                   static_cast<std::size_t>(src.pitch));
  const cv::Mat kernel(k.height, k.width, CV_32F, const_cast<float*>(k.coeffs.data()));
  cv::Mat out;
  const bool direct = b.mode != BorderMode::wrap && !(b.mode == BorderMode::constant && b.value != 0.0f);
  if (direct) {
    cv::filter2D(in, out, -1, kernel, cv::Point(-1, -1), 0, cv_border(b.mode));
  } else {
    cv::Mat padded, full;
    const int rx = k.radius_x(), ry = k.radius_y();
    cv::copyMakeBorder(in, padded, ry, ry, rx, rx, cv_border(b.mode), cv::Scalar::all(b.value));
    cv::filter2D(padded, full, -1, kernel, cv::Point(-1, -1), 0, cv::BORDER_CONSTANT | cv::BORDER_ISOLATED);
    out = full(cv::Rect(rx, ry, src.width, src.height));
  }
  Image res(src.width, src.height, src.channels, src.type);
  for (int y = 0; y < src.height; ++y) std::memcpy(res.row<unsigned char>(y), out.ptr(y), res.view().row_bytes());
  return res;
}
#endif

TEST(LimitsFilter, KernelsLargerThanTheImageAgreeWithOpenCV) {
  PIXELKIT_REQUIRE_OPENCV();
#if PIXELKIT_TEST_HAVE_OPENCV
  std::uint32_t seed = 500;
  for (const TinyCase& tc : tiny_cases())
    for (const Kernel& k : big_kernels())
      for (const Border& b : all_borders()) {
        const Image src = random_image(tc.w, tc.h, tc.c, tc.t, ++seed);
        EXPECT_TRUE(agrees(run_filter(Backend::ref, src, k, b), opencv_filter(src, k, b)))
            << describe(src.cview()) << " kernel " << k.name << " border " << to_string(b);
      }
#endif
}

TEST_F(LimitsCli, FilterAcceptsAKernelLargerThanTheImage) {
  const Image tiny = random_image(3, 3, 3, PixelType::u8, 77);
  write_npy(dir + "/tiny.npy", tiny);
  for (const char* border : {"reflect101", "wrap", "constant:5"}) {
    const CliResult r = run_cli("filter '" + dir + "/tiny.npy' '" + dir + "/out.npy' --kernel box:7 --border " +
                                border + " --backend cpu");
    ASSERT_EQ(r.code, 0) << r.err;
    const Image got = read_image(dir + "/out.npy");
    EXPECT_TRUE(agrees(got, run_filter(Backend::ref, tiny, Kernel::box(7), parse_border(border)))) << border;
  }
}

// ---- templates larger than the image, too many levels ---------------------------------

TEST(LimitsMatch, TemplateLargerThanTheImageNamesBothSizes) {
  const Image img = random_image(8, 12, 3, PixelType::u8, 5);
  for (const auto& [tw, th] : std::vector<std::pair<int, int>>{{10, 6}, {6, 13}, {9, 13}}) {
    const Image templ = random_image(tw, th, 3, PixelType::u8, 6);
    const std::string ts = std::to_string(tw) + "x" + std::to_string(th);
    for (const Backend be : host_backends()) {
      Options o;
      o.backend = be;
      SCOPED_TRACE(ts + " " + to_string(be));
      expect_error([&] { match_template(img, templ, {}, {}, o); }, Status::invalid_argument,
                   {"larger than the image", ts, "8x12"});
      Matcher m(templ);
      expect_error([&] { m.reserve(8, 12, o); }, Status::invalid_argument, {ts, "8x12"});
    }
    int w = 0, h = 0;
    expect_error([&] { match_result_size(8, 12, tw, th, w, h); }, Status::invalid_argument, {ts, "8x12"});
  }
}

TEST_F(LimitsCli, MatchRefusesATemplateLargerThanTheImage) {
  write_npy(dir + "/small.npy", random_image(5, 4, 3, PixelType::u8, 8));
  // in.npy is 37x23.
  expect_failure("match '" + dir + "/small.npy' '" + input + "' --scores '" + dir + "/s.npy'", 2, "(37x23)");
  expect_failure("match '" + dir + "/small.npy' '" + input + "'", 2, "(5x4)");
}

TEST(LimitsHaar, TooManyLevelsNameTheMaximum) {
  const Image img = random_image(8, 8, 1, PixelType::u8, 9);
  Image co(8, 8, 1, PixelType::f32);
  for (const Backend be : host_backends()) {
    Options o;
    o.backend = be;
    SCOPED_TRACE(to_string(be));
    expect_error([&] { haar_forward(img, co.view(), 4, HaarNormalize::orthonormal, o); }, Status::invalid_argument,
                 {"4 levels is outside 1..3", "8x8"});
    expect_error([&] { haar_inverse(co, Image(8, 8, 1, PixelType::u8).view(), 40, HaarNormalize::orthonormal, o); },
                 Status::invalid_argument, {"40 levels is outside 1..3"});
  }
  expect_error([] { HaarTransform t(0); }, Status::invalid_argument, {"0 levels"});
  expect_error([] { haar_layout(1, 1, 2); }, Status::invalid_argument, {"outside 1..1"});
}

TEST_F(LimitsCli, HaarRefusesTooManyLevels) {
  expect_failure("haar '" + input + "' --levels 99 --coeffs '" + dir + "/c.npz'", 2, "99 is outside 1..5");
}

// ---- size helpers with extreme ints ------------------------------------------------------

TEST(LimitsSizes, HelpersNeitherOverflowNorWrap) {
  int w = 0, h = 0;
  match_result_size(INT_MAX, INT_MAX, 1, 1, w, h);
  EXPECT_EQ(w, INT_MAX);
  EXPECT_EQ(h, INT_MAX);
  match_result_size(INT_MAX, INT_MAX, INT_MAX, INT_MAX, w, h);
  EXPECT_EQ(w, 1);
  EXPECT_EQ(h, 1);
  expect_error([&] { match_result_size(1, 1, INT_MAX, 1, w, h); }, Status::invalid_argument,
               {"2147483647x1", "1x1"});
  expect_error([&] { match_result_size(INT_MIN, 5, 1, 1, w, h); }, Status::invalid_argument, {"-2147483648x5"});

  EXPECT_EQ(haar_max_levels(INT_MAX, INT_MAX), 31);
  EXPECT_EQ(haar_max_levels(INT_MAX, 1), 1);
  // An odd side's array is larger than the image: INT_MAX pixels need 2^31
  // columns at one level, which no int holds.
  expect_error([] { haar_layout(INT_MAX, INT_MAX, 1); }, Status::invalid_argument,
               {"2147483647x2147483647", "2147483648x2147483648", "too large"});
  expect_error([] { haar_layout(INT_MAX, 2, 1); }, Status::invalid_argument, {"2147483648x2"});
  const HaarLayout even = haar_layout(INT_MAX - 1, 6, 1);
  EXPECT_EQ(even.coeff_width, INT_MAX - 1);
  EXPECT_EQ(even.coeff_height, 6);

  expect_error([] { IntegralTable t(INT_MAX, 1, 1, TableType::i64); }, Status::invalid_argument,
               {"2147483647x1"});
  expect_error([] { IntegralTable t((1 << 29), 1, 4, TableType::f64); }, Status::invalid_argument,
               {"row of", "too large"});

  // A Matcher asked to prepare for an image whose score map cannot exist.
  const Image templ = random_image(3, 3, 1, PixelType::u8, 2);
  Matcher m(templ);
  for (const Backend be : {Backend::ref, Backend::cpu}) {
    Options o;
    o.backend = be;
    expect_error([&] { m.reserve(INT_MAX, INT_MAX, o); }, Status::invalid_argument, {"2147483645x2147483645"});
  }

  IntegralTable t(4, 4, 1, TableType::i64);
  expect_error([&] { rect_sum(t.view(), Rect{INT_MAX, 0, INT_MAX, 1}); }, Status::invalid_argument,
               {"2147483647x1", "4x4 image"});
  expect_error([&] { rect_sum(t.view(), Rect{1, 1, INT_MAX, INT_MAX}); }, Status::invalid_argument, {"4x4 image"});

  expect_error([] { Kernel::from_matrix(INT_MAX, INT_MAX, {}); }, Status::invalid_argument, {"2147483647"});
  expect_error([] { parse_kernel("box:2147483647"); }, Status::invalid_argument, {"2147483647"});
  expect_error([] { parse_kernel("box:99999999999999999999"); }, Status::invalid_argument, {"99999999999999999999"});
}

}  // namespace
}  // namespace pixelkit::test
