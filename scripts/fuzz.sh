#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang + ASan + UBSan, CPU-only library)
# and runs each for a bounded time on its corpus in fuzz/corpus/<target>.
# New inputs that add coverage are merged back into the corpus (kept in the
# repository); crashes, leaks, timeouts and sanitizer reports are written to
# build/fuzz/findings/<target>/ and make the script fail.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]
#
# Environment: BUILD (default build/fuzz); PREBUILT=1 uses the binaries
# already in $BUILD without cmake (e.g. built here with
# -DPIXELKIT_ENABLE_OPENCV=OFF and run on a machine without clang, libomp.so.5
# copied beside them); FORK=N runs N worker processes per target (libFuzzer's
# -fork), FORK_CLI=N for the slow cli target; PARALLEL=1 runs the targets at
# the same time. Machine time per target = seconds x workers.
#
# Needs clang and libomp-dev (apt install clang libomp-dev).
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(kernel_spec kernel_file hsv_range npy npz png cli)
BUILD=${BUILD:-build/fuzz}
if [ "${PREBUILT:-0}" = 1 ]; then
  export LD_LIBRARY_PATH="$PWD/$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (apt install clang libomp-dev)"; exit 1; }
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S fuzz -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$BUILD.configure.log" 2>&1 \
    || { tail -20 "$BUILD.configure.log"; exit 1; }
fi
cmake --build "$BUILD" -j "${JOBS:-2}" --target $(printf 'fuzz_%s ' "${targets[@]}") >"$BUILD.build.log" 2>&1 \
  || { grep -E 'error' "$BUILD.build.log" | head -20; exit 1; }
fi
status=0
run_target() {
  local t=$1 workers=${FORK:-0}
  [ "$t" = cli ] && [ -n "${FORK_CLI:-}" ] && workers=$FORK_CLI
  # Absolute paths: the CLI target changes into its own scratch folder.
  local corpus=$PWD/fuzz/corpus/$t fresh=$PWD/$BUILD/new/$t findings=$PWD/$BUILD/findings/$t
  mkdir -p "$corpus" "$fresh" "$findings"
  local log=$BUILD/$t.log fork=()
  [ "$workers" -gt 0 ] && fork=(-fork="$workers" -ignore_crashes=0)
  # -close_fd_mask=3: the CLI target's own messages would drown the log.
  "$BUILD/fuzz_$t" "$fresh" "$corpus" "${fork[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len=4096 -artifact_prefix="$findings/" -close_fd_mask=3 -print_final_stats=1 >"$log" 2>&1
  local rc=$?
  local execs
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
  # -fork: the parent's last "#N" status line counts every worker's executions.
  [ -n "$execs" ] || execs=$(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  # Keep only inputs that add coverage: merge the new ones into the corpus.
  "$BUILD/fuzz_$t" -merge=1 "$corpus" "$fresh" -close_fd_mask=3 >"$BUILD/$t.merge.log" 2>&1 || true
  rm -rf "$fresh"
  local n result
  n=$(ls "$corpus" | wc -l)
  if [ $rc -eq 0 ]; then result=clean; else result="FINDING (rc $rc, see $log and $findings)"; fi
  printf '%-12s %8s %8s %10s %8s %s\n' "$t" "$secs" "$((workers > 0 ? workers : 1))" "${execs:-?}" "$n" "$result" \
    >"$BUILD/$t.result"
  [ $rc -eq 0 ]
}
printf '%-12s %8s %8s %10s %8s %s\n' target seconds workers execs corpus result
for t in "${targets[@]}"; do
  if [ "${PARALLEL:-0}" = 1 ]; then run_target "$t" & else run_target "$t" || status=1; cat "$BUILD/$t.result"; fi
done
if [ "${PARALLEL:-0}" = 1 ]; then
  wait
  for t in "${targets[@]}"; do cat "$BUILD/$t.result"; grep -q clean "$BUILD/$t.result" || status=1; done
fi
exit $status
