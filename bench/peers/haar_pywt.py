#!/usr/bin/env python3
"""PyWavelets on the CPU: the peer for bench_haar_gpu's speed-up.

Times what `pixelkit haar` computes, the way a PyWavelets user gets it:
forward = wavedec2(x, 'haar', mode='periodization', level=L) + coeffs_to_array,
inverse = array_to_coeffs + waverec2, on float32 single-channel images at the
sizes bench_haar_gpu uses (4096^2 and 8192^2 at full depth, seed 000's table).
Prints a markdown table of median milliseconds. PyWavelets runs on one core.

    python3 bench/peers/haar_pywt.py [--reps N] [--quick]
"""
import argparse
import platform
import sys
import time
import warnings

import numpy as np
import pywt


def max_levels(h, w):
    n, L = min(h, w), 0
    while n > 1:
        n = (n + 1) // 2
        L += 1
    return max(L, 1)


def median_ms(f, reps):
    f()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t.append((time.perf_counter() - t0) * 1e3)
    t.sort()
    return t[len(t) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    print(f"## PyWavelets {pywt.__version__} (numpy {np.__version__}, Python {platform.python_version()}, "
          f"{platform.processor() or platform.machine()})\n")
    print("| case | size (W x H) | levels | forward ms | inverse ms |")
    print("| --- | --- | ---: | ---: | ---: |")
    # (name, width, height, levels); levels None = full depth.
    cases = [("4096^2 full", 4096, 4096, None), ("8192^2 full", 8192, 8192, None),
             ("img3.png", 250, 256, 1), ("debbie.jpg", 256, 256, 8), ("foto1.jpg", 512, 512, 9),
             ("img.png", 512, 512, 9), ("img5.jpg", 400, 600, 3), ("flower.jpg", 400, 620, 3),
             ("img4.jpg", 600, 800, 3), ("wall3.jpg", 1700, 1000, 2), ("wall.jpg", 1800, 2880, 3)]
    if a.quick:
        cases = cases[:1] + cases[2:4]
    rng = np.random.default_rng(1)
    for name, w, h, L in cases:
        L = L or max_levels(h, w)
        x = (rng.random((h, w), dtype=np.float32) * 255).astype(np.float32)
        box = {}

        def fwd():
            box["arr"], box["sl"] = pywt.coeffs_to_array(pywt.wavedec2(x, "haar", mode="periodization", level=L))

        def inv():
            c = pywt.array_to_coeffs(box["arr"], box["sl"], output_format="wavedec2")
            box["rec"] = pywt.waverec2(c, "haar", mode="periodization")

        reps = a.reps if w * h <= 4096 * 4096 else max(2, a.reps // 2)
        f = median_ms(fwd, reps)
        i = median_ms(inv, reps)
        assert np.allclose(box["rec"][:h, :w], x, atol=1e-3)
        print(f"| {name} | {w}x{h} | {L} | {f:.2f} | {i:.2f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
