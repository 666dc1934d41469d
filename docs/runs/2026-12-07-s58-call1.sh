#!/usr/bin/env bash
# Session 58, call 1: the wider strip on whichever card comes (docs/runs/2026-12-07-s57-next-call.sh, carrying
# build/c63.tar.xz and build/c62.tar.xz), since the kernels are instruction-bound and the answer should carry over.
# On an H200, the follow-up call is docs/runs/2026-12-07-s54-call2.sh (its table of record of exactly c11f82e).
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
bash docs/runs/2026-12-07-s57-next-call.sh "${1:-400}"
