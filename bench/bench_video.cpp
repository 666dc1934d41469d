// bench_video - the video pipeline (issue 6): frames/s end to end and for the
// operation alone, per backend, on 720p, 1080p and 4K RGB clips, for template
// matching (64x64 and 256x256 templates, sqdiff, with the colour check) and a
// 5x5 Gaussian filter; beside it a plain loop of OpenCV's matchTemplate /
// filter2D on the CPU over the same frames (builds with OpenCV).
//
//   bench_video [--quick] [--frames N] [--cpu-frames N] [--backends cuda,cpu]
//               [--sizes 720p,1080p,4k] [--csv FILE] [--file-dir DIR]
//
// The clip: a smoothly textured background that pans, with a 64x64 and a
// 256x256 blue-tinted patch (the templates) moving along known paths;
// `unique` distinct frames played in a loop to N frames (so that 4K clips fit
// in memory). Every frame's best match must be at its patch's known position:
// the row's check column counts the frames where it was not.
//
// Sources and sinks:
//   memory  frames served from memory (the "decode" is a copy), output frames
//           dropped: the pipeline's own capacity, what pixelkit can sustain.
//   file    (builds with OpenCV videoio, --file-dir given) the clip written as
//           an .mp4 (mp4v) first, then: the decoding rate alone (read every
//           frame, nothing else) and the pipeline end to end from the file to
//           an .mp4 output (decode, operation, drawing, encode).
// Columns: first frame ms = from the start of the run to the first frame
// written (pool and plan setup, first frame); steady fps = frames 2..N over
// the time from the first to the last frame written (what a long video
// sees); e2e fps = frames / wall time of the whole run; op fps = frames / the
// operation's busy time (cuda: GPU time of its kernels by CUDA events,
// transfers excluded; host backends: the calls); decode, op, post and encode
// ms are busy times per frame of each stage (they overlap on their threads).
//
// The GPU machine has no video decoder in C++: there bench/peers/video_cv2.py
// measures the decoding rate (OpenCV-Python's FFmpeg) and the OpenCV CPU
// loops on the same sizes.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pixelkit/backend.hpp"
#include "pixelkit/error.hpp"
#include "pixelkit/filter.hpp"
#include "pixelkit/image.hpp"
#include "pixelkit/match.hpp"
#include "pixelkit/video.hpp"

#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace {

using namespace pixelkit;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// ---- the clip ---------------------------------------------------------------------

struct Clip {
  int W = 0, H = 0;
  std::vector<Image> frames;             // `unique` distinct RGB frames
  Image patch64, patch256;               // the templates
  std::vector<int> x64, y64, x256, y256;  // their positions per distinct frame
};

void blue_patch(Image& p, unsigned seed) {
  std::mt19937 rng(seed);
  for (int y = 0; y < p.height(); ++y) {
    std::uint8_t* r = p.row<std::uint8_t>(y);
    for (int x = 0; x < p.width(); ++x) {
      r[3 * x + 0] = static_cast<std::uint8_t>(rng() % 80);
      r[3 * x + 1] = static_cast<std::uint8_t>(40 + rng() % 80);
      r[3 * x + 2] = static_cast<std::uint8_t>(150 + rng() % 106);
    }
  }
}

Clip make_clip(int W, int H, int unique) {
  Clip c;
  c.W = W;
  c.H = H;
  // Background: a coarse random colour grid, bilinearly enlarged, plus noise;
  // twice the frame's size so that frames can pan over it.
  const int BW = 2 * W, BH = 2 * H, cell = 24;
  const int gw = BW / cell + 2, gh = BH / cell + 2;
  std::mt19937 rng(7);
  std::vector<float> grid(static_cast<std::size_t>(gw) * gh * 3);
  for (float& g : grid) g = static_cast<float>(rng() % 256);
  Image bg(BW, BH, 3, PixelType::u8);
  for (int y = 0; y < BH; ++y) {
    const float fy = static_cast<float>(y) / cell;
    const int gy = static_cast<int>(fy);
    const float ty = fy - gy;
    std::uint8_t* r = bg.row<std::uint8_t>(y);
    for (int x = 0; x < BW; ++x) {
      const float fx = static_cast<float>(x) / cell;
      const int gx = static_cast<int>(fx);
      const float tx = fx - gx;
      for (int ch = 0; ch < 3; ++ch) {
        auto g = [&](int i, int j) { return grid[(static_cast<std::size_t>(j) * gw + i) * 3 + ch]; };
        const float v = (1 - ty) * ((1 - tx) * g(gx, gy) + tx * g(gx + 1, gy)) +
                        ty * ((1 - tx) * g(gx, gy + 1) + tx * g(gx + 1, gy + 1));
        const int n = static_cast<int>(rng() % 17) - 8;
        r[3 * x + ch] = static_cast<std::uint8_t>(std::clamp(static_cast<int>(v) + n, 0, 255));
      }
    }
  }
  c.patch64 = Image(64, 64, 3, PixelType::u8);
  c.patch256 = Image(256, 256, 3, PixelType::u8);
  blue_patch(c.patch64, 11);
  blue_patch(c.patch256, 12);
  const double pi = 3.14159265358979323846;
  for (int i = 0; i < unique; ++i) {
    const double t = 2 * pi * i / unique;
    const int ox = static_cast<int>((W / 2) * (0.5 + 0.5 * std::sin(t)));
    const int oy = static_cast<int>((H / 2) * (0.5 + 0.5 * std::cos(t)));
    Image f(W, H, 3, PixelType::u8);
    copy(bg.cview().sub(ox, oy, W, H), f.view());
    // The 256 patch in the left half, the 64 patch in the right half.
    const int x2 = 8 + static_cast<int>((W / 2 - 256 - 16) * (0.5 + 0.5 * std::cos(t)));
    const int y2 = 8 + static_cast<int>((H - 256 - 16) * (0.5 + 0.5 * std::sin(2 * t)));
    const int x1 = W / 2 + 8 + static_cast<int>((W / 2 - 64 - 16) * (0.5 + 0.5 * std::sin(t)));
    const int y1 = 8 + static_cast<int>((H - 64 - 16) * (0.5 + 0.5 * std::cos(3 * t)));
    copy(c.patch256.cview(), f.view().sub(x2, y2, 256, 256));
    copy(c.patch64.cview(), f.view().sub(x1, y1, 64, 64));
    c.x256.push_back(x2);
    c.y256.push_back(y2);
    c.x64.push_back(x1);
    c.y64.push_back(y1);
    c.frames.push_back(std::move(f));
  }
  return c;
}

// The distinct frames in a loop, `total` frames in all.
class LoopSource final : public FrameSource {
 public:
  LoopSource(const Clip& clip, std::int64_t total) : clip_(clip), total_(total) {
    format_.width = clip.W;
    format_.height = clip.H;
    format_.channels = 3;
    format_.fps = 30;
    format_.frame_count = total;
  }
  const VideoFormat& format() const noexcept override { return format_; }
  bool read(const ImageView& frame) override {
    if (next_ >= total_) return false;
    copy(clip_.frames[static_cast<std::size_t>(next_ % clip_.frames.size())].cview(), frame);
    ++next_;
    return true;
  }
  std::int64_t frames_read() const noexcept override { return next_; }
  std::string name() const override { return "memory"; }

 private:
  const Clip& clip_;
  std::int64_t total_;
  VideoFormat format_;
  std::int64_t next_ = 0;
};

class NullSink final : public FrameSink {
 public:
  void write(const ConstImageView&) override { ++n_; }
  void finish() override {}
  void abort() noexcept override {}
  std::int64_t frames_written() const noexcept override { return n_; }

 private:
  std::int64_t n_ = 0;
};

// ---- runs -------------------------------------------------------------------------

struct Row {
  std::string size, op, runner, source;
  std::int64_t frames = 0;
  double first_ms = 0;    // from the start of the run to the first frame written (setup, plans, first frame)
  double steady_fps = 0;  // frames 2..N over the time between the first and the last frame written
  double e2e_fps = 0, op_fps = 0, decode_ms = 0, op_ms = 0, post_ms = 0, encode_ms = 0;
  std::int64_t wrong = 0;  // frames whose best match is not the known position
  std::string note;
};
std::vector<Row> g_rows;
std::FILE* g_csv = nullptr;

void print_row(const Row& r) {
  const double f = r.frames > 0 ? static_cast<double>(r.frames) : 1.0;
  std::printf("| %s | %s | %s | %s | %lld | %.1f | %.1f | %.1f | %s | %.2f | %.2f | %.2f | %.2f | %s | %s |\n",
              r.size.c_str(), r.op.c_str(), r.runner.c_str(), r.source.c_str(), static_cast<long long>(r.frames),
              r.first_ms, r.steady_fps, r.e2e_fps,
              r.op_fps > 0 ? (std::to_string(static_cast<long long>(std::llround(r.op_fps)))).c_str() : "",
              r.decode_ms / f, r.op_ms / f, r.post_ms / f, r.encode_ms / f,
              r.op.rfind("match", 0) == 0 ? (r.wrong == 0 ? "ok" : (std::to_string(r.wrong) + " wrong").c_str()) : "-",
              r.note.c_str());
  std::fflush(stdout);
  if (g_csv)
    std::fprintf(g_csv, "%s,%s,%s,%s,%lld,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%.4f,%.4f,%lld,\"%s\"\n", r.size.c_str(),
                 r.op.c_str(), r.runner.c_str(), r.source.c_str(), static_cast<long long>(r.frames), r.first_ms,
                 r.steady_fps, r.e2e_fps, r.op_fps,
                 r.decode_ms / f, r.op_ms / f, r.post_ms / f, r.encode_ms / f, static_cast<long long>(r.wrong),
                 r.note.c_str());
}

struct OpSpec {
  std::string name;  // match64, match256, filter5
  int templ = 0;     // 64 or 256 for match
};

MatchParams match_params() {
  MatchParams p;
  p.method = MatchMethod::sqdiff;
  p.color_check = true;
  p.hsv = parse_hsv_range("90,50,50:135,255,255");
  p.min_fraction = 0.5;
  return p;
}

VideoPipeline make_pipeline(const OpSpec& op, const Clip& clip) {
  if (op.templ == 64) return VideoPipeline::match(clip.patch64.cview(), match_params());
  if (op.templ == 256) return VideoPipeline::match(clip.patch256.cview(), match_params());
  return VideoPipeline::filter(Kernel::gaussian(5));
}

// Times of the first and the last frame written, from on_progress.
struct Pace {
  double first = -1, last = 0;
  std::int64_t n = 0;
  void attach(VideoRunOptions& ro) {
    ro.on_progress = [this](const VideoProgress& p) {
      if (first < 0) first = p.elapsed_ms;
      last = p.elapsed_ms;
      n = p.done;
    };
  }
  void fill(Row& r) const {
    r.first_ms = first < 0 ? 0 : first;
    r.steady_fps = n > 1 && last > first ? 1000.0 * static_cast<double>(n - 1) / (last - first) : 0;
  }
};

Row run_pipeline(const std::string& size, const OpSpec& op, const Clip& clip, Backend backend, FrameSource& source,
                 FrameSink* sink, const std::string& source_name) {
  VideoPipeline pipe = make_pipeline(op, clip);
  VideoRunOptions ro;
  ro.options.backend = backend;
  std::atomic<std::int64_t> wrong{0};
  const std::size_t K = clip.frames.size();
  if (op.templ) {
    const std::vector<int>& xs = op.templ == 64 ? clip.x64 : clip.x256;
    const std::vector<int>& ys = op.templ == 64 ? clip.y64 : clip.y256;
    ro.on_frame = [&](const FrameRecord& rec) {
      const std::size_t i = static_cast<std::size_t>(rec.index) % K;
      if (rec.matches.empty() || rec.matches[0].x != xs[i] || rec.matches[0].y != ys[i] ||
          rec.matches[0].verdict != Verdict::pass)
        ++wrong;
    };
  }
  Pace pace;
  pace.attach(ro);
  const VideoSummary s = pipe.run(source, sink, ro);
  Row r;
  pace.fill(r);
  r.size = size;
  r.op = op.name;
  r.runner = std::string("pixelkit ") + to_string(s.backend);
  r.source = source_name;
  r.frames = s.frames;
  r.e2e_fps = s.wall_ms > 0 ? 1000.0 * static_cast<double>(s.frames) / s.wall_ms : 0;
  r.op_fps = s.op_ms > 0 ? 1000.0 * static_cast<double>(s.frames) / s.op_ms : 0;
  r.decode_ms = s.decode_ms;
  r.op_ms = s.op_ms;
  r.post_ms = s.post_ms;
  r.encode_ms = s.encode_ms;
  r.wrong = wrong.load();
  r.note = s.path;
  if (s.stop != VideoStop::end) r.note += " (stopped: " + s.message + ")";
  return r;
}

#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
// A plain loop of OpenCV on the CPU over the same frames: matchTemplate
// (TM_SQDIFF) + minMaxLoc + the HSV count in the match rectangle, or filter2D
// with the same 5x5 Gaussian.
Row run_opencv(const std::string& size, const OpSpec& op, const Clip& clip, std::int64_t frames) {
  const std::size_t K = clip.frames.size();
  auto mat = [](const Image& im) {
    return cv::Mat(im.height(), im.width(), CV_8UC3, const_cast<void*>(im.cview().data),
                   static_cast<std::size_t>(im.cview().pitch));
  };
  Row r;
  r.size = size;
  r.op = op.name;
  r.runner = "OpenCV CPU loop";
  r.source = "memory";
  r.frames = frames;
  cv::Mat result, out, hsv, in_range;
  const Kernel k = Kernel::gaussian(5);
  const cv::Mat kmat(5, 5, CV_32F, const_cast<float*>(k.coeffs.data()));
  const Image& patch = op.templ == 64 ? clip.patch64 : clip.patch256;
  const cv::Mat templ = op.templ ? mat(patch) : cv::Mat();
  // warm up
  if (op.templ) cv::matchTemplate(mat(clip.frames[0]), templ, result, cv::TM_SQDIFF);
  else cv::filter2D(mat(clip.frames[0]), out, -1, kmat, cv::Point(-1, -1), 0, cv::BORDER_REFLECT_101);
  const auto t0 = Clock::now();
  for (std::int64_t i = 0; i < frames; ++i) {
    const std::size_t u = static_cast<std::size_t>(i) % K;
    const cv::Mat f = mat(clip.frames[u]);
    if (op.templ) {
      cv::matchTemplate(f, templ, result, cv::TM_SQDIFF);
      double mn = 0, mx = 0;
      cv::Point lo, hi;
      cv::minMaxLoc(result, &mn, &mx, &lo, &hi);
      cv::cvtColor(f(cv::Rect(lo.x, lo.y, op.templ, op.templ)), hsv, cv::COLOR_RGB2HSV);
      cv::inRange(hsv, cv::Scalar(90, 50, 50), cv::Scalar(135, 255, 255), in_range);
      const int count = cv::countNonZero(in_range);
      const std::vector<int>& xs = op.templ == 64 ? clip.x64 : clip.x256;
      const std::vector<int>& ys = op.templ == 64 ? clip.y64 : clip.y256;
      if (lo.x != xs[u] || lo.y != ys[u] || count < op.templ * op.templ / 2) ++r.wrong;
    } else {
      cv::filter2D(f, out, -1, kmat, cv::Point(-1, -1), 0, cv::BORDER_REFLECT_101);
    }
  }
  const double ms = ms_since(t0);
  r.e2e_fps = r.steady_fps = 1000.0 * static_cast<double>(frames) / ms;
  r.op_ms = ms;
  r.note = std::string("OpenCV ") + CV_VERSION + ", " + std::to_string(cv::getNumThreads()) + " threads";
  return r;
}
#endif

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "bench_video: %s\n", why.c_str());
  std::fprintf(stderr,
               "usage: bench_video [--quick] [--frames N] [--cpu-frames N] [--backends cuda,cpu] "
               "[--sizes 720p,1080p,4k] [--csv FILE] [--file-dir DIR]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t frames = 300, cpu_frames = 30;
  int unique = 30;
  std::vector<std::string> backends, sizes = {"720p", "1080p", "4k"};
  std::string csv, file_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--quick") {
      frames = 60;
      cpu_frames = 8;
      unique = 12;
    } else if (a == "--frames") {
      frames = std::atoll(value().c_str());
    } else if (a == "--cpu-frames") {
      cpu_frames = std::atoll(value().c_str());
    } else if (a == "--backends") {
      backends = split(value());
    } else if (a == "--sizes") {
      sizes = split(value());
    } else if (a == "--csv") {
      csv = value();
    } else if (a == "--file-dir") {
      file_dir = value();
    } else {
      usage("unknown argument " + a);
    }
  }
  if (frames < 1 || cpu_frames < 1) usage("--frames and --cpu-frames must be >= 1");
  if (backends.empty()) {
    if (cuda_available()) backends.push_back("cuda");
    backends.push_back("cpu");
  }
  if (!csv.empty()) {
    g_csv = std::fopen(csv.c_str(), "w");
    if (!g_csv) usage("cannot write " + csv);
    std::fprintf(g_csv, "size,op,runner,source,frames,first_ms,steady_fps,e2e_fps,op_fps,decode_ms,op_ms,post_ms,encode_ms,wrong,note\n");
  }
  std::printf("bench_video: %s; CPU threads %u; video codecs in this build: %s\n",
              cuda_available() ? "CUDA device present" : "no CUDA device", std::thread::hardware_concurrency(),
              have_video_codecs() ? "yes (OpenCV videoio)" : "no");
  std::printf("frames per run: %lld on cuda, %lld on host backends and OpenCV (%d distinct frames in a loop)\n\n",
              static_cast<long long>(frames), static_cast<long long>(cpu_frames), unique);
  std::printf("| size | op | runner | source | frames | first frame ms | steady fps | e2e fps | op fps | decode ms/f | "
              "op ms/f | post ms/f | encode ms/f | check | path |\n"
              "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");

  const std::vector<OpSpec> ops = {{"match64", 64}, {"match256", 256}, {"filter5", 0}};
  int failures = 0;
  for (const std::string& size : sizes) {
    int W = 0, H = 0;
    if (size == "720p") W = 1280, H = 720;
    else if (size == "1080p") W = 1920, H = 1080;
    else if (size == "4k") W = 3840, H = 2160;
    else usage("unknown size " + size);
    const Clip clip = make_clip(W, H, unique);
    for (const OpSpec& op : ops) {
      for (const std::string& b : backends) {
        const Backend backend = parse_backend(b);
        const std::int64_t n = backend == Backend::cuda ? frames : cpu_frames;
        try {
          LoopSource src(clip, n);
          NullSink sink;
          const Row r = run_pipeline(size, op, clip, backend, src, &sink, "memory");
          print_row(r);
          if (r.wrong) ++failures;
        } catch (const Error& e) {
          std::printf("| %s | %s | pixelkit %s | memory | | | | | | | | | | error | %s |\n", size.c_str(), op.name.c_str(),
                      b.c_str(), e.what());
          ++failures;
        }
      }
#if defined(PIXELKIT_BENCH_HAVE_OPENCV)
      const Row r = run_opencv(size, op, clip, cpu_frames);
      print_row(r);
      if (r.wrong) ++failures;
#endif
    }
    // From a real file: decode alone, then end to end to an .mp4.
    if (!file_dir.empty() && have_video_codecs()) {
      const std::int64_t n = std::max(frames, cpu_frames);
      const std::string in = file_dir + "/bench_video_" + size + ".mp4";
      const std::string out = file_dir + "/bench_video_" + size + "_out.mp4";
      try {
        {
          LoopSource src(clip, n);
          auto sink = open_frame_sink(in, src.format());
          Image f(W, H, 3, PixelType::u8);
          while (src.read(f.view())) sink->write(f.cview());
          sink->finish();
        }
        {
          auto src = open_frame_source(in);
          Image f(W, H, 3, PixelType::u8);
          std::int64_t got = 0;
          const auto t0 = Clock::now();
          while (src->read(f.view())) ++got;
          const double ms = ms_since(t0);
          Row r;
          r.size = size;
          r.op = "decode only";
          r.runner = "OpenCV videoio (FFmpeg)";
          r.source = "mp4v file";
          r.frames = got;
          r.e2e_fps = r.steady_fps = 1000.0 * static_cast<double>(got) / ms;
          r.decode_ms = ms;
          print_row(r);
        }
        for (const OpSpec& op : ops)
          for (const std::string& b : backends) {
            const Backend backend = parse_backend(b);
            auto src = open_frame_source(in);
            VideoFormat fmt = src->format();
            const std::int64_t limit = backend == Backend::cuda ? n : cpu_frames;
            VideoPipeline pipe = make_pipeline(op, clip);
            auto sink = open_frame_sink(out, pipe.output_format(fmt));
            VideoRunOptions ro;
            ro.options.backend = backend;
            ro.max_frames = limit;
            std::atomic<std::int64_t> wrong{0};
            if (op.templ) {
              const std::vector<int>& xs = op.templ == 64 ? clip.x64 : clip.x256;
              const std::vector<int>& ys = op.templ == 64 ? clip.y64 : clip.y256;
              ro.on_frame = [&](const FrameRecord& rec) {
                const std::size_t i = static_cast<std::size_t>(rec.index) % clip.frames.size();
                if (rec.matches.empty() || rec.matches[0].x != xs[i] || rec.matches[0].y != ys[i]) ++wrong;
              };
            }
            Pace pace;
            pace.attach(ro);
            const VideoSummary s = pipe.run(*src, sink.get(), ro);
            Row r;
            pace.fill(r);
            r.size = size;
            r.op = op.name;
            r.runner = std::string("pixelkit ") + to_string(s.backend);
            r.source = "mp4v file -> mp4v file";
            r.frames = s.frames;
            r.e2e_fps = s.wall_ms > 0 ? 1000.0 * static_cast<double>(s.frames) / s.wall_ms : 0;
            r.op_fps = s.op_ms > 0 ? 1000.0 * static_cast<double>(s.frames) / s.op_ms : 0;
            r.decode_ms = s.decode_ms;
            r.op_ms = s.op_ms;
            r.post_ms = s.post_ms;
            r.encode_ms = s.encode_ms;
            r.wrong = wrong.load();
            r.note = "lossy codec: positions checked, not pixels";
            print_row(r);
          }
        std::remove(in.c_str());
        std::remove(out.c_str());
      } catch (const Error& e) {
        std::printf("| %s | file | | | | | | | | | | | | error | %s |\n", size.c_str(), e.what());
        ++failures;
      }
    }
  }
  if (g_csv) std::fclose(g_csv);
  if (failures) std::printf("\n%d run(s) failed their check\n", failures);
  return failures ? 1 : 0;
}
