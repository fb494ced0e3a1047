#!/usr/bin/python3
"""Plots one seed of bench/sim/scheduler_drop_sim: rank 0's test accuracy
against virtual time for every setting (top), and the compression ratio the
adaptive schedule chose at both ends of the dropped link and at a rank away
from it (bottom), with the drop shaded.

  build/bench/sim/scheduler_drop_sim ... --curves c.csv --decisions d.jsonl
  bench/sim/plot_scheduler_drop.py --curves c.csv --decisions d.jsonl --seed 1 \\
      --drop-s 0.33 --recover-s 3.5 --target 0.85 --out drop.png
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--curves", required=True, help="scheduler_drop_sim --curves output")
    p.add_argument("--decisions", required=True, help="scheduler_drop_sim --decisions output")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--drop-s", type=float, required=True)
    p.add_argument("--recover-s", type=float, required=True)
    p.add_argument("--target", type=float, default=0.85)
    p.add_argument("--ranks", default="0,1,4", help="ranks whose ratio to draw")
    p.add_argument("--title", default="")
    p.add_argument("--out", required=True)
    args = p.parse_args()

    curves = {}
    with open(args.curves) as f:
        for row in csv.DictReader(f):
            if int(row["seed"]) != args.seed:
                continue
            curves.setdefault(row["setting"], []).append((float(row["time_s"]), float(row["test_accuracy"])))
    if not curves:
        sys.exit(f"{args.curves}: no evaluations of seed {args.seed}")
    ratios = {}
    for d in common.read_jsonl(args.decisions):
        if d.get("seed") == args.seed:
            ratios.setdefault(d["rank"], []).append((d["time_s"], d["ratio"]))

    plt = common.pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    for axis in (top, bottom):
        axis.axvspan(args.drop_s, args.recover_s, color="0.9", label="link 0-1 at 100 Mbit/s" if axis is top else None)
    for setting, points in curves.items():
        t, acc = zip(*points)
        top.plot(t, [a * 100 for a in acc], label=setting, linewidth=2.2 if setting == "adaptive" else 1.2,
                 color="black" if setting == "adaptive" else None)
    top.axhline(args.target * 100, color="0.4", linestyle=":", linewidth=1)
    top.set_ylim(args.target * 100 - 10, args.target * 100 + 3)
    top.set_ylabel("rank 0 test accuracy (%)")
    top.legend(fontsize=8, loc="lower right")
    if args.title:
        top.set_title(args.title, fontsize=10)
    # Styles apart: the two ends of the link often choose the same ratios.
    styles = [("-", 3.0), ("--", 2.0), (":", 1.5)]
    for k, rank in enumerate(int(r) for r in args.ranks.split(",")):
        if rank in ratios:
            t, r = zip(*ratios[rank])
            style, width = styles[min(k, len(styles) - 1)]
            bottom.step(t, r, where="post", linestyle=style, linewidth=width, label=f"rank {rank}")
    bottom.set_yscale("log")
    bottom.set_ylabel("adaptive: ratio in use")
    bottom.set_xlabel("virtual seconds")
    bottom.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
