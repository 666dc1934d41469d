#!/usr/bin/env bash
# Session 56, call 3 (same warm H100 as call 2, whose device build of c11f82e is still in build/gpu): racecheck of
# the streaming and chained filter cases, then the table of record (bench_filter_gpu with NPP, CuPy, merged).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
O=${OUT:-/tmp/out}; mkdir -p "$O"; t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader; ls -la build/gpu/tests/test_filter build/gpu/bench/bench_filter_gpu || exit 1
timeout 150 compute-sanitizer --tool racecheck build/gpu/tests/test_filter --gtest_filter='FilterCuda.Streaming*:FilterCuda.Chained*:FilterCuda.TensorCoreStreaming*' > "$O/racecheck.log" 2>&1
echo "racecheck rc $? at $(el) s"; grep -E 'PASSED|FAILED|RACECHECK SUMMARY|tests ran' "$O/racecheck.log" | head
timeout 130 build/gpu/bench/bench_filter_gpu > "$O/bench.md" 2>&1; echo "bench rc $? at $(el) s"
timeout 110 python3 bench/peers/filter_cupy.py --runs 50 > "$O/cupy.md" 2>&1; echo "cupy rc $? at $(el) s"
python3 bench/peers/filter_record_table.py "$O/bench.md" "$O/cupy.md" > "$O/record.md" 2>&1
grep -A30 '^Targets' "$O/record.md" | head -40
