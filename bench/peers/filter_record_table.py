#!/usr/bin/env python3
"""Merge bench_filter_gpu's table and filter_cupy.py's table (same GPU, same
call) into the filter's table of record, as docs/benchmarks.md shows it.

    python3 bench/peers/filter_record_table.py BENCH.md CUPY.md

BENCH.md: the markdown output of build/gpu/bench/bench_filter_gpu;
CUPY.md: the markdown output of bench/peers/filter_cupy.py. Prints one row per
(size, kernel) of BENCH.md: ms, x floor, NPP, CuPy and the max diff, with the
cells that meet issue 2's targets in bold (at 8K: dense 3x3 and every Gaussian
within 1.5x the floor, dense 9x9 within 3x; from 1080p up: at least 10x
CuPy), then how many target cells are met (those, and faster than NPP from
1080p up) and a line for each one missed. Needs only the standard library.
"""
import argparse
import sys

BIG = 1920 * 1080  # "from 1080p up"
EIGHT_K = "7680x4320"


def rows(path):
    """The table rows of a markdown file, as lists of stripped cells."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("| ") or line.startswith("| size") or line.startswith("|---"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            out.append(cells)
    return out


def pixels(size):
    w, h = size.split("x")
    return int(w) * int(h)


def num(text):
    try:
        return float(text)
    except ValueError:
        return None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench")
    ap.add_argument("cupy")
    args = ap.parse_args(argv)

    cupy = {}
    for c in rows(args.cupy):
        if len(c) >= 3 and num(c[2]) is not None:
            cupy[(c[0], c[1])] = float(c[2])

    print("| size | kernel | ms | x floor | NPP ms | ours / NPP | CuPy ms | CuPy / ours | max diff vs ref | path |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    verdicts = []
    for c in rows(args.bench):
        if len(c) < 13 or num(c[2]) is None:
            continue
        size, kernel, ms, floor_ms = c[0], c[1], float(c[2]), float(c[5])
        npp_ms, npp_ratio, diff, path = c[9], c[10], c[11], c[12]
        path = path.replace("cuda ", "", 1).rsplit(" (", 1)[0]
        xf = ms / floor_ms
        xf_text = f"{xf:.2f}"
        floor_target = None
        if size == EIGHT_K and (kernel == "dense3x3" or kernel.startswith("gauss")):
            floor_target = 1.5
        elif size == EIGHT_K and kernel == "dense9x9":
            floor_target = 3.0
        if floor_target is not None:
            met = xf <= floor_target
            verdicts.append((met, f"{size} {kernel}: {xf:.2f}x the floor (target {floor_target}x; "
                                  f"needs {floor_target * floor_ms:.4f} ms, is {ms:.4f})"))
            if met:
                xf_text = f"**{xf_text}**"
        cp = cupy.get((size, kernel))
        cp_text, ratio_text = "–", "–"
        if cp is not None:
            ratio = cp / ms
            cp_text, ratio_text = f"{cp:.4f}", f"{ratio:.1f}"
            if pixels(size) >= BIG:
                met = ratio >= 10.0
                verdicts.append((met, f"{size} {kernel}: {ratio:.1f}x CuPy (target 10x; needs "
                                      f"{cp / 10:.4f} ms, is {ms:.4f})"))
                if met:
                    ratio_text = f"**{ratio_text}**"
        if npp_ms not in ("-", "–") and pixels(size) >= BIG:
            r = num(npp_ratio)
            if r is not None:
                verdicts.append((r < 1.0, f"{size} {kernel}: {r:.2f} of NPP's time (target < 1)"))
        npp_ms = "–" if npp_ms == "-" else npp_ms
        npp_ratio = "–" if npp_ratio == "-" else npp_ratio
        print(f"| {size} | {kernel} | {ms:.4f} | {xf_text} | {npp_ms} | {npp_ratio} | {cp_text} | "
              f"{ratio_text} | {diff} | {path} |")
    print()
    missed = [v for ok, v in verdicts if not ok]
    print(f"Targets: {len(verdicts) - len(missed)} of {len(verdicts)} cells met.")
    for v in missed:
        print(f"- missed: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
