// Test and benchmark hooks of the cpu integral backend (integral_cpu.cpp).
// Not part of the public API. The settings are process-wide atomics: set them
// before the calls they should affect, never while a call runs.
#pragma once

#include <cstddef>

namespace pixelkit::detail {

/// true: the u8 one-channel rows take the SSE2 baseline kernel even where the
/// CPU has AVX2 (as PIXELKIT_CPU_BASELINE=1 in the environment does).
void set_integral_cpu_baseline(bool force);

/// The u8 one-channel path writes the tables with non-temporal stores (from a
/// cached accumulator row) when the requested tables together exceed this
/// many bytes. 0 restores the default (64 MiB). Tables with 4-byte entries never stream.
void set_integral_cpu_stream_threshold(std::size_t bytes);

/// Whether this CPU has AVX2 (the kernel the backend prefers).
bool integral_cpu_avx2_available();

}  // namespace pixelkit::detail
