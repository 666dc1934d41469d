#!/usr/bin/env bash
# Session 47: ncu's instruction mix (per opcode) of the row-streaming fp16 dense 3x3 kernel at 1080p RGB, the ring
# walk (PIXELKIT_CUDA_FILTER_REG=off) and the register walk (=on), build/sweep/bench_reg; one launch alone each.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
B=build/sweep/bench_reg
for reg in off on; do
  echo "=== 1920x1080 REG=$reg"
  PIXELKIT_CUDA_FILTER_REG=$reg timeout 60 /usr/local/cuda/bin/ncu --clock-control none --kernel-name regex:stream_kernel \
    --launch-skip 3 --launch-count 1 --metrics sass__inst_executed_per_opcode,smsp__inst_executed.sum \
    --print-metric-instances details $B --no-npp --runs 5 --size 1920x1080 --only dense3x3 2>&1 |
    grep -E 'inst_executed' | tr ';' '\n' | sed -E 's/^ +//' | head -80
done
