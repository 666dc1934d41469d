// pixelkit/opencv.hpp - zero-copy bridges between cv::Mat and pixelkit views.
//
// Optional: include it only in code that already uses OpenCV; the pixelkit
// library itself does not need OpenCV's types. No pixels are copied and no
// channels are reordered: a BGR Mat becomes a BGR view (the filters are
// per-channel, so the order does not matter to them). The Mat or view must
// outlive what is made from it.
#pragma once

#include <opencv2/core.hpp>

#include "pixelkit/image.hpp"

namespace pixelkit {

namespace detail {
inline PixelType pixel_type_of_mat(const cv::Mat& m) {
  if (m.depth() == CV_8U) return PixelType::u8;
  if (m.depth() == CV_32F) return PixelType::f32;
  throw Error(Status::unsupported, "cv::Mat depth " + std::to_string(m.depth()) + " is not u8 or f32");
}
}  // namespace detail

/// A view of a 2D cv::Mat (CV_8UC1/3/4 or CV_32FC1/3/4), sub-matrices included.
inline ImageView view_of(cv::Mat& m) {
  PIXELKIT_EXPECTS(m.dims == 2 && !m.empty(), Status::invalid_argument, "cv::Mat must be a non-empty 2D matrix");
  return make_view(m.data, m.cols, m.rows, m.channels(), detail::pixel_type_of_mat(m), Memory::host,
                   static_cast<std::ptrdiff_t>(m.step[0]));
}
inline ConstImageView view_of(const cv::Mat& m) { return view_of(const_cast<cv::Mat&>(m)); }

/// A cv::Mat header over a host view (no copy).
inline cv::Mat to_mat(const ImageView& v) {
  PIXELKIT_EXPECTS(is_host(v.memory), Status::invalid_argument, "to_mat: the view is in device memory");
  const int depth = v.type == PixelType::u8 ? CV_8U : CV_32F;
  return cv::Mat(v.height, v.width, CV_MAKETYPE(depth, v.channels), v.data, static_cast<std::size_t>(v.pitch));
}
inline cv::Mat to_mat(const ConstImageView& v) {
  PIXELKIT_EXPECTS(is_host(v.memory), Status::invalid_argument, "to_mat: the view is in device memory");
  const int depth = v.type == PixelType::u8 ? CV_8U : CV_32F;
  return cv::Mat(v.height, v.width, CV_MAKETYPE(depth, v.channels), const_cast<void*>(v.data),
                 static_cast<std::size_t>(v.pitch));
}

}  // namespace pixelkit
