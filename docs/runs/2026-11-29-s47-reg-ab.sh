#!/usr/bin/env bash
# Session 47: the row-streaming kernel's register walk (PIXELKIT_CUDA_FILTER_REG=on) against the ring walk (=off),
# dense 3x3 in fp16, one binary (the dev-box sm_90 build of the session's tree, build/sweep/bench_reg).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
B=${B:-build/sweep/bench_reg}
run() {  # round channels size
  local r=$1 ch=$2 sz=$3
  for mode in off on; do
    PIXELKIT_CUDA_FILTER_REG=$mode $B --no-npp --runs 50 --size $sz --channels $ch --only dense3x3 2>&1 | grep '^| [0-9]' |
      awk -F'|' -v m=$mode -v c=$ch -v r=$r '{printf "r%s c%s %-3s %s %s %s maxdiff%s %s\n", r, c, m, $2, $3, $4, $13, $14}'
  done
}
for r in 1 2; do
  for sz in 640x480 1280x720 1920x1080 2560x1440 3840x2160; do run $r 3 $sz; done
done
for ch in 1 4; do for sz in 1280x720 1920x1080 2560x1440 3840x2160; do run 1 $ch $sz; done; done
