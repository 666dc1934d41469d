#!/usr/bin/env bash
# Session 47: ncu of the row-streaming fp16 dense 3x3 kernel at 720p and 1080p RGB, the ring walk
# (PIXELKIT_CUDA_FILTER_REG=off) against the register walk (=on), build/sweep/bench_reg (the dev-box sm_90
# build of docs/runs/2026-11-29-s47-register-walk.patch); one launch alone each.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
B=build/sweep/bench_reg
M=smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg,sm__cycles_active.avg,sm__cycles_active.max,smsp__warps_active.avg.per_cycle_active,gpu__time_duration.sum,launch__registers_per_thread,launch__grid_size
for sz in 1280x720 1920x1080; do
  for reg in off on; do
    echo "=== $sz REG=$reg"
    PIXELKIT_CUDA_FILTER_REG=$reg timeout 60 /usr/local/cuda/bin/ncu --clock-control none --kernel-name regex:stream_kernel \
      --launch-skip 3 --launch-count 1 --metrics $M $B --no-npp --runs 5 --size $sz --only dense3x3 2>&1 |
      grep -E 'inst_executed|issue_active|cycles|warps_active|duration|registers|grid_size'
  done
done
