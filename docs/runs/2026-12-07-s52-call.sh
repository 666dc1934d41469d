#!/usr/bin/env bash
# Session 52's device call: session 51's call 2 (version 4 of stream_regs_kernel, builds U, B and L carried in
# build/c51.tar.xz; see docs/runs/2026-12-07-s51-call2.sh) and, where the register kernel beats the default paths
# at 1080p, the table of record with the switch on, in the same call: the tree built on the device (with NPP) in
# the background while the tests run, then the A/B benchmarks once the build is done (nothing else running), then
# bench_filter_gpu (every size, NPP) with PIXELKIT_CUDA_FILTER_REGS=on and CuPy's times.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O" /work build && ln -sfn "$PWD" /work/main
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
git log --oneline -1 2>/dev/null
t0=$(date +%s)
( nice -n 19 cmake -S . -B build/gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > "$O/configure.log" 2>&1 &&
  nice -n 19 cmake --build build/gpu -j 14 --target bench_filter_gpu > "$O/build.log" 2>&1; echo "build rc $?" ) &
bpid=$!
mkdir -p c && tar xJf build/c51.tar.xz -C c
t() { timeout 100 "$@" 2>&1 | grep -E 'in registers|FAILED|PASSED|Failure|Expected|Which is|actual|ERROR SUMMARY|RACECHECK SUMMARY' | head -20; }
echo "== test_filter StreamingRegisters* (U)"; t c/U/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== test_filter StreamingRegisters* (B)"; t c/B/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== test_filter StreamingRegisters* (L)"; t c/L/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== memcheck (U)"; t compute-sanitizer --tool memcheck c/U/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== test_filter FilterCuda.* (U, switch unset)"; t c/U/test_filter --gtest_filter='FilterCuda.*:FilterBackends*'
echo "== test_filter FilterCuda.* (U, switch on)"; PIXELKIT_CUDA_FILTER_REGS=on t c/U/test_filter --gtest_filter='FilterCuda.*:FilterBackends*'
echo "== racecheck (U)"; t compute-sanitizer --tool racecheck c/U/test_filter --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== waiting for the device build ($(( $(date +%s) - t0 )) s so far)"; wait $bpid
echo "== build done at $(( $(date +%s) - t0 )) s"; grep 'pixelkit:' "$O/configure.log"; grep -E 'error' "$O/build.log" | head
sizes="--size 1920x1080 --size 1280x720 --size 640x480 --size 3840x2160"
bench() { timeout 60 c/$1/bench_filter_gpu --no-npp --runs 30 $sizes --only dense3x3 --only dense5x5 2>&1 | grep -E '^\| [0-9]' | cut -d'|' -f2-4,9,10,13- | tee "$O/ab-$2.txt"; }
echo "== bench, REGS unset (U)"; bench U unset
echo "== bench, REGS=on (U)"; PIXELKIT_CUDA_FILTER_REGS=on bench U U
echo "== bench, REGS=on (B)"; PIXELKIT_CUDA_FILTER_REGS=on bench B B
echo "== bench, REGS=on (L)"; PIXELKIT_CUDA_FILTER_REGS=on bench L L
echo "== bench, REGS=always (L)"; PIXELKIT_CUDA_FILTER_REGS=always bench L Lalways
sum1080() { awk -F'|' '$1 ~ /1920x1080/ { s += $3 } END { printf "%.4f", s }' "$O/ab-$1.txt"; }
best=unset; bt=$(sum1080 unset); echo "1080p dense3x3+dense5x5 ms: unset $bt"
for b in U B L; do v=$(sum1080 $b); echo "  $b $v"; if awk "BEGIN{exit !($v < $bt)}"; then best=$b; bt=$v; fi; done
echo "== best at 1080p: $best ($(( $(date +%s) - t0 )) s so far)"
if [ "$best" = U ] && [ -x build/gpu/bench/bench_filter_gpu ]; then
  echo "== table of record, device build, REGS=on"
  PIXELKIT_CUDA_FILTER_REGS=on timeout 150 build/gpu/bench/bench_filter_gpu > "$O/bench.md" 2>&1; echo "rc $?"
elif [ "$best" != unset ]; then
  echo "== table, carried build $best, REGS=on, no NPP"
  PIXELKIT_CUDA_FILTER_REGS=on timeout 150 c/$best/bench_filter_gpu --no-npp > "$O/bench.md" 2>&1; echo "rc $?"
fi
if [ -s "$O/bench.md" ]; then
  timeout 120 python3 bench/peers/filter_cupy.py --runs 50 > "$O/cupy.md" 2>&1; echo "cupy rc $?"
  python3 bench/peers/filter_record_table.py "$O/bench.md" "$O/cupy.md" > "$O/record.md" 2>&1; echo "record rc $?"
  grep -iE 'missed|met|1920x1080.*dense(3|5)' "$O/record.md" | head -40
fi
echo "== done at $(( $(date +%s) - t0 )) s"
