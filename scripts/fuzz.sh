#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang + ASan + UBSan, CPU-only library)
# and runs each for a bounded time on its corpus in fuzz/corpus/<target>.
# New inputs that add coverage are merged back into the corpus (kept in the
# repository); crashes, leaks, timeouts and sanitizer reports are written to
# build/fuzz/findings/<target>/ and make the script fail.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]
#
# Needs clang and libomp-dev (apt install clang libomp-dev).
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(kernel_spec kernel_file hsv_range npy npz cli)
BUILD=${BUILD:-build/fuzz}
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (apt install clang libomp-dev)"; exit 1; }
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S fuzz -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$BUILD.configure.log" 2>&1 \
    || { tail -20 "$BUILD.configure.log"; exit 1; }
fi
cmake --build "$BUILD" -j "${JOBS:-2}" --target $(printf 'fuzz_%s ' "${targets[@]}") >"$BUILD.build.log" 2>&1 \
  || { grep -E 'error' "$BUILD.build.log" | head -20; exit 1; }
status=0
printf '%-12s %8s %10s %8s %s\n' target seconds execs corpus result
for t in "${targets[@]}"; do
  # Absolute paths: the CLI target changes into its own scratch folder.
  corpus=$PWD/fuzz/corpus/$t
  fresh=$PWD/$BUILD/new/$t
  findings=$PWD/$BUILD/findings/$t
  mkdir -p "$corpus" "$fresh" "$findings"
  log=$BUILD/$t.log
  # -close_fd_mask=3: the CLI target's own messages would drown the log.
  "$BUILD/fuzz_$t" "$fresh" "$corpus" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len=4096 -artifact_prefix="$findings/" -close_fd_mask=3 -print_final_stats=1 >"$log" 2>&1
  rc=$?
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo '?')
  # Keep only inputs that add coverage: merge the new ones into the corpus.
  "$BUILD/fuzz_$t" -merge=1 "$corpus" "$fresh" -close_fd_mask=3 >"$BUILD/$t.merge.log" 2>&1 || true
  rm -rf "$fresh"
  n=$(ls "$corpus" | wc -l)
  if [ $rc -eq 0 ]; then result=clean; else result="FINDING (rc $rc, see $log and $findings)"; status=1; fi
  printf '%-12s %8s %10s %8s %s\n' "$t" "$secs" "$execs" "$n" "$result"
done
exit $status
