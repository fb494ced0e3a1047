#!/usr/bin/python3
"""Runs murmur-peer jobs through murmur-run, one per algorithm, and prints
the table docs/training.md holds: accuracy of the averaged model and of the
peers, wall time, bytes on the wire (and as a fraction of dpsgd's), and each
peer's peak RSS against its memory budget (model buffers + dataset + 64 MiB).

  bench/peer/training_table.py --build build --np 8 --epochs 5 [--partition dirichlet:0.3]

Runs are sequential; on a shared machine run it when nothing else does, and
compare rows of one run only (wall times move with the machine's load).
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402
from common import Key  # noqa: E402

# (label, murmur-peer arguments). --topology applies to the gossip rows only.
RUNS = [
    ("dpsgd", ["--algorithm", "dpsgd"]),
    ("choco top-k 1%", ["--algorithm", "choco", "--compress", "topk:0.01", "--gamma", "0.1"]),
    ("choco sign", ["--algorithm", "choco", "--compress", "sign", "--gamma", "0.1"]),
    ("sgp (one-peer exp.)", ["--algorithm", "sgp", "--topology", "one-peer-exponential"]),
    ("adpsgd", ["--algorithm", "adpsgd"]),
    ("allreduce", ["--algorithm", "allreduce"]),
    ("topk-allreduce 1%", ["--algorithm", "topk-allreduce", "--compress", "topk:0.01"]),
    ("local-sgd H=8", ["--algorithm", "local-sgd", "--period", "8"]),
]

MIB = 1 << 20


def run(build, np_, shared, extra, timeout):
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        command = [common.binary(build, "murmur-run"), "-np", str(np_), "--summary", summary, "--timeout",
                   str(timeout), "--", common.binary(build, "murmur-peer")]
        command += shared + extra
        common.run_or_exit(command, " ".join(command))
        return common.read_summary(summary)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=common.DEFAULT_BUILD, help="murmur build directory")
    parser.add_argument("--np", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--topology", default="exponential")
    parser.add_argument("--partition", default="iid")
    parser.add_argument("--only", help="comma-separated labels to run (default: all)")
    parser.add_argument("--timeout", type=int, default=1800)
    parser.add_argument("--json", help="also write every summary here")
    args = parser.parse_args()

    shared = ["--model", args.model, "--epochs", str(args.epochs), "--partition", args.partition]
    rows, summaries = [], {}
    for label, extra in RUNS:
        if args.only and label not in args.only.split(","):
            continue
        if "--topology" not in extra:
            extra = extra + ["--topology", args.topology]
        s = run(args.build, args.np, shared, extra, args.timeout)
        summaries[label] = s
        peers = s[common.SUMMARY_PEERS]
        rss = max(p[Key.PEAK_RSS_BYTES] for p in peers)
        budget = min(p[Key.MODEL_BUFFER_BYTES] + p[Key.DATASET_BYTES] + 64 * MIB for p in peers)
        accs = s[common.SUMMARY_PEER_TEST_ACCURACY]
        rows.append((label, s[Key.AVERAGE_MODEL_TEST_ACCURACY], min(accs), max(accs), s[Key.WALL_SECONDS],
                     s[Key.BYTES_SENT], rss, budget))
        print(f"done: {label}", file=sys.stderr)

    base = next((r[5] for r in rows if r[0] == "dpsgd"), None)
    print(f"{args.np} peers, {args.model}, {args.epochs} epochs, {args.partition}, topology {args.topology}\n")
    print("| algorithm | averaged model acc. | peer acc. (min-max) | wall s | MB sent (all peers) "
          "| bytes / dpsgd | peak RSS per peer MiB (budget) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, avg, lo, hi, wall, sent, rss, budget in rows:
        ratio = f"{sent / base:.3f}" if base else "-"
        print(f"| {label} | {avg * 100:.2f}% | {lo * 100:.2f}-{hi * 100:.2f}% | {wall:.1f} | {sent / 1e6:.1f} "
              f"| {ratio} | {rss / MIB:.0f} ({budget / MIB:.0f}) |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summaries, f, indent=1)


if __name__ == "__main__":
    main()
