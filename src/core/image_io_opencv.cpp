// Image files through OpenCV's imgcodecs, in the OpenCV codec module
// (libpixelkit_opencv.so, core/opencv_module.hpp), and the module's entry
// point. The library's side of reading and writing is core/image_io.cpp.
#include <exception>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "core/opencv_module.hpp"

namespace pixelkit::detail::cvmod {

// video/frame_io_opencv.cpp (null where the module has no videoio).
VideoReader* open_video_file(const char* path);
VideoWriter* create_video_file(const char* path, const char* fourcc, double fps, int width, int height);

namespace {

class CvDecodedImage final : public DecodedImage {
 public:
  explicit CvDecodedImage(cv::Mat m) : m_(std::move(m)) {}
  Pixels pixels() override { return {m_.cols, m_.rows, m_.channels(), m_.depth(), m_.data, m_.step[0]}; }

 private:
  cv::Mat m_;
};

DecodedImage* decode(const unsigned char* bytes, std::size_t size, std::string* error) {
  error->clear();
  try {
    cv::Mat m = cv::imdecode(cv::Mat(1, static_cast<int>(size), CV_8U, const_cast<unsigned char*>(bytes)),
                             cv::IMREAD_UNCHANGED);
    if (m.empty()) return nullptr;
    if (m.channels() != 2) {
      if (m.depth() != CV_8U && m.depth() != CV_32F) m.convertTo(m, CV_32F);
      if (m.channels() == 3) cv::cvtColor(m, m, cv::COLOR_BGR2RGB);
      else if (m.channels() == 4) cv::cvtColor(m, m, cv::COLOR_BGRA2RGBA);
    }
    return new CvDecodedImage(std::move(m));
  } catch (const std::exception& e) {
    *error = e.what();
    if (error->empty()) *error = "OpenCV failed";
    return nullptr;
  }
}

bool encode(const Pixels& image, const char* ext, bool keep_float, std::vector<unsigned char>* out,
            std::string* error) {
  error->clear();
  try {
    const cv::Mat view(image.height, image.width, CV_MAKETYPE(image.depth, image.channels), image.data, image.pitch);
    // Never convert in place: `view` is the caller's pixels.
    cv::Mat m;
    if (image.depth == CV_32F && !keep_float) view.convertTo(m, CV_8U);  // rounds and saturates
    else m = view;
    if (m.channels() == 3 || m.channels() == 4) {
      cv::Mat swapped;
      cv::cvtColor(m, swapped, m.channels() == 3 ? cv::COLOR_RGB2BGR : cv::COLOR_RGBA2BGRA);
      m = swapped;
    }
    return cv::imencode(ext, m, *out);
  } catch (const std::exception& e) {
    *error = e.what();
    if (error->empty()) *error = "OpenCV failed";
    return false;
  }
}

const Api kApi = [] {
  Api a;
  a.abi = kOpenCvModuleAbi;
  a.api_size = sizeof(Api);
#if PIXELKIT_WITH_VIDEOIO
  a.has_video = true;
  a.open_video = open_video_file;
  a.create_video = create_video_file;
#endif
  a.decode = decode;
  a.encode = encode;
  return a;
}();

}  // namespace

}  // namespace pixelkit::detail::cvmod

extern "C" __attribute__((visibility("default"))) const pixelkit::detail::cvmod::Api* pixelkit_opencv_module() {
  return &pixelkit::detail::cvmod::kApi;
}
