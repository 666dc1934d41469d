#!/usr/bin/env bash
# Session 46: A = bench_old (HEAD's streaming kernel), B = bench_sel (gather in the non-lean F16 instances)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
run() {  # round channels size kernels...
  local r=$1 ch=$2 sz=$3; shift 3
  local only=(); for k in "$@"; do only+=(--only "$k"); done
  for mode in A B; do
    if [ $mode = A ]; then B=build/sweep/bench_old; else B=build/sweep/bench_sel; fi
    $B --no-npp --runs 50 --size $sz --channels $ch "${only[@]}" 2>&1 | grep '^| [0-9]' | awk -F'|' -v m=$mode -v c=$ch -v r=$r '{printf "r%s c%s %s %s %s %s maxdiff%s\n", r, c, m, $2, $3, $4, $13}'
  done
}
for r in 1 2; do
  for sz in 7680x4320 3840x2160; do run $r 3 $sz gauss11 gauss17 gauss19 gauss21 gauss25 gauss31; done
  for sz in 7680x4320 3840x2160; do run $r 4 $sz gauss11 gauss17 gauss21 gauss31; done
done
run 1 3 1920x1080 gauss11 gauss17 gauss19 gauss21 gauss25 gauss31
run 1 1 7680x4320 gauss11 gauss21
