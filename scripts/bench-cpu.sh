#!/usr/bin/env bash
# `make bench`: the host benchmarks on this machine (no GPU needed), quick
# settings; the GPU benchmarks run through scripts/gpu-check.sh.
#
#   scripts/bench-cpu.sh [BUILD_DIR]   (default build/release)
# Each program's full options are in its header comment (bench/).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
ran=0
if [ -x "$BUILD/bench/bench_filter_cpu" ]; then
  echo "== bench_filter_cpu (1080p) =="
  "$BUILD/bench/bench_filter_cpu" --benchmark_filter='1920x1080' --benchmark_min_time=0.2
  ran=1
fi
if [ -x "$BUILD/bench/bench_integral_cpu" ]; then
  echo "== bench_integral_cpu (2048^2 grey, 1080p RGB) =="
  "$BUILD/bench/bench_integral_cpu" --benchmark_filter='/(2048x2048x1|1920x1080x3)' --benchmark_min_time=0.2
  ran=1
fi
if [ -x "$BUILD/bench/bench_match_cpu" ]; then
  echo "== bench_match_cpu (seed 001's cases, per stage; 1080p 64x64) =="
  "$BUILD/bench/bench_match_cpu" --benchmark_filter='match_stages/|/1920x1080/64x64$' --benchmark_min_time=0.2
  ran=1
fi
if [ -x "$BUILD/bench/bench_video" ]; then
  echo "== bench_video (host backends, quick) =="
  "$BUILD/bench/bench_video" --quick --backends cpu --sizes 720p,1080p
  ran=1
fi
[ "$ran" = 1 ] || { echo "bench-cpu: no benchmark programs in $BUILD/bench (Google Benchmark missing?)" >&2; exit 1; }
