// pixelkit/backend.hpp - choosing where an operation runs.
//
//   ref   the scalar reference: plain loops, written to be obviously right; it
//         defines every operation's answer.
//   cpu   SIMD + multithreaded (OpenMP) host code.
//   cuda  the GPU; needs a build with CUDA and a usable device.
//   automatic  cuda when the build has CUDA and a device is usable, else cpu;
//         device-resident images always go to cuda.
#pragma once

#include <string>

#include "pixelkit/image.hpp"

namespace pixelkit {

enum class Backend : unsigned char { automatic, ref, cpu, cuda };

/// Parses "auto", "ref", "cpu", "cuda"; throws invalid_argument otherwise.
Backend parse_backend(const std::string& text);
const char* to_string(Backend backend) noexcept;

/// True when this build includes the CUDA backend.
bool built_with_cuda() noexcept;
/// True when the CUDA backend is built and at least one device is usable.
/// The answer is computed once and cached.
bool cuda_available() noexcept;
/// Name of device 0 ("NVIDIA H100 80GB HBM3"), or "" without one.
std::string cuda_device_name();
/// Creates the CUDA context of the current device now, so that the first
/// operation, allocation or pinned read does not pay for it (0.1-0.3 s on a
/// fresh process). Optional: every cuda call would create it anyway. Throws
/// unsupported without a CUDA build or a usable device.
void cuda_init();

/// What ran: filled by an operation when Options::info is set.
struct RunInfo {
  Backend backend = Backend::automatic;  ///< the backend that ran (never automatic)
  std::string path;                      ///< the code path, e.g. "separable 2-pass, avx2"
};

/// Per-call execution options shared by every operation.
struct Options {
  Backend backend = Backend::automatic;
  int threads = 0;            ///< cpu backend: worker threads (0 = all cores)
  stream_t stream = nullptr;  ///< cuda backend: the stream device work is queued on
  RunInfo* info = nullptr;    ///< if non-null, receives what ran
};

/// Resolves Backend::automatic for images in `memory` and checks that the
/// choice can run: cuda without CUDA gives `unsupported`; a device image on a
/// host backend gives `invalid_argument`.
Backend resolve_backend(Backend requested, Memory memory);

/// Number of threads the cpu backend uses for `requested` (0 = all cores).
int resolve_threads(int requested) noexcept;

}  // namespace pixelkit
