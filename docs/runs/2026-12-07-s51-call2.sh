#!/usr/bin/env bash
# Session 51, call 2: stream_regs_kernel version 4 (every thread the interior's loads; row ends by byte
# permutations or the other end's words; rows of whole chunks only), two builds from the dev box (sm_90,
# stripped, xz -9e in build/c51.tar.xz): U = one path for every thread, B = PIXELKIT_REGS_SPLIT=1 (the
# interior threads on a path without the edge code), L = PIXELKIT_REGS_LOOSE=1 (launch bounds at which
# nothing spills). Most important first: the call may be cut short.
set -u
mkdir -p c && tar xJf build/c51.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
sizes="--size 1920x1080 --size 1280x720 --size 640x480 --size 3840x2160"
bench() { timeout 60 c/$1/bench_filter_gpu --no-npp --runs 30 $sizes --only dense3x3 --only dense5x5 2>&1 | grep -E '^\| [0-9]' | cut -d'|' -f2-4,9,10,13-; }
echo "== bench, REGS unset (U)"; bench U
echo "== bench, REGS=on (U)"; PIXELKIT_CUDA_FILTER_REGS=on bench U
echo "== bench, REGS=on (B)"; PIXELKIT_CUDA_FILTER_REGS=on bench B
echo "== bench, REGS=on (L)"; PIXELKIT_CUDA_FILTER_REGS=on bench L
echo "== bench, REGS=always (L)"; PIXELKIT_CUDA_FILTER_REGS=always bench L
t() { timeout 100 "$@" 2>&1 | grep -E 'in registers|FAILED|PASSED|Failure|Expected|Which is|actual|ERROR SUMMARY|RACECHECK SUMMARY' | head -20; }
echo "== test_filter StreamingRegisters* (U)"; t c/U/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== memcheck (U)"; t compute-sanitizer --tool memcheck c/U/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== test_filter StreamingRegisters* (B)"; t c/B/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== test_filter StreamingRegisters* (L)"; t c/L/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== racecheck (U)"; t compute-sanitizer --tool racecheck c/U/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== test_filter FilterCuda.* (U)"; t c/U/test_filter --gtest_filter='FilterCuda.*:FilterBackends*'
