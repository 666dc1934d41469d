#!/usr/bin/env bash
# Session 60, call 3: why the wide instances (c63, PIXELKIT_CUDA_FILTER_WIDE=on: 6 warps, 96-pixel strips) ran
# 1.5x slower than today's 4-warp ones at 8K (call 1). Nsight Compute on one launch of each at 8K RGB gaussian:21
# (launch statistics, occupancy, scheduler, warp states, throughput), then the wide instances' own test alone.
# Carries build/c63.tar.xz.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O" n && tar xJf build/c63.tar.xz -C n
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
[ -d /work/main/data ] || { mkdir -p /work && ln -sfn "$PWD" /work/main; }
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
S="--section LaunchStats --section Occupancy --section SchedulerStats --section WarpStateStats --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis"
for v in off on; do
  env PIXELKIT_CUDA_FILTER_WIDE=$v timeout 150 $NCU $S -k regex:separable_mma_stream --launch-skip 2 -c 1 \
    n/U/bench_filter_gpu --no-npp --runs 5 --size 7680x4320 --only gauss21 > "$O/ncu_$v.txt" 2>&1
  echo "== $v: rc $? at $(el) s"
  grep -E 'separable_mma_stream|Duration|Registers Per|Block Size|Grid Size|Shared Memory Config|Dynamic Shared|Block Limit|Theoretical Occ|Achieved Occ|Achieved Active|Waves Per|Issue Slots Busy|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Memory Throughput|DRAM Throughput|Compute \(SM\)|L1/TEX Hit|L2 Hit|Executed Ipc A|Local' "$O/ncu_$v.txt" | sed 's/  */ /g' | head -45
done
for v in off on; do
  env PIXELKIT_CUDA_FILTER_WIDE=$v timeout 100 $NCU --section WarpStateStats --print-details all -k regex:separable_mma_stream \
    --launch-skip 2 -c 1 n/U/bench_filter_gpu --no-npp --runs 5 --size 7680x4320 --only gauss21 > "$O/ncu_stall_$v.txt" 2>&1
  echo "== $v, stall reasons: rc $? at $(el) s"
  grep -iE 'stall|Warp Cycles' "$O/ncu_stall_$v.txt" | sed 's/  */ /g' | head -30
done
echo "== the wide instances' test alone (c63) at $(el) s"
timeout 120 n/U/test_filter --gtest_filter='FilterCuda.TensorCoreStreamingWide*' > "$O/test_wide.log" 2>&1; echo "rc $?"
tail -8 "$O/test_wide.log"
echo "== done at $(el) s"
