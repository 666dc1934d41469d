// The reference filter: the definition of the operation, written to be
// obviously right rather than fast. Double accumulation; u8 results rounded
// to nearest (ties to even, as OpenCV's saturate_cast) and saturated.
#include <cmath>
#include <cstdint>

#include "core/view2d.hpp"
#include "filter/filter_backends.hpp"

namespace pixelkit::detail {

namespace {

template <typename T>
void filter_ref_t(const ConstImageView& src_v, const ImageView& dst_v, const Kernel& k, const Border& border) {
  const auto src = view2d<T>(src_v);
  const auto dst = view2d<T>(dst_v);
  const int rx = k.radius_x(), ry = k.radius_y();
  for (int y = 0; y < src.height; ++y)
    for (int x = 0; x < src.width; ++x)
      for (int c = 0; c < src.channels; ++c) {
        double acc = 0.0;
        for (int ky = 0; ky < k.height; ++ky)
          for (int kx = 0; kx < k.width; ++kx) {
            const int sy = border_index(y + ky - ry, src.height, border.mode);
            const int sx = border_index(x + kx - rx, src.width, border.mode);
            const double v = (sy < 0 || sx < 0) ? static_cast<double>(border.value)
                                                : static_cast<double>(src.at(sy, sx, c));
            acc += static_cast<double>(k.at(ky, kx)) * v;
          }
        if constexpr (std::is_same_v<T, std::uint8_t>) {
          const double r = std::nearbyint(acc);
          dst.at(y, x, c) = static_cast<std::uint8_t>(r < 0 ? 0 : (r > 255 ? 255 : r));
        } else {
          dst.at(y, x, c) = static_cast<float>(acc);
        }
      }
}

}  // namespace

void filter_ref(const ConstImageView& src, const ImageView& dst, const Kernel& kernel, const Border& border) {
  if (src.type == PixelType::u8) filter_ref_t<std::uint8_t>(src, dst, kernel, border);
  else filter_ref_t<float>(src, dst, kernel, border);
}

}  // namespace pixelkit::detail
