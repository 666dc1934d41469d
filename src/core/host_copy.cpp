#include "core/host_copy.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

namespace pixelkit::detail {

void copy_rows(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t row_bytes,
               int rows) {
  if (rows <= 0 || row_bytes == 0) return;
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  const std::size_t total = row_bytes * static_cast<std::size_t>(rows);
  constexpr std::size_t kBytesPerThread = std::size_t{1} << 20;
  const int threads = static_cast<int>(
      std::clamp<std::size_t>(total / kBytesPerThread, 1, static_cast<std::size_t>(std::max(1, omp_get_max_threads()))));
  if (threads == 1 || omp_in_parallel()) {
    if (dst_pitch == row_bytes && src_pitch == row_bytes) {
      std::memcpy(d, s, total);
    } else {
      for (int y = 0; y < rows; ++y)
        std::memcpy(d + dst_pitch * static_cast<std::size_t>(y), s + src_pitch * static_cast<std::size_t>(y), row_bytes);
    }
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int y = 0; y < rows; ++y)
    std::memcpy(d + dst_pitch * static_cast<std::size_t>(y), s + src_pitch * static_cast<std::size_t>(y), row_bytes);
}

}  // namespace pixelkit::detail
