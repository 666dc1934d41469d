// pixelkit video IN [OUT] --op filter --kernel SPEC [--border MODE]
// pixelkit video IN [OUT] --op haar-view [--levels L] [--normalize N]
// pixelkit video IN [OUT] --op match TEMPLATE [--method M] [--mask MASK] [--top K] [--min-distance D]
//                [--hsv-range H1,S1,V1:H2,S2,V2] [--min-fraction F] [--strategy S]
//   common: [--report FRAMES.csv|FRAMES.json] [--codec FOURCC] [--fps F] [--max-frames N] [--quiet]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "pixelkit/filter.hpp"
#include "pixelkit/haar.hpp"
#include "pixelkit/io.hpp"
#include "pixelkit/match.hpp"
#include "pixelkit/video.hpp"

namespace pixelkit::cli {

namespace {

namespace fs = std::filesystem;

struct VideoArgs {
  std::vector<std::string> paths;
  std::vector<std::string> op;
  std::string kernel, border = "reflect101";
  std::string levels = "3", normalize = "orthonormal";
  std::string mask;
  MatchOptions match;  // --method, --strategy, --top, --min-distance, --hsv-range, --min-fraction
  std::string report, codec;
  double fps = 25.0;
  long long max_frames = -1;
  bool quiet = false;
  CLI::Option *kernel_opt = nullptr, *border_opt = nullptr, *levels_opt = nullptr, *normalize_opt = nullptr;
  CLI::Option *mask_opt = nullptr, *fps_opt = nullptr;
};

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) { g_interrupted.store(true); }

// Installs the Ctrl-C handler for the run: the first Ctrl-C asks the pipeline
// to stop after the current frame; the handler is one-shot (SA_RESETHAND), so a
// second Ctrl-C kills the program as usual. A SIGINT that the parent set to be
// ignored (a background job of a script, nohup) stays ignored.
class SigintGuard {
 public:
  SigintGuard() {
    if (::sigaction(SIGINT, nullptr, &old_) != 0 || old_.sa_handler == SIG_IGN) return;
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    installed_ = ::sigaction(SIGINT, &sa, nullptr) == 0;
  }
  ~SigintGuard() {
    if (installed_) ::sigaction(SIGINT, &old_, nullptr);
  }
  SigintGuard(const SigintGuard&) = delete;
  SigintGuard& operator=(const SigintGuard&) = delete;

 private:
  struct sigaction old_ {};
  bool installed_ = false;
};

std::string clock_text(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) return "?";
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// The progress bar: on stderr, only when it is a terminal, redrawn at most ten
// times a second (and for the last frame).
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled) {}
  void update(const VideoProgress& p) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_ < std::chrono::milliseconds(100) && p.done != p.total) return;
    last_ = now;
    drawn_ = true;
    const double fps = p.elapsed_ms > 0 ? 1000.0 * static_cast<double>(p.done) / p.elapsed_ms : 0.0;
    char line[160];
    if (p.total > 0) {
      const double f = std::min(1.0, static_cast<double>(p.done) / static_cast<double>(p.total));
      char bar[31];
      const int fill = static_cast<int>(f * 30);
      for (int i = 0; i < 30; ++i) bar[i] = i < fill ? '#' : '.';
      bar[30] = '\0';
      const double left = fps > 0 ? static_cast<double>(p.total - p.done) / fps : -1;
      std::snprintf(line, sizeof line, "\r[%s] %lld/%lld frames %5.1f%%  %.1f frames/s  %s left", bar,
                    static_cast<long long>(p.done), static_cast<long long>(p.total), 100.0 * f, fps,
                    clock_text(left).c_str());
    } else {
      std::snprintf(line, sizeof line, "\r%lld frames  %.1f frames/s", static_cast<long long>(p.done), fps);
    }
    std::fputs(line, stderr);
    std::fputs("\033[K", stderr);
    std::fflush(stderr);
  }
  void clear() {
    if (enabled_ && drawn_) {
      std::fputs("\r\033[K", stderr);
      std::fflush(stderr);
    }
    drawn_ = false;
  }

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

// Options that belong to one operation are refused with the others, so that
// a mistyped command does not silently ignore them.
void refuse_foreign(const VideoArgs& a, VideoOp op) {
  struct Owned {
    CLI::Option* opt;
    const char* name;
    VideoOp op;
  };
  const Owned owned[] = {{a.kernel_opt, "--kernel", VideoOp::filter},
                         {a.border_opt, "--border", VideoOp::filter},
                         {a.levels_opt, "--levels", VideoOp::haar_view},
                         {a.normalize_opt, "--normalize", VideoOp::haar_view},
                         {a.mask_opt, "--mask", VideoOp::match},
                         {a.match.method_opt, "--method", VideoOp::match},
                         {a.match.top_opt, "--top", VideoOp::match},
                         {a.match.min_distance_opt, "--min-distance", VideoOp::match},
                         {a.match.hsv_opt, "--hsv-range", VideoOp::match},
                         {a.match.min_fraction_opt, "--min-fraction", VideoOp::match},
                         {a.match.strategy_opt, "--strategy", VideoOp::match}};
  for (const Owned& o : owned)
    PIXELKIT_EXPECTS(o.opt->count() == 0 || o.op == op, Status::invalid_argument,
                     std::string(o.name) + " applies to --op " + to_string(o.op) + ", not to --op " + to_string(op));
}

void run_video(VideoArgs& a) {
  RunInfo info;
  VideoRunOptions ro;
  ro.options = library_options(&info);

  // ---- arguments, every output checked before any work ----
  PIXELKIT_EXPECTS(!a.op.empty(), Status::invalid_argument, "--op is required: filter, haar-view or match TEMPLATE");
  const VideoOp op = for_option("--op", [&] { return parse_video_op(a.op[0]); });
  std::string templ_path;
  if (op == VideoOp::match) {
    PIXELKIT_EXPECTS(a.op.size() == 2, Status::invalid_argument,
                     "--op match needs the template: --op match TEMPLATE (an image file or .npy)");
    templ_path = a.op[1];
  } else {
    PIXELKIT_EXPECTS(a.op.size() == 1, Status::invalid_argument,
                     "--op " + a.op[0] + " takes no argument (got '" + a.op[1] +
                         "'); give IN and OUT before the options: pixelkit video IN OUT --op " + a.op[0] + " ...");
  }
  refuse_foreign(a, op);
  PIXELKIT_EXPECTS(!a.paths.empty() && a.paths.size() <= 2, Status::invalid_argument,
                   a.paths.empty() ? std::string("give the input video: pixelkit video IN [OUT] --op ...")
                                   : "too many paths: pixelkit video IN [OUT] --op ... (got " +
                                         std::to_string(a.paths.size()) + ")");
  const std::string in = a.paths[0];
  const std::string out = a.paths.size() == 2 ? a.paths[1] : std::string();
  PIXELKIT_EXPECTS(!out.empty() || op == VideoOp::match, Status::invalid_argument,
                   "give OUT, the output video (only --op match can run without one, for its --report)");
  PIXELKIT_EXPECTS(!out.empty() || !a.report.empty(), Status::invalid_argument,
                   "nothing to write: give OUT (the annotated video) and/or --report FRAMES.csv|.json");
  PIXELKIT_EXPECTS(a.max_frames >= -1, Status::invalid_argument, "--max-frames: must be 0 or more");
  PIXELKIT_EXPECTS(a.fps > 0 && a.fps < 1e6, Status::invalid_argument,
                   "--fps: " + number(a.fps, "%g") + " must be a positive frame rate");
  const std::vector<std::string> inputs = {in, templ_path, a.mask};
  if (!out.empty()) {
    check_output("OUT", out, inputs, /*image=*/false);
    for_option("OUT", [&] { check_frame_sink_path(out, a.codec); });
  } else {
    PIXELKIT_EXPECTS(a.codec.empty(), Status::invalid_argument, "--codec: there is no OUT video to encode");
  }
  if (!a.report.empty()) {
    check_output("--report", a.report, inputs, /*image=*/false);
    for_option("--report", [&] { check_video_report_path(a.report); });
    std::error_code ec;
    PIXELKIT_EXPECTS(out.empty() || fs::weakly_canonical(out, ec) != fs::weakly_canonical(a.report, ec),
                     Status::invalid_argument, "--report: '" + a.report + "' is also OUT");
  }
  const Kernel kernel =
      op == VideoOp::filter ? for_option("--kernel", [&] {
        PIXELKIT_EXPECTS(!a.kernel.empty(), Status::invalid_argument, "--op filter needs --kernel SPEC");
        return parse_kernel(a.kernel);
      })
                            : Kernel{};
  const Border border = for_option("--border", [&] { return parse_border(a.border); });
  const HaarNormalize norm = for_option("--normalize", [&] { return parse_haar_normalize(a.normalize); });
  const MatchParams params = op == VideoOp::match ? match_params(a.match) : MatchParams{};

  // FFmpeg and OpenCV print decoder complaints about damaged files on stderr
  // on their own; pixelkit reports those files itself in one line. --verbose
  // (or the variables set by the user) keeps their messages.
  if (!common().verbose) {
    ::setenv("OPENCV_FFMPEG_LOGLEVEL", "-8", 0);
    ::setenv("OPENCV_LOG_LEVEL", "ERROR", 0);
  }

  // ---- the input, the operation, the output ----
  (void)plan_backend(ro.options);  // the context, timed apart from "prepare" under --verbose
  Timer t_open;
  std::unique_ptr<FrameSource> source = open_frame_source(in, a.fps);
  const VideoFormat fmt = source->format();
  verbose("open", in + " " + describe(fmt), t_open.ms());

  Timer t_prep;
  Image templ, mask;
  std::string op_text = to_string(op);
  VideoPipeline pipeline = [&] {
    switch (op) {
      case VideoOp::filter:
        op_text += " " + kernel.name + " " + std::to_string(kernel.width) + "x" + std::to_string(kernel.height) +
                   ", border " + to_string(border);
        return VideoPipeline::filter(kernel, border);
      case VideoOp::haar_view: {
        const int levels = parse_haar_levels(a.levels, fmt.width, fmt.height,
                                            std::to_string(fmt.width) + "x" + std::to_string(fmt.height) + " frames",
                                            /*clamp=*/a.levels_opt->count() == 0);  // the default, 3, on tiny frames
        op_text += " " + std::to_string(levels) + " levels " + to_string(norm);
        return VideoPipeline::haar_view(levels, norm);
      }
      case VideoOp::match:
      default: {
        templ = read_image(templ_path);
        if (!a.mask.empty()) mask = read_image(a.mask);
        op_text += " " + std::string(to_string(params.method)) + ", template " + templ_path + " " +
                   std::to_string(templ.width()) + "x" + std::to_string(templ.height());
        return for_option("TEMPLATE '" + templ_path + "'",
                          [&] { return VideoPipeline::match(templ.cview(), params, mask.cview()); });
      }
    }
  }();
  const VideoFormat out_fmt = for_option("--op " + std::string(to_string(op)), [&] {
    try {
      return pipeline.output_format(fmt);
    } catch (const Error& e) {
      throw Error(e.status(), "'" + in + "': " + e.what());
    }
  });
  // OUT and the report are written all or nothing: OUT goes to a temporary
  // beside it (the sink's own atomic write lands there), the report likewise,
  // and both are renamed into place once both are complete.
  StagedOutputs outputs;
  std::unique_ptr<FrameSink> sink;
  if (!out.empty())
    sink = for_option("OUT", [&] {
      const std::string tmp = outputs.stage(out);
      std::unique_ptr<FrameSink> s;
      outputs.naming_outputs([&] { s = open_frame_sink(tmp, out_fmt, a.codec); });
      return s;
    });
  verbose("prepare", op_text + (out.empty() ? std::string() : " -> " + out), t_prep.ms());

  // ---- the run ----
  std::vector<FrameRecord> records;
  if (!a.report.empty() && fmt.frame_count > 0)
    records.reserve(static_cast<std::size_t>(std::min<std::int64_t>(fmt.frame_count, 1 << 20)));
  ProgressBar bar(!a.quiet && ::isatty(STDERR_FILENO) != 0);
  g_interrupted = false;
  ro.stop = &g_interrupted;
  ro.max_frames = a.max_frames;
  ro.on_frame = [&](const FrameRecord& r) {
    if (!a.report.empty()) records.push_back(r);
  };
  ro.on_progress = [&](const VideoProgress& p) { bar.update(p); };
  VideoSummary sum;
  {
    SigintGuard guard;
    try {
      outputs.naming_outputs([&] { sum = pipeline.run(*source, sink.get(), ro); });
    } catch (...) {
      bar.clear();
      throw;
    }
  }
  bar.clear();
  sink.reset();

  if (!a.report.empty() && sum.frames > 0) {
    Timer t;
    VideoReport rep;
    rep.input = in;
    rep.op = op;
    rep.format = fmt;
    rep.match = params;
    rep.summary = sum;
    rep.frames = std::move(records);
    outputs.write(a.report, [&](const std::string& tmp) { write_video_report(tmp, rep); });
    verbose("report", a.report + ", " + std::to_string(rep.frames.size()) + " rows", t.ms());
  }
  if (!out.empty() && !sum.output_written) outputs.drop(out);
  outputs.commit();

  const double n = static_cast<double>(sum.frames);
  verbose("decode", std::to_string(sum.frames) + " frames", sum.decode_ms);
  verbose("op", std::string(to_string(sum.backend)) + ": " + sum.path, sum.op_ms);
  verbose("draw", op == VideoOp::filter ? "none" : (op == VideoOp::match ? "match rectangles" : "haar picture"),
          sum.post_ms);
  verbose("encode", out.empty() ? "no OUT" : out, sum.encode_ms);
  if (!a.quiet && sum.frames > 0) {
    const double wall_s = sum.wall_ms / 1000.0;
    std::printf("%lld frames %dx%d in %.2f s: %.1f frames/s end to end; %s on %s alone: %.1f frames/s (%.3f ms/frame)\n",
                static_cast<long long>(sum.frames), fmt.width, fmt.height, wall_s, wall_s > 0 ? n / wall_s : 0.0,
                to_string(op), to_string(sum.backend), sum.op_ms > 0 ? 1000.0 * n / sum.op_ms : 0.0,
                n > 0 ? sum.op_ms / n : 0.0);
    std::fflush(stdout);
  }

  std::string kept;
  if (sum.output_written) kept = "'" + out + "'";
  if (!a.report.empty() && sum.frames > 0) kept += (kept.empty() ? "'" : " and '") + a.report + "'";
  const std::string holds = kept.empty() ? std::string("nothing was written")
                                         : kept + (kept.find(" and ") != std::string::npos ? " hold them" : " holds them");
  if (sum.stop == VideoStop::input_error)
    throw Error(sum.input_status == Status::invalid_argument ? Status::io : sum.input_status,
                std::string(sum.message) + "; " + std::to_string(sum.frames) + " frame" +
                    (sum.frames == 1 ? "" : "s") + " processed, " + holds);
  if (sum.stop == VideoStop::interrupted) {
    std::fprintf(stderr, "pixelkit video: interrupted after %lld frame%s; %s\n", static_cast<long long>(sum.frames),
                 sum.frames == 1 ? "" : "s", holds.c_str());
    std::fflush(stderr);
    std::exit(130);
  }
  PIXELKIT_EXPECTS(sum.frames > 0, Status::io, "'" + in + "' has no frames; nothing was written");
}

Action setup(CLI::App& sub) {
  static VideoArgs a;
  a = VideoArgs{};
  MatchOptions& m = a.match;
  sub.add_option("PATHS", a.paths,
                 "IN [OUT]: the input video (any format OpenCV's FFmpeg backend reads, or an .npy frame stack N x H x "
                 "W [x C] u8) and the output (.avi MJPG, .mp4/.m4v/.mov mp4v, .mkv XVID, or .npy); OUT may be "
                 "omitted with --op match --report");
  sub.add_option("--op", a.op, "filter | haar-view | match TEMPLATE")->expected(1, 2);
  a.kernel_opt = sub.add_option("-k,--kernel", a.kernel,
                                "filter: box:N | gaussian:N[:SIGMA] | sharpen | edge | laplacian | emboss | "
                                "unsharp:N[:AMOUNT] | \"1,2,1;2,4,2;1,2,1/16\" | @FILE");
  a.border_opt = sub.add_option("-b,--border", a.border, "filter: constant[:V] | replicate | reflect | reflect101 | wrap")
                     ->capture_default_str();
  a.levels_opt =
      sub.add_option("-l,--levels", a.levels, "haar-view: levels, 1..max or 'max'")->capture_default_str();
  a.normalize_opt = sub.add_option("-n,--normalize", a.normalize, "haar-view: orthonormal | average")
                        ->capture_default_str();
  m.method_opt = sub.add_option("-m,--method", m.method,
                                "match: sqdiff | sqdiff_normed | ccorr | ccorr_normed | ccoeff | ccoeff_normed")
                     ->capture_default_str();
  a.mask_opt = sub.add_option("--mask", a.mask, "match: u8 mask of the template's size (non-zero = counts)");
  m.top_opt = sub.add_option("--top", m.top, "match: the K best matches per frame (non-maximum suppression)")
                  ->capture_default_str();
  m.min_distance_opt = sub.add_option("--min-distance", m.min_distance,
                                      "match: NMS distance (Chebyshev); default max(1, min(w, h) / 2)");
  m.hsv_opt = sub.add_option("--hsv-range", m.hsv,
                             "match: H1,S1,V1:H2,S2,V2 (OpenCV 8-bit HSV): count each match's pixels in range");
  m.min_fraction_opt = sub.add_option("--min-fraction", m.min_fraction,
                                      "match, with --hsv-range: a match passes when this fraction (0..1) is in range; "
                                      "failing matches are drawn in red");
  m.strategy_opt = sub.add_option("--strategy", m.strategy, "match: auto | direct | fft")->capture_default_str();
  sub.add_option("--report", a.report, "per-frame report: FRAMES.csv or FRAMES.json (index, timestamp, matches)");
  sub.add_option("--codec", a.codec, "FourCC of the output video (default by container; FFV1 is lossless)");
  a.fps_opt = sub.add_option("--fps", a.fps, "frame rate of an .npy input (videos carry their own)")
                  ->capture_default_str();
  sub.add_option("--max-frames", a.max_frames, "stop after N frames (-1: all)")->capture_default_str();
  sub.add_flag("-q,--quiet", a.quiet, "no progress bar and no summary");
  return [] { run_video(a); };
}

const bool registered = register_command(
    "video", "Run filter, haar-view or match (with its colour check) on every frame of a video", setup);

}  // namespace
}  // namespace pixelkit::cli
