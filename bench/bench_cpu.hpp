// bench_cpu.hpp - what the Google Benchmark programs of the cpu backend share:
// the machine context of the report (CPU model, hardware threads and
// OMP_WAIT_POLICY: libgomp spins at barriers by default, which on a machine
// whose cores are busy with other work delays every call; see
// docs/notes-filter-cpu.md), random test images and the manual-time loop.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "pixelkit/image.hpp"

namespace pixelkit::bench {

/// "model name" of the first CPU in /proc/cpuinfo, or "unknown".
inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

/// Adds cpu_model, hardware_threads and OMP_WAIT_POLICY to the report's context.
inline void add_cpu_context() {
  benchmark::AddCustomContext("cpu_model", cpu_model());
  benchmark::AddCustomContext("hardware_threads", std::to_string(std::thread::hardware_concurrency()));
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  benchmark::AddCustomContext("OMP_WAIT_POLICY", wait_policy ? wait_policy : "(unset)");
}

/// Fills a host image with seeded random values: u8 0..255, f32 in [0, 256).
inline void fill_random(const ImageView& v, unsigned seed) {
  std::mt19937 rng(seed);
  for (int y = 0; y < v.height; ++y) {
    const std::size_t n = static_cast<std::size_t>(v.width) * v.channels;
    if (v.type == PixelType::u8) {
      auto* r = v.row<std::uint8_t>(y);
      for (std::size_t i = 0; i < n; ++i) r[i] = static_cast<std::uint8_t>(rng() >> 24);
    } else {
      auto* r = v.row<float>(y);
      for (std::size_t i = 0; i < n; ++i) r[i] = static_cast<float>(rng() >> 8) * (1.0f / 65536.0f);
    }
  }
}

/// Times body() once per iteration (wall clock, given to the framework as
/// manual time, so the benchmark must be registered with UseManualTime());
/// returns the total seconds, 0 when nothing ran.
template <typename F>
double time_manual(benchmark::State& state, F&& body) {
  double total = 0.0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    benchmark::ClobberMemory();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(dt);
    total += dt;
  }
  return total;
}

}  // namespace pixelkit::bench
