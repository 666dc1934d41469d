#!/usr/bin/env bash
# Session 53, call 4: stream_regs_kernel's fixed instances for reflect and reflect101 too (the default for
# replicate, reflect and reflect101). The tree built on the device (scripts/gpu-check.sh), every test (ctest);
# the register cases under memcheck and racecheck; RGB dense 3x3 and 5x5 on the three modes, REGS=off against the
# default; then, while the call has time, the table of record (bench_filter_gpu with NPP, CuPy in the same call).
set -u
mkdir -p /work build && ln -sfn "$PWD" /work/main
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
O=${OUT:-/tmp/out}; mkdir -p "$O"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
LOGS=build/gpu-logs timeout 330 scripts/gpu-check.sh --steps build,ctest > "$O/gpu-check.txt" 2>&1
echo "gpu-check rc $? at $(el) s"; grep -vE 'Skipped|^\s+[0-9]+ - ' "$O/gpu-check.txt" | tail -12
grep -E '\*\*\*Failed|Failure|FAILED' build/gpu-logs/ctest.log | head -20
B=build/gpu/tests/test_filter; [ -x "$B" ] || B=$(find build/gpu -name test_filter -type f | head -1)
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $? at $(el) s"; grep -E 'in registers|FAILED|PASSED|Failure|ERROR SUMMARY|RACECHECK SUMMARY' "$O/$n.log" | head -20; }
echo "== memcheck StreamingRegisters*"; t memcheck 100 compute-sanitizer --tool memcheck $B --gtest_filter='FilterCuda.StreamingRegisters*'
echo "== racecheck StreamingRegisters*"; t racecheck 100 compute-sanitizer --tool racecheck $B --gtest_filter='FilterCuda.StreamingRegisters*'
sizes="--size 640x480 --size 1920x1080 --size 3840x2160 --size 7680x4320"
for m in reflect101 reflect replicate; do for r in off ""; do
  echo "== $m REGS='$r'"
  PIXELKIT_CUDA_FILTER_REGS=$r timeout 40 build/gpu/bench/bench_filter_gpu --no-npp --runs 30 --border $m $sizes --only dense3x3 --only dense5x5 2>&1 | grep -E '^\| [0-9]' | cut -d'|' -f2-4,9,10,13- | tee "$O/$m-${r:-default}.txt"
done; done
echo "== at $(el) s"
if [ "$(el)" -lt 420 ]; then
  timeout 90 build/gpu/bench/bench_filter_gpu > "$O/bench.md" 2>&1; echo "bench rc $? at $(el) s"
  timeout 70 python3 bench/peers/filter_cupy.py --runs 50 > "$O/cupy.md" 2>&1; echo "cupy rc $? at $(el) s"
  python3 bench/peers/filter_record_table.py "$O/bench.md" "$O/cupy.md" > "$O/record.md" 2>&1
  grep -E '1920x1080 \| dense(3x3|5x5)' "$O/record.md"; grep -A20 '^Targets' "$O/record.md"
fi
echo "== done at $(el) s"
