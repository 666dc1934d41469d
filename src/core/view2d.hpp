// Typed, trivially copyable image view that kernels and inner loops take by
// value (the public ImageView is untyped and carries memory-kind metadata).
#pragma once

#include <cstddef>
#include <type_traits>

#include "pixelkit/border.hpp"
#include "pixelkit/image.hpp"

namespace pixelkit::detail {

template <typename T>
struct View2D {
  T* data;
  int width;
  int height;
  int channels;
  std::ptrdiff_t pitch;  // bytes

  PIXELKIT_HD T* row(int y) const {
    using Byte = typename std::conditional<std::is_const<T>::value, const unsigned char, unsigned char>::type;
    return reinterpret_cast<T*>(reinterpret_cast<Byte*>(data) + static_cast<std::ptrdiff_t>(y) * pitch);
  }
  PIXELKIT_HD T& at(int y, int x, int c) const { return row(y)[x * channels + c]; }
};

template <typename T>
View2D<T> view2d(const ImageView& v) {
  return {static_cast<T*>(v.data), v.width, v.height, v.channels, v.pitch};
}
template <typename T>
View2D<const T> view2d(const ConstImageView& v) {
  return {static_cast<const T*>(v.data), v.width, v.height, v.channels, v.pitch};
}

}  // namespace pixelkit::detail
