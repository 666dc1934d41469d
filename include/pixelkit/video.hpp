// pixelkit/video.hpp - an operation on every frame of a video.
//
// Frames come from a FrameSource and go to a FrameSink:
//   * video files through OpenCV's videoio (its FFmpeg backend) when the build
//     has it (have_video_codecs());
//   * .npy frame stacks (N x H x W or N x H x W x C, u8), pixelkit's own code,
//     always available, so that the GPU part builds and is measured on
//     machines without a video decoder;
//   * in-memory stacks (MemoryFrameSource / MemoryFrameSink).
// Every frame is u8 with 1, 3 or 4 interleaved channels, colour in RGB(A)
// order (as read_image gives images; video files are converted from and to
// OpenCV's BGR on the way in and out).
//
// A VideoPipeline applies one operation to every frame: a 2D filter, a
// picture of the frame's Haar pyramid, or template matching with the match
// rectangles drawn on the frame. Decoding and encoding run on their own
// threads, frames travel through bounded queues in a fixed pool allocated
// before the first frame, and on cuda the frames go through two or three
// streams with pinned host buffers so that upload, GPU work and download of
// consecutive frames overlap. The operation objects (Filter2D, HaarTransform,
// Matcher) are created once per run, the template prepared once.
//
// Outputs are written to a temporary file in the destination's folder and
// renamed into place when the run stops cleanly, so a failed run leaves no
// partial file at the destination and does not touch an existing one.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pixelkit/backend.hpp"
#include "pixelkit/filter.hpp"
#include "pixelkit/haar.hpp"
#include "pixelkit/image.hpp"
#include "pixelkit/match.hpp"

namespace pixelkit {

/// The shape and rate of a stream of frames.
struct VideoFormat {
  int width = 0;
  int height = 0;
  int channels = 0;               ///< 1 (grey), 3 (RGB) or 4 (RGBA); frames are u8
  double fps = 0;                 ///< frames per second, > 0
  std::int64_t frame_count = -1;  ///< frames in the input when known (container header), else -1
};

/// "1280x720x3 at 25 fps, 300 frames", for messages.
std::string describe(const VideoFormat& format);

/// True when this build reads and writes video files (OpenCV videoio);
/// without it only .npy frame stacks and memory stacks are available.
bool have_video_codecs() noexcept;

// ---- sources ----------------------------------------------------------------

/// Where frames come from, one after the other.
class FrameSource {
 public:
  virtual ~FrameSource() = default;
  /// Width, height and channels of every frame, the frame rate and, when
  /// known, the frame count.
  virtual const VideoFormat& format() const noexcept = 0;
  /// Decodes the next frame into `frame`: host or pinned memory, u8,
  /// format()'s width, height and channels, any pitch. Returns false at the
  /// end of the stream. Throws Error(io) when the input turns out truncated or
  /// corrupt (fewer frames than its header announces, undecodable data) and
  /// Error(invalid_argument) when a frame's size differs from the first; the
  /// message names the source and says how many frames were read.
  virtual bool read(const ImageView& frame) = 0;
  /// Frames returned by read() so far.
  virtual std::int64_t frames_read() const noexcept = 0;
  /// The file name (or "memory"), for messages.
  virtual std::string name() const = 0;
};

/// Frames held in memory: host u8 images of one size (a frame of another
/// size is reported by read() when reached, as a video file's would be).
class MemoryFrameSource : public FrameSource {
 public:
  /// Throws invalid_argument for an empty list, a first frame that is not a
  /// host u8 image of 1, 3 or 4 channels, or fps <= 0.
  explicit MemoryFrameSource(std::vector<Image> frames, double fps = 25.0, std::string name = "memory");
  const VideoFormat& format() const noexcept override { return format_; }
  bool read(const ImageView& frame) override;
  std::int64_t frames_read() const noexcept override { return next_; }
  std::string name() const override { return name_; }

 private:
  std::vector<Image> frames_;
  VideoFormat format_;
  std::string name_;
  std::int64_t next_ = 0;
};

/// An .npy frame stack: u8, shape (N, H, W) for grey frames or (N, H, W, C)
/// with C in 1, 3, 4. Read whole into memory with pixelkit's npy code
/// (parse_npy). A stack has no frame rate: `fps` gives it. A stack whose file
/// is cut short (its header intact) serves its complete frames, then read()
/// throws io saying how many of the N frames were present.
class NpyFrameSource : public FrameSource {
 public:
  /// Throws io when the file is missing, unreadable, truncated or not a u8
  /// frame stack (naming the path and what is wrong), invalid_argument for
  /// fps <= 0.
  explicit NpyFrameSource(const std::string& path, double fps = 25.0);
  const VideoFormat& format() const noexcept override { return format_; }
  bool read(const ImageView& frame) override;
  std::int64_t frames_read() const noexcept override { return next_; }
  std::string name() const override { return path_; }

 private:
  std::string path_;
  std::vector<unsigned char> bytes_;  // the stack's pixels, frame after frame
  VideoFormat format_;
  std::int64_t next_ = 0;
  std::int64_t truncated_at_ = -1;  // a truncated file: the complete frames present
};

/// Opens `path` by its extension: .npy -> NpyFrameSource (at `npy_fps`),
/// anything else -> a video file through OpenCV's videoio (FFmpeg backend).
/// Throws io naming the path when it is missing or cannot be decoded,
/// unsupported for a video file in a build without videoio.
std::unique_ptr<FrameSource> open_frame_source(const std::string& path, double npy_fps = 25.0);

// ---- sinks ------------------------------------------------------------------

/// Where frames go. A sink that is destroyed (or abort()ed) before finish()
/// leaves nothing behind: not its temporary file, and any existing file at its
/// destination untouched.
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  /// Appends a frame: host or pinned u8, the sink's width, height and
  /// channels. Throws io when the write fails.
  virtual void write(const ConstImageView& frame) = 0;
  /// Completes the output: a file is flushed, closed (a video container gets
  /// its index) and renamed over the destination, then valid and playable.
  /// Throws io when that fails (the temporary file is then removed).
  virtual void finish() = 0;
  /// Discards everything written; never throws.
  virtual void abort() noexcept = 0;
  virtual std::int64_t frames_written() const noexcept = 0;
};

/// Keeps copies of the frames in memory (host images).
class MemoryFrameSink : public FrameSink {
 public:
  MemoryFrameSink() = default;
  void write(const ConstImageView& frame) override;
  void finish() override { finished_ = true; }
  void abort() noexcept override { frames_.clear(); }
  std::int64_t frames_written() const noexcept override { return static_cast<std::int64_t>(frames_.size()); }
  bool finished() const noexcept { return finished_; }
  const std::vector<Image>& frames() const noexcept { return frames_; }

 private:
  std::vector<Image> frames_;
  bool finished_ = false;
};

/// Writes an .npy frame stack, (N, H, W) for 1 channel, else (N, H, W, C),
/// streamed to a temporary file whose header receives N at finish().
class NpyFrameSink : public FrameSink {
 public:
  /// Creates the temporary file now (so an unwritable folder fails before any
  /// work). Throws invalid_argument for a bad shape, io for the file.
  NpyFrameSink(const std::string& path, int width, int height, int channels);
  ~NpyFrameSink() override;
  NpyFrameSink(const NpyFrameSink&) = delete;
  NpyFrameSink& operator=(const NpyFrameSink&) = delete;
  void write(const ConstImageView& frame) override;
  void finish() override;
  void abort() noexcept override;
  std::int64_t frames_written() const noexcept override { return frames_; }

 private:
  void write_header(std::int64_t frames);
  std::string path_, tmp_;
  int width_, height_, channels_;
  std::FILE* file_ = nullptr;
  std::int64_t frames_ = 0;
};

/// The video codec (FourCC) used for `path` when none is given: .avi MJPG,
/// .mp4 .m4v .mov mp4v, .mkv XVID. Throws invalid_argument naming the
/// supported containers for any other extension (.npy is not a video
/// container: see open_frame_sink).
std::string default_fourcc(const std::string& path);

/// Checks, before any work, that open_frame_sink can write `path`: a known
/// extension (.npy or a container above), a FourCC of 4 printable characters
/// if one is given, videoio in this build for a video file, an existing
/// folder. Throws invalid_argument, unsupported or io accordingly.
void check_frame_sink_path(const std::string& path, const std::string& fourcc = "");

/// Creates the sink for `path` by its extension: .npy -> NpyFrameSink, a
/// container -> a video file through OpenCV's VideoWriter (FFmpeg backend) with
/// `fourcc` (empty: default_fourcc) at format.fps. The encoder is opened here,
/// on the temporary file, so an unsupported codec or size fails before any
/// work. Grey frames are written as colour; RGBA frames lose their alpha.
std::unique_ptr<FrameSink> open_frame_sink(const std::string& path, const VideoFormat& format,
                                           const std::string& fourcc = "");

// ---- the pipeline -------------------------------------------------------------

enum class VideoOp : std::uint8_t {
  filter,     ///< Filter2D on every frame
  haar_view,  ///< the frame's Haar pyramid as a picture of the frame's size
  match,      ///< template matching; the frame with the matches drawn on it
};
const char* to_string(VideoOp op) noexcept;
/// "filter", "haar-view", "match"; throws invalid_argument otherwise.
VideoOp parse_video_op(const std::string& text);

/// What happened to one frame, handed to VideoRunOptions::on_frame in order.
struct FrameRecord {
  std::int64_t index = 0;     ///< 0-based frame number
  double timestamp_ms = 0;    ///< index * 1000 / fps (the nominal presentation time)
  std::vector<Match> matches; ///< match: best first, as Matcher returns them
};

/// Progress, reported after each frame is written.
struct VideoProgress {
  std::int64_t done = 0;
  std::int64_t total = -1;  ///< the source's frame count, -1 when unknown
  double elapsed_ms = 0;
};

/// How a run ended.
enum class VideoStop : std::uint8_t {
  end,          ///< every frame of the source was processed
  interrupted,  ///< *VideoRunOptions::stop became true; the frames before it were processed
  input_error,  ///< the source failed (truncated or corrupt input, a frame of another size)
};
const char* to_string(VideoStop stop) noexcept;

struct VideoRunOptions {
  /// backend, RunInfo of the first frame, cpu threads (0: all cores but two,
  /// which the decode and encode threads need; at least 1); options.stream
  /// is unused (the pipeline has its own streams).
  Options options;
  /// Frames in flight (the pool: decoded, processed and being encoded);
  /// 0 = 4 on host backends, 6 on cuda. At least 2.
  int frames_in_flight = 0;
  /// cuda: streams (each with its own device buffers) that consecutive
  /// frames rotate through, 1..4; 0 = 3.
  int streams = 0;
  /// When set and it becomes true (e.g. from a SIGINT handler), the frame
  /// being processed is finished, the frames processed so far are written, the
  /// output is completed and run() returns VideoStop::interrupted.
  const std::atomic<bool>* stop = nullptr;
  /// Stop after this many frames (-1: all), as if the source ended there.
  std::int64_t max_frames = -1;
  /// Called for every frame in order, after it is written (encode thread).
  std::function<void(const FrameRecord&)> on_frame;
  /// Called after every frame is written (encode thread).
  std::function<void(const VideoProgress&)> on_progress;
};

/// What a run did.
struct VideoSummary {
  std::int64_t frames = 0;  ///< processed and written
  VideoStop stop = VideoStop::end;
  Status input_status = Status::io;  ///< input_error: the source's status
  std::string message;               ///< input_error: the source's message
  bool output_written = false;       ///< the sink was completed (finish()); false with 0 frames
  Backend backend = Backend::automatic;  ///< the backend that ran
  std::string path;                      ///< the operation's code path (first frame)
  // Busy times of the stages, summed over frames (the stages overlap):
  double wall_ms = 0;    ///< end to end, from the first read to the completed output
  double decode_ms = 0;  ///< in FrameSource::read
  double op_ms = 0;      ///< the operation alone: host backends the call; cuda the GPU time of its work (CUDA events, transfers excluded)
  double post_ms = 0;    ///< after the operation on the host: rendering the Haar picture, drawing matches
  double encode_ms = 0;  ///< in FrameSink::write and finish
};

/// One operation, prepared once, run over the frames of a source.
class VideoPipeline {
 public:
  /// Filter2D(kernel, border) on every frame; output frames like the input.
  static VideoPipeline filter(const Kernel& kernel, const Border& border = {});
  /// The frame's Haar transform to `levels` levels (1..haar_max_levels of the
  /// frame; 0 = the maximum) drawn as `pixelkit haar --view` draws it: the
  /// approximation stretched to 0..255, each detail band (per channel)
  /// scaled so that its 99th percentile magnitude reaches +-127 around grey;
  /// the picture is cropped to the frame's size (for odd sizes the
  /// coefficient array is slightly larger). Output frames like the input.
  static VideoPipeline haar_view(int levels, HaarNormalize normalize = HaarNormalize::orthonormal);
  /// Matcher(templ, params, mask) on every frame; the output frame is the
  /// frame in RGB with each match's rectangle drawn 2 pixels wide in green,
  /// or red when its verdict is fail. templ: u8, 1 or 3 channels (frames are
  /// u8). Throws invalid_argument as Matcher does, and for an f32 template.
  static VideoPipeline match(const ConstImageView& templ, const MatchParams& params = {},
                             const ConstImageView& mask = {});

  ~VideoPipeline();
  VideoPipeline(VideoPipeline&&) noexcept;
  VideoPipeline& operator=(VideoPipeline&&) noexcept;

  VideoOp op() const noexcept;
  /// The output frames' format for input frames of `input` (match: 3
  /// channels). Throws invalid_argument when the operation cannot run on such
  /// frames: Haar levels above the frame's maximum, a template larger than the
  /// frame or of other channels, the colour check on grey frames, 4-channel
  /// frames for match.
  VideoFormat output_format(const VideoFormat& input) const;

  /// Runs the operation over every frame of `source`, writing the results to
  /// `sink` (may be null: the records only) and completing it with finish() at
  /// a clean stop (end, interrupted, input_error) when at least one frame was
  /// written, abort() otherwise. A source error stops the run cleanly: the
  /// frames decoded before it are processed and written, and the summary says
  /// input_error with the source's message (the caller decides the exit
  /// status). Any other failure (the operation, the sink, CUDA) aborts the
  /// sink and is rethrown. Throws invalid_argument before any work as
  /// output_format does, and for bad run options. Not reentrant: one run at a
  /// time per pipeline.
  VideoSummary run(FrameSource& source, FrameSink* sink, const VideoRunOptions& run_options = {});

 private:
  struct State;
  explicit VideoPipeline(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// ---- the per-frame report --------------------------------------------------------

/// Everything a report file holds.
struct VideoReport {
  std::string input;
  VideoOp op = VideoOp::filter;
  VideoFormat format;        ///< the input's
  MatchParams match;         ///< match: what columns there are (top_k, color_check, min_fraction)
  VideoSummary summary;
  std::vector<FrameRecord> frames;
};

/// Throws invalid_argument unless `path` ends in .csv or .json.
void check_video_report_path(const std::string& path);

/// Writes the report atomically by the extension of `path`:
///   .csv   a header line, then one line per frame:
///          frame,timestamp_ms[,x,y,score[,count,fraction][,verdict]]
///          (match; with top_k > 1 the match columns are numbered x1,y1,...,
///          one group per match, empty cells where NMS left fewer matches)
///   .json  {"input", "op", "width", "height", "channels", "fps", "frames",
///          "stop", "error", "rows": [{"frame", "timestamp_ms"[, "matches":
///          [{"x", "y", "score"[, "count", "fraction"][, "verdict"]}]]}]}
/// Colour columns appear with the colour check, the verdict with a minimum
/// fraction. Throws invalid_argument for another extension, io for the write.
void write_video_report(const std::string& path, const VideoReport& report);

}  // namespace pixelkit
