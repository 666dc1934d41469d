#!/usr/bin/env bash
# Session 51, call 2: stream_regs_kernel version 4 (every thread the interior's loads; row ends by byte
# permutations or the other end's words; rows of whole chunks only), two builds from the dev box (sm_90,
# stripped, xz -9e in build/c51.tar.xz): U = one path for every thread, B = PIXELKIT_REGS_SPLIT=1 (the
# interior threads on a path without the edge code).
set -u
mkdir -p c && tar xJf build/c51.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
sizes="--size 1920x1080 --size 1280x720 --size 640x480 --size 3840x2160"
echo "== bench, REGS unset (U)"
timeout 60 c/U/bench_filter_gpu --no-npp $sizes --only dense3x3 --only dense5x5 2>&1 | grep -E '^\| [0-9]'
for v in U B; do
  echo "== bench, REGS=on ($v)"
  PIXELKIT_CUDA_FILTER_REGS=on timeout 60 c/$v/bench_filter_gpu --no-npp $sizes --only dense3x3 --only dense5x5 2>&1 | grep -E '^\| [0-9]'
done
echo "== test_filter (U)"
timeout 240 c/U/test_filter --gtest_filter='FilterCuda.*:FilterBackends*' 2>&1 | grep -E 'in registers|FAILED|PASSED|Failure|Expected|Which is|actual|error' | head -30
echo "== test_filter (B)"
timeout 100 c/B/test_filter --gtest_filter='FilterCuda.StreamingRegisters*' 2>&1 | grep -E 'in registers|FAILED|PASSED|Failure|Expected|Which is|actual|error' | head -30
for vt in U:memcheck U:racecheck U:initcheck B:memcheck; do
  v=${vt%%:*} t=${vt#*:}
  echo "== $t StreamingRegisters* ($v)"
  timeout 120 compute-sanitizer --tool $t c/$v/test_filter --gtest_filter='FilterCuda.StreamingRegisters*' 2>&1 | tail -2
done
echo "== CuPy 1080p"
timeout 150 python3 bench/peers/filter_cupy.py --runs 50 --size 1920x1080 2>&1 | grep -E 'dense[35]x[35]|GPU|H100|H200' | head
echo "== bench, REGS=on (U) again"
PIXELKIT_CUDA_FILTER_REGS=on timeout 60 c/U/bench_filter_gpu --no-npp $sizes --only dense3x3 --only dense5x5 2>&1 | grep -E '^\| [0-9]'
