#!/usr/bin/env bash
# Installs the Debian packages pixelkit needs, skipping those already present.
# Idempotent and quick when everything is there. Needs root (or sudo) only
# when something is missing. The CUDA toolkit is not a Debian package: when
# /usr/local/cuda/bin/nvcc exists the CUDA backend is built, otherwise not.
#
#   scripts/install-deps.sh            what `make demo` and `make test` need
#   scripts/install-deps.sh --studies  that, plus matplotlib for the study
#                                      plots (bench/studies/report.py)
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libcli11-dev          # command-line options
  libgtest-dev libgmock-dev googletest  # tests
  libbenchmark-dev      # CPU benchmarks
  libopencv-dev         # image/video I/O and the OpenCV comparisons (optional at configure time)
  libpng-dev            # PNG reads (pixelkit's own, quiet codec), and PNG writes where OpenCV is absent (optional)
  python3 python3-numpy python3-pywt  # PyWavelets cross-checks, .npy round trips
)
case "${1:-}" in
  --studies) packages+=(python3-matplotlib) ;;  # bench/studies/report.py's PNG plots
  "") ;;
  *) echo "install-deps: unknown argument '$1' (expected --studies or nothing)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
