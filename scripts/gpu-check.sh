#!/usr/bin/env bash
# One call on a GPU machine: configure with cmake directly (no apt there),
# build, run every test, run the GPU cases of every test binary under
# compute-sanitizer (memcheck, racecheck, initcheck, synccheck), then the
# benchmarks. Prints the benchmark tables last. Logs go to $OUT (if set) or
# build/gpu-logs.
#
#   scripts/gpu-check.sh [--steps LIST] [--no-bench] [--quick-bench] [--only-bench]
#                        [--studies "STUDY ..."]   (with the studies step)
#                        [--tests "test_filter test_image ..."]  (the sanitizer steps' binaries; default all)
#                        [--per-case] [--deadline SECONDS] [--from TOOL:BINARY:CASE]
#                        [--case-timeout SECONDS] [--cases REGEX] [--skip-cases REGEX]
#
# LIST: comma-separated steps among build, ctest, memcheck, racecheck,
# initcheck, synccheck, bench, studies (default: all but studies, in that
# order; studies = bench/studies/run.sh, the seeds' studies with their peers,
# CSV under $LOGS/studies). A device
# call is limited to 10 minutes: split the steps over calls on the same
# machine (H100, 2026-11-26: build ~110 s, ctest ~65 s, the three with memcheck
# fit one call; initcheck of all ~240 s; racecheck and synccheck of test_filter
# ~420 s, racecheck of test_filter alone ~380 s and its memcheck ~180 s; racecheck
# of the others ~600 s), e.g. --steps build,ctest,memcheck,
# then --steps build,initcheck, then --steps build,racecheck,synccheck --tests
# test_filter, then --steps build,racecheck --tests "test_integral test_match"
# and the rest, then --steps build,bench --quick-bench. (build is quick when
# nothing changed and the machine is still warm; every step needs a build.)
# With --case-timeout, give racecheck 300 s or more for
# IntegralCudaLookBack.ManyCallsAcrossTheEpochWrap: it took 238 s under
# racecheck on an H200 (session 48; the other cases take 1-72 s).
#
# --per-case runs each GPU case of a binary as its own sanitizer process (a
# log per case, and one slow case no longer holds the rest hostage);
# --deadline SECONDS (from the script's start) stops the sanitizer steps
# before the next binary or case once that much time has gone, prints where to
# resume (--from TOOL:BINARY:CASE, or TOOL:BINARY without --per-case) and ends
# with status 3 unless something failed. So a whole sanitizer pass is a few
# calls of, e.g., --steps build,memcheck,racecheck --per-case --deadline 540.
# --case-timeout SECONDS (with --per-case) kills a case's sanitizer process
# after that long and reports the case as TIMED OUT, a failure: one hung case
# no longer takes the rest of the call.
# --cases REGEX (with --per-case) runs only the cases whose Suite.Name matches
# the extended regular expression, e.g. --cases 'TensorCoreStreaming|Chained'
# for a pass over the cases of one kernel; --skip-cases REGEX (with --per-case)
# leaves out those that match (e.g. the ones an earlier call ran).
# SANITIZER (default compute-sanitizer) names the sanitizer program.
# LOGS names the folder of the logs (default $OUT, else build/gpu-logs). The
# device tool brings back only a few of the files in $OUT: when the steps are
# many, set LOGS=build/gpu-logs and copy the logs you need into $OUT (session
# 46 lost ctest.log among 25 files).
# Per case, a case that makes no CUDA call (compute-sanitizer: "terminated
# before first instrumented API call") is reported as such, not as a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/gpu}
LOGS=${LOGS:-${OUT:-build/gpu-logs}}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$LOGS"
steps="build,ctest,memcheck,racecheck,initcheck,synccheck,bench" quick="" studies_args="all" only_tests=""
per_case=0 deadline=0 resume_from="" case_timeout=0 cases_re="" skip_re=""
t_start=$(date +%s)
SANITIZER=${SANITIZER:-compute-sanitizer}
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps="$2"; shift ;;
    --no-bench) steps="${steps/,bench/}" ;;
    --quick-bench) quick="--quick" ;;
    --only-bench) steps="build,bench" ;;
    --studies) studies_args="$2"; shift ;;
    --tests) only_tests="$2"; shift ;;
    --per-case) per_case=1 ;;
    --deadline) deadline="$2"; shift ;;
    --from) resume_from="$2"; shift ;;
    --case-timeout) case_timeout="$2"; shift ;;
    --cases) cases_re="$2"; shift ;;
    --skip-cases) skip_re="$2"; shift ;;
    *) echo "gpu-check: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$cases_re$skip_re" ] && [ "$per_case" = 0 ]; then echo "gpu-check: --cases and --skip-cases need --per-case" >&2; exit 2; fi
want() { case ",$steps," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
status=0
note() { echo "== $* ==" | tee -a "$LOGS/summary.txt"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$LOGS/gpu.txt"
nvcc --version | tail -1
if want build; then
note "configure"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$LOGS/configure.log" 2>&1 \
  || { tail -30 "$LOGS/configure.log"; exit 1; }
grep 'pixelkit:' "$LOGS/configure.log"
note "build"
cmake --build "$BUILD" -j "$JOBS" >"$LOGS/build.log" 2>&1 || { grep -E 'error|Error' "$LOGS/build.log" | head -40; exit 1; }
fi

if want ctest; then
  note "ctest (all tests)"
  (cd "$BUILD" && ctest -j "$JOBS" --output-on-failure --timeout 900) >"$LOGS/ctest.log" 2>&1 || status=1
  grep -E 'tests passed|tests failed|Skipped|\*\*\*Failed|Not Run|Timeout' "$LOGS/ctest.log" | head -40
fi

# The GPU cases of every test binary under each compute-sanitizer tool.
# Binaries without GPU cases would end before any CUDA call, which
# compute-sanitizer reports as an error: skip them. racecheck is slow on the
# large cases; it leaves out the *Large* and *Photos* cases and
# FilterCuda.TensorCoreDenseLaunchesOnManyStreams* (120 launches of a 3000 x
# 2600 image; the same kernels run on the smaller ones). racecheck and initcheck also leave out
# IntegralCudaLookBack.LongChains* (the look-back scan's spin-waits on chains
# of thousands of tiles: more than 5 minutes under initcheck on an H100; the
# same kernel runs on the other look-back cases). racecheck also leaves out
# Threads.ConcurrentCallsGiveTheSingleThreadedResults (four host threads
# launching at once): under racecheck (CUDA 13.0, driver 580) it hangs in most
# runs, with "Internal Sanitizer Error: Detected a failure to track a kernel
# launch", also with the integral's 4-launch variant (no kernel of ours then
# waits on another block) and never with no kernel instrumented; it passes
# plain (40 of 40), under memcheck, initcheck and synccheck, and racecheck runs
# every kernel it calls in the other cases (notes, run 42).
# Every tool leaves out ImageDevice.AllocationDoesNotWaitForOtherStreams: the
# sanitizers run the work of all streams one after another, which that case
# checks does not happen (it also skips itself when it sees the sanitizer).
gpu_filter='*cuda*:*Cuda*:*CUDA*:*Device*:*GPU*:*Gpu*:VideoPipelineTest.*:Threads.*'
gpu_leave_out='ImageDevice.AllocationDoesNotWaitForOtherStreams'
stopped=""
# past_deadline WHERE: true (and the resume point noted) once --deadline has passed.
past_deadline() {
  [ "$deadline" -gt 0 ] && [ $(($(date +%s) - t_start)) -ge "$deadline" ] || return 1
  stopped="$1"
  echo "gpu-check: deadline of ${deadline}s reached; resume with --from $1" | tee -a "$LOGS/summary.txt"
}
# skip_to WHERE: true while --from names a later point than WHERE.
skip_to() {
  [ -n "$resume_from" ] || return 1
  if [ "$1" = "$resume_from" ]; then resume_from=""; return 1; fi
  return 0
}
# run_sanitizer TOOL BINARY FILTER LOG ARGS...: one sanitizer process (status
# 124 if --case-timeout applies and it ran past it).
run_sanitizer() {
  local tool=$1 bin=$2 filt=$3 log=$4 limit=()
  shift 4
  if [ "$per_case" = 1 ] && [ "$case_timeout" -gt 0 ]; then limit=(timeout -k 5 "$case_timeout"); fi
  "${limit[@]}" "$SANITIZER" --tool "$tool" "$@" --error-exitcode 99 "$bin" --gtest_filter="$filt" </dev/null >"$log" 2>&1
}
for tool in memcheck racecheck initcheck synccheck; do
  want "$tool" || continue
  [ -z "$stopped" ] || break
  extra=() filter="$gpu_filter:-$gpu_leave_out"
  case "$tool" in
    memcheck) extra=(--leak-check full) ;;
    racecheck) filter="$gpu_filter:-$gpu_leave_out:*Large*:*Photos*:*LongChains*:*ManyStreams*:Threads.ConcurrentCalls*" ;;
    initcheck) filter="$gpu_filter:-$gpu_leave_out:*LongChains*:*ManyStreams*" ;;  # CUDA 13: unused-memory tracking is off unless --track-unused-memory is given
  esac
  for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    n=$(basename "$t")
    if [ -n "$only_tests" ]; then case " $only_tests " in *" $n "*) ;; *) continue ;; esac; fi
    # test_limits and test_cuda_errors provoke CUDA errors on purpose (and check
    # the resulting pixelkit::Error): not API errors to report.
    api=()
    case "$n" in test_limits | test_cuda_errors) api=(--report-api-errors no) ;; esac
    "$t" --gtest_list_tests --gtest_filter="$filter" 2>/dev/null | grep -q '^  ' || continue
    if [ "$per_case" = 0 ]; then
      skip_to "$tool:$n" && continue
      past_deadline "$tool:$n" && break
      note "$tool $n"
      run_sanitizer "$tool" "$t" "$filter" "$LOGS/${tool}_$n.log" "${extra[@]}" "${api[@]}" \
        || { status=1; echo "$tool FAILED for $n"; }
      grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$LOGS/${tool}_$n.log" | tail -3
      continue
    fi
    note "$tool $n, case by case"
    : >"$LOGS/${tool}_$n.log"
    while read -r c; do
      skip_to "$tool:$n:$c" && continue
      past_deadline "$tool:$n:$c" && break
      t0=$(date +%s)
      run_sanitizer "$tool" "$t" "$c" "$LOGS/case.log" "${extra[@]}" "${api[@]}"
      rc=$?
      if [ "$rc" = 0 ]; then verdict=ok
      elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then verdict="TIMED OUT after ${case_timeout}s"; status=1
      elif grep -q 'terminated before first instrumented API call' "$LOGS/case.log"; then verdict="no CUDA call"
      else verdict=FAILED; status=1
      fi
      echo "  $c: $verdict, $(($(date +%s) - t0)) s, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/case.log" | tail -1 | sed 's/^=* *//')"
      cat "$LOGS/case.log" >>"$LOGS/${tool}_$n.log"
    done < <("$t" --gtest_list_tests --gtest_filter="$filter" 2>/dev/null | awk '/^[^ ]/ {s = $1} /^  / {print s $1}' \
               | { if [ -n "$cases_re" ]; then grep -E -- "$cases_re"; else cat; fi; } \
               | { if [ -n "$skip_re" ]; then grep -v -E -- "$skip_re"; else cat; fi; })
    rm -f "$LOGS/case.log"
    [ -z "$stopped" ] || break
  done
done

if want bench && [ -z "$stopped" ]; then
  for b in "$BUILD"/bench/bench_*_gpu "$BUILD"/bench/bench_video; do
    [ -x "$b" ] || continue
    n=$(basename "$b")
    note "benchmark $n"
    csv=()
    if grep -q -- '--csv' "$b" 2>/dev/null; then csv=(--csv "$LOGS/$n.csv"); fi
    "$b" $quick "${csv[@]}" >"$LOGS/$n.md" 2>"$LOGS/$n.err" || { status=1; tail -5 "$LOGS/$n.err"; }
  done
  # Python peers (CuPy) on the same sizes, where CuPy is installed.
  if python3 -c 'import cupy' 2>/dev/null; then
    for p in bench/peers/*_cupy.py; do
      n=$(basename "$p" .py)
      note "peer $n"
      timeout 150 python3 "$p" --quick >"$LOGS/$n.md" 2>"$LOGS/$n.err" || echo "peer $n did not finish (see $LOGS/$n.err)"
    done
  fi
  if python3 -c 'import cv2' 2>/dev/null; then
    note "peer video_cv2"
    timeout 200 python3 bench/peers/video_cv2.py $quick >"$LOGS/video_cv2.md" 2>"$LOGS/video_cv2.err" \
      || echo "peer video_cv2 did not finish (see $LOGS/video_cv2.err)"
  fi
  for f in "$LOGS"/bench_*_gpu.md "$LOGS"/bench_video.md "$LOGS"/*_cupy.md "$LOGS"/video_cv2.md; do
    [ -f "$f" ] || continue
    echo; echo "### $(basename "$f" .md)"; cat "$f"
  done
fi
if want studies; then
  note "studies ($studies_args)"
  # shellcheck disable=SC2086 # a list of study ids
  bench/studies/run.sh --build "$BUILD" --out "$LOGS/studies" --label gpu $quick $studies_args || status=1
fi
echo
if [ "$status" != 0 ]; then echo "gpu-check: FAILURES (see logs in $LOGS)"; exit "$status"; fi
if [ -n "$stopped" ]; then echo "gpu-check: INCOMPLETE, no failure so far (resume with --from $stopped)"; exit 3; fi
if [ -n "$resume_from" ]; then echo "gpu-check: --from $resume_from matched nothing"; exit 2; fi
echo "gpu-check: ALL OK"
exit 0
