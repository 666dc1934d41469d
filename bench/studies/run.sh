#!/usr/bin/env bash
# The seeds' studies (issue 7) on this machine, in one command.
#
#   bench/studies/run.sh [--build DIR] [--out DIR] [--label NAME] [--quick] [STUDY ...]
#
# STUDY is a study id from bench/studies/SCHEMA.md (s002_resolution, ...), a
# seed (s000 s001 s002 s003 s004: all of its studies) or `all` (the default).
# Runs, from DIR/bench (default build/release):
#   study_cpu          the CPU side of every study (always)
#   study_filter_gpu   seeds 002/004 on the GPU      } when a GPU is usable
#   study_gpu          seeds 000/001/003 on the GPU  } (nvidia-smi -L)
# and the Python peers (bench/peers/study_filter_torch.py, study_peers.py:
# torch, CuPy, OpenCV-Python), where their modules import. Every program checks
# its results against pixelkit's ref backend before timing them.
#
# Writes OUT/studies-LABEL.csv (every row, one header; default OUT build/studies,
# LABEL the host name) and OUT/LABEL-*.log, then, where matplotlib imports,
# renders OUT/LABEL/*.png and OUT/LABEL/tables.md through report.py. To render
# the runs of several machines together (what docs/benchmarks.md shows):
#   bench/studies/report.py --run h100=A.csv --run devbox=B.csv --out docs/studies
set -uo pipefail
cd "$(dirname "$0")/../.."

BUILD=build/release OUTDIR=build/studies LABEL=$(hostname -s 2>/dev/null || echo host) QUICK=() want=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2"; shift ;;
    --out) OUTDIR="$2"; shift ;;
    --label) LABEL="$2"; shift ;;
    --quick) QUICK=(--quick) ;;
    -h | --help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) want+=("$1") ;;
  esac
  shift
done

ALL=(s002_resolution s002_kernel s002_memory s002_layout s002_transfer s004_edge
     s003_blocks s003_sizes s000_table s000_blocks s001_stages)
[ ${#want[@]} -eq 0 ] && want=(all)
selected=()
for w in "${want[@]}"; do
  matched=0
  for s in "${ALL[@]}"; do
    if [ "$w" = all ] || [ "$w" = "$s" ] || [ "${s%%_*}" = "$w" ]; then selected+=("$s"); matched=1; fi
  done
  [ $matched = 1 ] || { echo "run.sh: unknown study '$w' (one of: all s000 s001 s002 s003 s004 ${ALL[*]})" >&2; exit 2; }
done
list=$(printf '%s\n' "${selected[@]}" | awk '!seen[$0]++' | paste -sd, -)

[ -d "$BUILD/bench" ] || { echo "run.sh: $BUILD/bench not found: build first (make studies, or cmake --build --preset release)" >&2; exit 2; }
mkdir -p "$OUTDIR" || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
PY=${PYTHON:-python3}
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then gpu=1; fi
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
status=0 n=0

# The studies each program measures (a program refuses ids that are not its own).
declare -A OWNS=(
  [study_cpu]="s002_resolution s002_kernel s002_layout s004_edge s003_sizes s000_table s001_stages"
  [study_filter_gpu]="s002_resolution s002_kernel s002_memory s002_layout s002_transfer s004_edge"
  [study_gpu]="s003_blocks s003_sizes s000_table s000_blocks s001_stages"
)
ids_for() {  # ids_for PROGRAM: the selected studies it measures, comma-separated (empty: none)
  local s out=()
  for s in ${OWNS[$1]}; do case ",$list," in *",$s,"*) out+=("$s") ;; esac; done
  (IFS=,; echo "${out[*]}")
}

step() {  # step NAME CMD...: run CMD with --csv tmp/NAME.csv, log to OUT/LABEL-NAME.log
  local name=$1; shift
  echo "== $name ($(date -u +%H:%M:%S)) =="
  local t0=$SECONDS
  if "$@" --csv "$tmp/$name.csv" >"$OUTDIR/$LABEL-$name.log" 2>&1; then
    echo "   done in $((SECONDS - t0)) s"
  else
    echo "   FAILED (exit $?) after $((SECONDS - t0)) s; last lines of $OUTDIR/$LABEL-$name.log:"; tail -5 "$OUTDIR/$LABEL-$name.log"
    status=1
  fi
  n=$((n + 1))
}

ids=$(ids_for study_cpu)
[ -x "$BUILD/bench/study_cpu" ] && [ -n "$ids" ] && step study_cpu "$BUILD/bench/study_cpu" "${QUICK[@]}" --studies "$ids"
if [ $gpu = 1 ]; then
  for p in study_filter_gpu study_gpu; do
    ids=$(ids_for "$p")
    [ -x "$BUILD/bench/$p" ] && [ -n "$ids" ] && step "$p" "$BUILD/bench/$p" "${QUICK[@]}" --studies "$ids"
  done
  for p in study_filter_torch study_peers; do
    if "$PY" -c 'import numpy' 2>/dev/null; then step "$p" timeout 400 "$PY" "bench/peers/$p.py" "${QUICK[@]}"; fi
  done
else
  echo "(no usable GPU: the GPU programs and the Python peers are skipped)"
fi
[ $n -gt 0 ] || { echo "run.sh: no study program in $BUILD/bench ran for '$list' (configured with PIXELKIT_BUILD_BENCH=OFF, or GPU-only studies without a GPU?)" >&2; exit 2; }

# One CSV: the header once, then the selected studies' rows of every program.
csv="$OUTDIR/studies-$LABEL.csv"
{
  echo "study,series,x,x_value,time_ms,threads,check,device,notes"
  for f in "$tmp"/*.csv; do
    [ -f "$f" ] || continue
    awk -F, -v keep=",$list," 'NR > 1 && index(keep, "," $1 ",") > 0' "$f"
  done
} >"$csv.tmp" && mv "$csv.tmp" "$csv"
rows=$(($(wc -l <"$csv") - 1))
mism=$(awk -F, 'NR > 1 && $7 == "mismatch"' "$csv" | wc -l)
echo "run.sh: $rows rows in $csv ($mism mismatches)"
[ "$mism" = 0 ] || { awk -F, 'NR > 1 && $7 == "mismatch"' "$csv" | head -10; status=1; }

RPY=$PY
"$RPY" -c 'import matplotlib' 2>/dev/null || RPY=/usr/bin/python3
if "$RPY" -c 'import matplotlib' 2>/dev/null; then
  "$RPY" bench/studies/report.py --run "$LABEL=$csv" --out "$OUTDIR/$LABEL" || status=1
else
  echo "(matplotlib not found: no plots; scripts/install-deps.sh --studies installs it)"
fi
exit $status
