#!/usr/bin/env bash
# For the next session: the wider strip (notes, run 62's last paragraphs). Carries build/c63.tar.xz (a dev-box
# sm_90 build of c11f82e plus docs/runs/2026-12-07-s57-wide-instances.patch: PIXELKIT_CUDA_FILTER_WIDE=on puts the
# fp16 three-k-step instances, sides 19..31 at 1 and 3 channels, on blocks of 6 warps and 96-pixel strips; unset,
# today's 4-warp instances, whose registers and spill are unchanged) and, if the carry allows, build/c62.tar.xz
# (c11f82e plus docs/runs/2026-12-07-s57-wide-strip.patch built with PX_STREAM_WARPS 6: every streaming
# tensor-core instance on 6 warps, for the two-k-step sizes). In order of need (argument 1: the seconds this call
# may take): 8K RGB gaussian:19..31 off / on; the tests on c63 (the new bit-for-bit case, every TensorCoreStreaming
# case and the sweeps' cuda cases); 4K and 1080p off / on; one channel at 8K; a second 8K round; c62 at 8K
# gaussian:7, 11..17 against c63.
set -u
T=${1:-300}
O=${OUT:-/tmp/out}; mkdir -p "$O" n && tar xJf build/c63.tar.xz -C n
[ -f build/c62.tar.xz ] && mkdir -p w && tar xJf build/c62.tar.xz -C w
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
left() { echo $(( T - $(el) )); }
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $? at $(el) s"; grep -E 'FAILED|PASSED|Failure|ERROR SUMMARY|tests ran' "$O/$n.log" | head -12; }
K="--only gauss19 --only gauss21 --only gauss25 --only gauss27 --only gauss31"
# b NAME BIN SIZE [ENV=V ...] -- [bench options]
b() { local n=$1 bin=$2 size=$3; shift 3; local e=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do e+=("$1"); shift; done; shift
      env "${e[@]}" $bin/bench_filter_gpu --no-npp --size $size "$@" > "$O/$n.md" 2>&1
      printf '%-14s %s\n' "$n" "$(grep -E '^\| [0-9]' "$O/$n.md" | awk -F'|' '{printf "%s%s ", $4, $13}')"; }
echo "== 8K (ms and max diff: gauss19 21 25 27 31)"
b 8k_off_1 n/U 7680x4320 X=1 -- $K; b 8k_on_1 n/U 7680x4320 PIXELKIT_CUDA_FILTER_WIDE=on -- $K
grep -o 'streaming[^|]*' "$O/8k_on_1.md" | sort -u | head -3
TF='FilterCuda.TensorCoreStreaming*:FilterCuda.TensorCoreKernelsInHalfPrecision:Backends/FilterBackend.*/cuda'
[ $(left) -gt 150 ] && { echo "== tests (c63)"; t tests_c63 140 n/U/test_filter --gtest_filter="$TF"; }
if [ $(left) -gt 40 ]; then echo "== 4K, 1080p at $(el) s"; b 4k_off_1 n/U 3840x2160 X=1 -- $K; b 4k_on_1 n/U 3840x2160 PIXELKIT_CUDA_FILTER_WIDE=on -- $K
  b 1080_off_1 n/U 1920x1080 X=1 -- $K; b 1080_on_1 n/U 1920x1080 PIXELKIT_CUDA_FILTER_WIDE=on -- $K; fi
if [ $(left) -gt 30 ]; then echo "== round 2 at $(el) s"; b 8k_on_2 n/U 7680x4320 PIXELKIT_CUDA_FILTER_WIDE=on -- $K; b 8k_off_2 n/U 7680x4320 X=1 -- $K; fi
if [ $(left) -gt 30 ]; then echo "== 8K one channel at $(el) s"; b 8k1_off n/U 7680x4320 X=1 -- $K --channels 1; b 8k1_on n/U 7680x4320 PIXELKIT_CUDA_FILTER_WIDE=on -- $K --channels 1; fi
K2="--only gauss7 --only gauss11 --only gauss13 --only gauss17"
if [ -d w ] && [ $(left) -gt 30 ]; then echo "== c62 (every instance on 6 warps): 8K gauss7 11 13 17 at $(el) s"; b 8k_s_c63 n/U 7680x4320 X=1 -- $K2; b 8k_s_c62 w/U 7680x4320 X=1 -- $K2; fi
echo "== done at $(el) s"
