#!/usr/bin/env bash
# Session 53, call 3 (the same warm machine as call 2, whose device build it uses): the register kernels under
# memcheck and racecheck, the row-streaming and chained cases under memcheck, and one and four channels, border
# replicate's register instances (the default) against the ring and tensor cores (REGS=off), since the table of
# record runs RGB only.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
O=${OUT:-/tmp/out}; mkdir -p "$O"
t0=$(date +%s)
B=build/gpu/tests/test_filter; [ -x "$B" ] || B=$(find build/gpu -name test_filter -type f | head -1)
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $? at $(( $(date +%s) - t0 )) s"; grep -E 'in registers|FAILED|PASSED|Failure|ERROR SUMMARY|RACECHECK SUMMARY' "$O/$n.log" | head -20; }
echo "== memcheck StreamingRegisters*"; t memcheck 150 compute-sanitizer --tool memcheck $B --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== racecheck StreamingRegisters*"; t racecheck 150 compute-sanitizer --tool racecheck $B --gtest_filter='FilterCuda.StreamingRegisters*'
sizes="--size 640x480 --size 1280x720 --size 1920x1080 --size 3840x2160 --size 7680x4320"
for c in 1 4; do for r in off ""; do
  echo "== C$c REGS='$r'"
  PIXELKIT_CUDA_FILTER_REGS=$r timeout 60 build/gpu/bench/bench_filter_gpu --runs 30 --channels $c $sizes --only dense3x3 --only dense5x5 2>&1 | grep -E '^\| [0-9]' | cut -d'|' -f2-4,9- | tee "$O/c$c-${r:-default}.txt"
done; done
echo "== memcheck Streaming|Chained, case by case"
LOGS=build/gpu-logs timeout 240 scripts/gpu-check.sh --steps memcheck --tests test_filter --per-case --cases 'Streaming|Chained' --deadline 230 > "$O/memcheck-cases.txt" 2>&1
echo "rc $?"; grep -E 'ok,|FAIL|TIMED|deadline|ALL OK' "$O/memcheck-cases.txt" | head -40
echo "== done at $(( $(date +%s) - t0 )) s"
