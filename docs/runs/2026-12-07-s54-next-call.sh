#!/usr/bin/env bash
# Session 54's kit for the next session's first call (not run in session 54: no budget left). Carries
# build/c56.tar.xz: dev-box sm_90 builds of c11f82e + docs/runs/2026-12-07-s54-lean3-variants.patch, one
# bench_filter_gpu a PIXELKIT_LEAN3_VARIANT (the lean three-k-step fp16 RGB instance, notes run 58):
#   v0 fragments in shared memory, 4 blocks a SM (run 58's: 0.114 ms at 8K RGB gaussian:19..31, 14% slower)
#   v1 the same at 3 blocks (152 registers, no spill): the fragment reads' cost alone
#   v2 fragments in registers, 4 blocks (48 / 164 bytes of spill)
#   v3 the window in thread-private shared slots, fragments in registers, 4 blocks (112 registers, no spill)
#   v4 the same at 5 blocks (96 registers, no spill; 43.5 KB of shared memory a block)
# and test_filter of v4 (the lean test with gaussian:21 and 31: lean and LEAN=off byte for byte, and against ref).
# The baseline is any binary with PIXELKIT_CUDA_FILTER_LEAN=off (the instance of 3 blocks the library takes today).
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O" c && tar xJf build/c56.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $? at $(el) s"; grep -E 'FAILED|PASSED|Failure|ERROR SUMMARY|RACECHECK SUMMARY' "$O/$n.log" | head -12; }
echo "== memcheck lean v4"; t memcheck 120 compute-sanitizer --tool memcheck c/U/test_v4 --gtest_filter='FilterCuda.TensorCoreStreamingLean*'
echo "== racecheck lean v4"; t racecheck 120 compute-sanitizer --tool racecheck c/U/test_v4 --gtest_filter='FilterCuda.TensorCoreStreamingLean*'
A="--no-npp --size 7680x4320 --size 3840x2160"; for k in 11 19 21 25 27 31; do A="$A --only gauss$k"; done
for r in 1 2; do
  PIXELKIT_CUDA_FILTER_LEAN=off c/U/bench_v0 $A > "$O/off_$r.md" 2>&1
  for v in 0 1 2 3 4; do c/U/bench_v$v $A > "$O/v${v}_$r.md" 2>&1; done
  echo "round $r at $(el) s"
done
for f in off v0 v1 v2 v3 v4; do
  echo "== $f (8K and 4K: gauss11 19 21 25 27 31; round 1 / round 2; max diff vs ref)"
  paste -d' ' <(grep -E '^\| (7680|3840)' "$O/${f}_1.md" | awk -F'|' '{print $2 $3 $4 " " $13}') \
              <(grep -E '^\| (7680|3840)' "$O/${f}_2.md" | awk -F'|' '{print $4}')
done
echo "== done at $(el) s"
