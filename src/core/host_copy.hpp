// Row copies between host buffers on several cores: the pageable <-> pinned
// staging of the CUDA backends' host paths, where one core's memcpy (about
// 10 GB/s) is slower than PCIe and would make the asynchronous path lose to a
// plain synchronous cudaMemcpy.
#pragma once

#include <cstddef>

namespace pixelkit::detail {

/// Copies `rows` rows of `row_bytes` bytes from `src` (row pitch `src_pitch`)
/// to `dst` (row pitch `dst_pitch`). Large copies are split over OpenMP
/// threads (at least ~1 MiB each); small ones run on the calling thread.
/// The buffers must not overlap.
void copy_rows(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t row_bytes,
               int rows);

}  // namespace pixelkit::detail
