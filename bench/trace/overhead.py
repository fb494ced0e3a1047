#!/usr/bin/python3
"""The timeline's cost against a training step: the same job run in pairs,
without and with murmur-run --trace (the order alternating), the step time
of each run taken from the peers' metrics (train_seconds / steps, the mean
over ranks), and the median of the per-pair ratios on/off.

  bench/trace/overhead.py --pairs 9 [--np 4] [-- murmur-peer flags...]

It also counts the records per step in one of the traces, for the bound
that needs no timing at all: records per step x ns per record
(build/bench/trace/trace_record_cost) / step time.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_PEER_ARGS = ["--algorithm", "choco", "--compress", "topk:0.01", "--topology", "exponential",
                     "--model", "mlp", "--epochs", "1", "--train-examples", "4000", "--evals-per-epoch", "1"]


def step_seconds(metrics_dir, np):
    """The mean over ranks of train_seconds / steps of the (last) epoch line."""
    per_rank = []
    for rank in range(np):
        epoch = None
        with open(os.path.join(metrics_dir, f"m-{rank}.jsonl")) as f:
            for line in f:
                record = json.loads(line)
                if record.get("event") == "epoch":
                    epoch = record
        if epoch is None:
            sys.exit(f"overhead.py: rank {rank} wrote no epoch line in {metrics_dir}")
        per_rank.append(epoch["train_seconds"] / epoch["step"])
    return statistics.mean(per_rank)


def run(build, np, peer_args, traced, work):
    metrics = os.path.join(work, "metrics")
    os.makedirs(metrics, exist_ok=True)
    command = [os.path.join(build, "src/peer/launcher/murmur-run"), "-np", str(np), "--timeout", "600"]
    if traced:
        command += ["--trace", os.path.join(work, "trace")]
    command += ["--", os.path.join(build, "src/peer/train/murmur-peer"), *peer_args,
                "--metrics", os.path.join(metrics, "m-{rank}.jsonl")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"overhead.py: the job failed ({done.returncode}):\n{done.stdout[-3000:]}")
    # CPU seconds of murmur-run and every peer it reaped: the timeline's cost
    # is CPU work, and CPU time moves less than wall time with the load of
    # other users of a shared host.
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return step_seconds(metrics, np), cpu


def records_per_step(trace_path):
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    records = sum(1 for e in events if e.get("ph") in ("X", "i", "b"))
    steps = sum(1 for e in events if e.get("ph") == "X" and e.get("name") == "step")
    return records / max(steps, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--np", type=int, default=4)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("peer_args", nargs="*", help="murmur-peer flags (after --)")
    args = parser.parse_args()
    peer_args = args.peer_args or DEFAULT_PEER_ARGS
    ratios, offs, ons, cpu_ratios = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="murmur-trace-overhead-") as work:
        for pair in range(args.pairs):
            first_traced = pair % 2 == 1  # alternate the order: drift hits both sides
            times, cpus = {}, {}
            for traced in (first_traced, not first_traced):
                times[traced], cpus[traced] = run(args.build, args.np, peer_args, traced,
                                                  os.path.join(work, f"{pair}-{traced}"))
            offs.append(times[False])
            ons.append(times[True])
            ratios.append(times[True] / times[False])
            cpu_ratios.append(cpus[True] / cpus[False])
            print(f"pair {pair + 1}: step off {times[False] * 1e3:.3f} ms, on {times[True] * 1e3:.3f} ms, "
                  f"ratio {ratios[-1]:.4f}; job CPU off {cpus[False]:.2f} s, on {cpus[True]:.2f} s, "
                  f"ratio {cpu_ratios[-1]:.4f}", flush=True)
        per_step = records_per_step(os.path.join(work, f"{args.pairs - 1}-True", "trace", "trace.json"))
    print(f"\njob: murmur-run -np {args.np} -- murmur-peer {' '.join(peer_args)}")
    print(f"step time: off median {statistics.median(offs) * 1e3:.3f} ms, on median {statistics.median(ons) * 1e3:.3f} ms")
    print(f"ratio on/off: median {statistics.median(ratios):.4f} over {args.pairs} pairs "
          f"(min {min(ratios):.4f}, max {max(ratios):.4f})")
    print(f"job CPU time ratio on/off: median {statistics.median(cpu_ratios):.4f} "
          f"(min {min(cpu_ratios):.4f}, max {max(cpu_ratios):.4f})")
    print(f"records per step (all threads of all peers / steps of all peers): {per_step:.1f}")


if __name__ == "__main__":
    main()
