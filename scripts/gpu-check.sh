#!/usr/bin/env bash
# One call on a GPU machine: configure with cmake directly (no apt there),
# build, run every test, run the GPU tests under compute-sanitizer (memcheck
# for all, racecheck for the shared-memory kernels), then the benchmarks.
# Prints the benchmark tables last. Logs go to $OUT (if set) or build/gpu-logs.
#
#   scripts/gpu-check.sh [--no-bench] [--quick-bench] [--only-bench]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/gpu}
LOGS=${OUT:-build/gpu-logs}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$LOGS"
bench=1 quick="" only_bench=0
for a in "$@"; do
  case "$a" in
    --no-bench) bench=0 ;;
    --quick-bench) quick="--quick" ;;
    --only-bench) only_bench=1 ;;
  esac
done
status=0
note() { echo "== $* ==" | tee -a "$LOGS/summary.txt"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$LOGS/gpu.txt"
nvcc --version | tail -1
note "configure"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$LOGS/configure.log" 2>&1 \
  || { tail -30 "$LOGS/configure.log"; exit 1; }
grep 'pixelkit:' "$LOGS/configure.log"
note "build"
cmake --build "$BUILD" -j "$JOBS" >"$LOGS/build.log" 2>&1 || { grep -E 'error|Error' "$LOGS/build.log" | head -40; exit 1; }

if [ "$only_bench" = 0 ]; then
  note "ctest (all tests)"
  (cd "$BUILD" && ctest -j "$JOBS" --output-on-failure --timeout 900) >"$LOGS/ctest.log" 2>&1 || status=1
  grep -E 'tests passed|tests failed|Skipped|\*\*\*Failed|Not Run|Timeout' "$LOGS/ctest.log" | head -40

  # GPU tests under compute-sanitizer: every test binary, only its GPU cases.
  gpu_filter='*cuda*:*Cuda*:*CUDA*:*Device*:*GPU*:*Gpu*:VideoPipelineTest.*'
  for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    n=$(basename "$t")
    # Binaries without GPU cases would end before any CUDA call, which
    # compute-sanitizer reports as an error: skip them.
    "$t" --gtest_list_tests --gtest_filter="$gpu_filter" | grep -q '^  ' || continue
    note "memcheck $n"
    compute-sanitizer --tool memcheck --leak-check full --error-exitcode 99 "$t" --gtest_filter="$gpu_filter" \
      >"$LOGS/memcheck_$n.log" 2>&1 || { status=1; echo "memcheck FAILED for $n"; }
    grep -E 'ERROR SUMMARY|PASSED|FAILED' "$LOGS/memcheck_$n.log" | tail -3
  done
  for t in "$BUILD"/tests/test_filter "$BUILD"/tests/test_integral "$BUILD"/tests/test_haar "$BUILD"/tests/test_match; do
    [ -x "$t" ] || continue
    n=$(basename "$t")
    note "racecheck $n"
    compute-sanitizer --tool racecheck --error-exitcode 99 "$t" --gtest_filter="$gpu_filter:-*Large*:*Photos*" \
      >"$LOGS/racecheck_$n.log" 2>&1 || { status=1; echo "racecheck FAILED for $n"; }
    grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED' "$LOGS/racecheck_$n.log" | tail -3
  done
fi

if [ "$bench" = 1 ]; then
  for b in "$BUILD"/bench/bench_*_gpu; do
    [ -x "$b" ] || continue
    n=$(basename "$b")
    note "benchmark $n"
    csv=()
    if grep -q -- '--csv' "$b" 2>/dev/null; then csv=(--csv "$LOGS/$n.csv"); fi
    "$b" $quick "${csv[@]}" >"$LOGS/$n.md" 2>"$LOGS/$n.err" || { status=1; tail -5 "$LOGS/$n.err"; }
  done
  # Python peers (CuPy) on the same sizes, where CuPy is installed.
  if python3 -c 'import cupy' 2>/dev/null; then
    for p in bench/peers/*_cupy.py; do
      n=$(basename "$p" .py)
      note "peer $n"
      timeout 150 python3 "$p" --quick >"$LOGS/$n.md" 2>"$LOGS/$n.err" || echo "peer $n did not finish (see $LOGS/$n.err)"
    done
  fi
  for f in "$LOGS"/bench_*_gpu.md "$LOGS"/*_cupy.md; do
    [ -f "$f" ] || continue
    echo; echo "### $(basename "$f" .md)"; cat "$f"
  done
fi
echo
if [ "$status" = 0 ]; then echo "gpu-check: ALL OK"; else echo "gpu-check: FAILURES (see logs in $LOGS)"; fi
exit $status
