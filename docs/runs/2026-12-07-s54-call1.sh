#!/usr/bin/env bash
# Session 54, call 1: carries build/c55.tar.xz (dev-box sm_90 build of test_filter and bench_filter_gpu: the tree at
# c11f82e plus a lean instance of the three-k-step fp16 RGB streaming tensor-core kernel, 4 blocks a SM, its hi
# Toeplitz fragments and edge offsets in shared memory). Tests (plain, memcheck, racecheck), then the 8K and 4K RGB
# Gaussians with the lean instances (default) and without (PIXELKIT_CUDA_FILTER_LEAN=off), two rounds.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O" c && tar xJf build/c55.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $? at $(el) s"; grep -E 'FAILED|PASSED|Failure|ERROR SUMMARY|RACECHECK SUMMARY|tests ran' "$O/$n.log" | head -12; }
echo "== lean tests plain"; t lean 60 c/U/test_filter --gtest_filter='FilterCuda.TensorCoreStreaming*'
B="c/U/bench_filter_gpu --no-npp --size 7680x4320 --size 3840x2160"
for k in 11 17 19 21 23 25 27 29 31; do B="$B --only gauss$k"; done
for r in 1 2; do
  echo "== bench round $r, lean"; $B > "$O/bench_lean_$r.md" 2>&1; echo "at $(el) s"
  echo "== bench round $r, LEAN=off"; PIXELKIT_CUDA_FILTER_LEAN=off $B > "$O/bench_off_$r.md" 2>&1; echo "at $(el) s"
done
grep -E '^\| (7680|3840)' "$O/bench_lean_1.md" | head -3
echo "== memcheck lean"; t memcheck_lean 120 compute-sanitizer --tool memcheck c/U/test_filter --gtest_filter='FilterCuda.TensorCoreStreamingLean*'
echo "== racecheck lean"; t racecheck_lean 120 compute-sanitizer --tool racecheck c/U/test_filter --gtest_filter='FilterCuda.TensorCoreStreamingLean*'
echo "== memcheck StreamingRegisters*"; t memcheck_regs 100 compute-sanitizer --tool memcheck c/U/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== all of test_filter plain"; t all 150 c/U/test_filter
echo "== done at $(el) s"
