#!/usr/bin/env bash
# Session 54, call 3: what session 53's call 5 was for, on the final code. Carries build/c54.tar.xz (dev-box sm_90
# build of c11f82e: test_filter, bench_filter_gpu): every row-streaming, register and chained case of test_filter
# under memcheck, then the same cases plain (output to a file).
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O" c && tar xJf build/c54.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $? at $(el) s"; grep -E 'FAILED|PASSED|Failure|ERROR SUMMARY|tests ran' "$O/$n.log" | head -12; }
echo "== memcheck FilterCuda.Streaming*:FilterCuda.Chained*"; t memcheck 170 compute-sanitizer --tool memcheck c/U/test_filter --gtest_filter='FilterCuda.Streaming*:FilterCuda.Chained*'
echo "== the same cases plain"; t plain 60 c/U/test_filter --gtest_filter='FilterCuda.Streaming*:FilterCuda.Chained*'
echo "== done at $(el) s"
