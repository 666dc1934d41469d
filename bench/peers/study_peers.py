#!/usr/bin/env python3
"""Peers of study_gpu (issue 7): CuPy, torch and OpenCV-Python on seeds 003, 000 and 001.

    python3 bench/peers/study_peers.py [--csv FILE] [--quick] [--reps N]

Writes bench/studies/SCHEMA.md rows (CSV, header first; stdout without --csv)
with the same study names and x labels as study_gpu, so both files can be
concatenated:

  s003_sizes   128^2 .. 8192^2 u8 grey (doubling), the inclusive H x W table
               without OpenCV's zero row and column:
                 cupy        cupy.cumsum(cupy.cumsum(x, 0, dtype=int64), 1)
                 torch       torch.cumsum(torch.cumsum(x, 0, dtype=int64), 1)
                 opencv_cpu  cv2.integral(x, sdepth=CV_64F) on the host (exact
                             below 2^53; OpenCV's integral is single-threaded)
               each checked equal to numpy's int64 cumsums on the same input.
  s000_table   seed 000's images (sizes, levels), f32 grey, forward:
                 torch       one Haar level by strided slicing of a CUDA
                             float32 tensor (the odd side padded by repeating
                             its last sample), repeated per level, written into
                             the coefficient array laid out as pixelkit's
                             HaarLayout (coeffs_to_array), `average`
                             normalisation (sums and differences over 4, the
                             seed's; study_gpu uses the same). Checked against
                             the same definition in numpy float64 (max |diff| /
                             max |ref| <= 1e-5).
  s001_stages  seed 001's two cases (A: 1326x1025, template 479x432; B:
               1200x1983, 150x150), grey u8, SSD, the whole call (x "A/total"):
                 opencv_cpu  cv2.matchTemplate(TM_SQDIFF) + cv2.minMaxLoc
                 cupy        FFT correlation (cupy.fft.rfft2 / irfft2, float64)
                             + integral of I^2 for the window sums + argmin
                 torch       F.conv2d correlation (float32, TF32 off; image and
                             template both shifted by -128, which leaves the SSD
                             unchanged and the float32 sums smaller) + window
                             sums from a float64 cumsum table + argmin
               OpenCV's map is checked at 24 positions against exact integer
               SSDs (numpy) and its best location against the place the
               template was cut from; the GPU peers' maps against OpenCV's
               (max |diff| / max |map| <= 1e-4) and their best location.

Device times: CUDA events (cupy / torch), median after warm-up; inputs rotate
among several buffers while a set is under twice the L2 cache (50 MB on an
H100). Host times: perf_counter, median. Each library is optional (guarded
imports); missing ones give no rows.
"""
import argparse
import csv
import math
import os
import sys
import time

import numpy as np

try:
    import cupy as cp
except Exception:  # pragma: no cover - no CuPy or no GPU
    cp = None
try:
    import torch
    import torch.nn.functional as F
    if not torch.cuda.is_available():
        torch = None
except Exception:  # pragma: no cover
    torch = None
try:
    import cv2
except Exception:  # pragma: no cover
    cv2 = None

FIELDS = ["study", "series", "x", "x_value", "time_ms", "threads", "check", "device", "notes"]
L2_BYTES = 50 << 20

HAAR_CASES = [("img3.png", 250, 256, 1), ("debbie.jpg", 256, 256, 8), ("foto1.jpg", 512, 512, 9),
              ("img.png", 512, 512, 9), ("img5.jpg", 400, 600, 3), ("flower.jpg", 400, 620, 3),
              ("img4.jpg", 600, 800, 3), ("wall3.jpg", 1700, 1000, 2), ("wall.jpg", 1800, 2880, 3)]
MATCH_CASES = [("A", 1326, 1025, 479, 432), ("B", 1200, 1983, 150, 150)]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def gpu_name():
    if torch is not None:
        return torch.cuda.get_device_name(0)
    if cp is not None:
        return cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    return ""


def rotation(bytes_per_set):
    return int(min(8, max(1, math.ceil(2 * L2_BYTES / max(bytes_per_set, 1)))))


class Out:
    def __init__(self, path):
        self.f = open(path, "w", newline="") if path else sys.stdout
        self.w = csv.writer(self.f)
        self.w.writerow(FIELDS)
        self.rows = []

    def row(self, study, series, x, x_value, ms, threads, check, device, notes):
        clean = lambda s: str(s).replace(",", ";").replace("\n", " ")
        r = [study, series, clean(x), f"{x_value:.10g}", "" if ms is None else f"{ms:.6f}", threads, check,
             clean(device), clean(notes)]
        self.w.writerow(r)
        self.f.flush()
        self.rows.append(r)


def time_cupy(fn, reps, warm=3):
    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    a, b = cp.cuda.Event(), cp.cuda.Event()
    t = []
    for _ in range(reps):
        a.record()
        fn()
        b.record()
        b.synchronize()
        t.append(cp.cuda.get_elapsed_time(a, b))
    return float(np.median(t))


def time_torch(fn, reps, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t = []
    for _ in range(reps):
        a.record()
        fn()
        b.record()
        b.synchronize()
        t.append(a.elapsed_time(b))
    return float(np.median(t))


def time_host(fn, reps, warm=1):
    for _ in range(warm):
        fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(t))


def guarded(out, study, series, x, x_value, device, fn):
    """Runs one series; an exception becomes a row without a time (check n/a)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - a peer failing must not lose the others
        out.row(study, series, x, x_value, None, 0, "n/a", device, f"failed: {type(e).__name__}: {e}"[:300])


# ---- s003_sizes ----------------------------------------------------------------------------

def s003_sizes(out, reps, gpu, cpu):
    rng = np.random.default_rng(3)
    n = 128
    while n <= 8192:
        x = f"{n}x{n}"
        px = n * n
        host = rng.integers(0, 256, size=(n, n), dtype=np.uint8)
        ref = np.cumsum(np.cumsum(host, axis=0, dtype=np.int64), axis=1)
        k = rotation(px * (1 + 8 + 8))
        r = reps if n < 4096 else max(5, reps // 2)
        if cp is not None:
            def run_cupy():
                devs = [cp.asarray(host) for _ in range(k)]
                fn = lambda d: cp.cumsum(cp.cumsum(d, axis=0, dtype=cp.int64), axis=1)
                good = np.array_equal(cp.asnumpy(fn(devs[0])), ref)
                i = [0]
                def step():
                    fn(devs[i[0]])
                    i[0] = (i[0] + 1) % k
                ms = time_cupy(step, r)
                out.row("s003_sizes", "cupy", x, px, ms, 0, "ok" if good else "mismatch", gpu,
                        f"cupy {cp.__version__} cumsum(cumsum(x;0;int64);1); H x W table; {k} input sets")
                del devs
                cp.get_default_memory_pool().free_all_blocks()
            guarded(out, "s003_sizes", "cupy", x, px, gpu, run_cupy)
        if torch is not None:
            def run_torch():
                devs = [torch.from_numpy(host).cuda() for _ in range(k)]
                fn = lambda d: torch.cumsum(torch.cumsum(d, 0, dtype=torch.int64), 1)
                good = np.array_equal(fn(devs[0]).cpu().numpy(), ref)
                i = [0]
                def step():
                    fn(devs[i[0]])
                    i[0] = (i[0] + 1) % k
                ms = time_torch(step, r)
                out.row("s003_sizes", "torch", x, px, ms, 0, "ok" if good else "mismatch", gpu,
                        f"torch {torch.__version__} cumsum(cumsum(x;0;int64);1); H x W table; {k} input sets")
                del devs
                torch.cuda.empty_cache()
            guarded(out, "s003_sizes", "torch", x, px, gpu, run_torch)
        if cv2 is not None:
            def run_cv():
                t = cv2.integral(host, sdepth=cv2.CV_64F)
                good = np.array_equal(t[1:, 1:].astype(np.int64), ref)
                ms = time_host(lambda: cv2.integral(host, sdepth=cv2.CV_64F), max(3, r // 3))
                out.row("s003_sizes", "opencv_cpu", x, px, ms, 1, "ok" if good else "mismatch", cpu,
                        f"cv2 {cv2.__version__} integral sdepth CV_64F; (H+1)x(W+1); single-threaded")
            guarded(out, "s003_sizes", "opencv_cpu", x, px, cpu, run_cv)
        n *= 2


# ---- s000_table ----------------------------------------------------------------------------

def haar_layout(w, h, levels):
    """Band sizes (w_k, h_k) for k = 1..levels and the origins (x0_k, y0_k), as HaarLayout."""
    sizes = [(w, h)]
    for _ in range(levels):
        pw, ph = sizes[-1]
        sizes.append(((pw + 1) // 2, (ph + 1) // 2))
    origin = {}
    x0, y0 = sizes[levels]
    for k in range(levels, 0, -1):
        origin[k] = (x0, y0)
        x0 += sizes[k][0]
        y0 += sizes[k][1]
    return sizes, origin, x0, y0  # x0, y0 at the end: the coefficient array's width and height


def haar_numpy(img, levels):
    """The definition in float64 (average normalisation), the check's reference."""
    h, w = img.shape
    sizes, origin, cw, ch = haar_layout(w, h, levels)
    out = np.zeros((ch, cw), np.float64)
    a = img.astype(np.float64)
    for k in range(1, levels + 1):
        if a.shape[1] % 2:
            a = np.concatenate([a, a[:, -1:]], axis=1)
        if a.shape[0] % 2:
            a = np.concatenate([a, a[-1:, :]], axis=0)
        p, q, r, s = a[0::2, 0::2], a[0::2, 1::2], a[1::2, 0::2], a[1::2, 1::2]
        bw, bh = sizes[k]
        x0, y0 = origin[k]
        out[0:bh, x0:x0 + bw] = (p - q + r - s) / 4
        out[y0:y0 + bh, 0:bw] = (p + q - r - s) / 4
        out[y0:y0 + bh, x0:x0 + bw] = (p - q - r + s) / 4
        a = (p + q + r + s) / 4
    bw, bh = sizes[levels]
    out[0:bh, 0:bw] = a
    return out


def s000_table(out, reps, gpu):
    if torch is None:
        return
    rng = np.random.default_rng(5)
    for name, w, h, levels in HAAR_CASES:
        x = f"{name} {w}x{h} L{levels}"
        px = w * h

        def run():
            img = (rng.random((h, w), dtype=np.float32) * 255).astype(np.float32)
            sizes, origin, cw, ch = haar_layout(w, h, levels)
            k = rotation(4 * (px + cw * ch))
            srcs = [torch.from_numpy(img).cuda() for _ in range(k)]
            outs = [torch.zeros((ch, cw), dtype=torch.float32, device="cuda") for _ in range(k)]

            def fwd(a, o):
                for lv in range(1, levels + 1):
                    if a.shape[1] % 2:
                        a = torch.cat([a, a[:, -1:]], dim=1)
                    if a.shape[0] % 2:
                        a = torch.cat([a, a[-1:, :]], dim=0)
                    p, q, r, s = a[0::2, 0::2], a[0::2, 1::2], a[1::2, 0::2], a[1::2, 1::2]
                    bw, bh = sizes[lv]
                    x0, y0 = origin[lv]
                    o[0:bh, x0:x0 + bw] = (p - q + r - s) * 0.25
                    o[y0:y0 + bh, 0:bw] = (p + q - r - s) * 0.25
                    o[y0:y0 + bh, x0:x0 + bw] = (p - q - r + s) * 0.25
                    a = (p + q + r + s) * 0.25
                bw, bh = sizes[levels]
                o[0:bh, 0:bw] = a

            fwd(srcs[0], outs[0])
            want = haar_numpy(img, levels)
            got = outs[0].cpu().numpy().astype(np.float64)
            err = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1.0))
            i = [0]

            def step():
                fwd(srcs[i[0]], outs[i[0]])
                i[0] = (i[0] + 1) % k
            ms = time_torch(step, reps)
            out.row("s000_table", "torch", x, px, ms, 0, "ok" if err <= 1e-5 else "mismatch", gpu,
                    f"torch {torch.__version__} strided slicing per level; float32 on the device; average "
                    f"normalisation; vs numpy f64 of the same definition: rel err {err:.1e}; {k} input sets")
        guarded(out, "s000_table", "torch", x, px, gpu, run)


# ---- s001_stages ---------------------------------------------------------------------------

def make_grey(w, h, seed):
    """A textured grey u8 image (smooth blobs plus noise), like study_gpu's."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    v = np.full((h, w), 128.0)
    for _ in range(3):
        fx, fy, ph = 0.002 + 0.03 * rng.random(), 0.002 + 0.03 * rng.random(), 6.28 * rng.random()
        v += 35 * np.sin(fx * xx + ph) * np.cos(fy * yy + ph)
    v += rng.integers(-20, 21, size=(h, w))
    return np.clip(np.round(v), 0, 255).astype(np.uint8), rng


def exact_ssd(img, tpl, x, y):
    th, tw = tpl.shape
    d = img[y:y + th, x:x + tw].astype(np.int64) - tpl.astype(np.int64)
    return int(np.sum(d * d))


def s001_stages(out, reps, gpu, cpu):
    for name, W, H, w, h in MATCH_CASES:
        x = f"{name}/total"
        img, rng = make_grey(W, H, 11 + ord(name))
        tx, ty = W // 3, H // 4
        tpl = np.clip(img[ty:ty + h, tx:tx + w].astype(np.int64) + rng.integers(-3, 4, size=(h, w)), 0,
                      255).astype(np.uint8)
        mw, mh = W - w + 1, H - h + 1
        what = f"{W}x{H} t{w}x{h} grey u8 SSD"
        cv_map = None
        if cv2 is not None:
            def run_cv():
                nonlocal cv_map
                cv_map = cv2.matchTemplate(img, tpl, cv2.TM_SQDIFF)
                _, _, loc, _ = cv2.minMaxLoc(cv_map)
                pts = [(tx, ty)] + [(int(rng.integers(0, mw)), int(rng.integers(0, mh))) for _ in range(23)]
                scale = float(np.max(np.abs(cv_map)))
                err = max(abs(float(cv_map[py, px]) - exact_ssd(img, tpl, px, py)) for px, py in pts) / scale
                good = loc == (tx, ty) and err <= 1e-4
                ms = time_host(lambda: cv2.minMaxLoc(cv2.matchTemplate(img, tpl, cv2.TM_SQDIFF)), max(3, reps // 3))
                out.row("s001_stages", "opencv_cpu", x, 6, ms, cv2.getNumThreads(), "ok" if good else "mismatch", cpu,
                        f"{what}; cv2 {cv2.__version__} matchTemplate TM_SQDIFF + minMaxLoc; whole call; best {loc} "
                        f"(cut at {(tx, ty)}); 24 positions vs exact SSD: rel err {err:.1e}")
            guarded(out, "s001_stages", "opencv_cpu", x, 6, cpu, run_cv)

        def check_map(m, loc):
            """(check, note) for a peer's map and best location, against OpenCV's map when there is one."""
            if cv_map is None:
                return ("ok" if loc == (tx, ty) else "mismatch"), "no OpenCV map: best location vs the cut place only"
            err = float(np.max(np.abs(m - cv_map.astype(np.float64))) / np.max(np.abs(cv_map)))
            good = loc == (tx, ty) and err <= 1e-4
            return ("ok" if good else "mismatch"), f"vs OpenCV's map: rel err {err:.1e}; best {loc}"

        k = rotation(W * H * 9)
        if cp is not None:
            def run_cupy():
                py_, px_ = H + h - 1, W + w - 1
                imgs = [cp.asarray(img) for _ in range(k)]
                dt = cp.asarray(tpl)

                def call(di):
                    f = di.astype(cp.float64)
                    t = dt.astype(cp.float64)
                    fi = cp.fft.rfft2(f, s=(py_, px_))
                    ft = cp.fft.rfft2(t, s=(py_, px_))
                    c = cp.fft.irfft2(fi * cp.conj(ft), s=(py_, px_))[:mh, :mw]
                    sq = cp.zeros((H + 1, W + 1), cp.float64)
                    sq[1:, 1:] = cp.cumsum(cp.cumsum(f * f, axis=0), axis=1)
                    s2 = sq[h:, w:] - sq[:-h, w:] - sq[h:, :-w] + sq[:-h, :-w]
                    m = s2 - 2 * c + float(np.sum(tpl.astype(np.int64) ** 2))
                    i = int(cp.argmin(m))  # the location comes back to the host, as a real call's would
                    return m, (i % mw, i // mw)

                m, loc = call(imgs[0])
                chk, note = check_map(cp.asnumpy(m), loc)
                j = [0]

                def step():
                    call(imgs[j[0]])
                    j[0] = (j[0] + 1) % k
                ms = time_cupy(step, reps)
                out.row("s001_stages", "cupy", x, 6, ms, 0, chk, gpu,
                        f"{what}; cupy {cp.__version__} rfft2/irfft2 float64 correlation + I^2 integral + argmin; "
                        f"whole call; {note}; {k} input sets")
                cp.get_default_memory_pool().free_all_blocks()
            guarded(out, "s001_stages", "cupy", x, 6, gpu, run_cupy)
        if torch is not None:
            def run_torch():
                torch.backends.cudnn.allow_tf32 = False
                torch.backends.cuda.matmul.allow_tf32 = False
                imgs = [torch.from_numpy(img).cuda() for _ in range(k)]
                # The SSD does not change when image and template are shifted by
                # the same constant: centring both on 128 keeps the float32
                # correlation's sums (and their rounding) ~50x smaller.
                dt = (torch.from_numpy(tpl).cuda().to(torch.float32) - 128.0)[None, None]
                t2 = float(np.sum((tpl.astype(np.int64) - 128) ** 2))

                def call(di):
                    f = di.to(torch.float32) - 128.0
                    c = F.conv2d(f[None, None], dt)[0, 0].to(torch.float64)  # conv2d is a correlation
                    d = di.to(torch.float64) - 128.0
                    sq = torch.zeros((H + 1, W + 1), dtype=torch.float64, device="cuda")
                    sq[1:, 1:] = torch.cumsum(torch.cumsum(d * d, 0), 1)
                    s2 = sq[h:, w:] - sq[:-h, w:] - sq[h:, :-w] + sq[:-h, :-w]
                    m = s2 - 2 * c + t2
                    i = int(torch.argmin(m))
                    return m, (i % mw, i // mw)

                m, loc = call(imgs[0])
                chk, note = check_map(m.cpu().numpy(), loc)
                j = [0]

                def step():
                    call(imgs[j[0]])
                    j[0] = (j[0] + 1) % k
                ms = time_torch(step, reps)
                out.row("s001_stages", "torch", x, 6, ms, 0, chk, gpu,
                        f"{what}; torch {torch.__version__} F.conv2d float32 (TF32 off; image and template centred on 128) + f64 (I-128)^2 integral + argmin; "
                        f"whole call; {note}; {k} input sets")
                torch.cuda.empty_cache()
            guarded(out, "s001_stages", "torch", x, 6, gpu, run_torch)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=0)
    a = ap.parse_args()
    reps = a.reps or (10 if a.quick else 30)
    gpu, cpu = gpu_name(), cpu_model()
    print(f"study_peers: gpu {gpu or 'none'}; cpu {cpu}; cupy {cp.__version__ if cp else 'missing'}; "
          f"torch {torch.__version__ if torch else 'missing'}; cv2 {cv2.__version__ if cv2 else 'missing'}; "
          f"{'quick' if a.quick else 'full'}", file=sys.stderr)
    out = Out(a.csv)
    for name, fn in (("s003_sizes", lambda: s003_sizes(out, reps, gpu, cpu)),
                     ("s000_table", lambda: s000_table(out, reps, gpu)),
                     ("s001_stages", lambda: s001_stages(out, reps, gpu, cpu))):
        t0 = time.perf_counter()
        fn()
        print(f"study_peers: {name} done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    # The short table, on stderr.
    print(f"\n{'study':12} {'series':11} {'x':26} {'ms':>10}  check", file=sys.stderr)
    for r in out.rows:
        print(f"{r[0]:12} {r[1]:11} {r[2][:26]:26} {r[4] or '-':>10}  {r[6]}", file=sys.stderr)
    bad = sum(r[6] == "mismatch" for r in out.rows)
    print(f"{len(out.rows)} rows, {bad} mismatches", file=sys.stderr)
    if out.f is not sys.stdout:
        out.f.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
