// The OpenCV codec module: image and video files through OpenCV's imgcodecs
// and videoio, built as a separate shared object (libpixelkit_opencv.so)
// that the library loads with dlopen the first time a file needs it.
//
// Why a module: imgcodecs and videoio bring in ~230 shared libraries on
// Debian (GDAL, GStreamer, FFmpeg, ...). Linked into every program, they cost
// each process start ~0.3 s of loading, whether it reads a photo or not; the
// test suite starts over a thousand processes, and the CLI's .npy work never
// needs them. Loaded on demand, only a run that reads or writes a codec file
// pays, once.
//
// This header is the contract between the two sides: abstract classes and a
// table of functions, all inline or virtual, so that the module needs none of
// the library's symbols and the library none of OpenCV's codec symbols. No
// exception crosses it: the module returns OpenCV's messages as strings and
// the library turns them into pixelkit::Error. Change anything here and bump
// kOpenCvModuleAbi: the loader refuses a module of another version.
//
//   library side: opencv_module.cpp (the loader), image_io.cpp, video/frame_io.cpp
//   module side:  image_io_opencv.cpp (images, the entry point), video/frame_io_opencv.cpp
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pixelkit {
struct ConstImageView;
}

namespace pixelkit::detail::cvmod {

constexpr int kOpenCvModuleAbi = 1;

/// OpenCV depth codes of the two pixel types pixelkit stores (CV_8U, CV_32F).
constexpr int kDepthU8 = 0;
constexpr int kDepthF32 = 5;

/// Pixels in host memory, `channels` interleaved, rows `pitch` bytes apart.
struct Pixels {
  int width = 0, height = 0, channels = 0;
  int depth = kDepthU8;  ///< an OpenCV depth code
  unsigned char* data = nullptr;
  std::size_t pitch = 0;
};

/// A decoded image, owned by the module until deleted.
class DecodedImage {
 public:
  virtual ~DecodedImage() = default;
  virtual Pixels pixels() = 0;
};

/// cv::VideoCapture on OpenCV's FFmpeg backend.
class VideoReader {
 public:
  virtual ~VideoReader() = default;
  virtual double fps() = 0;          ///< as the container states it (may be 0 or nonsense)
  virtual double frame_count() = 0;  ///< as the container states it (may be 0 or nonsense)
  /// Decodes the next frame: 1 when one was decoded, 0 at the end, -1 when
  /// OpenCV threw (its message in *error).
  virtual int next(std::string* error) = 0;
  /// The last decoded frame as OpenCV holds it (BGR or grey); data points
  /// into the reader and is valid until the next call.
  virtual Pixels frame() = 0;
  /// Copies the last frame into `dst` (u8, same shape): BGR becomes RGB.
  virtual void copy_rgb(const Pixels& dst) = 0;
};

/// cv::VideoWriter on OpenCV's FFmpeg backend.
class VideoWriter {
 public:
  virtual ~VideoWriter() = default;
  /// Converts one u8 grey, RGB or RGBA frame to BGR and writes it; false
  /// with *error set when OpenCV threw.
  virtual bool write(const Pixels& frame, std::string* error) = 0;
  /// Writes the container's trailer and closes the file; false with *error
  /// set when OpenCV threw. Idempotent.
  virtual bool release(std::string* error) = 0;
};

/// What the module offers; pixelkit_opencv_module() returns it.
struct Api {
  int abi = 0;                ///< kOpenCvModuleAbi of the module's build
  std::size_t api_size = 0;   ///< sizeof(Api) of the module's build
  bool has_video = false;     ///< whether the module was built with videoio

  /// Decodes an encoded image (IMREAD_UNCHANGED). The result holds 1, 3 or 4
  /// channels in RGB(A) order, u8 or f32 (other depths converted to f32), or
  /// 2 channels unconverted (the caller rejects them). Null with *error set
  /// when OpenCV threw, null with *error empty when it decoded nothing.
  DecodedImage* (*decode)(const unsigned char* bytes, std::size_t size, std::string* error) = nullptr;

  /// Encodes grey, RGB or RGBA pixels (u8 or f32) in the format of `ext`
  /// (".png", ".jpg", ...); f32 becomes u8, rounded and saturated, unless
  /// `keep_float`. False with *error set when OpenCV threw, false with
  /// *error empty when it cannot encode this image in that format.
  bool (*encode)(const Pixels& image, const char* ext, bool keep_float, std::vector<unsigned char>* out,
                 std::string* error) = nullptr;

  /// Opens a video file for reading; null when OpenCV cannot (or has_video is false).
  VideoReader* (*open_video)(const char* path) = nullptr;

  /// Opens `path` for writing frames of width x height (written as BGR) with
  /// the FourCC `fourcc` (4 characters) at `fps`; null when OpenCV cannot.
  VideoWriter* (*create_video)(const char* path, const char* fourcc, double fps, int width, int height) = nullptr;
};

/// The loaded module (library side, opencv_module.cpp). The first call loads
/// it; when it cannot be found or does not match this build, every call throws
/// pixelkit::Error(unsupported) whose message starts with `what`.
const Api& opencv_module(const std::string& what);

/// Loads the module if that was not tried yet; true with the file it was
/// loaded from in *where, or false with why it could not be.
bool opencv_module_available(std::string* where);

/// A host view (u8 or f32) as the module takes it (library side).
Pixels pixels_of(const ConstImageView& view);

}  // namespace pixelkit::detail::cvmod

/// The module's one exported symbol.
extern "C" const pixelkit::detail::cvmod::Api* pixelkit_opencv_module();
