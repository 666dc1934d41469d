#!/usr/bin/env python3
"""Tables and plots of the seeds' studies (issue 7) from bench/studies/SCHEMA.md CSVs.

    bench/studies/report.py --run LABEL=FILE.csv [--run LABEL=FILE.csv ...] --out DIR

For every run (one machine's CSV, as bench/studies/run.sh writes it) and every
study in it, writes
  DIR/LABEL-STUDY.png          time against the swept value, one line (or bar
                               group) per series, log time axis: the seeds' plots
  DIR/LABEL-STUDY-speedup.png  speed-up over the sequential version (series
                               `seq`), where the study has one: the seeds' metric
  DIR/LABEL-s004_edge-threads.png  speed-up and efficiency against CPU threads
and DIR/tables.md: per study and run, the median times (ms) with, in brackets
for every peer series, pixelkit's time over the peer's (below 1: pixelkit is
faster), and the speed-ups over `seq`. Rows whose check is not `ok` are marked.
Needs matplotlib (Debian: python3-matplotlib; scripts/install-deps.sh --studies).
"""
import argparse
import csv
import math
import os
import re
import sys
from collections import OrderedDict

TITLES = OrderedDict([
    ("s002_resolution", "Seed 002: 3x3 Gaussian, RGB u8, against resolution"),
    ("s002_kernel", "Seed 002: dense kernels on 1920x1080 RGB u8, against kernel size"),
    ("s002_memory", "Seed 002: global vs constant vs shared-memory kernels"),
    ("s002_layout", "Seed 002: AoS (interleaved) vs SoA (planar)"),
    ("s002_transfer", "Seed 002: synchronous vs asynchronous transfers (host to host)"),
    ("s004_edge", "Seed 004: 3x3 edge kernel, sequential, CPU threads, CUDA"),
    ("s003_blocks", "Seed 003: integral image at 2048x2048, thread-block configurations"),
    ("s003_sizes", "Seed 003: integral image against size"),
    ("s000_table", "Seed 000: multi-level 2D Haar transform on the seed's images"),
    ("s000_blocks", "Seed 000: Haar, threads per block"),
    ("s001_stages", "Seed 001: template matching per stage, the seed's two cases"),
])
# Studies whose x is a category (bars), not a sweep (lines).
BARS = {"s002_memory", "s002_layout", "s002_transfer", "s001_stages"}
# Series that are other people's code: their cells get pixelkit's time over theirs.
PEERS = ("npp", "cupy", "torch", "opencv_cpu", "opencv_cuda")
# pixelkit's own series, best first: the one the peers are compared with.
OURS = ("pixelkit_cuda", "cpu", "cpu_aos")


def load(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            try:
                r["x_value"] = float(r["x_value"])
            except (TypeError, ValueError):
                r["x_value"] = float("nan")
            try:
                r["time_ms"] = float(r["time_ms"]) if r["time_ms"] not in ("", None) else None
            except ValueError:
                r["time_ms"] = None
            rows.append(r)
    return rows


def series_order(names):
    def key(s):
        if s == "seq" or s.startswith("seq"):
            return (0, s)
        m = re.fullmatch(r"cpu_(\d+)t", s)
        if m:
            return (1, "%06d" % int(m.group(1)))
        if s.startswith("cpu"):
            return (2, s)
        if s.startswith("cuda"):
            return (3, s)
        if s.startswith("pixelkit"):
            return (4, s)
        return (5, s)
    return sorted(names, key=key)


def fmt(t):
    if t is None:
        return "-"
    if t >= 100:
        return "%.0f" % t
    if t >= 10:
        return "%.1f" % t
    if t >= 1:
        return "%.2f" % t
    return "%.3g" % t


def study_grid(rows):
    """x labels in x_value order, series in display order, cell[(x, s)] = row."""
    xs = OrderedDict()
    for r in sorted(rows, key=lambda r: (r["x_value"] if not math.isnan(r["x_value"]) else 0.0)):
        xs.setdefault(r["x"], r["x_value"])
    series = series_order({r["series"] for r in rows})
    cell = {}
    for r in rows:  # a point measured by two programs (seq by study_cpu and a GPU study): the first run's
        cell.setdefault((r["x"], r["series"]), r)
    return list(xs), series, cell


def table_md(study, label, rows):
    xs, series, cell = study_grid(rows)
    ours = next((s for s in OURS if s in series), None)
    out = ["| %s | %s |" % ("x", " | ".join(series)), "|---|" + "---:|" * len(series)]
    for x in xs:
        o = cell.get((x, ours)) if ours else None
        cells = []
        for s in series:
            r = cell.get((x, s))
            if r is None:
                cells.append("")
                continue
            c = fmt(r["time_ms"])
            if r["check"] not in ("ok", "n/a"):
                c += " **%s**" % r["check"]
            if s in PEERS and o and o["time_ms"] and r["time_ms"]:
                c += " (%.2g)" % (o["time_ms"] / r["time_ms"])
            cells.append(c)
        out.append("| %s | %s |" % (x, " | ".join(cells)))
    text = "\n".join(out) + "\n"
    if ours and any(s in PEERS for s in series):
        text += "\nTimes in ms (median). In brackets: `%s` time / peer time (below 1: pixelkit is faster).\n" % ours
    else:
        text += "\nTimes in ms (median).\n"
    if "seq" in series:
        sp = ["| x | %s |" % " | ".join(s for s in series if s != "seq"), "|---|" + "---:|" * (len(series) - 1)]
        for x in xs:
            b = cell.get((x, "seq"))
            vals = []
            for s in series:
                if s == "seq":
                    continue
                r = cell.get((x, s))
                if b and r and b["time_ms"] and r["time_ms"]:
                    vals.append("%.3g" % (b["time_ms"] / r["time_ms"]))
                else:
                    vals.append("")
            sp.append("| %s | %s |" % (x, " | ".join(vals)))
        text += "\nSpeed-up over `seq` (the seed's sequential version: pixelkit's ref backend or the seed's own sequential code, same machine):\n\n" + "\n".join(sp) + "\n"
    notes = OrderedDict()  # the first row's notes of each series, shortened
    for r in rows:
        if r.get("notes") and r["series"] not in notes:
            n = r["notes"]
            notes[r["series"]] = n if len(n) <= 150 else n[:147] + "..."
    if notes:
        text += "\nNotes (first row of each series): " + "; ".join("`%s`: %s" % kv for kv in notes.items()) + ".\n"
    devices = sorted({r["device"] for r in rows if r.get("device")})
    if devices:
        text += "\nDevices: " + ", ".join(devices) + ".\n"
    return text


def finish(plt, fig, ax, xs, ylabel, title, path):
    """Log y axis, the x labels at 0..n-1, grid, legend; saves the figure to `path`, returns it."""
    long_labels = max(len(x) for x in xs) > 6
    ax.set_yscale("log")
    ax.set_xticks(list(range(len(xs))))
    ax.set_xticklabels(xs, rotation=30 if long_labels else 0, ha="right" if long_labels else "center")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", axis="y", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_study(plt, study, label, rows, out):
    xs, series, cell = study_grid(rows)
    files = []
    fig, ax = plt.subplots(figsize=(8, 4.8))
    pos = list(range(len(xs)))
    if study in BARS:
        w = 0.8 / max(1, len(series))
        for i, s in enumerate(series):
            ys = [cell[(x, s)]["time_ms"] if (x, s) in cell and cell[(x, s)]["time_ms"] else 0 for x in xs]
            ax.bar([p + (i - (len(series) - 1) / 2) * w for p in pos], ys, w, label=s)
    else:
        for s in series:
            pts = [(p, cell[(x, s)]["time_ms"]) for p, x in zip(pos, xs) if (x, s) in cell and cell[(x, s)]["time_ms"]]
            if pts:
                ax.plot([p for p, _ in pts], [t for _, t in pts], label=s)
    files.append(finish(plt, fig, ax, xs, "time (ms, median, log scale)", "%s\n(%s)" % (TITLES.get(study, study), label),
                        os.path.join(out, "%s-%s.png" % (label, study))))

    if "seq" in series:
        fig, ax = plt.subplots(figsize=(8, 4.8))
        for s in series:
            if s == "seq":
                continue
            pts = []
            for p, x in zip(pos, xs):
                b, r = cell.get((x, "seq")), cell.get((x, s))
                if b and r and b["time_ms"] and r["time_ms"]:
                    pts.append((p, b["time_ms"] / r["time_ms"]))
            if pts:
                ax.plot([p for p, _ in pts], [v for _, v in pts], label=s)
        files.append(finish(plt, fig, ax, xs, "speed-up over seq (log scale)",
                            "%s: speed-up\n(%s)" % (TITLES.get(study, study), label),
                            os.path.join(out, "%s-%s-speedup.png" % (label, study))))

    threaded = [s for s in series if re.fullmatch(r"cpu_(\d+)t", s)]
    if study == "s004_edge" and len(threaded) > 1:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 4))
        for x in xs:
            base = cell.get((x, "cpu_1t"))
            if not base or not base["time_ms"]:
                continue
            ns, sp = [], []
            for s in threaded:
                r = cell.get((x, s))
                if r and r["time_ms"]:
                    ns.append(int(re.fullmatch(r"cpu_(\d+)t", s).group(1)))
                    sp.append(base["time_ms"] / r["time_ms"])
            a1.plot(ns, sp, marker="o", label=x)
            a2.plot(ns, [v / n for v, n in zip(sp, ns)], marker="o", label=x)
        a1.set_xlabel("CPU threads")
        a1.set_ylabel("speed-up over cpu_1t")
        a2.set_xlabel("CPU threads")
        a2.set_ylabel("efficiency (speed-up / threads)")
        for a in (a1, a2):
            a.grid(True, alpha=0.3)
            a.legend(fontsize=8)
        fig.suptitle("Seed 004: edge kernel on the CPU backend (%s)" % label, fontsize=10)
        fig.tight_layout()
        f = os.path.join(out, "%s-s004_edge-threads.png" % label)
        fig.savefig(f, dpi=90)
        plt.close(fig)
        files.append(f)
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", action="append", required=True, help="LABEL=FILE.csv (repeatable)")
    ap.add_argument("--out", required=True, help="folder for the PNG files and tables.md")
    ap.add_argument("--no-plots", action="store_true", help="tables only")
    a = ap.parse_args()
    runs = []
    for spec in a.run:
        if "=" not in spec:
            sys.exit("report.py: --run takes LABEL=FILE.csv, not '%s'" % spec)
        label, path = spec.split("=", 1)
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", label):
            sys.exit("report.py: --run label '%s' must be letters, digits, '.', '_' or '-'" % label)
        try:
            runs.append((label, load(path)))
        except OSError as e:
            sys.exit("report.py: cannot read %s: %s" % (path, e.strerror))
    os.makedirs(a.out, exist_ok=True)
    plt = None
    if not a.no_plots:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: F811
        from cycler import cycler
        # Up to 20 series per plot: 20 distinct colours, markers cycling beside them.
        colours = [plt.get_cmap("tab20")(i) for i in (0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19)]
        markers = ["o", "s", "^", "D", "v"] * 4
        plt.rcParams["axes.prop_cycle"] = cycler(color=colours) + cycler(marker=markers)
    md = []
    studies = list(TITLES) + sorted({r["study"] for _, rows in runs for r in rows} - set(TITLES))
    for study in studies:
        parts = []
        for label, rows in runs:
            sr = [r for r in rows if r["study"] == study]
            if not sr:
                continue
            part = "#### %s\n\n" % label + table_md(study, label, sr)
            if plt is not None:
                for f in plot_study(plt, study, label, sr, a.out):
                    part += "\n![%s](%s)\n" % (os.path.basename(f)[:-4], os.path.basename(f))
            parts.append(part)
        if parts:
            md.append("### %s: %s\n\n" % (study, TITLES.get(study, study)) + "\n".join(parts))
    tmp = os.path.join(a.out, ".tables.md.tmp")
    with open(tmp, "w") as f:
        f.write("\n".join(md))
    os.replace(tmp, os.path.join(a.out, "tables.md"))
    print("report.py: %d studies, tables in %s" % (len(md), os.path.join(a.out, "tables.md")))


if __name__ == "__main__":
    main()
