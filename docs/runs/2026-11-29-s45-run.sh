#!/usr/bin/env bash
# Session 45 device call: ncu instruction mix of the 8K RGB streaming tensor-core
# instances after run 50, then initcheck and synccheck of test_filter's GPU cases
# not run in calls 1-2 (dev-box build of HEAD, carried).
mkdir -p /work && ln -sfn "$PWD" /work/main
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
B=build/carry/bench/bench_filter_gpu
M=sass__inst_executed_per_opcode,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg,smsp__warps_active.avg.per_cycle_active,gpu__time_duration.sum
$B --no-npp --runs 20 --size 7680x4320 --only gauss9 --only gauss11 --only gauss21 2>&1 | grep '^| [0-9]'
for k in gauss9 gauss11 gauss21; do
  echo "=== ncu $k"
  timeout 60 /usr/local/cuda/bin/ncu --clock-control none --kernel-name regex:mma_stream --launch-skip 3 --launch-count 1 --metrics $M --print-metric-instances details \
    $B --no-npp --runs 5 --size 7680x4320 --only $k 2>&1 | grep -E 'mma_stream|inst_executed|issue_active|cycles_elapsed|warps_active|duration' | cut -c1-4000
done > $OUT/ncu-mix.txt
grep -E '^=== |inst_executed.sum|issue_active|duration' $OUT/ncu-mix.txt
BUILD=build/carry scripts/gpu-check.sh --steps initcheck --tests test_filter --per-case --deadline 200 --case-timeout 100 \
  --skip-cases 'TensorCoreStreaming|TensorCoreKernelsInHalfPrecision|Chained'
BUILD=build/carry OUT=$OUT/sc scripts/gpu-check.sh --steps synccheck --tests test_filter --per-case --deadline 170 --case-timeout 100 \
  --skip-cases 'TensorCoreStreaming|TensorCoreKernelsInHalfPrecision|Chained'
