#!/usr/bin/python3
"""The scheduler's time-varying experiment: 8 peers, exponential graph,
choco over libfabric tcp, a shaper file in which link 0<->1 drops from
10GbE to 100 Mbit/s and recovers. Runs a grid of fixed (ratio, H) settings
and the adaptive schedule under the same profile and prints, per run, the
time rank 0's model first reaches the target test accuracy, the final
averaged-model accuracy and the bytes sent.

  bench/peer/scheduler_drop.py --build build [--target 0.85] [--drop 6s --recover 14s]
      [--extra-compute-ms 20] [--partition dirichlet:0.5]

With label skew (--partition dirichlet:<alpha>) rank 0's accuracy also
reflects its own shard, which the seed decides; the averaged model's final
accuracy is printed next to it.

--extra-compute-ms X makes every peer sleep X ms per step, as a GPU peer's
CPU idles while its accelerator computes: on a host with fewer cores than
peers, send times then measure the links instead of CPU scheduling.

tcp, not shm: the scheduler times sends from posting to completion, and an
shm send completes only when the receiver has progressed (docs/scheduler.md).
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402
from common import Event, Key  # noqa: E402

GRID = [
    ("fixed ratio 1, H 1", ["--compress", "topk:1", "--period", "1"]),
    ("fixed ratio 0.1, H 1", ["--compress", "topk:0.1", "--period", "1"]),
    ("fixed ratio 0.01, H 1", ["--compress", "topk:0.01", "--period", "1"]),
    ("fixed ratio 0.1, H 4", ["--compress", "topk:0.1", "--period", "4"]),
    ("fixed ratio 1, H 4", ["--compress", "topk:1", "--period", "4"]),
    ("adaptive", ["--compress", "topk:1", "--schedule", "adaptive"]),
]
ADAPTIVE = "adaptive"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=common.DEFAULT_BUILD, help="murmur build directory")
    p.add_argument("--np", type=int, default=8)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--target", type=float, default=0.85)
    p.add_argument("--drop", default="6s")
    p.add_argument("--recover", default="14s")
    p.add_argument("--only", help="labels separated by ';' (labels contain commas), e.g. 'fixed ratio 1, H 1;adaptive'")
    p.add_argument("--keep", help="keep the metrics files in this directory")
    p.add_argument("--extra-compute-ms", type=float, default=0, help="murmur-peer --extra-compute-ms")
    p.add_argument("--adaptive-schedule", default="adaptive",
                   help="murmur-peer --schedule for the adaptive row, e.g. 'adaptive:suspect_run=2' "
                        "(docs/scheduler.md, Knobs)")
    p.add_argument("--partition", default="iid",
                   help="murmur-peer --partition: iid, or dirichlet:<alpha> for label skew (each peer's shard "
                        "favours a few classes, so its model needs its neighbours' to reach the target)")
    p.add_argument("--evals-per-epoch", type=int, default=4,
                   help="test-set passes per epoch: the time-to-target resolution (their cost is left out of "
                        "the training time)")
    args = p.parse_args()
    unknown = sorted(set(args.only.split(";")) - {label for label, _ in GRID}) if args.only else []
    if unknown:
        raise SystemExit(f"--only: no setting {unknown}; the settings are {[label for label, _ in GRID]}")
    launcher, peer = common.binary(args.build, "murmur-run"), common.binary(args.build, "murmur-peer")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or scratch
        os.makedirs(tmp, exist_ok=True)
        profile = os.path.join(tmp, "drop.txt")
        with open(profile, "w") as f:
            f.write(f"default 10gbe\nat {args.drop} edge 0 1 lat=25us,bw=100mbit\nat {args.recover} edge 0 1 default\n")
        for label, extra in GRID:
            if args.only and label not in args.only.split(";"):
                continue
            if label == ADAPTIVE:
                extra = ["--compress", "topk:1", "--schedule", args.adaptive_schedule]
            metrics = os.path.join(tmp, label.replace(" ", "_").replace(",", "") + "-{rank}.jsonl")
            summary = os.path.join(tmp, "summary.json")
            command = [launcher, "-np", str(args.np), "--profile", "@" + profile, "--summary", summary, "--", peer,
                       "--algorithm", "choco",
                       "--topology", "exponential", "--provider", "tcp", "--model", "mlp", "--epochs",
                       str(args.epochs), "--evals-per-epoch", str(args.evals_per_epoch), "--metrics", metrics,
                       "--extra-compute-ms", str(args.extra_compute_ms), "--partition", args.partition] + extra
            common.run_or_exit(command, label, tail=2000)
            s = common.read_summary(summary)
            evals = common.events(common.read_metrics(metrics, 0), Event.EVAL)
            reached = common.time_to_target(evals, args.target)
            periods = sorted({e[Key.PERIOD] for e in evals})
            rows.append((label, reached, s[Key.AVERAGE_MODEL_TEST_ACCURACY], s[Key.WALL_SECONDS], s[Key.BYTES_SENT],
                         periods))
            print(f"done: {label}", file=sys.stderr)
    print(f"{args.np} peers ({args.partition} shards), link 0<->1 10GbE -> 100 Mbit/s at {args.drop}, back at {args.recover}; "
          f"time for rank 0's model to reach {args.target:.0%} test accuracy (training: without the setup and "
          f"the test-set passes)\n")
    print("| setting | time to target s | training s to target | averaged model acc. | wall s | MB sent | periods seen |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for label, reached, acc, wall, sent, periods in rows:
        t = (f"{reached[0]:.1f} | " + ("n/a" if reached[1] is None else f"{reached[1]:.1f}")) if reached else \
            "not reached | -"
        print(f"| {label} | {t} | {acc * 100:.2f}% | {wall:.1f} | {sent / 1e6:.1f} | {periods} |")


if __name__ == "__main__":
    main()
