#!/usr/bin/env bash
# For the next session, after (or with) docs/runs/2026-12-07-s56-next-call.sh: cheaper item starts for the tail
# band (notes, run 61's last paragraph). Carries build/c61.tar.xz: a dev-box sm_90 build of c11f82e plus
# docs/runs/2026-12-07-s56-next-prefetch.patch (test_filter, bench_filter_gpu in U/): PX_NEXT_PREFETCH=on makes
# each block prefetch its next item's first rows into L2 when it starts an item (the tail band's blocks and the
# band walk); PX_TAIL_STEPS=N (session 55's knob) sets the one wave's bands to N steps. In order of need (argument
# 1: the seconds this call may take): 8K RGB gaussian:19..31 default / on / on + bands of 85 / 84 / 83; the tests
# with it on; PX_STEADY3=on (the steady step for the fp16 three-k-step instances without the half step, sides
# 27..31: run 44 measured -2% at 8K, +9% at 4K) alone and with the prefetch, and its tests; 4K and 1080p default /
# on; a second 8K round.
set -u
T=${1:-300}
O=${OUT:-/tmp/out}; mkdir -p "$O" c && tar xJf build/c61.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
left() { echo $(( T - $(el) )); }
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $? at $(el) s"; grep -E 'FAILED|PASSED|Failure|ERROR SUMMARY|tests ran' "$O/$n.log" | head -8; }
K="--only gauss19 --only gauss21 --only gauss25 --only gauss27 --only gauss31"
b() { local n=$1 size=$2; shift 2; env "$@" c/U/bench_filter_gpu --no-npp --size $size $K > "$O/$n.md" 2>&1;
      printf '%-16s %s\n' "$n" "$(grep -E '^\| [0-9]' "$O/$n.md" | awk -F'|' '{printf "%s%s ", $4, $13}')"; }
echo "== 8K (ms and max diff: gauss19 21 25 27 31)"
b 8k_def_1 7680x4320 X=1
b 8k_on_1 7680x4320 PX_NEXT_PREFETCH=on
for s in 85 84 83; do b 8k_on_t${s}_1 7680x4320 PX_NEXT_PREFETCH=on PX_TAIL_STEPS=$s; done
grep -h -o '\[PX_TAIL_STEPS[^]]*\]' "$O"/8k_on_t*_1.md | sort -u | head -12
TF='FilterCuda.TensorCoreStreamingSeparableKernelsAgreeWithRef:FilterCuda.TensorCoreStreamingOneWaveTakesATailBand*:FilterCuda.TensorCoreStreaming*WalksBands*:FilterCuda.TensorCoreStreamingEdgeColumns*'
[ $(left) -gt 100 ] && { echo "== tests, on"; t tests_on 70 env PX_NEXT_PREFETCH=on c/U/test_filter --gtest_filter="$TF"; }
if [ $(left) -gt 60 ]; then echo "== steady3 at $(el) s"; b 8k_st3_1 7680x4320 PX_STEADY3=on; b 8k_st3_on_1 7680x4320 PX_STEADY3=on PX_NEXT_PREFETCH=on; b 4k_st3_1 3840x2160 PX_STEADY3=on; fi
[ $(left) -gt 100 ] && { echo "== tests, steady3"; t tests_st3 70 env PX_STEADY3=on c/U/test_filter --gtest_filter="$TF"; }
if [ $(left) -gt 50 ]; then echo "== 4K, 1080p at $(el) s"; b 4k_def_1 3840x2160 X=1; b 4k_on_1 3840x2160 PX_NEXT_PREFETCH=on; b 1080_def_1 1920x1080 X=1; b 1080_on_1 1920x1080 PX_NEXT_PREFETCH=on; fi
if [ $(left) -gt 50 ]; then echo "== round 2 at $(el) s"; b 8k_on_2 7680x4320 PX_NEXT_PREFETCH=on; b 8k_def_2 7680x4320 X=1; b 8k_on_t84_2 7680x4320 PX_NEXT_PREFETCH=on PX_TAIL_STEPS=84; fi
echo "== done at $(el) s"
