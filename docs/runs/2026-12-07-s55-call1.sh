#!/usr/bin/env bash
# Session 55, call 1: session 54's kit (docs/runs/2026-12-07-s54-next-call.sh, carrying build/c56.tar.xz: five
# variants of the lean three-k-step fp16 RGB instance) followed, in the same call, by session 54's call 3 (carrying
# build/c54.tar.xz, the dev-box sm_90 build of c11f82e: every Streaming|Chained case of test_filter under memcheck).
# On an H200 the c11f82e bench and CuPy run too (the table of record), if time is left.
set -u
O=${OUT:-/tmp/out}; export OUT=$O; mkdir -p "$O"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
bash docs/runs/2026-12-07-s54-next-call.sh
echo "== call 3 at $(el) s"
mkdir -p c && tar xJf build/c54.tar.xz -C c && mv c/U/test_filter c/U/test_c54 && mv c/U/bench_filter_gpu c/U/bench_c54
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $? at $(el) s"; grep -E 'FAILED|PASSED|Failure|ERROR SUMMARY|tests ran' "$O/$n.log" | head -12; }
case "$gpu" in
  *H200*) echo "== H200: table of record of c11f82e"
    timeout 120 c/U/bench_c54 > "$O/bench.md" 2>&1; echo "bench rc $? at $(el) s"
    timeout 100 python3 bench/peers/filter_cupy.py --runs 50 > "$O/cupy.md" 2>&1; echo "cupy rc $? at $(el) s"
    python3 bench/peers/filter_record_table.py "$O/bench.md" "$O/cupy.md" > "$O/record.md" 2>&1
    grep -A20 '^Targets' "$O/record.md" ;;
esac
left=$(( 560 - $(el) )); [ $left -gt 200 ] || { echo "no time for memcheck ($left s)"; exit 0; }
echo "== memcheck FilterCuda.Streaming*:FilterCuda.Chained* (limit $((left-10)) s)"
t memcheck $((left-10)) compute-sanitizer --tool memcheck c/U/test_c54 --gtest_filter='FilterCuda.Streaming*:FilterCuda.Chained*'
echo "== done at $(el) s"
