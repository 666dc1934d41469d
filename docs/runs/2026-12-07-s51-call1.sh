#!/usr/bin/env bash
# Session 51, call 1: the committed stream_regs_kernel (version 3) on the device, from a dev-box sm_90 build
# (build/c51.tar.xz: stripped test_filter, bench_filter_gpu and the session 50 probe, xz -9e).
set -u
mkdir -p c && tar xJf build/c51.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
for a in "1920 1080" "1280 720" "640 480" "3840 2160" "1920 1080 5" "1280 720 5" "3840 2160 5"; do
  echo "== probe $a"; timeout 60 c/regtile $a 2>&1 | grep -v '^$'
done
for r in unset on; do
  echo "== bench REGS=$r"
  if [ $r = on ]; then export PIXELKIT_CUDA_FILTER_REGS=on; fi
  timeout 60 c/bench_filter_gpu --no-npp --size 1920x1080 --size 1280x720 --size 3840x2160 --only dense3x3 --only dense5x5 2>&1 | grep -E '^\|' 
done
unset PIXELKIT_CUDA_FILTER_REGS
echo "== test_filter FilterCuda.*"
timeout 240 c/test_filter --gtest_filter='FilterCuda.*:FilterBackends*' 2>&1 | grep -E 'off by|FAILED|PASSED|Failure|Expected|Which is|actual' | head -40
for t in memcheck racecheck; do
  echo "== $t StreamingRegisters*"
  timeout 150 compute-sanitizer --tool $t c/test_filter --gtest_filter='FilterCuda.StreamingRegisters*' 2>&1 | tail -4
done
