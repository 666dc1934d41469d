#!/usr/bin/env bash
# Builds and runs the tests under a sanitizer preset (CPU only, CUDA off).
#
#   scripts/sanitize.sh address        preset asan: the whole suite under
#                                      AddressSanitizer + UndefinedBehaviorSanitizer
#                                      (what `make test` runs after the release pass)
#   scripts/sanitize.sh thread [all]   preset tsan: tests/test_threads.cpp (several
#                                      host threads, each with its own operator
#                                      objects) under ThreadSanitizer; "all": then
#                                      the rest of the suite too
#
# Builds into build/asan or build/tsan; JOBS (default: all cores) sets the
# parallelism. The test presets set the sanitizer options (halt on the first
# report). Under TSan every test runs with OMP_NUM_THREADS=1: libgomp is not
# built with TSan, so work handed between OpenMP threads would be reported as
# races that are not; the concurrency under test is the host threads'.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-address}
scope=${2:-}
jobs=${JOBS:-$(nproc)}
case "$kind" in
  address | asan) preset=asan ;;
  thread | tsan) preset=tsan ;;
  *)
    echo "usage: scripts/sanitize.sh address|thread [all]" >&2
    exit 2
    ;;
esac

cmake --preset "$preset"
if [ "$preset" = tsan ] && [ "$scope" != all ]; then
  cmake --build --preset tsan -j "$jobs" --target test_threads
  ctest --preset tsan -j "$jobs" -R '^Threads\.'
else
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
fi
