// Frame sources and sinks: memory stacks, .npy frame stacks (pixelkit's own
// npy code, always built) and video files through OpenCV's videoio (FFmpeg
// backend) when the build has it, in the OpenCV codec module loaded on first
// use (core/opencv_module.hpp; its side is video/frame_io_opencv.cpp).
// Every file sink writes to a temporary file in the destination's folder and
// renames it into place in finish(), so a failed run leaves no partial output
// and never damages an existing file.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "core/file.hpp"
#include "pixelkit/config.hpp"
#include "pixelkit/io.hpp"
#include "pixelkit/video.hpp"

#if PIXELKIT_WITH_VIDEOIO
#include <memory>

#include "core/opencv_module.hpp"  // videoio, loaded on first use
#endif

namespace pixelkit {

namespace fs = std::filesystem;

namespace {

std::string lower_extension(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

std::string shape_text(int w, int h, int c) {
  return std::to_string(w) + "x" + std::to_string(h) + "x" + std::to_string(c);
}

void check_frame_view(const ImageView& frame, const VideoFormat& f, const std::string& who) {
  PIXELKIT_EXPECTS(is_host(frame.memory) && frame.type == PixelType::u8 && frame.width == f.width &&
                       frame.height == f.height && frame.channels == f.channels,
                   Status::invalid_argument,
                   who + ": read() needs a host u8 " + shape_text(f.width, f.height, f.channels) + " frame, not " +
                       describe(ConstImageView(frame)) + " in " + to_string(frame.memory) + " memory");
}

void copy_rows(const ConstImageView& src, const ImageView& dst) {
  const std::size_t n = src.row_bytes();
  for (int y = 0; y < src.height; ++y) std::memcpy(dst.row<unsigned char>(y), src.row<unsigned char>(y), n);
}

/// Flushes `tmp` to disk and renames it over `path`; removes it on failure.
void commit_temp(const std::string& tmp, const std::string& path) {
  const int fd = ::open(tmp.c_str(), O_RDONLY);
  if (fd >= 0) {
    (void)::fsync(fd);
    ::close(fd);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(Status::io, "cannot write '" + path + "': " + std::strerror(err));
  }
}

/// The shape tuple of a .npy header ("'shape': (3, 4, 5)"), or empty.
std::vector<std::size_t> npy_header_shape(const std::vector<unsigned char>& b, std::size_t& body) {
  std::vector<std::size_t> shape;
  if (b.size() < 12 || std::memcmp(b.data(), "\x93NUMPY", 6) != 0) return shape;
  std::size_t len = 0, off = 0;
  if (b[6] == 1) {
    len = b[8] | (static_cast<std::size_t>(b[9]) << 8);
    off = 10;
  } else {
    len = b[8] | (static_cast<std::size_t>(b[9]) << 8) | (static_cast<std::size_t>(b[10]) << 16) |
          (static_cast<std::size_t>(b[11]) << 24);
    off = 12;
  }
  if (len > b.size() - off) return shape;
  const std::string h(reinterpret_cast<const char*>(b.data()) + off, len);
  body = off + len;
  std::size_t i = h.find("'shape'");
  if (i == std::string::npos) return shape;
  i = h.find('(', i);
  const std::size_t e = h.find(')', i);
  if (i == std::string::npos || e == std::string::npos) return shape;
  std::size_t v = 0;
  bool digits = false;
  for (std::size_t k = i + 1; k <= e; ++k) {
    const char c = h[k];
    if (c >= '0' && c <= '9') {
      if (v > (std::size_t{1} << 40)) return {};
      v = v * 10 + static_cast<std::size_t>(c - '0');
      digits = true;
    } else if (c == ',' || c == ')') {
      if (digits) shape.push_back(v);
      v = 0;
      digits = false;
    }
  }
  return shape;
}

/// Rewrites the first dimension of the .npy header in b[0, body) to n in place
/// (its digits replaced, the rest with spaces). False when n has more digits.
bool set_first_dimension(std::vector<unsigned char>& b, std::size_t body, std::size_t n) {
  const std::string h(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(body));
  std::size_t i = h.find("'shape'");
  if (i == std::string::npos) return false;
  i = h.find('(', i);
  if (i == std::string::npos) return false;
  std::size_t j = i + 1;
  while (j < h.size() && h[j] == ' ') ++j;
  std::size_t e = j;
  while (e < h.size() && h[e] >= '0' && h[e] <= '9') ++e;
  const std::string digits = std::to_string(n);
  if (e == j || digits.size() > e - j) return false;
  for (std::size_t k = j; k < e; ++k) b[k] = static_cast<unsigned char>(k - j < digits.size() ? digits[k - j] : ' ');
  return true;
}

}  // namespace

std::string describe(const VideoFormat& f) {
  char fps[32];
  std::snprintf(fps, sizeof fps, "%.6g", f.fps);
  std::string s = shape_text(f.width, f.height, f.channels) + " at " + fps + " fps";
  if (f.frame_count >= 0) s += ", " + std::to_string(f.frame_count) + " frames";
  return s;
}

bool have_video_codecs() noexcept { return PIXELKIT_WITH_VIDEOIO != 0; }

// ---- memory -------------------------------------------------------------------

MemoryFrameSource::MemoryFrameSource(std::vector<Image> frames, double fps, std::string name)
    : frames_(std::move(frames)), name_(std::move(name)) {
  PIXELKIT_EXPECTS(!frames_.empty(), Status::invalid_argument, name_ + ": no frames");
  PIXELKIT_EXPECTS(fps > 0 && std::isfinite(fps), Status::invalid_argument,
                   name_ + ": the frame rate must be positive");
  const Image& f = frames_[0];
  PIXELKIT_EXPECTS(!f.empty() && is_host(f.memory()) && f.type() == PixelType::u8 &&
                       (f.channels() == 1 || f.channels() == 3 || f.channels() == 4),
                   Status::invalid_argument,
                   name_ + ": frames must be host u8 images of 1, 3 or 4 channels, not " + pixelkit::describe(f.cview()));
  format_ = {f.width(), f.height(), f.channels(), fps, static_cast<std::int64_t>(frames_.size())};
}

bool MemoryFrameSource::read(const ImageView& frame) {
  check_frame_view(frame, format_, name_);
  if (next_ >= static_cast<std::int64_t>(frames_.size())) return false;
  const Image& f = frames_[static_cast<std::size_t>(next_)];
  PIXELKIT_EXPECTS(f.width() == format_.width && f.height() == format_.height && f.channels() == format_.channels &&
                       f.type() == PixelType::u8 && is_host(f.memory()),
                   Status::invalid_argument,
                   name_ + ": frame " + std::to_string(next_) + " is " + pixelkit::describe(f.cview()) +
                       " but the video's frames are " + shape_text(format_.width, format_.height, format_.channels) +
                       " u8 (frames that change size are not supported); " + std::to_string(next_) +
                       " frames were read");
  copy_rows(f.cview(), frame);
  ++next_;
  return true;
}

void MemoryFrameSink::write(const ConstImageView& frame) {
  PIXELKIT_EXPECTS(is_host(frame.memory) && frame.type == PixelType::u8, Status::invalid_argument,
                   "memory sink: frames are host u8 images");
  if (!frames_.empty())
    PIXELKIT_EXPECTS(frame.width == frames_[0].width() && frame.height == frames_[0].height() &&
                         frame.channels == frames_[0].channels(),
                     Status::invalid_argument, "memory sink: frame of another size");
  frames_.push_back(clone(frame));
}

// ---- .npy frame stacks -----------------------------------------------------------

NpyFrameSource::NpyFrameSource(const std::string& path, double fps) : path_(path) {
  PIXELKIT_EXPECTS(fps > 0 && std::isfinite(fps), Status::invalid_argument,
                   "'" + path + "': the frame rate must be positive");
  const std::string what = "'" + path + "'";
  std::vector<unsigned char> file = read_file(path);
  NpyArray a;
  std::int64_t present = -1;  // complete frames in a truncated stack
  try {
    a = parse_npy(file.data(), file.size(), what);
  } catch (const Error&) {
    // A stack cut short (a copy interrupted, a disk that filled up): the
    // header is whole and so are the first frames. Parse a copy whose header
    // announces only the complete frames present, so that the npy parser
    // validates the header and nothing beyond the file's own size is
    // allocated; then serve those frames and report the truncation when the
    // first missing one is reached, as a video decoder would.
    std::size_t body = 0;
    const std::vector<std::size_t> shape = npy_header_shape(file, body);
    if (shape.size() < 3 || shape.size() > 4 || body > file.size()) throw;
    std::size_t total = 1;
    for (const std::size_t d : shape) {
      if (d != 0 && total > (std::size_t{1} << 40) / d) throw;
      total *= d;
    }
    if (total <= file.size() - body || shape[0] == 0) throw;
    const std::size_t frame_bytes = total / shape[0];
    const std::size_t complete = frame_bytes == 0 ? 0 : (file.size() - body) / frame_bytes;
    std::vector<unsigned char> head(file.begin(),
                                    file.begin() + static_cast<std::ptrdiff_t>(body + complete * frame_bytes));
    if (!set_first_dimension(head, body, complete)) throw;
    const std::exception_ptr original = std::current_exception();
    try {
      a = parse_npy(head.data(), head.size(), what);
    } catch (const Error&) {
      std::rethrow_exception(original);
    }
    if (a.type != NpyType::u8 || a.shape.empty()) throw;
    a.shape[0] = shape[0];
    present = static_cast<std::int64_t>(complete);
  }
  PIXELKIT_EXPECTS(a.type == NpyType::u8, Status::io,
                   what + ": a frame stack is u8, not " + std::string(to_string(a.type)));
  PIXELKIT_EXPECTS(a.shape.size() == 3 || a.shape.size() == 4, Status::io,
                   what + ": a frame stack has shape (N, H, W) or (N, H, W, C), not " +
                       std::to_string(a.shape.size()) + " dimensions");
  const std::size_t c = a.shape.size() == 4 ? a.shape[3] : 1;
  PIXELKIT_EXPECTS(c == 1 || c == 3 || c == 4, Status::io,
                   what + ": frames have " + std::to_string(c) + " channels; 1, 3 or 4 are supported");
  PIXELKIT_EXPECTS(a.shape[0] >= 1 && a.shape[1] >= 1 && a.shape[2] >= 1, Status::io,
                   what + ": the frame stack is empty");
  PIXELKIT_EXPECTS(a.shape[1] <= (1u << 20) && a.shape[2] <= (1u << 20), Status::io, what + ": frames too large");
  format_.width = static_cast<int>(a.shape[2]);
  format_.height = static_cast<int>(a.shape[1]);
  format_.channels = static_cast<int>(c);
  format_.fps = fps;
  format_.frame_count = static_cast<std::int64_t>(a.shape[0]);
  bytes_ = std::move(a.bytes);
  if (present >= 0) {
    truncated_at_ = present;
    bytes_.resize(static_cast<std::size_t>(present) * static_cast<std::size_t>(format_.width) * format_.height * c);
  }
}

bool NpyFrameSource::read(const ImageView& frame) {
  check_frame_view(frame, format_, path_);
  if (next_ >= format_.frame_count) return false;
  if (truncated_at_ >= 0 && next_ >= truncated_at_)
    throw Error(Status::io, "'" + path_ + "': truncated frame stack: " + std::to_string(truncated_at_) + " of " +
                                std::to_string(format_.frame_count) + " frames present; " + std::to_string(next_) +
                                " frames were read");
  const std::size_t fb = static_cast<std::size_t>(format_.width) * format_.height * format_.channels;
  const ConstImageView src = make_view(bytes_.data() + fb * static_cast<std::size_t>(next_), format_.width,
                                       format_.height, format_.channels, PixelType::u8);
  copy_rows(src, frame);
  ++next_;
  return true;
}

namespace {
constexpr std::size_t kNpyHeaderBytes = 128;  // fixed, so that finish() can rewrite it in place
}

NpyFrameSink::NpyFrameSink(const std::string& path, int width, int height, int channels)
    : path_(path), width_(width), height_(height), channels_(channels) {
  check_shape(width, height, channels, PixelType::u8, "npy frame stack");
  PIXELKIT_EXPECTS(channels == 1 || channels == 3 || channels == 4, Status::invalid_argument,
                   "npy frame stack: frames have 1, 3 or 4 channels, not " + std::to_string(channels));
  const int fd = detail::make_temp_beside(path, tmp_);
  file_ = ::fdopen(fd, "wb");
  if (!file_) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp_.c_str());
    throw Error(Status::io, "cannot write '" + path + "': " + std::strerror(err));
  }
  try {
    write_header(0);
  } catch (...) {
    abort();
    throw;
  }
}

NpyFrameSink::~NpyFrameSink() { abort(); }

void NpyFrameSink::write_header(std::int64_t frames) {
  std::string dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (" + std::to_string(frames) + ", " +
                     std::to_string(height_) + ", " + std::to_string(width_) +
                     (channels_ == 1 ? std::string() : ", " + std::to_string(channels_)) + "), }";
  const std::size_t len = kNpyHeaderBytes - 10;
  PIXELKIT_EXPECTS(dict.size() < len, Status::internal, "npy frame stack header too long");
  dict.resize(len - 1, ' ');
  dict.push_back('\n');
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<unsigned char>(len & 0xff),
                           static_cast<unsigned char>(len >> 8)};
  if (std::fseek(file_, 0, SEEK_SET) != 0 || std::fwrite(pre, 1, 10, file_) != 10 ||
      std::fwrite(dict.data(), 1, dict.size(), file_) != dict.size())
    throw Error(Status::io, "cannot write '" + path_ + "': " + std::strerror(errno));
}

void NpyFrameSink::write(const ConstImageView& frame) {
  PIXELKIT_EXPECTS(file_ != nullptr, Status::invalid_argument, "'" + path_ + "': the frame stack is closed");
  PIXELKIT_EXPECTS(is_host(frame.memory) && frame.type == PixelType::u8 && frame.width == width_ &&
                       frame.height == height_ && frame.channels == channels_,
                   Status::invalid_argument,
                   "'" + path_ + "': frames are " + shape_text(width_, height_, channels_) + " u8, not " +
                       pixelkit::describe(frame));
  if (std::fseek(file_, 0, SEEK_END) != 0)
    throw Error(Status::io, "cannot write '" + path_ + "': " + std::strerror(errno));
  const std::size_t n = frame.row_bytes();
  for (int y = 0; y < frame.height; ++y)
    if (std::fwrite(frame.row<unsigned char>(y), 1, n, file_) != n)
      throw Error(Status::io, "cannot write '" + path_ + "': " + std::strerror(errno));
  ++frames_;
}

void NpyFrameSink::finish() {
  PIXELKIT_EXPECTS(file_ != nullptr, Status::invalid_argument, "'" + path_ + "': the frame stack is closed");
  try {
    write_header(frames_);
    if (std::fflush(file_) != 0) throw Error(Status::io, "cannot write '" + path_ + "': " + std::strerror(errno));
    (void)::fsync(::fileno(file_));
  } catch (...) {
    abort();
    throw;
  }
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    tmp_.clear();
    throw Error(Status::io, "cannot write '" + path_ + "': " + std::strerror(err));
  }
  const std::string tmp = std::move(tmp_);
  tmp_.clear();
  commit_temp(tmp, path_);
}

void NpyFrameSink::abort() noexcept {
  if (file_) {
    std::fclose(file_);
    file_ = nullptr;
  }
  if (!tmp_.empty()) {
    ::unlink(tmp_.c_str());
    tmp_.clear();
  }
}

// ---- video files ----------------------------------------------------------------

std::string default_fourcc(const std::string& path) {
  const std::string e = lower_extension(path);
  if (e == ".avi") return "MJPG";
  if (e == ".mp4" || e == ".m4v" || e == ".mov") return "mp4v";
  if (e == ".mkv") return "XVID";
  throw Error(Status::invalid_argument,
              "output '" + path + "': unsupported container '" + (e.empty() ? std::string("(no extension)") : e) +
                  "'; use .avi (MJPG), .mp4, .m4v or .mov (mp4v), .mkv (XVID), or .npy (a frame stack)");
}

void check_frame_sink_path(const std::string& path, const std::string& fourcc) {
  PIXELKIT_EXPECTS(!path.empty(), Status::invalid_argument, "output path is empty");
  const std::string e = lower_extension(path);
  if (e == ".npy") {
    PIXELKIT_EXPECTS(fourcc.empty(), Status::invalid_argument,
                     "output '" + path + "': a codec applies to video files, not to an .npy frame stack");
  } else {
    (void)default_fourcc(path);
    if (!fourcc.empty()) {
      bool ok = fourcc.size() == 4;
      for (const char c : fourcc) ok = ok && std::isprint(static_cast<unsigned char>(c));
      PIXELKIT_EXPECTS(ok, Status::invalid_argument,
                       "codec '" + fourcc + "' is not a FourCC (4 characters such as MJPG, mp4v, XVID, FFV1)");
    }
    PIXELKIT_EXPECTS(have_video_codecs(), Status::unsupported,
                     "output '" + path + "': this build has no video codecs (OpenCV videoio); write an .npy frame "
                     "stack instead");
#if PIXELKIT_WITH_VIDEOIO
    (void)detail::cvmod::opencv_module("output '" + path + "'");  // a missing module fails now, not after the work
#endif
  }
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(Status::io, "output '" + path + "': folder '" + dir.string() + "' does not exist");
  if (fs::is_directory(path, ec)) throw Error(Status::io, "output '" + path + "' is an existing folder");
}

#if PIXELKIT_WITH_VIDEOIO
namespace {

namespace cvmod = detail::cvmod;
using cvmod::pixels_of;

// A video file through cv::VideoCapture. The first frame is decoded when the
// file is opened, so that the format is the frames' real one.
class CvFrameSource : public FrameSource {
 public:
  explicit CvFrameSource(const std::string& path) : path_(path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw Error(Status::io, "cannot open '" + path + "': no such file");
    if (fs::is_directory(path, ec)) throw Error(Status::io, "'" + path + "' is a folder, not a video file");
    {
      std::FILE* f = std::fopen(path.c_str(), "rb");
      if (!f) throw Error(Status::io, "cannot open '" + path + "': " + std::strerror(errno));
      std::fclose(f);
    }
    const cvmod::Api& cv = cvmod::opencv_module("'" + path + "'");
    PIXELKIT_EXPECTS(cv.has_video, Status::unsupported, "'" + path + "': pixelkit's OpenCV module has no videoio");
    cap_.reset(cv.open_video(path.c_str()));
    if (!cap_)
      throw Error(Status::io, "cannot decode '" + path +
                                  "': not a video OpenCV's FFmpeg backend can read (unknown format, or a file "
                                  "truncated or corrupt before its first frame)");
    std::string error;
    if (cap_->next(&error) != 1)
      throw Error(Status::io, "cannot decode '" + path + "': no frame could be decoded (truncated or corrupt)");
    pending_ = true;
    const cvmod::Pixels first = cap_->frame();
    PIXELKIT_EXPECTS(first.depth == cvmod::kDepthU8 && (first.channels == 3 || first.channels == 1),
                     Status::unsupported,
                     "'" + path + "': frames decode to " + std::to_string(first.channels) + " channels of depth " +
                         std::to_string(first.depth) + "; 8-bit grey or colour is supported");
    format_.width = first.width;
    format_.height = first.height;
    format_.channels = first.channels;
    const double fps = cap_->fps();
    format_.fps = fps > 0 && fps < 10000 && std::isfinite(fps) ? fps : 25.0;
    const double n = cap_->frame_count();
    format_.frame_count = n >= 1 && n < 1e12 ? static_cast<std::int64_t>(std::llround(n)) : -1;
  }

  const VideoFormat& format() const noexcept override { return format_; }
  std::int64_t frames_read() const noexcept override { return next_; }
  std::string name() const override { return path_; }

  bool read(const ImageView& frame) override {
    check_frame_view(frame, format_, path_);
    if (!pending_) {
      std::string error;
      const int got = cap_->next(&error);
      if (got < 0)
        throw Error(Status::io, "'" + path_ + "': corrupt video: decoding failed after " + std::to_string(next_) +
                                    " frames (" + error + ")");
      if (got == 0) {
        if (format_.frame_count > 0 && next_ < format_.frame_count)
          throw Error(Status::io, "'" + path_ + "': truncated or corrupt video: decoding stopped after " +
                                      std::to_string(next_) + " of the " + std::to_string(format_.frame_count) +
                                      " frames its header announces");
        return false;
      }
    }
    pending_ = false;
    const cvmod::Pixels m = cap_->frame();
    if (m.width != format_.width || m.height != format_.height || m.channels != format_.channels ||
        m.depth != cvmod::kDepthU8)
      throw Error(Status::invalid_argument,
                  "'" + path_ + "': frame " + std::to_string(next_) + " is " +
                      shape_text(m.width, m.height, m.channels) + " but the video started with " +
                      shape_text(format_.width, format_.height, format_.channels) +
                      " frames (frames that change size are not supported); " + std::to_string(next_) +
                      " frames were read");
    cap_->copy_rgb(pixels_of(frame));
    ++next_;
    if (format_.frame_count >= 0 && next_ > format_.frame_count) format_.frame_count = next_;
    return true;
  }

 private:
  std::string path_;
  std::unique_ptr<cvmod::VideoReader> cap_;
  bool pending_ = false;
  VideoFormat format_;
  std::int64_t next_ = 0;
};

// A video file through cv::VideoWriter, on a temporary name until finish().
class CvFrameSink : public FrameSink {
 public:
  CvFrameSink(const std::string& path, const VideoFormat& f, const std::string& fourcc)
      : path_(path), format_(f), fourcc_(fourcc.empty() ? default_fourcc(path) : fourcc) {
    check_frame_sink_path(path, fourcc);
    check_shape(f.width, f.height, f.channels, PixelType::u8, "video frame");
    PIXELKIT_EXPECTS(f.channels == 1 || f.channels == 3 || f.channels == 4, Status::invalid_argument,
                     "video sink: frames have 1, 3 or 4 channels, not " + std::to_string(f.channels));
    const cvmod::Api& cv = cvmod::opencv_module("output '" + path + "'");
    PIXELKIT_EXPECTS(cv.has_video, Status::unsupported, "output '" + path + "': pixelkit's OpenCV module has no videoio");
    const int fd = detail::make_temp_beside(path, tmp_);
    ::close(fd);  // the writer opens the file by name
    const double fps = f.fps > 0 && std::isfinite(f.fps) ? f.fps : 25.0;
    writer_.reset(cv.create_video(tmp_.c_str(), fourcc_.c_str(), fps, f.width, f.height));
    if (!writer_) {
      abort();
      throw Error(Status::unsupported, "output '" + path + "': OpenCV's FFmpeg backend cannot encode codec '" +
                                           fourcc_ + "' in a '" + lower_extension(path) + "' file at " +
                                           std::to_string(f.width) + "x" + std::to_string(f.height));
    }
  }
  ~CvFrameSink() override { abort(); }

  void write(const ConstImageView& frame) override {
    PIXELKIT_EXPECTS(!tmp_.empty(), Status::invalid_argument, "'" + path_ + "': the video is closed");
    PIXELKIT_EXPECTS(is_host(frame.memory) && frame.type == PixelType::u8 && frame.width == format_.width &&
                         frame.height == format_.height && frame.channels == format_.channels,
                     Status::invalid_argument,
                     "'" + path_ + "': frames are " + shape_text(format_.width, format_.height, format_.channels) +
                         " u8, not " + pixelkit::describe(frame));
    std::string error;
    if (!writer_->write(pixels_of(frame), &error)) throw Error(Status::io, "cannot write '" + path_ + "': " + error);
    ++frames_;
  }

  void finish() override {
    PIXELKIT_EXPECTS(!tmp_.empty(), Status::invalid_argument, "'" + path_ + "': the video is closed");
    std::string error;
    if (!writer_->release(&error)) {  // writes the trailer (index) of the container
      abort();
      throw Error(Status::io, "cannot write '" + path_ + "': " + error);
    }
    std::error_code ec;
    const auto size = fs::file_size(tmp_, ec);
    if (ec || size == 0) {
      abort();
      throw Error(Status::io, "cannot write '" + path_ + "': the encoder produced no data");
    }
    // cv::VideoWriter drops FFmpeg's write errors: a file that stopped at the
    // process's file size limit or on a full disk is truncated, not complete.
    struct rlimit limit {};
    struct statvfs disk {};
    const bool at_limit = ::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
                          static_cast<std::uintmax_t>(size) >= static_cast<std::uintmax_t>(limit.rlim_cur);
    const bool full = ::statvfs(tmp_.c_str(), &disk) == 0 && (disk.f_bfree == 0 || (disk.f_bavail == 0 && ::geteuid() != 0));
    if (at_limit || full) {
      abort();
      throw Error(Status::io, "cannot write '" + path_ + "': " + std::strerror(at_limit ? EFBIG : ENOSPC));
    }
    const std::string tmp = std::move(tmp_);
    tmp_.clear();
    commit_temp(tmp, path_);
  }

  void abort() noexcept override {
    writer_.reset();  // releases it, errors ignored
    if (!tmp_.empty()) {
      ::unlink(tmp_.c_str());
      tmp_.clear();
    }
  }

  std::int64_t frames_written() const noexcept override { return frames_; }

 private:
  std::string path_, tmp_;
  VideoFormat format_;
  std::string fourcc_;
  std::unique_ptr<cvmod::VideoWriter> writer_;
  std::int64_t frames_ = 0;
};

}  // namespace
#endif  // PIXELKIT_WITH_VIDEOIO

std::unique_ptr<FrameSource> open_frame_source(const std::string& path, double npy_fps) {
  if (lower_extension(path) == ".npy") return std::make_unique<NpyFrameSource>(path, npy_fps);
#if PIXELKIT_WITH_VIDEOIO
  return std::make_unique<CvFrameSource>(path);
#else
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(Status::io, "cannot open '" + path + "': no such file");
  throw Error(Status::unsupported, "'" + path +
                                       "': this build has no video codecs (OpenCV videoio); give an .npy frame "
                                       "stack (N x H x W [x C] u8)");
#endif
}

std::unique_ptr<FrameSink> open_frame_sink(const std::string& path, const VideoFormat& format,
                                           const std::string& fourcc) {
  check_frame_sink_path(path, fourcc);
  if (lower_extension(path) == ".npy")
    return std::make_unique<NpyFrameSink>(path, format.width, format.height, format.channels);
#if PIXELKIT_WITH_VIDEOIO
  return std::make_unique<CvFrameSink>(path, format, fourcc);
#else
  throw Error(Status::internal, "open_frame_sink: video file without videoio passed the checks");
#endif
}

}  // namespace pixelkit
