// Helpers for the tests that compare with OpenCV (only in builds with it).
#pragma once

#if PIXELKIT_TEST_HAVE_OPENCV
#include <opencv2/core.hpp>

#include "pixelkit/filter.hpp"

namespace pixelkit::test {

/// OpenCV's border constant for a pixelkit border mode.
inline int cv_border(BorderMode m) {
  switch (m) {
    case BorderMode::constant: return cv::BORDER_CONSTANT;
    case BorderMode::replicate: return cv::BORDER_REPLICATE;
    case BorderMode::reflect: return cv::BORDER_REFLECT;
    case BorderMode::reflect101: return cv::BORDER_REFLECT_101;
    case BorderMode::wrap: return cv::BORDER_WRAP;
  }
  return cv::BORDER_DEFAULT;
}

}  // namespace pixelkit::test
#endif
