#!/usr/bin/env bash
# For the next session's first device call (written in session 52, not run): version 6 of stream_regs_kernel,
# border replicate's own instances (stream_regs_kernel<C, K, NR, true>: the probe's code for 1, 3 and 4 channels;
# PTX for RGB 3x3 at 2 rows 420 instructions against the probe's 415 and version 4's 1689; ptxas: no spills).
# Carries build/c53.tar.xz (dev-box sm_90 build of the tree at session 52's end, stripped, tar | xz -9e: U6 =
# test_filter and bench_filter_gpu); rebuild it as session 51's calls record says if build/ is gone. The
# benchmark runs border replicate (NPP's), so "on" takes version 6 there; the tests run every border mode.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O" c && tar xJf build/c53.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
t0=$(date +%s)
sizes="--size 1920x1080 --size 1280x720 --size 640x480 --size 3840x2160 --size 7680x4320"
bench() { timeout 90 c/U6/bench_filter_gpu --no-npp --runs 30 $sizes --only dense3x3 --only dense5x5 2>&1 | grep -E '^\| [0-9]' | cut -d'|' -f2-4,9,10,13- | tee "$O/ab-$1.txt"; }
echo "== bench, REGS unset"; bench unset
echo "== bench, REGS=on"; PIXELKIT_CUDA_FILTER_REGS=on bench on
echo "== bench, REGS=always"; PIXELKIT_CUDA_FILTER_REGS=always bench always
echo "== CuPy 1080p"; timeout 60 python3 bench/peers/filter_cupy.py --runs 50 --size 1920x1080 2>&1 | grep -E '^\| .*dense(3x3|5x5)'
echo "== $(( $(date +%s) - t0 )) s"
# gtest writes to a pipe in blocks: each test binary's whole output to a file, then the lines that matter.
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $?"; grep -E 'in registers|FAILED|PASSED|Failure|ERROR SUMMARY|RACECHECK SUMMARY' "$O/$n.log" | head -20; }
echo "== StreamingRegisters*"; t regs 90 c/U6/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== memcheck"; t memcheck 150 compute-sanitizer --tool memcheck c/U6/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== racecheck"; t racecheck 150 compute-sanitizer --tool racecheck c/U6/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== FilterCuda.* with the switch on"; PIXELKIT_CUDA_FILTER_REGS=on t all 240 c/U6/test_filter --gtest_filter='FilterCuda.*:FilterBackends*'
echo "== done at $(( $(date +%s) - t0 )) s"
