#!/usr/bin/env python3
"""`pixelkit haar` against PyWavelets, run from CTest.

For random images (odd and even sizes, 1/3/4 channels, uint8 and float32) and
the photos in data/ (when the build reads PNG), every backend's coefficient
file must load with numpy.load and hold, channel by channel,

    pywt.coeffs_to_array(pywt.wavedec2(x, 'haar', mode='periodization', level=L))[0]

(average normalisation: each level's coefficients divided by 2^level), within
1e-5 of the largest magnitude; the inverse must restore x (uint8: exactly,
float32: within 1e-5 relative) at its original size, odd sizes included.

--shard K/N runs every N-th case starting at the K-th (1-based), so that CTest
can run N shards side by side (tests/CMakeLists.txt registers 4); each case
runs the CLI twice and process start-up dominates, so the shards divide the
time evenly.

Exit 0: all agree; 1: a mismatch (printed); 77: numpy or pywt missing (CTest
reports the test as skipped).
"""
import argparse
import os
import subprocess
import sys
import warnings

try:
    import numpy as np
    import pywt
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: {e} (install python3-numpy and python3-pywt)")
    sys.exit(77)

SKIP = 77
failures = []


def run(cli, *args):
    r = subprocess.run([cli, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"pixelkit {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
    return r


def expected(x, levels, normalize):
    """PyWavelets' coefficient array, channel by channel (float64)."""
    chans = [x] if x.ndim == 2 else [x[..., c] for c in range(x.shape[2])]
    out = []
    for ch in chans:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "level too high" for tiny images: boundary effects are the point
            coeffs = pywt.wavedec2(ch.astype(np.float64), "haar", mode="periodization", level=levels)
        arr, slices = pywt.coeffs_to_array(coeffs)
        if normalize == "average":
            # slices[0] is the approximation (level L); slices[i] holds level L-i+1's details.
            arr[slices[0]] *= 2.0 ** -levels
            for i, d in enumerate(slices[1:]):
                k = levels - i
                for key in d:
                    arr[d[key]] *= 2.0 ** -k
        out.append(arr)
    return out[0] if x.ndim == 2 else np.stack(out, axis=-1)


def close(got, want, rel=1e-5):
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if not np.all(np.isfinite(got)):
        return "non-finite values"
    err = np.max(np.abs(got.astype(np.float64) - want)) if got.size else 0.0
    lim = rel * max(float(np.max(np.abs(want))) if want.size else 0.0, 1.0)
    return None if err <= lim else f"max |diff| {err:.3g} > {lim:.3g}"


def text(z, key):
    return bytes(z[key]).decode("ascii")


def check_file(path, x, levels, normalize, what):
    with np.load(path) as z:
        names = set(z.files)
        for k in ("coeffs", "levels", "height", "width", "normalize", "dtype"):
            if k not in names:
                return f"{what}: member '{k}' missing from {sorted(names)}"
        c = z["coeffs"]
        if c.dtype != np.float32:
            return f"{what}: coeffs are {c.dtype}, not float32"
        h, w = x.shape[:2]
        if (int(z["levels"]), int(z["height"]), int(z["width"])) != (levels, h, w):
            return f"{what}: levels/height/width {int(z['levels'])}/{int(z['height'])}/{int(z['width'])}"
        if text(z, "normalize") != normalize:
            return f"{what}: normalize '{text(z, 'normalize')}'"
        if text(z, "dtype") != str(x.dtype):
            return f"{what}: dtype '{text(z, 'dtype')}' for {x.dtype} input"
        msg = close(c, expected(x, levels, normalize))
        return f"{what}: coefficients differ from PyWavelets: {msg}" if msg else None


def check_inverse(cli, coeffs, x, work, backend, what):
    out = os.path.join(work, "rec.npy")
    run(cli, "haar", "--inverse", coeffs, out, "--backend", backend)
    r = np.load(out)
    if r.dtype != x.dtype or r.shape != x.shape:
        return f"{what}: inverse gave {r.dtype} {r.shape}, want {x.dtype} {x.shape}"
    if x.dtype == np.uint8:
        return None if np.array_equal(r, x) else f"{what}: uint8 round trip not identical"
    msg = close(r, x.astype(np.float64))
    return f"{what}: inverse differs: {msg}" if msg else None


def max_levels(h, w):
    n, L = min(h, w), 0
    while n > 1:
        n = (n + 1) // 2
        L += 1
    return max(L, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--data", default=None)
    ap.add_argument("--shard", default="1/1", help="K/N: run cases K-1, K-1+N, ... (1 <= K <= N)")
    a = ap.parse_args()
    try:
        k, n = (int(v) for v in a.shard.split("/"))
        if not 1 <= k <= n:
            raise ValueError
    except ValueError:
        ap.error(f"--shard '{a.shard}': expected K/N with 1 <= K <= N")
    index = -1

    def mine():
        """True for the cases of this shard (every case draws the next index)."""
        nonlocal index
        index += 1
        return index % n == k - 1

    os.makedirs(a.work, exist_ok=True)
    info = run(a.cli, "info").stdout
    backends = ["ref", "cpu"]
    if "cuda device  : none usable" not in info and "cuda device" in info:
        backends.append("cuda")
    pngs = "OpenCV" in info
    print(f"pywt {pywt.__version__}, numpy {np.__version__}, backends {backends}")

    rng = np.random.default_rng(2024)
    # (rows, cols, channels); levels 1, 2 and max for the small ones, 1/mid/max for
    # the large (every level of every size is test_haar's, against ref; this
    # check ties ref to PyWavelets, and each case starts the CLI twice).
    shapes = [(1, 1, 1), (2, 2, 1), (3, 5, 1), (5, 3, 3), (64, 64, 1), (64, 64, 4), (129, 67, 1),
              (67, 129, 3), (1, 7, 1), (1000, 999, 1), (768, 1024, 1)]
    count = 0
    for (h, w, c) in shapes:
        for dtype in (np.float32, np.uint8):
            shape = (h, w) if c == 1 else (h, w, c)
            x = (rng.integers(0, 256, shape).astype(np.uint8) if dtype == np.uint8
                 else (rng.standard_normal(shape) * 100).astype(np.float32))
            src = os.path.join(a.work, "x.npy")
            np.save(src, x)
            L_max = max_levels(h, w)
            levels = sorted({1, min(2, L_max), L_max} if h * w < 100000 else {1, (L_max + 1) // 2, L_max})
            for L in levels:
                for norm in ("orthonormal", "average"):
                    for b in backends:
                        if not mine():
                            continue
                        what = f"{h}x{w}x{c} {np.dtype(dtype)} L{L} {norm} {b}"
                        path = os.path.join(a.work, "c.npz")
                        run(a.cli, "haar", src, "--levels", str(L), "--normalize", norm, "--coeffs", path,
                            "--backend", b)
                        for msg in (check_file(path, x, L, norm, what),
                                    check_inverse(a.cli, path, x, a.work, b, what)):
                            if msg:
                                failures.append(msg)
                                print("FAIL", msg)
                        count += 1

    if pngs and a.data:
        for name in sorted(os.listdir(a.data)):
            if not name.endswith(".png"):
                continue
            photo = os.path.join(a.data, name)
            for b in backends:
                if not mine():
                    continue
                path = os.path.join(a.work, "p.npz")
                run(a.cli, "haar", photo, "--levels", "max", "--coeffs", path, "--backend", b)
                # The pixels, as pixelkit reads them: back through the inverse
                # (test_haar checks that this round trip is exact against the file).
                pix = os.path.join(a.work, "p.npy")
                run(a.cli, "haar", "--inverse", path, pix, "--backend", b)
                x = np.load(pix)
                with np.load(path) as z:
                    L = int(z["levels"])
                msg = check_file(path, x, L, "orthonormal", f"{name} L{L} {b}")
                if msg:
                    failures.append(msg)
                    print("FAIL", msg)
                count += 1
    elif not pngs:
        print("note: this build reads no PNG (no OpenCV); data/*.png skipped")

    print(f"shard {k}/{n}: {count} of {index + 1} cases, {len(failures)} failures")
    if count == 0:
        print("FAIL: this shard ran no case")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
