// Several host threads at once, each with its own operator objects (Filter2D,
// Integral, HaarTransform, Matcher) and one-shot calls, over shared read-only
// inputs: every result must equal, byte for byte, what the same backend gave
// on the main thread before the threads started, and the single-threaded cpu
// and cuda results agree with ref as the operation tests require. Built under
// ThreadSanitizer (preset tsan, scripts/sanitize.sh thread) this is the
// library's data-race check; elsewhere it still checks that concurrent calls
// give the single-threaded answers.
#include <gtest/gtest.h>

#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "match/match_backends.hpp"
#include "pixelkit/config.hpp"
#include "pixelkit/filter.hpp"
#include "pixelkit/haar.hpp"
#include "pixelkit/integral.hpp"
#include "pixelkit/match.hpp"
#include "test_support.hpp"

#if PIXELKIT_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace pixelkit::test {
namespace {

constexpr int kThreads = 4;
constexpr int kRounds = 2;  // each thread calls its objects this many times (reuse after the first call)

// libgomp is not built with ThreadSanitizer, so its barriers are invisible to
// it: under TSan the cpu backend runs one OpenMP thread per call (the host
// threads are the concurrency under test). Elsewhere 2 threads per call.
#ifdef PIXELKIT_TEST_TSAN
constexpr int kCpuThreads = 1;
#else
constexpr int kCpuThreads = 2;
#endif

// ---- shared inputs and results ---------------------------------------------------

struct Inputs {
  Image rgb;    // u8, 3 channels, odd size
  Image gray;   // f32, 1 channel
  Image templ;  // u8 crop of rgb
  Image mask;   // u8, 1 channel, the template's size
};

Inputs make_inputs() {
  Inputs in;
  in.rgb = random_image(157, 113, 3, PixelType::u8, 8101);
  in.gray = random_image(131, 89, 1, PixelType::f32, 8102);
  in.templ = clone(in.rgb.cview().sub(61, 40, 21, 17));
  in.mask = Image(21, 17, 1, PixelType::u8);
  fill_random(in.mask.view(), 8103);
  for (int y = 0; y < in.mask.height(); ++y)
    for (int x = 0; x < in.mask.width(); ++x) in.mask.row<std::uint8_t>(y)[x] = in.mask.row<std::uint8_t>(y)[x] > 60;
  return in;
}

struct Results {
  Image filter_u8, filter_f32;
  IntegralTables tables;
  Image haar_coeffs, haar_back;
  Image scores_a, scores_b;
  MatchResult match_a, match_b, match_free;
};

/// One thread's objects for one backend: built in the thread, called kRounds times.
struct Ops {
  Filter2D gauss{parse_kernel("gaussian:5"), Border{}};
  Filter2D matrix{parse_kernel("1,2,-1;0,4,0;-2,1,3/7"), parse_border("constant:7.5")};
  Integral integral;
  HaarTransform haar{3, HaarNormalize::orthonormal};
  Matcher matcher_a, matcher_b;

  Ops(const Inputs& in, Backend backend)
      : integral(request()),
        matcher_a(in.templ, params_a(backend)),
        matcher_b(in.templ, params_b(), in.mask) {}

  static IntegralRequest request() {
    IntegralRequest r;
    r.sqsum = true;
    r.tilted = true;
    return r;
  }
  // ccoeff_normed, top 3, with the colour check; the FFT strategy where the backend has one.
  static MatchParams params_a(Backend backend) {
    MatchParams p;
    p.method = MatchMethod::ccoeff_normed;
    p.top_k = 3;
    p.color_check = true;
    p.hsv = parse_hsv_range("0,40,40:179,255,255");
    p.min_fraction = 0.5;
    const bool fft = backend == Backend::cuda || (backend == Backend::cpu && detail::cpu_match_fft_available());
    p.strategy = fft ? MatchStrategy::fft : MatchStrategy::direct;
    return p;
  }
  // sqdiff with a mask, direct.
  static MatchParams params_b() {
    MatchParams p;
    p.method = MatchMethod::sqdiff;
    p.strategy = MatchStrategy::direct;
    p.top_k = 2;
    return p;
  }
};

Options options_for(Backend backend, stream_t stream) {
  Options o;
  o.backend = backend;
  o.threads = kCpuThreads;
  o.stream = stream;
  return o;
}

Image score_image(const Inputs& in) {
  int w = 0, h = 0;
  match_result_size(in.rgb.width(), in.rgb.height(), in.templ.width(), in.templ.height(), w, h);
  return Image(w, h, 1, PixelType::f32);
}

/// Runs every operation once through `ops` (and the one-shot match_template).
Results run_all(Ops& ops, const Inputs& in, Backend backend, stream_t stream) {
  const Options o = options_for(backend, stream);
  Results r;
  r.filter_u8 = Image(in.rgb.width(), in.rgb.height(), 3, PixelType::u8);
  ops.gauss(in.rgb, r.filter_u8, o);
  r.filter_f32 = Image(in.gray.width(), in.gray.height(), 1, PixelType::f32);
  ops.matrix(in.gray, r.filter_f32, o);

  ops.integral(in.rgb, r.tables, o);

  const HaarLayout l = haar_layout(in.gray.width(), in.gray.height(), 3);
  r.haar_coeffs = Image(l.coeff_width, l.coeff_height, 1, PixelType::f32);
  ops.haar.forward(in.gray, r.haar_coeffs, o);
  r.haar_back = Image(in.gray.width(), in.gray.height(), 1, PixelType::f32);
  ops.haar.inverse(r.haar_coeffs, r.haar_back, o);

  r.scores_a = score_image(in);
  r.match_a = ops.matcher_a(in.rgb, r.scores_a, o);
  r.scores_b = score_image(in);
  r.match_b = ops.matcher_b(in.rgb, r.scores_b, o);
  r.match_free = match_template(in.rgb, in.templ, Ops::params_b(), in.mask, o);
  return r;
}

// ---- exact comparison --------------------------------------------------------------

bool same_rows(const void* a, std::ptrdiff_t pa, const void* b, std::ptrdiff_t pb, std::size_t row_bytes, int rows) {
  for (int y = 0; y < rows; ++y)
    if (std::memcmp(static_cast<const unsigned char*>(a) + y * pa, static_cast<const unsigned char*>(b) + y * pb,
                    row_bytes) != 0)
      return false;
  return true;
}

bool same(const ConstImageView& a, const ConstImageView& b) {
  return a.width == b.width && a.height == b.height && a.channels == b.channels && a.type == b.type &&
         same_rows(a.data, a.pitch, b.data, b.pitch, a.row_bytes(), a.height);
}

bool same(const IntegralTableView& a, const IntegralTableView& b) {
  return a.width == b.width && a.height == b.height && a.channels == b.channels && a.type == b.type &&
         same_rows(a.data, a.pitch, b.data, b.pitch, a.row_bytes(), a.height);
}

bool same(const MatchResult& a, const MatchResult& b) {
  if (a.matches.size() != b.matches.size() || a.strategy != b.strategy) return false;
  for (std::size_t i = 0; i < a.matches.size(); ++i) {
    const Match &p = a.matches[i], &q = b.matches[i];
    if (p.x != q.x || p.y != q.y || std::memcmp(&p.score, &q.score, sizeof p.score) != 0 ||
        p.color_count != q.color_count || p.color_fraction != q.color_fraction || p.verdict != q.verdict)
      return false;
  }
  return true;
}

/// What differs between `got` and `want` (empty when nothing does).
std::vector<std::string> differences(const Results& got, const Results& want) {
  std::vector<std::string> d;
  if (!same(got.filter_u8, want.filter_u8)) d.push_back("Filter2D gaussian:5 (u8)");
  if (!same(got.filter_f32, want.filter_f32)) d.push_back("Filter2D 3x3 matrix (f32)");
  if (!same(got.tables.sum.view(), want.tables.sum.view())) d.push_back("Integral sum");
  if (!same(got.tables.sqsum.view(), want.tables.sqsum.view())) d.push_back("Integral sqsum");
  if (!same(got.tables.tilted.view(), want.tables.tilted.view())) d.push_back("Integral tilted");
  if (!same(got.haar_coeffs, want.haar_coeffs)) d.push_back("HaarTransform forward");
  if (!same(got.haar_back, want.haar_back)) d.push_back("HaarTransform inverse");
  if (!same(got.scores_a, want.scores_a)) d.push_back("Matcher ccoeff_normed score map");
  if (!same(got.match_a, want.match_a)) d.push_back("Matcher ccoeff_normed matches");
  if (!same(got.scores_b, want.scores_b)) d.push_back("Matcher masked sqdiff score map");
  if (!same(got.match_b, want.match_b)) d.push_back("Matcher masked sqdiff matches");
  if (!same(got.match_free, want.match_b)) d.push_back("match_template matches");
  return d;
}

std::vector<Backend> backends() {
  std::vector<Backend> b = {Backend::ref, Backend::cpu};
  if (cuda_available()) b.push_back(Backend::cuda);
  return b;
}

/// A CUDA stream per thread (nullptr, the default stream, without CUDA).
class ThreadStream {
 public:
  ThreadStream() {
#if PIXELKIT_WITH_CUDA
    if (cuda_available() && cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking) != cudaSuccess) s_ = nullptr;
#endif
  }
  ~ThreadStream() {
#if PIXELKIT_WITH_CUDA
    if (s_) cudaStreamDestroy(s_);
#endif
  }
  ThreadStream(const ThreadStream&) = delete;
  ThreadStream& operator=(const ThreadStream&) = delete;
  stream_t get() const { return reinterpret_cast<stream_t>(s_); }

 private:
#if PIXELKIT_WITH_CUDA
  cudaStream_t s_ = nullptr;
#else
  void* s_ = nullptr;
#endif
};

// ---- the tests -------------------------------------------------------------------------

TEST(Threads, SingleThreadedBackendsAgreeWithRef) {
  // The baselines the concurrent runs are held to are themselves right.
  const Inputs in = make_inputs();
  Ops ref_ops(in, Backend::ref);
  const Results ref = run_all(ref_ops, in, Backend::ref, nullptr);
  ASSERT_FALSE(ref.match_a.matches.empty());
  EXPECT_EQ(ref.match_a.matches[0].x, 61);  // the template is a crop of the image
  EXPECT_EQ(ref.match_a.matches[0].y, 40);
  for (Backend b : backends()) {
    if (b == Backend::ref) continue;
    SCOPED_TRACE(to_string(b));
    ThreadStream stream;
    Ops ops(in, b);
    const Results r = run_all(ops, in, b, stream.get());
    EXPECT_TRUE(agrees(r.filter_u8, ref.filter_u8));
    EXPECT_TRUE(agrees(r.filter_f32, ref.filter_f32));
    EXPECT_TRUE(same(r.tables.sum.view(), ref.tables.sum.view()));
    EXPECT_TRUE(same(r.tables.sqsum.view(), ref.tables.sqsum.view()));
    EXPECT_TRUE(same(r.tables.tilted.view(), ref.tables.tilted.view()));
    EXPECT_TRUE(agrees(r.haar_coeffs, ref.haar_coeffs, 0, 1e-5));
    EXPECT_TRUE(agrees(r.haar_back, ref.haar_back, 0, 1e-5));
    EXPECT_TRUE(same(r.scores_b, ref.scores_b));  // u8 score maps are bit-identical on every backend
    EXPECT_TRUE(same(r.match_b, ref.match_b));
    EXPECT_TRUE(same(r.scores_a, ref.scores_a));
    ASSERT_EQ(r.match_a.matches.size(), ref.match_a.matches.size());
    for (std::size_t i = 0; i < r.match_a.matches.size(); ++i) {
      EXPECT_EQ(r.match_a.matches[i].x, ref.match_a.matches[i].x) << "match " << i;
      EXPECT_EQ(r.match_a.matches[i].y, ref.match_a.matches[i].y) << "match " << i;
      EXPECT_EQ(r.match_a.matches[i].score, ref.match_a.matches[i].score) << "match " << i;
      EXPECT_EQ(r.match_a.matches[i].color_count, ref.match_a.matches[i].color_count) << "match " << i;
      EXPECT_EQ(r.match_a.matches[i].verdict, ref.match_a.matches[i].verdict) << "match " << i;
    }
  }
}

TEST(Threads, ConcurrentCallsGiveTheSingleThreadedResults) {
  const Inputs in = make_inputs();
  const std::vector<Backend> bs = backends();

  // The baselines, one per backend, on this thread before any other starts.
  std::vector<Results> want;
  for (Backend b : bs) {
    ThreadStream stream;
    Ops ops(in, b);
    want.push_back(run_all(ops, in, b, stream.get()));
  }

  std::mutex m;
  std::vector<std::string> failures;
  const auto fail = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(m);
    failures.push_back(what);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        ThreadStream stream;
        // Start on a different backend in each thread, so that ref, cpu and
        // cuda calls overlap.
        for (std::size_t k = 0; k < bs.size(); ++k) {
          const std::size_t i = (k + t) % bs.size();
          Ops ops(in, bs[i]);
          for (int round = 0; round < kRounds; ++round) {
            const Results got = run_all(ops, in, bs[i], stream.get());
            for (const std::string& d : differences(got, want[i]))
              fail("thread " + std::to_string(t) + ", " + to_string(bs[i]) + ", round " + std::to_string(round) +
                   ": " + d + " differs from the single-threaded result");
          }
        }
      } catch (const std::exception& e) {
        fail("thread " + std::to_string(t) + " threw: " + e.what());
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
}

TEST(Threads, ParsersAndOneShotCallsFromManyThreads) {
  // The parsers and the lazily built tables behind them (function-local
  // statics), first used from several threads at once.
  const Inputs in = make_inputs();
  const Kernel want_k = parse_kernel("gaussian:7:1.5");
  const std::string want_hsv = to_string(parse_hsv_range("170,50,60:10,255,255"));
  Image want(in.rgb.width(), in.rgb.height(), 3, PixelType::u8);
  filter2d(in.rgb, want, want_k, parse_border("reflect"), options_for(Backend::cpu, nullptr));

  std::mutex m;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      try {
        for (int round = 0; round < kRounds; ++round) {
          const Kernel k = parse_kernel("gaussian:7:1.5");
          const std::string hsv = to_string(parse_hsv_range("170,50,60:10,255,255"));
          Image got(in.rgb.width(), in.rgb.height(), 3, PixelType::u8);
          filter2d(in.rgb, got, k, parse_border("reflect"), options_for(Backend::cpu, nullptr));
          std::lock_guard<std::mutex> lock(m);
          if (k.coeffs != want_k.coeffs) failures.push_back("parse_kernel gave other coefficients");
          if (hsv != want_hsv) failures.push_back("parse_hsv_range printed " + hsv + ", not " + want_hsv);
          if (!same(got, want)) failures.push_back("filter2d differs from the single-threaded result");
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(m);
        failures.push_back(std::string("threw: ") + e.what());
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
}

}  // namespace
}  // namespace pixelkit::test
