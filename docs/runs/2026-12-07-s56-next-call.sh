#!/usr/bin/env bash
# For the next session: the step-barrier diagnostic (notes, run 61). Carries build/c60.tar.xz: a dev-box sm_90
# build of c11f82e plus docs/runs/2026-12-07-s56-mbar-step.patch (test_filter, bench_filter_gpu in U/), whose
# PX_STEPBAR picks the fp16 three-k-step instances: unset, today's; nb4, four tile buffers with the block barrier
# (their shared memory alone); mbar, run 61's mbarriers; mbarw, the same with the wait before the conversion.
# In order of need, each step only if the time left allows (argument 1: the seconds this call may take): 8K RGB
# gaussian:19..31 for the four; the tests with nb4 and mbarw; a second round; 4K.
set -u
T=${1:-300}
O=${OUT:-/tmp/out}; mkdir -p "$O" c && tar xJf build/c60.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
left() { echo $(( T - $(el) )); }
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $? at $(el) s"; grep -E 'FAILED|PASSED|Failure|ERROR SUMMARY|RACECHECK SUMMARY|tests ran' "$O/$n.log" | head -8; }
K="--only gauss19 --only gauss21 --only gauss25 --only gauss27 --only gauss31"
b() { local n=$1 size=$2; shift 2; env "$@" c/U/bench_filter_gpu --no-npp --size $size $K > "$O/$n.md" 2>&1;
      printf '%-14s %s\n' "$n" "$(grep -E '^\| [0-9]' "$O/$n.md" | awk -F'|' '{printf "%s%s ", $4, $13}')"; }
echo "== 8K (ms and max diff: gauss19 21 25 27 31)"
for v in off nb4 mbar mbarw; do b 8k_${v}_1 7680x4320 PX_STEPBAR=$v; done
TF='FilterCuda.TensorCoreStreamingSeparableKernelsAgreeWithRef:FilterCuda.TensorCoreStreamingOneWaveTakesATailBand*:FilterCuda.TensorCoreStreamingThreeDownWalksBands*:FilterCuda.TensorCoreStreamingEdgeColumns*'
for v in nb4 mbarw; do [ $(left) -gt 90 ] && { echo "== tests, $v"; t tests_$v 60 env PX_STEPBAR=$v c/U/test_filter --gtest_filter="$TF"; }; done
if [ $(left) -gt 50 ]; then echo "== round 2 at $(el) s"; for v in mbarw mbar nb4 off; do b 8k_${v}_2 7680x4320 PX_STEPBAR=$v; done; fi
if [ $(left) -gt 40 ]; then echo "== 4K at $(el) s"; for v in off nb4 mbar mbarw; do b 4k_${v}_1 3840x2160 PX_STEPBAR=$v; done; fi
echo "== done at $(el) s"
