#!/usr/bin/env bash
# Session 55, call 3: the packed tail (notes, run 60). Carries build/c58.tar.xz: dev-box sm_90 builds of the
# working tree (c11f82e + the packed tail + the experiment-only knobs PX_PACK_EDGE, PX_EDGE_FACTOR, PX_TAIL_STEPS):
# test_filter and bench_filter_gpu. In order of need, each step only if the time left allows (argument 1: the
# seconds this call may take): tests (plain, to a file); PIXELKIT_CUDA_FILTER_PACK=off (today's layout) against the
# packed tail at 8K RGB gaussian:13 and 19..31; memcheck of the packed-tail test; the same at 4K; edge costs 100 /
# 130 / 150 (the default 110); a second round.
set -u
T=${1:-520}
O=${OUT:-/tmp/out}; mkdir -p "$O" c && tar xJf build/c58.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
left() { echo $(( T - $(el) )); }
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $? at $(el) s"; grep -E 'FAILED|PASSED|Failure|ERROR SUMMARY|tests ran|Expected|Which is|path' "$O/$n.log" | head -16; }
K="--only gauss13 --only gauss19 --only gauss21 --only gauss25 --only gauss27 --only gauss31"
b() { local n=$1 size=$2; shift 2; env "$@" c/U/bench_filter_gpu --no-npp --size $size $K > "$O/$n.md" 2>&1;
      printf '%-16s %s\n' "$n" "$(grep -E '^\| [0-9]' "$O/$n.md" | awk -F'|' '{printf "%s%s ", $4, $13}')"; }
echo "== tests"; t tests $(( $(left) > 220 ? 120 : 80 )) c/U/test_filter --gtest_filter='FilterCudaHost.*:FilterCuda.TensorCoreStreamingOneWave*:FilterCuda.TensorCoreStreamingSeparableKernelsAgreeWithRef:FilterCuda.TensorCoreStreamingEdgeColumns*:FilterCuda.TensorCoreStreaming*WalksBands*'
echo "== 8K (ms and max diff: gauss13 19 21 25 27 31) at $(el) s"
b 8k_off_1 7680x4320 PIXELKIT_CUDA_FILTER_PACK=off
b 8k_pack_1 7680x4320 X=1
grep -h -o 'cuda separable tensor cores streaming 2[15]x2[15][^|]*' "$O/8k_pack_1.md" "$O/8k_off_1.md" | sort | uniq -c
if [ $(left) -gt 100 ]; then echo "== memcheck of the packed-tail test"; t memcheck $(( $(left) - 30 < 150 ? $(left) - 30 : 150 )) compute-sanitizer --tool memcheck c/U/test_filter --gtest_filter='FilterCuda.TensorCoreStreamingOneWaveTakesAPacked*'; fi
if [ $(left) -gt 40 ]; then echo "== 4K at $(el) s"; b 4k_off_1 3840x2160 PIXELKIT_CUDA_FILTER_PACK=off; b 4k_pack_1 3840x2160 X=1; fi
for e in 100 130 150; do [ $(left) -gt 45 ] && b 8k_e${e}_1 7680x4320 PX_PACK_EDGE=$e; done
if [ $(left) -gt 90 ]; then echo "== round 2 at $(el) s"; b 8k_off_2 7680x4320 PIXELKIT_CUDA_FILTER_PACK=off; b 8k_pack_2 7680x4320 X=1; fi
if [ $(left) -gt 40 ]; then b 4k_off_2 3840x2160 PIXELKIT_CUDA_FILTER_PACK=off; b 4k_pack_2 3840x2160 X=1; fi
echo "== done at $(el) s"
