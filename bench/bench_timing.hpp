// Timing helpers shared by the GPU benchmarks: the median of many runs after
// warm-up, on the host clock or with CUDA events around work on a stream.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "core/cuda_check.hpp"
#include "core/cuda_resources.hpp"

namespace pixelkit::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

/// Median wall time in ms of f() (which must finish its own work), after warm-up.
inline double time_host(const std::function<void()>& f, int reps, int warm = 2) {
  for (int i = 0; i < warm; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(t);
}

/// Median device time in ms of f() queued on `s`, with events around each run.
inline double time_device(const std::function<void()>& f, cudaStream_t s, int reps, int warm = 3) {
  for (int i = 0; i < warm; ++i) f();
  PIXELKIT_CUDA_TRY(cudaStreamSynchronize(s));
  const detail::Event a(cudaEventDefault), b(cudaEventDefault);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    PIXELKIT_CUDA_TRY(cudaEventRecord(a, s));
    f();
    PIXELKIT_CUDA_TRY(cudaEventRecord(b, s));
    PIXELKIT_CUDA_TRY(cudaEventSynchronize(b));
    float ms = 0;
    PIXELKIT_CUDA_TRY(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  return median(t);
}

}  // namespace pixelkit::bench
