#!/usr/bin/env python3
"""Peers of bench_video on a machine whose C++ build has no video decoder
(the GPU machine): OpenCV-Python's own FFmpeg for the decoding rate, and a
plain loop of OpenCV's CPU functions over the decoded frames.

    python3 bench/peers/video_cv2.py [--quick] [--frames N] [--loop-frames N]
                                     [--sizes 720p,1080p,4k] [--dir DIR]

Per size: a clip like bench_video's (a panning textured background with a
64x64 and a 256x256 blue patch moving along known paths) is written as an .mp4
(mp4v, OpenCV's FFmpeg), then
  decode   cv2.VideoCapture.read() of every frame, nothing else: frames/s;
  match64 / match256
           cv2.matchTemplate(TM_SQDIFF) + cv2.minMaxLoc + the HSV count in the
           match rectangle (cvtColor, inRange, countNonZero) per frame;
  filter5  cv2.filter2D with the 5x5 Gaussian (getGaussianKernel outer product).
The loops run over frames already decoded into memory (their time excludes
decoding); every match is checked against the known position.
"""
import argparse
import os
import tempfile
import time

import numpy as np

try:
    import cv2
except ImportError:  # pragma: no cover
    cv2 = None

SIZES = {"720p": (1280, 720), "1080p": (1920, 1080), "4k": (3840, 2160)}


def blue_patch(n, seed):
    rng = np.random.default_rng(seed)
    p = np.empty((n, n, 3), np.uint8)
    p[..., 0] = rng.integers(0, 80, (n, n))
    p[..., 1] = rng.integers(40, 120, (n, n))
    p[..., 2] = rng.integers(150, 256, (n, n))
    return p  # RGB


def make_clip(w, h, unique):
    rng = np.random.default_rng(7)
    cell = 24
    grid = rng.integers(0, 256, (2 * h // cell + 2, 2 * w // cell + 2, 3)).astype(np.float32)
    bg = cv2.resize(grid, (2 * w + 2 * cell, 2 * h + 2 * cell), interpolation=cv2.INTER_LINEAR)[: 2 * h, : 2 * w]
    bg = np.clip(bg + rng.integers(-8, 9, bg.shape), 0, 255).astype(np.uint8)
    p64, p256 = blue_patch(64, 11), blue_patch(256, 12)
    frames, pos64, pos256 = [], [], []
    for i in range(unique):
        t = 2 * np.pi * i / unique
        ox = int((w // 2) * (0.5 + 0.5 * np.sin(t)))
        oy = int((h // 2) * (0.5 + 0.5 * np.cos(t)))
        f = bg[oy:oy + h, ox:ox + w].copy()
        x2 = 8 + int((w // 2 - 256 - 16) * (0.5 + 0.5 * np.cos(t)))
        y2 = 8 + int((h - 256 - 16) * (0.5 + 0.5 * np.sin(2 * t)))
        x1 = w // 2 + 8 + int((w // 2 - 64 - 16) * (0.5 + 0.5 * np.sin(t)))
        y1 = 8 + int((h - 64 - 16) * (0.5 + 0.5 * np.cos(3 * t)))
        f[y2:y2 + 256, x2:x2 + 256] = p256
        f[y1:y1 + 64, x1:x1 + 64] = p64
        frames.append(cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
        pos64.append((x1, y1))
        pos256.append((x2, y2))
    return frames, cv2.cvtColor(p64, cv2.COLOR_RGB2BGR), cv2.cvtColor(p256, cv2.COLOR_RGB2BGR), pos64, pos256


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--frames", type=int, default=300, help="frames in each .mp4 (decode rate)")
    ap.add_argument("--loop-frames", type=int, default=60, help="frames through each OpenCV loop")
    ap.add_argument("--sizes", default="720p,1080p,4k")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    a = ap.parse_args()
    if cv2 is None:
        print("video_cv2: OpenCV-Python (cv2) not available: nothing measured")
        return 0
    if a.quick:
        a.frames, a.loop_frames = 60, 10
    unique = 30 if not a.quick else 12
    print(f"video_cv2: OpenCV {cv2.__version__}, {cv2.getNumThreads()} threads, {os.cpu_count()} CPUs")
    print("| size | op | runner | frames | fps | check |\n|---|---|---|---|---|---|")
    g = cv2.getGaussianKernel(5, 0, cv2.CV_32F)
    k5 = (g @ g.T).astype(np.float32)
    bad = 0
    for size in a.sizes.split(","):
        w, h = SIZES[size]
        frames, t64, t256, pos64, pos256 = make_clip(w, h, unique)
        path = os.path.join(a.dir, f"video_cv2_{size}.mp4")
        vw = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"mp4v"), 30, (w, h))
        if not vw.isOpened():
            print(f"| {size} | decode | cv2.VideoWriter cannot write mp4v | | | error |")
            bad += 1
            continue
        for i in range(a.frames):
            vw.write(frames[i % unique])
        vw.release()
        cap = cv2.VideoCapture(path)
        n = 0
        t0 = time.perf_counter()
        while True:
            ok, _ = cap.read()
            if not ok:
                break
            n += 1
        dt = time.perf_counter() - t0
        cap.release()
        os.remove(path)
        print(f"| {size} | decode only | OpenCV-Python VideoCapture (FFmpeg) | {n} | {n / dt:.1f} | "
              f"{'ok' if n == a.frames else f'{n} of {a.frames}'} |")
        for name, templ, pos in (("match64", t64, pos64), ("match256", t256, pos256)):
            wrong = 0
            cv2.matchTemplate(frames[0], templ, cv2.TM_SQDIFF)
            t0 = time.perf_counter()
            for i in range(a.loop_frames):
                f = frames[i % unique]
                r = cv2.matchTemplate(f, templ, cv2.TM_SQDIFF)
                _, _, lo, _ = cv2.minMaxLoc(r)
                s = templ.shape[0]
                hsv = cv2.cvtColor(f[lo[1]:lo[1] + s, lo[0]:lo[0] + s], cv2.COLOR_BGR2HSV)
                count = cv2.countNonZero(cv2.inRange(hsv, (90, 50, 50), (135, 255, 255)))
                if lo != pos[i % unique] or count < s * s // 2:
                    wrong += 1
            dt = time.perf_counter() - t0
            bad += wrong > 0
            print(f"| {size} | {name} | OpenCV CPU loop | {a.loop_frames} | {a.loop_frames / dt:.1f} | "
                  f"{'ok' if wrong == 0 else f'{wrong} wrong'} |")
        cv2.filter2D(frames[0], -1, k5, borderType=cv2.BORDER_REFLECT_101)
        t0 = time.perf_counter()
        for i in range(a.loop_frames):
            cv2.filter2D(frames[i % unique], -1, k5, borderType=cv2.BORDER_REFLECT_101)
        dt = time.perf_counter() - t0
        print(f"| {size} | filter5 | OpenCV CPU loop | {a.loop_frames} | {a.loop_frames / dt:.1f} | - |")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
