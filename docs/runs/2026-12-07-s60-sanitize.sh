#!/usr/bin/env bash
# Session 60: what the sanitizer passes still owed on exactly c11f82e's filter code (notes, run 62's last
# paragraph): initcheck of the test_filter cases its session-57 pass did not reach (from
# Backends/FilterBackend.SubImageViewsReadAndWriteOnlyTheirWindow/cuda on), then synccheck of every GPU case, one
# process a case. Carries build/c0.tar.xz: test_filter built on the dev box from the committed tree (sm_90, no
# OpenCV; the CUDA code is c11f82e's). Argument 1: the seconds it may take.
set -u
T=${1:-500}
O=${OUT:-/tmp/out}; mkdir -p "$O" z && tar xJf build/c0.tar.xz -C z
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
[ -d /work/main/data ] || { mkdir -p /work && ln -sfn "$PWD" /work/main; }  # the tests read data/ by this path
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
z/U/test_filter --gtest_list_tests | awk '/^[^ ]/{s=$1} /^  /{print s $1}' > "$O/cases.txt"
# s TOOL CASE: one case under one tool, with a per-case timeout of 120 s
s() { local f="$O/$1-$(echo "$2" | tr '/.' '__').log"
      timeout 120 compute-sanitizer --tool "$1" --error-exitcode 9 z/U/test_filter --gtest_filter="$2" > "$f" 2>&1
      local rc=$?; printf '  %-9s %-95s rc %s, %s s, %s %s\n' "$1" "$2" "$rc" "$(el)" \
        "$(grep -o 'ERROR SUMMARY: [0-9]* error[s]*' "$f" | tail -1)" "$(grep -Eo '\[  (PASSED|FAILED|SKIPPED) *\]' "$f" | head -1)"; }
echo "== initcheck: the cases session 57's pass did not reach"
sed -n '/SubImageViewsReadAndWriteOnlyTheirWindow\/cuda/,$p' "$O/cases.txt" | grep -E '/cuda$|^Filter(Cuda|Errors)' | while read -r c; do
  [ $(el) -lt $T ] && s initcheck "$c"; done
echo "== synccheck: every GPU case (FilterCuda.*, FilterErrors.*, */cuda)"
grep -E '^FilterCuda\.|^FilterErrors\.|/cuda$' "$O/cases.txt" | while read -r c; do
  [ $(el) -lt $T ] && s synccheck "$c" || { echo "  deadline: not reached $c"; }; done
echo "== done at $(el) s"
