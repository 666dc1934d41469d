// Built against an installed pixelkit: filters a small image on the cpu
// backend and checks one pixel, proving headers, library and config work.
#include <cstdio>

#include <pixelkit/filter.hpp>

int main() {
  pixelkit::Image src(5, 4, 1, pixelkit::PixelType::u8);
  pixelkit::Image dst(5, 4, 1, pixelkit::PixelType::u8);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 5; ++x) src.row<unsigned char>(y)[x] = static_cast<unsigned char>(10 * (x + y));
  pixelkit::Options options;
  options.backend = pixelkit::Backend::cpu;
  pixelkit::filter2d(src, dst, pixelkit::Kernel::box(3), {}, options);
  const int v = dst.row<unsigned char>(1)[2];  // mean of 10*(1..3 + 0..2) = 30
  std::printf("consumer: box3 at (2,1) = %d\n", v);
  return v == 30 ? 0 : 1;
}
