#!/usr/bin/env bash
# Session 53, call 5: reflect's and reflect101's register instances from 6 rows (kRegsMirrorMinHeight; call 4's
# memcheck found a 4-channel 5x5 thread of a 3-row image reading a row mirrored to -1, past the last output). Carries
# build/c54.tar.xz (dev-box sm_90 build of the tree: test_filter, bench_filter_gpu): the
# register and row-streaming cases under memcheck, racecheck of the register cases, then those cases plain. (Call 4
# ran every test of the same kernels, ctest 305 of 305, with reflect's instances from 3 rows.)
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O" c && tar xJf build/c54.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $? at $(el) s"; grep -E 'in registers|FAILED|PASSED|Failure|ERROR SUMMARY|RACECHECK SUMMARY|tests ran' "$O/$n.log" | head -20; }
echo "== memcheck StreamingRegisters*"; t memcheck 100 compute-sanitizer --tool memcheck c/U/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== racecheck StreamingRegisters*"; t racecheck 100 compute-sanitizer --tool racecheck c/U/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== memcheck FilterCuda.Streaming*:FilterCuda.Chained*"; t memcheck2 150 compute-sanitizer --tool memcheck c/U/test_filter --gtest_filter='FilterCuda.Streaming*:FilterCuda.Chained*'
echo "== the register and row-streaming cases, plain"; t plain 60 c/U/test_filter --gtest_filter='FilterCuda.Streaming*:FilterCuda.Chained*:FilterCudaHost*'
echo "== done at $(el) s"
