#!/usr/bin/env bash
# Session 56, call 1: the step's block barrier replaced by mbarriers in the fp16 three-k-step instances (MBAR,
# experiment; PX_STEPBAR=mbar picks them). Carries build/c59.tar.xz (dev-box sm_90 build of the working tree:
# test_filter, bench_filter_gpu in U/) and build/c54b.tar.xz (bench_filter_gpu of exactly c11f82e, in B/).
# In order of need, each step only if the time left allows (argument 1: the seconds this call may take):
# the tests with PX_STEPBAR=mbar; 8K RGB gaussian:19..31, c11f82e / this build / this build with mbar; memcheck
# and racecheck of the mbar instances; 4K; a second 8K round.
set -u
T=${1:-420}
O=${OUT:-/tmp/out}; mkdir -p "$O" c && tar xJf build/c59.tar.xz -C c && tar xJf build/c54b.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
left() { echo $(( T - $(el) )); }
t() { local n=$1 s=$2; shift 2; timeout "$s" "$@" > "$O/$n.log" 2>&1; echo "rc $? at $(el) s"; grep -E 'FAILED|PASSED|Failure|ERROR SUMMARY|RACECHECK SUMMARY|hazard|tests ran|Expected|Which is' "$O/$n.log" | head -16; }
K="--only gauss19 --only gauss21 --only gauss25 --only gauss27 --only gauss31"
b() { local n=$1 bin=$2 size=$3; shift 3; env "$@" $bin --no-npp --size $size $K > "$O/$n.md" 2>&1;
      printf '%-14s %s\n' "$n" "$(grep -E '^\| [0-9]' "$O/$n.md" | awk -F'|' '{printf "%s%s ", $4, $13}')"; }
TF='FilterCuda.TensorCoreStreaming*:FilterCuda.TensorCoreKernelsInHalfPrecision:Backends/FilterBackend.EveryKernelSideFrom1To31/cuda:Backends/FilterBackend.NamedKernelsOnALargeOddImage/cuda:Backends/FilterBackend.PhotosInData/cuda:Backends/FilterBackend.SmallOddSizesEveryBorderAndChannelCount/cuda'
echo "== tests, mbar"; t tests_mbar 150 env PX_STEPBAR=mbar c/U/test_filter --gtest_filter="$TF"
echo "== 8K (ms and max diff: gauss19 21 25 27 31) at $(el) s"
b 8k_c54_1 c/B/bench_filter_gpu 7680x4320 X=1
b 8k_off_1 c/U/bench_filter_gpu 7680x4320 X=1
b 8k_mbar_1 c/U/bench_filter_gpu 7680x4320 PX_STEPBAR=mbar
MF='FilterCuda.TensorCoreStreamingSeparableKernelsAgreeWithRef:FilterCuda.TensorCoreStreamingOneWaveTakesATailBand*:FilterCuda.TensorCoreStreamingThreeDownWalksBands*'
if [ $(left) -gt 110 ]; then echo "== memcheck, mbar"; t memcheck $(( $(left) - 60 < 120 ? $(left) - 60 : 120 )) env PX_STEPBAR=mbar compute-sanitizer --tool memcheck c/U/test_filter --gtest_filter="$MF"; fi
if [ $(left) -gt 110 ]; then echo "== racecheck, mbar"; t racecheck $(( $(left) - 60 < 120 ? $(left) - 60 : 120 )) env PX_STEPBAR=mbar compute-sanitizer --tool racecheck c/U/test_filter --gtest_filter="$MF"; fi
if [ $(left) -gt 40 ]; then echo "== 4K at $(el) s"; b 4k_c54_1 c/B/bench_filter_gpu 3840x2160 X=1; b 4k_off_1 c/U/bench_filter_gpu 3840x2160 X=1; b 4k_mbar_1 c/U/bench_filter_gpu 3840x2160 PX_STEPBAR=mbar; fi
if [ $(left) -gt 40 ]; then echo "== round 2 at $(el) s"; b 8k_mbar_2 c/U/bench_filter_gpu 7680x4320 PX_STEPBAR=mbar; b 8k_c54_2 c/B/bench_filter_gpu 7680x4320 X=1; b 8k_off_2 c/U/bench_filter_gpu 7680x4320 X=1; fi
if [ $(left) -gt 30 ]; then b 1080_c54_1 c/B/bench_filter_gpu 1920x1080 X=1; b 1080_mbar_1 c/U/bench_filter_gpu 1920x1080 PX_STEPBAR=mbar; fi
echo "== done at $(el) s"
