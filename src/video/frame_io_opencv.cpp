// Video files through OpenCV's videoio (FFmpeg backend), in the OpenCV codec
// module (libpixelkit_opencv.so, core/opencv_module.hpp). The library's side,
// with every check and message, is video/frame_io.cpp.
#include <exception>
#include <string>

#include "core/opencv_module.hpp"

#if PIXELKIT_WITH_VIDEOIO
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#endif

namespace pixelkit::detail::cvmod {

#if PIXELKIT_WITH_VIDEOIO
namespace {

std::string message_of(const std::exception& e) {
  std::string m = e.what();
  return m.empty() ? "OpenCV failed" : m;
}

class CvVideoReader final : public VideoReader {
 public:
  bool open(const char* path) {
    // FFmpeg only: the other backends OpenCV would try on failure (GStreamer,
    // image sequences) print their own errors for a file that is not a video.
    try {
      cap_.open(path, cv::CAP_FFMPEG);
      return cap_.isOpened();
    } catch (const std::exception&) {
      return false;
    }
  }
  double fps() override { return cap_.get(cv::CAP_PROP_FPS); }
  double frame_count() override { return cap_.get(cv::CAP_PROP_FRAME_COUNT); }
  int next(std::string* error) override {
    try {
      return cap_.read(mat_) && !mat_.empty() ? 1 : 0;
    } catch (const std::exception& e) {
      *error = message_of(e);
      return -1;
    }
  }
  Pixels frame() override { return {mat_.cols, mat_.rows, mat_.channels(), mat_.depth(), mat_.data, mat_.step[0]}; }
  void copy_rgb(const Pixels& dst) override {
    cv::Mat d(dst.height, dst.width, CV_MAKETYPE(CV_8U, dst.channels), dst.data, dst.pitch);
    if (mat_.channels() == 3) cv::cvtColor(mat_, d, cv::COLOR_BGR2RGB);
    else mat_.copyTo(d);
  }

 private:
  cv::VideoCapture cap_;
  cv::Mat mat_;
};

class CvVideoWriter final : public VideoWriter {
 public:
  bool open(const char* path, const char* fourcc, double fps, int width, int height) {
    const int cc = cv::VideoWriter::fourcc(fourcc[0], fourcc[1], fourcc[2], fourcc[3]);
    try {
      writer_.open(path, cv::CAP_FFMPEG, cc, fps, cv::Size(width, height), true);
      if (!writer_.isOpened()) return false;
      bgr_.create(height, width, CV_8UC3);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }
  ~CvVideoWriter() override {
    std::string ignored;
    (void)release(&ignored);
  }
  bool write(const Pixels& frame, std::string* error) override {
    const cv::Mat src(frame.height, frame.width, CV_MAKETYPE(CV_8U, frame.channels), frame.data, frame.pitch);
    const int code = frame.channels == 1 ? cv::COLOR_GRAY2BGR
                                         : (frame.channels == 3 ? cv::COLOR_RGB2BGR : cv::COLOR_RGBA2BGR);
    try {
      cv::cvtColor(src, bgr_, code);
      writer_.write(bgr_);
      return true;
    } catch (const std::exception& e) {
      *error = message_of(e);
      return false;
    }
  }
  bool release(std::string* error) override {
    try {
      if (writer_.isOpened()) writer_.release();  // writes the trailer (index) of the container
      return true;
    } catch (const std::exception& e) {
      *error = message_of(e);
      return false;
    }
  }

 private:
  cv::VideoWriter writer_;
  cv::Mat bgr_;
};

}  // namespace

VideoReader* open_video_file(const char* path) {
  auto* r = new CvVideoReader;
  if (r->open(path)) return r;
  delete r;
  return nullptr;
}

VideoWriter* create_video_file(const char* path, const char* fourcc, double fps, int width, int height) {
  auto* w = new CvVideoWriter;
  if (w->open(path, fourcc, fps, width, height)) return w;
  delete w;
  return nullptr;
}
#endif  // PIXELKIT_WITH_VIDEOIO

}  // namespace pixelkit::detail::cvmod
