#!/usr/bin/env bash
# The demo: runs pixelkit's operations on the photos in data/ and writes the
# results under out/. Prints each step, the backend and code path that ran,
# and how long it took. Usage: scripts/demo.sh [path/to/pixelkit]
set -euo pipefail
cd "$(dirname "$0")/.."
PK=${1:-build/release/pixelkit}
OUT=out
mkdir -p "$OUT"

has() { "$PK" --help 2>/dev/null | grep -qE "^  $1( |$)"; }
step() {
  local t0 t1
  echo "\$ pixelkit $*"
  t0=${EPOCHREALTIME/./}
  "$PK" "$@" --verbose 2>&1 | sed 's/^/    /'
  t1=${EPOCHREALTIME/./}
  echo "    ($(( (t1 - t0) / 1000 )) ms wall, including start-up and file I/O)"
}

"$PK" info
echo

echo "== Convolution filters (seeds 002 and 004) =="
for img in astronaut coffee chelsea camera; do
  for spec in gaussian:9 edge sharpen unsharp:5:1.5 emboss box:15; do
    name=${spec//:/_}
    step filter "data/$img.png" "$OUT/${img}_${name}.png" --kernel "$spec" --border reflect101
  done
done
# The same job on each backend, to compare.
for backend in ref cpu cuda; do
  if [ "$backend" = cuda ] && ! "$PK" info | grep -q 'auto backend : cuda'; then
    echo "(no usable GPU: skipping --backend cuda)"
    continue
  fi
  step filter data/astronaut.png "$OUT/astronaut_gaussian_9_$backend.png" --kernel gaussian:9 --backend "$backend"
done

if has integral; then
  echo
  echo "== Integral images (seed 003) =="
  step integral data/camera.png --sum "$OUT/camera_sum.npy" --sqsum "$OUT/camera_sqsum.npy"
fi

if has haar; then
  echo
  echo "== Haar wavelet (seed 000) =="
  step haar data/camera.png --levels 3 --coeffs "$OUT/camera_haar.npz" --view "$OUT/camera_haar_view.png"
  step haar --inverse "$OUT/camera_haar.npz" "$OUT/camera_haar_inverse.png"
  step haar data/astronaut.png --compress 0.05 "$OUT/astronaut_haar_5pct.png"
fi

echo
echo "demo: results in $OUT/:"
ls "$OUT" | sed 's/^/  /'
