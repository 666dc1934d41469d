// Host side of the Tensor Memory Accelerator (core/cuda_tma.cuh): tensor
// maps of 2D images for the kernels' tile loads. The driver's encoder is
// reached through the runtime's entry-point query, so nothing links against
// libcuda. Only compiled into builds with CUDA.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace pixelkit::detail {

/// A tensor map of `rows` rows of `words` 4-byte elements, `pitch` bytes
/// apart, at `base`, read in boxes of box_words x box_rows (no swizzle, zero
/// fill beyond the extent). Returns false, leaving `map` unspecified, where
/// the driver's encoder was not found or the layout does not allow a map:
/// base not 16-byte aligned, pitch not a multiple of 16 or from 2^40 up, no
/// words or rows, box sides above 256, or box_words * 4 not a multiple of
/// 16. Whether the device can use the map is tma_available()'s question.
/// Cheap (no allocation, no device work): callers may encode per launch.
bool encode_tma_2d_u32(CUtensorMap* map, const void* base, std::uint64_t words, std::uint64_t rows,
                       std::size_t pitch, unsigned box_words, unsigned box_rows);

/// Whether the current device can run TMA loads (compute capability 9.0 up)
/// and the driver's encoder was found (one attribute query a call).
bool tma_available();

}  // namespace pixelkit::detail
