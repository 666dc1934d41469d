#!/usr/bin/env python3
"""CuPy peer of bench_filter_gpu: cupyx.scipy.ndimage on the same sizes and kernels.

    python3 bench/peers/filter_cupy.py [--quick] [--size WxH]... [--runs N] [--csv FILE]

What is timed (device-resident data, CuPy events, median of N runs after warm-up,
inputs rotated among enough buffers to exceed 2x L2 when the image is smaller):
  dense NxN (random coefficients, the bench's recipe, not separable):
      cupyx.scipy.ndimage.correlate(img, w[:, :, None], output=float32, mode='nearest')
  gaussN (OpenCV's getGaussianKernel factors, sigma from N):
      correlate1d along x, then along y (the separable form), float32 in between.
Data choice: the image is H x W x 3 uint8 (interleaved RGB, as pixelkit's), the
weights float32, the output float32. CuPy then computes in float32 (it promotes
uint8 with float32 weights to float32); it reads the same bytes as pixelkit but
writes 4x as many (float32, not rounded back to u8), so its GB/s column counts
1 byte read + 4 bytes written per element. mode='nearest' is pixelkit's
'replicate'. A kernel of size 1 along the channel axis keeps channels apart.

Before timing, the 640x480 (or first) result is checked against SciPy on the host
(float64) when SciPy is present.

Output: progress lines, then a markdown table, and CSV (--csv) with the same
columns as bench_filter_gpu's CSV (impl=cupy) so that scripts can merge them.
"""
import argparse
import math
import sys

import numpy as np

try:
    import cupy as cp
    import cupyx.scipy.ndimage as cndi
except ImportError:  # pragma: no cover
    print("filter_cupy.py: CuPy is not installed", file=sys.stderr)
    sys.exit(2)


def gaussian_coefficients(n):
    """OpenCV getGaussianKernel(n, 0): fixed tables for n <= 7, else the formula."""
    tables = {1: [1.0], 3: [0.25, 0.5, 0.25], 5: [0.0625, 0.25, 0.375, 0.25, 0.0625],
              7: [0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125]}
    if n in tables:
        return np.array(tables[n], dtype=np.float64)
    sigma = 0.3 * ((n - 1) * 0.5 - 1) + 0.8
    x = np.arange(n) - (n - 1) / 2.0
    g = np.exp(-(x * x) / (2 * sigma * sigma))
    return g / g.sum()


def random_dense(n, seed):
    """Same recipe as bench_filter_gpu (sum 1, random, full rank); not bit-identical RNG."""
    rng = np.random.default_rng(seed)
    c = rng.uniform(-1.0, 1.0, size=(n, n)).astype(np.float32)
    s = c.sum()
    return (c / n / n + (1.0 - s / n / n) / (n * n)).astype(np.float32)


def time_gpu(fn, runs):
    for i in range(3):
        fn(i)
    cp.cuda.Device().synchronize()
    start = [cp.cuda.Event() for _ in range(runs)]
    stop = [cp.cuda.Event() for _ in range(runs)]
    for r in range(runs):
        start[r].record()
        fn(r)
        stop[r].record()
    stop[-1].synchronize()
    t = sorted(cp.cuda.get_elapsed_time(a, b) for a, b in zip(start, stop))
    return t[len(t) // 2]


def copy_bandwidth(runs=20):
    n = 1 << 30
    a = cp.ones(n, dtype=cp.uint8)
    b = cp.empty_like(a)
    ms = time_gpu(lambda i: b.__setitem__(Ellipsis, a) if i % 2 == 0 else a.__setitem__(Ellipsis, b), runs)
    return 2.0 * n / (ms * 1e-3)


def parse_size(text):
    """(W, H) from "WxH" with both positive, else None."""
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    w, h = int(parts[0]), int(parts[1])
    return (w, h) if w > 0 and h > 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1920x1080 and 7680x4320 only")
    ap.add_argument("--size", action="append", default=[], metavar="WxH",
                    help="these sizes only (repeatable), as bench_filter_gpu --size")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--csv", default="")
    args = ap.parse_args()

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    l2 = props.get("l2CacheSize", 50 << 20)
    bw = copy_bandwidth()
    print(f"device: {props['name'].decode() if isinstance(props['name'], bytes) else props['name']}, "
          f"cupy {cp.__version__}, copy bandwidth {bw / 1e9:.0f} GB/s (read+write)")

    sizes = [(640, 480), (1280, 720), (1920, 1080), (3840, 2160), (7680, 4320)]
    if args.quick:
        sizes = [(1920, 1080), (7680, 4320)]
    if args.size:
        sizes = [parse_size(s) for s in args.size]
        if None in sizes:
            ap.error("--size: expected WxH, e.g. 3840x2160")
    kernels = [("dense%dx%d" % (n, n), "dense", random_dense(n, 1000 + n)) for n in (3, 5, 7, 9)]
    kernels += [("gauss%d" % n, "sep", gaussian_coefficients(n).astype(np.float32)) for n in range(3, 32, 2)]

    rows = []
    checked = False
    for (w, h) in sizes:
        in_bytes = w * h * 3
        out_bytes = in_bytes * 4
        nbuf = min(16, max(2, math.ceil(4 * l2 / in_bytes))) if (in_bytes + out_bytes) < 2 * l2 else 1
        rng = np.random.default_rng(w * 7 + h)
        host = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
        src = [cp.asarray(host) for _ in range(nbuf)]
        dst = [cp.empty((h, w, 3), dtype=cp.float32) for _ in range(nbuf)]
        tmp = [cp.empty((h, w, 3), dtype=cp.float32) for _ in range(nbuf)]
        print(f"== {w}x{h} RGB u8 -> f32, {nbuf} buffer set(s) ==", flush=True)
        for name, kind, k in kernels:
            if kind == "dense":
                wk = cp.asarray(k[:, :, None])

                def run(i, wk=wk):
                    b = i % nbuf
                    cndi.correlate(src[b], wk, output=dst[b], mode="nearest")
            else:
                wk = cp.asarray(k)

                def run(i, wk=wk):
                    b = i % nbuf
                    cndi.correlate1d(src[b], wk, axis=1, output=tmp[b], mode="nearest")
                    cndi.correlate1d(tmp[b], wk, axis=0, output=dst[b], mode="nearest")
            run(0)
            diff = float("nan")
            if not checked or (w, h) == sizes[0]:
                try:
                    import scipy.ndimage as sndi
                    ref_in = host.astype(np.float64)
                    if kind == "dense":
                        ref = sndi.correlate(ref_in, k.astype(np.float64)[:, :, None], mode="nearest")
                    else:
                        kk = k.astype(np.float64)
                        ref = sndi.correlate1d(sndi.correlate1d(ref_in, kk, axis=1, mode="nearest"), kk, axis=0,
                                               mode="nearest")
                    diff = float(np.abs(cp.asnumpy(dst[0]).astype(np.float64) - ref).max())
                except ImportError:
                    pass
            ms = time_gpu(run, args.runs)
            floor_ms = 2.0 * in_bytes / bw * 1e3  # pixelkit's floor (u8 in, u8 out), for comparison
            rows.append(dict(impl="cupy", width=w, height=h, kernel=name, ms=ms,
                             mpix_s=w * h / (ms * 1e3), gb_s=(in_bytes + out_bytes) / (ms * 1e6),
                             floor_ms=floor_ms, floor_frac=floor_ms / ms, max_diff=diff))
            print(f"{w:5d}x{h:<4d} {name:10s} {ms:9.4f} ms  {w * h / (ms * 1e3):8.0f} Mpix/s"
                  f"  max|diff| vs scipy {diff:.3g}", flush=True)
        checked = True
        del src, dst, tmp
        cp.get_default_memory_pool().free_all_blocks()

    print("\n| size | kernel | cupy ms | Mpix/s | GB/s (1 B in + 4 B out) | u8 floor ms | floor/ms |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['width']}x{r['height']} | {r['kernel']} | {r['ms']:.4f} | {r['mpix_s']:.0f} | {r['gb_s']:.0f} "
              f"| {r['floor_ms']:.4f} | {r['floor_frac']:.2f} |")
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("impl,width,height,kernel,ms,mpix_s,gb_s,floor_ms,floor_frac,npp_ms,ours_over_npp,max_diff,ok,path\n")
            for r in rows:
                f.write(f"cupy,{r['width']},{r['height']},{r['kernel']},{r['ms']},{r['mpix_s']},{r['gb_s']},"
                        f"{r['floor_ms']},{r['floor_frac']},-1,-1,{r['max_diff']},1,\"cupyx.scipy.ndimage f32\"\n")


if __name__ == "__main__":
    main()
