#!/usr/bin/env python3
"""Peers of study_filter_gpu (issue 7): PyTorch, CuPy and OpenCV on seeds 002/004's filter studies.

    python3 bench/peers/study_filter_torch.py [--csv FILE] [--quick] [--reps N]

Writes rows of bench/studies/SCHEMA.md (header
study,series,x,x_value,time_ms,threads,check,device,notes) to FILE (default
stdout) and a summary table to stderr. Studies and data, as in
bench/studies/study_filter_gpu.cu: RGB u8 images of random pixels, border
reflect101 (the seed's mirror):
  s002_resolution  gaussian:3 (OpenCV's [1 2 1]/4 outer product) at 640x480,
                   1280x720, 1920x1080, 3840x2160, 7680x4320 (--quick: 640x480,
                   1920x1080, 7680x4320); x = WxH, x_value = pixels.
  s002_kernel      dense random 3x3, 5x5, 7x7, 9x9 (sum 1, full rank; the same
                   recipe as the C++ study, not the same random numbers) at
                   1920x1080; x = KxK, x_value = K.
  s004_edge        [-1 -1 -1; -1 8 -1; -1 -1 -1] at 256x256, 1920x1080,
                   7680x4320; x = WxH, x_value = pixels.
Series (each library is optional: a missing import drops its rows):
  torch      torch.nn.functional.conv2d on float32 NCHW (1x3xHxW) on cuda,
             groups=3 (one KxK filter per channel), after F.pad(mode='reflect')
             (= reflect101); cudnn.benchmark=True, TF32 off (exact float32).
             Timed: pad + conv only, float32 in and out (no u8 conversion).
  torch_u8   the same, timed from a u8 HxWx3 device tensor to a u8 HxWx3 device
             tensor: permute + float + pad + conv + round + clamp + u8 + permute.
  cupy       cupyx.scipy.ndimage.correlate on the HxWx3 u8 array with weights of
             shape (K, K, 1), mode='mirror' (= reflect101), output float32 (a u8
             output would wrap negative sums of the edge and dense kernels).
  opencv_cpu cv2.filter2D(img, -1, k, borderType=cv2.BORDER_REFLECT_101), u8 in
             and out, cv2's default thread count (the threads column), host timer.
Checks, before timing: every output is compared with cv2.filter2D's (or, without
cv2, a float64 NumPy correlation rounded to u8) within 1 grey level; float32
outputs are first rounded half to even and clamped to 0..255.
Timing: GPU rows with CUDA events (torch.cuda.Event / cupy.cuda.Event) around
batches of B launches (B so that a batch lasts >= 0.25 ms), after warm-up,
median of the batches / B; inputs and outputs rotated among buffer sets when an
image is smaller than 2x the L2 cache. CPU rows: time.perf_counter, median.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover
    torch = None
try:
    import cupy as cp
    import cupyx.scipy.ndimage as cndi
except ImportError:  # pragma: no cover
    cp = None
try:
    import cv2
except ImportError:  # pragma: no cover
    cv2 = None

MIN_BATCH_MS = 0.25
MAX_BATCH = 32
MAX_TIMING_MS = 2000.0
TOL = 1
HEADER = "study,series,x,x_value,time_ms,threads,check,device,notes"


def safe(s):
    return str(s).replace(",", ";").replace("\n", " ").replace('"', "'")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return safe(line.split(":", 1)[1].strip())
    except OSError:
        pass
    return "unknown CPU"


def gaussian3():
    g = np.array([0.25, 0.5, 0.25], dtype=np.float64)
    return np.outer(g, g).astype(np.float32)


def edge():
    k = -np.ones((3, 3), dtype=np.float32)
    k[1, 1] = 8
    return k


def random_dense(n):
    """bench_filter_gpu's recipe (sum 1, random, full rank); not its random numbers."""
    rng = np.random.default_rng(1000 + n)
    c = rng.uniform(-1.0, 1.0, size=(n, n)).astype(np.float32)
    s = c.sum()
    return (c / n / n + (1.0 - s / n / n) / (n * n)).astype(np.float32)


def random_image(w, h):
    rng = np.random.default_rng(w * 7 + h)
    return rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)


def to_u8(a):
    return np.clip(np.rint(a), 0, 255).astype(np.uint8)


def reference(img, k):
    """cv2.filter2D's output (u8, reflect101); a float64 NumPy correlation without cv2."""
    if cv2 is not None:
        return cv2.filter2D(img, -1, k, borderType=cv2.BORDER_REFLECT_101), "cv2.filter2D"
    r = k.shape[0] // 2
    p = np.pad(img.astype(np.float64), ((r, r), (r, r), (0, 0)), mode="reflect")  # numpy reflect = reflect101
    h, w = img.shape[:2]
    acc = np.zeros(img.shape, dtype=np.float64)
    for ky in range(k.shape[0]):
        for kx in range(k.shape[1]):
            acc += float(k[ky, kx]) * p[ky:ky + h, kx:kx + w]
    return to_u8(acc), "numpy float64 correlation"


def check(got_u8, want):
    d = np.abs(got_u8.astype(np.int16) - want.astype(np.int16))
    m = int(d.max())
    bad = int((d > TOL).sum())
    return bad == 0, f"max|diff| {m}" + (f" ({bad} elements over {TOL})" if bad else "")


class Out:
    def __init__(self, path):
        self.f = open(path, "w") if path else sys.stdout
        self.rows = []
        self.ok = True
        self.f.write(HEADER + "\n")
        self.f.flush()

    def row(self, study, series, x, x_value, ms, threads, ok, device, notes):
        chk = "ok" if ok else "mismatch"
        self.ok = self.ok and ok
        t = "" if ms is None else f"{ms:.6g}"
        self.f.write(f"{study},{series},{safe(x)},{x_value},{t},{threads},{chk},{safe(device)},{safe(notes)}\n")
        self.f.flush()
        self.rows.append((study, series, x, ms, chk))
        print(f"{study:16s} {series:12s} {x:12s} {t or '-':>12s} ms  {chk}" + ("" if ok else "  " + notes),
              file=sys.stderr, flush=True)

    def table(self, device):
        print(f"\n== summary: {device}; times in ms (median); '!' = check mismatch ==", file=sys.stderr)
        studies = []
        for r in self.rows:
            if r[0] not in studies:
                studies.append(r[0])
        for s in studies:
            xs, series = [], []
            for r in self.rows:
                if r[0] == s:
                    if r[2] not in xs:
                        xs.append(r[2])
                    if r[1] not in series:
                        series.append(r[1])
            wid = [max(10, len(c)) for c in series]
            print(f"\n{s}\n{'x':15s}" + "".join(f" {c:>{n}s}" for c, n in zip(series, wid)), file=sys.stderr)
            for x in xs:
                cells = []
                for c in series:
                    hit = [r for r in self.rows if r[0] == s and r[2] == x and r[1] == c]
                    cell = "-" if not hit or hit[0][3] is None else f"{hit[0][3]:.4g}"
                    if hit and hit[0][4] != "ok":
                        cell += "!"
                    cells.append(cell)
                print(f"{x:15s}" + "".join(f" {c:>{n}s}" for c, n in zip(cells, wid)), file=sys.stderr)


def batched(time_batch, probe_ms, reps):
    """time_batch(B) -> ms of one batch of B launches; returns the median per launch."""
    batch = max(1, min(MAX_BATCH, math.ceil(MIN_BATCH_MS / max(probe_ms, 1e-4))))
    n = max(min(5, reps), min(reps, int(MAX_TIMING_MS / max(probe_ms * batch, 1e-3))))
    time_batch(batch)
    time_batch(batch)  # warm-up
    t = sorted(time_batch(batch) for _ in range(n))
    return t[len(t) // 2] / batch, n, batch


def nbuf_for(total_bytes, l2):
    """Buffer sets to rotate: enough to exceed 4x L2 when input + output bytes are under 2x L2."""
    if total_bytes < 2 * l2:
        return min(16, max(2, math.ceil(4 * l2 / total_bytes)))
    return 1


# ---- torch ------------------------------------------------------------------------------------

def torch_rows(out, study, x, xv, img, k, want, reps, l2, device):
    h, w = img.shape[:2]
    kk = k.shape[0]
    r = kk // 2
    nbuf = nbuf_for(img.nbytes * 8, l2)  # float32 in and out
    weight = torch.from_numpy(np.repeat(k[None, None], 3, axis=0)).cuda()  # (3, 1, K, K)
    src_u8 = [torch.from_numpy(img).cuda() for _ in range(nbuf)]
    src_f = [t.permute(2, 0, 1).unsqueeze(0).float().contiguous() for t in src_u8]

    def f32(i):
        return F.conv2d(F.pad(src_f[i % nbuf], (r, r, r, r), mode="reflect"), weight, groups=3)

    def u8(i):
        x_ = src_u8[i % nbuf].permute(2, 0, 1).unsqueeze(0).float()
        y = F.conv2d(F.pad(x_, (r, r, r, r), mode="reflect"), weight, groups=3)
        return y.round_().clamp_(0, 255).to(torch.uint8)[0].permute(1, 2, 0).contiguous()

    def timer(fn):
        counter = [0]

        def time_batch(b):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(b):
                fn(counter[0])
                counter[0] += 1
            e.record()
            e.synchronize()
            return s.elapsed_time(e)
        return time_batch

    for series, fn, what in (("torch", f32, "pad + conv2d only: float32 NCHW in and out (no u8 conversion)"),
                             ("torch_u8", u8, "u8 HxWx3 device tensor to u8 HxWx3: permute + float + pad + conv2d "
                                              "+ round + clamp + u8 + permute")):
        try:
            y = fn(0)
            torch.cuda.synchronize()
            got = y[0].permute(1, 2, 0).cpu().numpy() if series == "torch" else y.cpu().numpy()
            ok, note = check(to_u8(got) if series == "torch" else got, want)
            ms = None
            tb = timer(fn)
            probe = tb(1)
            probe = min(probe, tb(1))
            if ok:
                ms, n, b = batched(tb, probe, reps)
                note += f"; median of {n} event-timed batches of {b}; {nbuf} buffer set(s)"
            out.row(study, series, x, xv, ms, 0, ok, device,
                    f"torch {torch.__version__} F.conv2d groups=3 after F.pad reflect; cudnn.benchmark; TF32 off; "
                    f"timed: {what}; {note}")
        except Exception as e:  # keep going: one failure must not lose the other rows
            out.row(study, series, x, xv, None, 0, False, device, f"error: {e}")
    del src_u8, src_f
    torch.cuda.empty_cache()


# ---- cupy -------------------------------------------------------------------------------------

def cupy_rows(out, study, x, xv, img, k, want, reps, l2, device):
    h, w = img.shape[:2]
    nbuf = nbuf_for(img.nbytes * 5, l2)  # u8 in, float32 out
    src = [cp.asarray(img) for _ in range(nbuf)]
    dst = [cp.empty((h, w, 3), dtype=cp.float32) for _ in range(nbuf)]
    wk = cp.asarray(k[:, :, None])

    def run(i):
        b = i % nbuf
        cndi.correlate(src[b], wk, output=dst[b], mode="mirror")

    counter = [0]

    def time_batch(bn):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for _ in range(bn):
            run(counter[0])
            counter[0] += 1
        e.record()
        e.synchronize()
        return cp.cuda.get_elapsed_time(s, e)

    try:
        dst[0].fill(-1234.0)
        run(0)
        cp.cuda.Device().synchronize()
        ok, note = check(to_u8(cp.asnumpy(dst[0])), want)
        ms = None
        probe = min(time_batch(1), time_batch(1))
        if ok:
            ms, n, b = batched(time_batch, probe, reps)
            note += f"; median of {n} event-timed batches of {b}; {nbuf} buffer set(s)"
        out.row(study, "cupy", x, xv, ms, 0, ok, device,
                f"cupy {cp.__version__} cupyx.scipy.ndimage.correlate HxWx3 u8 with weights (K;K;1) mode mirror; "
                f"output float32 (checked after rint + clip); {note}")
    except Exception as e:
        out.row(study, "cupy", x, xv, None, 0, False, device, f"error: {e}")
    del src, dst
    cp.get_default_memory_pool().free_all_blocks()


# ---- OpenCV (CPU) -----------------------------------------------------------------------------

def opencv_rows(out, study, x, xv, img, k, want, reps, cpu, ref_name):
    try:
        dst = np.empty_like(img)

        def run():
            cv2.filter2D(img, -1, k, dst=dst, borderType=cv2.BORDER_REFLECT_101)

        run()
        ok, note = check(dst, want)
        if ref_name == "cv2.filter2D":
            note += " (it is the reference)"
        t0 = time.perf_counter()
        run()
        probe = (time.perf_counter() - t0) * 1e3
        n = max(min(5, reps), min(reps, int(MAX_TIMING_MS / max(probe, 1e-3))))
        ms = None
        if ok:
            t = []
            for _ in range(n):
                t0 = time.perf_counter()
                run()
                t.append((time.perf_counter() - t0) * 1e3)
            ms = sorted(t)[len(t) // 2]
            note += f"; host timer; median of {n}"
        out.row(study, "opencv_cpu", x, xv, ms, cv2.getNumThreads(), ok, cpu,
                f"cv2 {cv2.__version__} filter2D u8 BORDER_REFLECT_101; default threads; {note}")
    except Exception as e:
        out.row(study, "opencv_cpu", x, xv, None, cv2.getNumThreads() if cv2 else 0, False, cpu, f"error: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default="", help="CSV output (default stdout)")
    ap.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    ap.add_argument("--reps", type=int, default=0, help="timed repetitions (default 40, --quick 10)")
    args = ap.parse_args()
    reps = args.reps or (10 if args.quick else 40)
    t_start = time.perf_counter()

    have_gpu = False
    device = "no GPU"
    l2 = 50 << 20
    if torch is not None and torch.cuda.is_available():
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        props = torch.cuda.get_device_properties(0)
        device = safe(props.name)
        l2 = getattr(props, "L2_cache_size", l2) or l2
        have_gpu = True
    if cp is not None:
        try:
            p = cp.cuda.runtime.getDeviceProperties(0)
            name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
            device = safe(name)
            l2 = p.get("l2CacheSize", l2) or l2
            have_gpu = True
        except Exception as e:  # no device: cupy rows are skipped
            print(f"study_filter_torch.py: CuPy sees no device ({e})", file=sys.stderr)
            globals()["cp"] = None
    cpu = cpu_model()
    print(f"study_filter_torch.py: torch {'-' if torch is None else torch.__version__}, "
          f"cupy {'-' if cp is None else cp.__version__}, cv2 {'-' if cv2 is None else cv2.__version__}; "
          f"GPU {device}, L2 {l2 >> 20} MB; CPU {cpu}", file=sys.stderr)

    out = Out(args.csv)
    res_sizes = [(640, 480), (1280, 720), (1920, 1080), (3840, 2160), (7680, 4320)]
    if args.quick:
        res_sizes = [(640, 480), (1920, 1080), (7680, 4320)]
    jobs = [("s002_resolution", f"{w}x{h}", w * h, w, h, gaussian3()) for w, h in res_sizes]
    jobs += [("s002_kernel", f"{n}x{n}", n, 1920, 1080, random_dense(n)) for n in (3, 5, 7, 9)]
    jobs += [("s004_edge", f"{w}x{h}", w * h, w, h, edge()) for w, h in ((256, 256), (1920, 1080), (7680, 4320))]

    images = {}
    for study, x, xv, w, h, k in jobs:
        if (w, h) not in images:
            images = {(w, h): random_image(w, h)}  # keep one size at a time
        img = images[(w, h)]
        want, ref_name = reference(img, k)
        if torch is not None and have_gpu:
            torch_rows(out, study, x, xv, img, k, want, reps, l2, device)
        if cp is not None:
            cupy_rows(out, study, x, xv, img, k, want, reps, l2, device)
        if cv2 is not None:
            opencv_rows(out, study, x, xv, img, k, want, reps, cpu, ref_name)

    out.table(device)
    print(f"\nstudy_filter_torch.py: {time.perf_counter() - t_start:.1f} s{' (--quick)' if args.quick else ''}",
          file=sys.stderr)
    if out.f is not sys.stdout:
        out.f.close()
    if not out.ok:
        print("study_filter_torch.py: some rows disagree with the reference (check != ok)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
