#!/usr/bin/env python3
"""Peers of bench_integral_gpu: CuPy on the GPU and OpenCV's integral on the CPU.

    python3 bench/peers/integral_cupy.py [--quick] [--runs N] [--csv FILE] [--ours FILE]

What is timed, on the same sizes as bench_integral_gpu (u8 gray 1024^2 .. 8192^2,
u8 RGB 1080p / 4K / 8K):
  cupy     cumsum(cumsum(x, 0, dtype=int64), 1) on device-resident data (CuPy
           events, median of N after warm-up); the H x W (x C) inclusive table
           without OpenCV's zero row and column. Also with the squared sum
           (x.astype(int64)**2 then the same two cumsums) for "sum + sq".
  opencv   cv2.integral (sdepth CV_32S, i.e. pixelkit's u32) and cv2.integral2
           (CV_32S + CV_64F) on the host, single-threaded as OpenCV runs it:
           the reference for "the cpu backend at least as fast as OpenCV".
Each CuPy table is checked against NumPy's cumsum on the first size.

With --ours FILE (bench_integral_gpu's --csv output from the same machine and
run), ratios are printed: CuPy time / pixelkit cuda time for the same size and
request (i64 sum; i64 sum + u64 sqsum), and OpenCV time / pixelkit cpu time.
"""
import argparse
import csv
import sys
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

SIZES = [("1024^2", 1024, 1024, 1), ("2048^2", 2048, 2048, 1), ("4096^2", 4096, 4096, 1),
         ("8192^2", 8192, 8192, 1), ("1080p RGB", 1920, 1080, 3), ("4K RGB", 3840, 2160, 3),
         ("8K RGB", 7680, 4320, 3)]
QUICK = [("2048^2", 2048, 2048, 1), ("8192^2", 8192, 8192, 1), ("4K RGB", 3840, 2160, 3)]


def time_gpu(fn, runs):
    for _ in range(3):
        fn()
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(runs):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return float(np.median(times))


def time_cpu(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--csv")
    ap.add_argument("--ours", help="bench_integral_gpu --csv output, for ratios")
    args = ap.parse_args()
    rows = []
    rng = np.random.default_rng(1)
    sizes = QUICK if args.quick else SIZES
    print("| size | request | implementation | ms | GB/s (u8 in + table out) |\n|---|---|---|---:|---:|")
    for i, (name, w, h, c) in enumerate(sizes):
        shape = (h, w) if c == 1 else (h, w, c)
        host = rng.integers(0, 256, size=shape, dtype=np.uint8)
        px = host.size
        if cp is not None:
            dev = cp.asarray(host)
            def s():
                return cp.cumsum(cp.cumsum(dev, axis=0, dtype=cp.int64), axis=1)
            def sq():
                x = dev.astype(cp.int64)
                return s(), cp.cumsum(cp.cumsum(x * x, axis=0), axis=1)
            if i == 0:
                ref = np.cumsum(np.cumsum(host, axis=0, dtype=np.int64), axis=1)
                assert np.array_equal(cp.asnumpy(s()), ref), "cupy cumsum disagrees with numpy"
            for req, fn, out_b in (("sum i64", s, 8), ("sum i64 + sq u64", sq, 16)):
                ms = time_gpu(fn, args.runs)
                gbs = px * (1 + out_b) / (ms * 1e-3) / 1e9
                rows.append((name, req, "cupy cumsum(cumsum)", ms))
                print(f"| {name} | {req} | cupy cumsum(cumsum) | {ms:.3f} | {gbs:.1f} |", flush=True)
            del dev
            cp.get_default_memory_pool().free_all_blocks()
        if cv2 is not None:
            cv2.setNumThreads(1)
            ms = time_cpu(lambda: cv2.integral(host, sdepth=cv2.CV_32S), max(3, args.runs // 4))
            rows.append((name, "sum u32", "opencv integral (1 thread)", ms))
            print(f"| {name} | sum u32 | opencv integral | {ms:.3f} | {px * 5 / (ms * 1e-3) / 1e9:.1f} |", flush=True)
            ms = time_cpu(lambda: cv2.integral2(host, sdepth=cv2.CV_32S, sqdepth=cv2.CV_64F), max(3, args.runs // 4))
            rows.append((name, "sum u32 + sq f64", "opencv integral2 (1 thread)", ms))
            print(f"| {name} | sum u32 + sq f64 | opencv integral2 | {ms:.3f} | {px * 13 / (ms * 1e-3) / 1e9:.1f} |",
                  flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(["size", "request", "impl", "ms"])
            wr.writerows(rows)
    if args.ours:
        ours = {}
        with open(args.ours) as f:
            for r in csv.DictReader(f):
                try:
                    ours[(r["size"], r["request"], r["impl"])] = float(r["ms"])
                except (KeyError, ValueError):
                    continue
        print("\n| size | request | peer | peer ms | pixelkit ms | peer / pixelkit |\n|---|---|---|---:|---:|---:|")
        for name, req, impl, ms in rows:
            mine = ours.get((name, req, "pixelkit cuda (device)" if impl.startswith("cupy") else "pixelkit cpu"))
            if mine:
                print(f"| {name} | {req} | {impl} | {ms:.3f} | {mine:.3f} | {ms / mine:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
