#!/usr/bin/env bash
# Session 55, call 2: the one-wave layout of the three-k-step instances (8K and 4K RGB gaussian:19..31) swept
# through two experiment-only knobs (build/c57.tar.xz: a dev-box sm_90 bench_filter_gpu of c11f82e plus
# PX_EDGE_FACTOR, the edge strips' segment factor where they take their columns from shared memory, today 2, and
# PX_TAIL_STEPS, the tail plan's segment steps, today tail_plan's choice). Unset = today's layout.
# Not run: no machine came for it. Call 5 (docs/runs/2026-12-07-s55-call3.txt) ran four of its 8K layouts with
# the same knobs from the packed-tail build.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O" c && tar xJf build/c57.tar.xz -C c
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
K="--only gauss19 --only gauss25 --only gauss31"
b() { local n=$1 size=$2; shift 2; env "$@" c/U/bench_px --no-npp --size $size $K > "$O/$n.md" 2>&1;
      printf '%-24s %s\n' "$n" "$(grep -E '^\| [0-9]' "$O/$n.md" | awk -F'|' '{printf "%s%s ", $4, $13}') $(grep -o 'PX_TAIL[^]]*' "$O/$n.md" | head -1)"; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
  *H200*) echo "== H200: the table of record of c11f82e (bench_px with no knob set, CuPy in the same call)"
    timeout 120 c/U/bench_px > "$O/bench.md" 2>&1; echo "bench rc $? at $(el) s"
    timeout 100 python3 bench/peers/filter_cupy.py --runs 50 > "$O/cupy.md" 2>&1; echo "cupy rc $? at $(el) s"
    python3 bench/peers/filter_record_table.py "$O/bench.md" "$O/cupy.md" > "$O/record.md" 2>&1
    grep -A24 '^Targets' "$O/record.md" ;;
esac
for r in 1 2; do
  [ $(el) -lt 400 ] || { echo "no time for round $r"; break; }
  echo "== round $r at $(el) s (gauss19 diff gauss25 diff gauss31 diff)"
  b 8k_base_$r 7680x4320 X=1
  b 8k_f1_$r 7680x4320 PX_EDGE_FACTOR=1
  for s in 83 84 85 87; do b 8k_f2_s${s}_$r 7680x4320 PX_TAIL_STEPS=$s; done
  for s in 83 84 85 86; do b 8k_f1_s${s}_$r 7680x4320 PX_EDGE_FACTOR=1 PX_TAIL_STEPS=$s; done
  b 8k_tailoff_$r 7680x4320 PIXELKIT_CUDA_FILTER_TAIL=off
  b 4k_base_$r 3840x2160 X=1
  b 4k_f1_$r 3840x2160 PX_EDGE_FACTOR=1
  for s in 20 21; do b 4k_f2_s${s}_$r 3840x2160 PX_TAIL_STEPS=$s; done
  for s in 20 21 22; do b 4k_f1_s${s}_$r 3840x2160 PX_EDGE_FACTOR=1 PX_TAIL_STEPS=$s; done
done
echo "== done at $(el) s"
