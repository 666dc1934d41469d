#!/usr/bin/env python3
"""Peers of bench_match_gpu: OpenCV's matchTemplate on the CPU and an FFT
correlation with CuPy on the GPU, on the same cases.

    python3 bench/peers/match_cupy.py [--quick] [--runs N] [--ours FILE]

Cases as bench_match_gpu: seed 001's (1326x1025 image, 479x432 template;
1200x1983, 150x150) and 1080p with 32x32, 64x64 and 256x256 templates, u8,
1 and 3 channels; the template is cut from the image.

  opencv  cv2.matchTemplate(image, template, TM_SQDIFF / TM_CCORR_NORMED /
          TM_CCOEFF_NORMED) on the host (OpenCV's own threads), median of N.
  cupy    the sqdiff map on device-resident data the FFT way: window energy by
          cumulative sums (f64) plus cupy.fft.rfft2 / irfft2 (f64) of the image
          and the template, summed over channels; CuPy events, median of N.
          (CuPy has no matchTemplate; this is the textbook route seed 001 took.)
The CuPy map is checked against OpenCV's TM_SQDIFF on the first case.

With --ours FILE (bench_match_gpu's --csv output from the same run), ratios
are printed: peer time / pixelkit cuda time (auto strategy) per case and method.
"""
import argparse
import csv
import time

import numpy as np

try:
    import cupy as cp
except ImportError:  # pragma: no cover
    cp = None
try:
    import cv2
except ImportError:  # pragma: no cover
    cv2 = None

CASES = [("seed A 1326x1025 t479x432", 1326, 1025, 479, 432),
         ("seed B 1200x1983 t150x150", 1200, 1983, 150, 150),
         ("1080p t32x32", 1920, 1080, 32, 32),
         ("1080p t64x64", 1920, 1080, 64, 64),
         ("1080p t256x256", 1920, 1080, 256, 256)]
METHODS = [("sqdiff", "TM_SQDIFF"), ("ccorr_normed", "TM_CCORR_NORMED"), ("ccoeff_normed", "TM_CCOEFF_NORMED")]


def make_image(w, h, c, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.empty((h, w, c), np.float64)
    for ch in range(c):
        v = np.full((h, w), 128.0)
        for _ in range(3):
            fx, fy, ph = 0.002 + 0.03 * rng.random(), 0.002 + 0.03 * rng.random(), 6.28 * rng.random()
            v += 35 * np.sin(fx * x + ph) * np.cos(fy * y + ph)
        img[..., ch] = v + rng.integers(-20, 21, size=(h, w))
    img = np.clip(np.round(img), 0, 255).astype(np.uint8)
    return img[..., 0] if c == 1 else img


def time_cpu(fn, runs):
    fn()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(t))


def time_gpu(fn, runs):
    for _ in range(3):
        fn()
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    t = []
    for _ in range(runs):
        start.record()
        fn()
        end.record()
        end.synchronize()
        t.append(cp.cuda.get_elapsed_time(start, end))
    return float(np.median(t))


def cupy_sqdiff(dimg, dtpl):
    """sqdiff map: sum I^2 over windows + sum T^2 - 2 corr(I, T), f64."""
    h, w = dtpl.shape[:2]
    H, W = dimg.shape[:2]
    img = dimg.astype(cp.float64).reshape(H, W, -1)
    tpl = dtpl.astype(cp.float64).reshape(h, w, -1)
    fi = cp.fft.rfft2(img, axes=(0, 1))
    ft = cp.fft.rfft2(tpl, s=(H, W), axes=(0, 1))
    corr = cp.fft.irfft2((fi * cp.conj(ft)).sum(axis=2), s=(H, W))[: H - h + 1, : W - w + 1]
    sq = cp.pad((img * img).sum(axis=2), ((1, 0), (1, 0))).cumsum(0).cumsum(1)
    e = sq[h:, w:] - sq[:-h, w:] - sq[h:, :-w] + sq[:-h, :-w]
    return e + float((tpl * tpl).sum()) - 2.0 * corr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--ours")
    a = ap.parse_args()
    runs = 3 if a.quick else a.runs
    ours = {}
    if a.ours:
        with open(a.ours) as f:
            for r in csv.DictReader(f):
                if r["strategy"] == "auto" and r["mask"] == "0":
                    ours[(r["case"], int(r["C"]), r["method"])] = float(r["ms"])
    print("# template matching peers: OpenCV %s (CPU, %d threads), CuPy %s\n" %
          (cv2.__version__ if cv2 else "missing", cv2.getNumThreads() if cv2 else 0,
           cp.__version__ if cp else "missing"))
    print("| case | C | method | OpenCV CPU ms | CuPy FFT ms | OpenCV / pixelkit | CuPy / pixelkit |")
    print("|---|---:|---|---:|---:|---:|---:|")
    checked = False
    for k, (name, W, H, w, h) in enumerate(CASES):
        for C in (1, 3):
            img = make_image(W, H, C, 7 + k)
            x0, y0 = min(W // 3, W - w), min(H // 4, H - h)
            tpl = np.ascontiguousarray(img[y0:y0 + h, x0:x0 + w])
            dimg = dtpl = None
            if cp is not None:
                dimg, dtpl = cp.asarray(img), cp.asarray(tpl)
            for method, cvname in METHODS:
                t_cv = time_cpu(lambda: cv2.matchTemplate(img, tpl, getattr(cv2, cvname)), runs) if cv2 else float("nan")
                t_cp = float("nan")
                if cp is not None and method == "sqdiff":
                    t_cp = time_gpu(lambda: cupy_sqdiff(dimg, dtpl), runs)
                    if not checked and cv2 is not None:
                        ref = cv2.matchTemplate(img, tpl, cv2.TM_SQDIFF).astype(np.float64)
                        got = cp.asnumpy(cupy_sqdiff(dimg, dtpl))
                        print("check: CuPy sqdiff vs OpenCV TM_SQDIFF max rel diff %.2g" %
                              (np.abs(got - ref).max() / max(1.0, np.abs(ref).max())))
                        checked = True
                o = ours.get((name, C, method))
                r_cv = "%.1fx" % (t_cv / o) if o else ""
                r_cp = "%.1fx" % (t_cp / o) if o and t_cp == t_cp else ""
                print("| %s | %d | %s | %.2f | %s | %s | %s |" % (name, C, method, t_cv,
                      "%.3f" % t_cp if t_cp == t_cp else "", r_cv, r_cp))
                print("RESULT peer case=\"%s\" C=%d method=%s opencv_ms=%.4f cupy_ms=%.4f" % (name, C, method, t_cv, t_cp),
                      flush=True)


if __name__ == "__main__":
    main()
