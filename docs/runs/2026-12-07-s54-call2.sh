#!/usr/bin/env bash
# Session 54, call 2: the tree at c11f82e (session 53's final code) built on the device by scripts/gpu-check.sh,
# every test (ctest). On an H200 (which has not run this code): the table of record, bench_filter_gpu (every size,
# NPP) and CuPy in the same call, merged by filter_record_table.py. On an H100 (whose table of record at 06e545f
# has the same sm_90 stream cubins): ctest alone (the budget left no room for a memcheck pass).
set -u
mkdir -p /work build && ln -sfn "$PWD" /work/main
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
O=${OUT:-/tmp/out}; mkdir -p "$O"
t0=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu"
LOGS=build/gpu-logs timeout 380 scripts/gpu-check.sh --steps build,ctest > "$O/gpu-check.txt" 2>&1
echo "gpu-check rc $? at $(( $(date +%s) - t0 )) s"; tail -25 "$O/gpu-check.txt"
grep -E 'Failed|Failure|FAILED' build/gpu-logs/ctest.log | head -20
[ -x build/gpu/bench/bench_filter_gpu ] || exit 1
case "$gpu" in
  *H200*)
    timeout 120 build/gpu/bench/bench_filter_gpu > "$O/bench.md" 2>&1; echo "bench rc $? at $(( $(date +%s) - t0 )) s"
    timeout 100 python3 bench/peers/filter_cupy.py --runs 50 > "$O/cupy.md" 2>&1; echo "cupy rc $? at $(( $(date +%s) - t0 )) s"
    python3 bench/peers/filter_record_table.py "$O/bench.md" "$O/cupy.md" > "$O/record.md" 2>&1
    grep -E 'dense(3x3|5x5)' "$O/record.md" | grep -E '1920|7680'; grep -A20 '^Targets' "$O/record.md" ;;
  *) echo "not an H200: no table (the H100's at 06e545f has the same sm_90 stream cubins)" ;;
esac
