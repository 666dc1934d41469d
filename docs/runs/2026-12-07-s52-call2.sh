#!/usr/bin/env bash
# Session 52, call 2: version 5 of stream_regs_kernel (every load first, then each row's row-end and border
# fixes as the sums take it; version 4 fixed each row right after its loads). Carries build/c52.tar.xz: dev-box
# sm_90 builds (stripped, tar | xz -9e): U5 = the tree (test_filter, bench_filter_gpu), L5 = the same with
# -DPIXELKIT_REGS_LOOSE=1 (bench_filter_gpu), U4 = version 4 (call 1's U build, bench_filter_gpu).
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O" c && tar xJf build/c52.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
t0=$(date +%s)
sizes="--size 1920x1080 --size 1280x720 --size 640x480 --size 3840x2160"
bench() { timeout 60 c/$1/bench_filter_gpu --no-npp --runs 30 $sizes --only dense3x3 --only dense5x5 2>&1 | grep -E '^\| [0-9]' | cut -d'|' -f2-4,9,10,13- | tee "$O/ab-$2.txt"; }
echo "== bench, REGS unset (U5)"; bench U5 unset
echo "== bench, REGS=on (U5)"; PIXELKIT_CUDA_FILTER_REGS=on bench U5 U5
echo "== bench, REGS=on (L5)"; PIXELKIT_CUDA_FILTER_REGS=on bench L5 L5
echo "== bench, REGS=on (U4)"; PIXELKIT_CUDA_FILTER_REGS=on bench U4 U4
echo "== bench, REGS=always (U5)"; PIXELKIT_CUDA_FILTER_REGS=always bench U5 U5always
echo "== bench, REGS unset (U5) again"; bench U5 unset2
echo "== CuPy 1080p"; timeout 60 python3 bench/peers/filter_cupy.py --runs 50 --size 1920x1080 2>&1 | grep -E 'dense(3x3|5x5)' | tee "$O/cupy.txt"
echo "== $(( $(date +%s) - t0 )) s"
t() { timeout "$1" "${@:2}" 2>&1 | grep -E 'in registers|FAILED|PASSED|Failure|Expected|Which is|actual|ERROR SUMMARY|RACECHECK SUMMARY|tests ran' | head -20; }
echo "== test_filter StreamingRegisters* (U5)"; t 60 c/U5/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== memcheck (U5)"; t 90 compute-sanitizer --tool memcheck c/U5/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== $(( $(date +%s) - t0 )) s"
echo "== test_filter FilterCuda.* (U5, switch on)"; PIXELKIT_CUDA_FILTER_REGS=on t 120 c/U5/test_filter --gtest_filter='FilterCuda.*:FilterBackends*'
echo "== done at $(( $(date +%s) - t0 )) s"
