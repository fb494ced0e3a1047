#!/usr/bin/python3
"""Draws murmur-sim's speedup over one GPU against GPU count, a line per
method, with linear scaling for reference, from murmur-sim's --csv output:

  build/src/sim/murmur-sim --model resnet50 --network 10gbe-tcp --gpus 4,8,16,32 --csv > resnet50.csv
  bench/sim/plot_speedup.py resnet50.csv --out resnet50.svg

or in one line, reading the CSV from standard input:

  build/src/sim/murmur-sim ... --csv | bench/sim/plot_speedup.py - --out resnet50.svg

The file's extension picks the format (svg, png, pdf). The title is the
first row's model and network unless --title gives one.
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402

COLUMNS = ("model", "network", "method", "gpus", "speedup")


def read_speedups(f, name):
    """{method: [(gpus, speedup), ...] sorted by gpus}, and the first row."""
    reader = csv.DictReader(f)
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        sys.exit(f"{name}: no column {', '.join(missing)}: expected murmur-sim --csv output "
                 "(not --paper-table, whose CSV has no speedup)")
    lines, first = {}, None
    for n, row in enumerate(reader, 2):
        try:
            point = (int(row["gpus"]), float(row["speedup"]))
        except ValueError as e:
            sys.exit(f"{name}:{n}: {e}")
        lines.setdefault(row["method"], []).append(point)
        first = first or row
    if first is None:
        sys.exit(f"{name}: no rows")
    return {method: sorted(points) for method, points in lines.items()}, first


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", help="murmur-sim --csv output, or - for standard input")
    p.add_argument("--out", required=True, help="the figure: .svg, .png or .pdf")
    p.add_argument("--title", help="default: '<model> on <network>' of the first row")
    args = p.parse_args()
    if args.csv == "-":
        lines, first = read_speedups(sys.stdin, "<stdin>")
    else:
        with open(args.csv, newline="") as f:
            lines, first = read_speedups(f, args.csv)

    plt = common.pyplot()
    # SVG text stays text (small files, fonts of the viewer), and a redrawn
    # figure is the same file: no date, fixed ids.
    plt.rcParams["svg.fonttype"] = "none"
    plt.rcParams["svg.hashsalt"] = "murmur"
    max_gpus = max(g for points in lines.values() for g, _ in points)
    top = max([float(max_gpus)] + [s for points in lines.values() for _, s in points])
    fig, ax = plt.subplots(figsize=(7.2, 4.4))
    ax.plot([1, max_gpus], [1, max_gpus], color="#bbbbbb", linestyle="--", linewidth=1, label="linear")
    for method, points in sorted(lines.items()):
        ax.plot([g for g, _ in points], [s for _, s in points], marker="o", markersize=4, linewidth=2, label=method)
    # GPU counts double: a log2 axis with a tick at each power of two.
    ax.set_xscale("log", base=2)
    ticks = [1 << k for k in range(max_gpus.bit_length()) if 1 << k <= max_gpus]
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(t) for t in ticks])
    ax.set_xlim(1, max_gpus)
    ax.set_ylim(0, top)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("speedup over one GPU")
    ax.set_title(args.title or f"{first['model']} on {first['network']}", loc="left", fontsize=11)
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=8, frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, metadata={"Date": None} if args.out.endswith((".svg", ".pdf")) else None)
    print(f"plot_speedup: {args.out}: {len(lines)} methods, up to {max_gpus} GPUs", file=sys.stderr)


if __name__ == "__main__":
    main()
