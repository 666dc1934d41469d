#!/usr/bin/env bash
# Session 57, call 1: adapts to the card that comes. On an H200 (which has never run the register kernels): the
# table of record of exactly c11f82e first (docs/runs/2026-12-07-s54-call2.sh: device build, ctest, bench with NPP,
# CuPy), then the step-barrier diagnostic with what is left. On an H100: the two experiments built in session 56
# (docs/runs/2026-12-07-s56-next-call.sh, then -next-call2.sh). Carries build/c60.tar.xz and build/c61.tar.xz.
set -u
t0=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
  *H200*) bash docs/runs/2026-12-07-s54-call2.sh
          r=$(( 570 - ($(date +%s) - t0) ))
          [ $r -gt 120 ] && { echo ======== STEPBAR; bash docs/runs/2026-12-07-s56-next-call.sh $r; } ;;
  *)      bash docs/runs/2026-12-07-s56-next-call.sh 250; echo ======== PREFETCH
          bash docs/runs/2026-12-07-s56-next-call2.sh $(( 570 - ($(date +%s) - t0) )) ;;
esac
