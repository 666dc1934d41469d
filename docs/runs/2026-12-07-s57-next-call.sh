#!/usr/bin/env bash
# For the next session: the wider strip (notes, run 62's last paragraph). Carries build/c60.tar.xz (a dev-box
# sm_90 build of c11f82e plus the step-barrier patch; its PX_STEPBAR unset is today's code) and build/c62.tar.xz
# (a dev-box sm_90 build of c11f82e plus docs/runs/2026-12-07-s57-wide-strip.patch with PX_STREAM_WARPS 6: every
# streaming tensor-core instance on blocks of 6 warps, strips of 96 pixels, 2 blocks a SM where 3 were, so the
# same 12 warps a SM; a 16-row block's loads and conversion 3 rows a warp instead of 4, so 32 lanes of 4-pixel
# units busy on the 128-column tile of the three-k-step instances instead of 24-25 of 32 on 96 columns).
# In order of need (argument 1: the seconds this call may take): 8K RGB gaussian:19..31 today's / w6; the tests
# (every TensorCoreStreaming case and the cuda cases of the sweeps) on w6; 4K, 1080p; 8K gaussian:11..17; round 2.
set -u
T=${1:-300}
O=${OUT:-/tmp/out}; mkdir -p "$O" c w && tar xJf build/c60.tar.xz -C c && tar xJf build/c62.tar.xz -C w
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
left() { echo $(( T - $(el) )); }
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $? at $(el) s"; grep -E 'FAILED|PASSED|Failure|ERROR SUMMARY|tests ran' "$O/$n.log" | head -12; }
K="--only gauss19 --only gauss21 --only gauss25 --only gauss27 --only gauss31"
b() { local n=$1 bin=$2 size=$3; shift 3; $bin/bench_filter_gpu --no-npp --size $size "$@" > "$O/$n.md" 2>&1;
      printf '%-14s %s\n' "$n" "$(grep -E '^\| [0-9]' "$O/$n.md" | awk -F'|' '{printf "%s%s ", $4, $13}')"; }
echo "== 8K (ms and max diff: gauss19 21 25 27 31)"
b 8k_off_1 c/U 7680x4320 $K; b 8k_w6_1 w/U 7680x4320 $K
TF='FilterCuda.TensorCoreStreaming*:FilterCuda.TensorCoreKernelsInHalfPrecision:Backends/FilterBackend.*/cuda'
[ $(left) -gt 120 ] && { echo "== tests, w6"; t tests_w6 110 w/U/test_filter --gtest_filter="$TF"; }
if [ $(left) -gt 40 ]; then echo "== 4K, 1080p at $(el) s"; b 4k_off_1 c/U 3840x2160 $K; b 4k_w6_1 w/U 3840x2160 $K
  b 1080_off_1 c/U 1920x1080 $K; b 1080_w6_1 w/U 1920x1080 $K; fi
K2="--only gauss11 --only gauss13 --only gauss15 --only gauss17 --only gauss7"
if [ $(left) -gt 30 ]; then echo "== 8K gauss11 13 15 17 7 at $(el) s"; b 8k_off_s c/U 7680x4320 $K2; b 8k_w6_s w/U 7680x4320 $K2; fi
if [ $(left) -gt 25 ]; then echo "== round 2 at $(el) s"; b 8k_w6_2 w/U 7680x4320 $K; b 8k_off_2 c/U 7680x4320 $K; fi
echo "== done at $(el) s"
