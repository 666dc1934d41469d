#!/usr/bin/env bash
# Session 53, call 2: the tree with border replicate's register instances as the default (regs_policy), built on
# the device by scripts/gpu-check.sh (NPP in the benchmark's process), every test (ctest), then the table of
# record: bench_filter_gpu (every size, NPP) and CuPy in the same call, merged by filter_record_table.py.
set -u
mkdir -p /work build && ln -sfn "$PWD" /work/main
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
O=${OUT:-/tmp/out}; mkdir -p "$O"
t0=$(date +%s)
LOGS=build/gpu-logs timeout 360 scripts/gpu-check.sh --steps build,ctest > "$O/gpu-check.txt" 2>&1
echo "gpu-check rc $? at $(( $(date +%s) - t0 )) s"; cat "$O/gpu-check.txt"
grep -E 'Failed|Failure|FAILED' build/gpu-logs/ctest.log | head -20
[ -x build/gpu/bench/bench_filter_gpu ] || exit 1
timeout 120 build/gpu/bench/bench_filter_gpu > "$O/bench.md" 2>&1; echo "bench rc $? at $(( $(date +%s) - t0 )) s"
timeout 100 python3 bench/peers/filter_cupy.py --runs 50 > "$O/cupy.md" 2>&1; echo "cupy rc $? at $(( $(date +%s) - t0 )) s"
python3 bench/peers/filter_record_table.py "$O/bench.md" "$O/cupy.md" > "$O/record.md" 2>&1
grep -E 'dense(3x3|5x5)' "$O/record.md"; grep -A20 '^Targets' "$O/record.md"
