// bench_cpu_context.hpp - the machine context that every Google Benchmark
// program of the cpu backend puts in its report: the CPU model, the hardware
// threads and OMP_WAIT_POLICY (libgomp spins at barriers by default, which on
// a machine whose cores are busy with other work delays every call; see
// docs/notes-filter-cpu.md).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

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

}  // namespace pixelkit::bench
