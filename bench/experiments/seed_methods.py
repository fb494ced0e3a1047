#!/usr/bin/env python3
"""The survey's methods (the A2A and parameter-server families, signSGD and
TopK-SGD; allreduce for reference) as murmur-peer jobs
on this host: one row per method and link profile with the iteration time,
the communication time, how much of it overlapped computation, the time
the trainer waited, and the test accuracy of the averaged model.

    bench/experiments/seed_methods.py --peers 4 --model cnn --epochs 1 \\
        --train-examples 4000 --profiles loopback,10gbe --repeats 3 --out /tmp/seed-methods

Per iteration, from rank 0's last epoch record: train_seconds / steps,
communication_thread_seconds / steps, communication_overlap_seconds / steps
and communication_wait_seconds / steps; with --repeats N, the median of N
runs, interleaved (every method once, then again), so that a change in the
host's load spreads over all methods. Speeds are what this host gives
(shared cores make compute, not the network, the bottleneck); the table is a
measurement, not a test. Writes a markdown table to stdout and
<out>/seed_methods.json.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402

METHODS = ["bsp-a2a", "wfbp-a2a", "mg-wfbp", "bytescheduler-a2a", "bsp-ps", "wfbp-ps", "bytescheduler-ps",
           "signsgd", "topk-sgd", "allreduce"]


def run_one(args, method, profile, out):
    os.makedirs(out, exist_ok=True)
    metrics = os.path.join(out, "m-{rank}.jsonl")
    summary = os.path.join(out, "summary.json")
    command = [common.binary(args.build, "murmur-run"), "-np", str(args.peers),
               "--timeout", str(args.timeout), "--summary", summary, "--",
               common.binary(args.build, "murmur-peer"), "--algorithm", method,
               "--model", args.model, "--epochs", str(args.epochs), "--batch", str(args.batch),
               "--train-examples", str(args.train_examples), "--seed", "1", "--provider", args.provider,
               "--metrics", metrics, "--blas-threads", "1"]
    if profile != "loopback":
        command += ["--link-profile", profile]
    if method.startswith("bytescheduler-") and args.partition:
        command += ["--bytescheduler-partition", str(args.partition), "--bytescheduler-credit", str(args.credit)]
    if method.endswith("-ps") and args.servers:
        command += ["--servers", str(args.servers)]
    if method == "signsgd":
        # Every step moves each weight by the learning rate: SGD's would
        # throw the model about (docs/seed-methods.md).
        command += ["--lr", str(args.sign_lr)]
    common.run_or_exit(command, f"{method} on {profile}")
    records = common.read_metrics(metrics, 0)
    epoch = common.events(records, common.Event.EPOCH)[-1]
    steps = epoch[common.Key.STEP]
    K = common.Key
    return {
        "method": method,
        "profile": profile,
        "steps": steps,
        "iteration_ms": 1e3 * epoch[K.TRAIN_SECONDS] / steps,
        "comm_ms": 1e3 * epoch[K.COMMUNICATION_THREAD_SECONDS] / steps,
        "overlap_ms": 1e3 * epoch.get(K.COMMUNICATION_OVERLAP_SECONDS, 0.0) / steps,
        "wait_ms": 1e3 * epoch[K.COMMUNICATION_WAIT_SECONDS] / steps,
        "accuracy": common.read_summary(summary)["average_model_test_accuracy"],
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=common.DEFAULT_BUILD)
    p.add_argument("--peers", type=int, default=4)
    p.add_argument("--model", default="cnn")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--train-examples", type=int, default=2000, help="per peer")
    p.add_argument("--provider", default="tcp")
    p.add_argument("--profiles", default="loopback,10gbe")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--partition", type=int, default=0, help="bytescheduler-a2a/-ps partition (0: its default)")
    p.add_argument("--servers", type=int, default=0, help="the -ps methods' servers (0: every peer)")
    p.add_argument("--sign-lr", type=float, default=0.001, help="signsgd's learning rate")
    p.add_argument("--credit", type=int, default=4000000)
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--out", default="/tmp/murmur-seed-methods")
    args = p.parse_args()
    common.stop_on_signals()
    runs = {}
    for repeat in range(args.repeats):
        for profile in args.profiles.split(","):
            for method in args.methods.split(","):
                out = os.path.join(args.out, f"{profile}-{method}-{repeat}")
                runs.setdefault((profile, method), []).append(run_one(args, method, profile, out))
                print(f"done: {method} on {profile} ({repeat + 1}/{args.repeats})", file=sys.stderr)
    rows = []
    for (profile, method), done in runs.items():
        row = dict(done[0])
        for k in ("iteration_ms", "comm_ms", "overlap_ms", "wait_ms", "accuracy"):
            row[k] = statistics.median(r[k] for r in done)
        row["runs"] = done
        rows.append(row)
    with open(os.path.join(args.out, "seed_methods.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("| link | method | steps | iteration ms (min-max) | comm ms | overlap ms | wait ms | accuracy |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        low = min(x["iteration_ms"] for x in r["runs"])
        high = max(x["iteration_ms"] for x in r["runs"])
        print(f"| {r['profile']} | {r['method']} | {r['steps']} | {r['iteration_ms']:.1f} ({low:.0f}-{high:.0f}) | "
              f"{r['comm_ms']:.1f} | {r['overlap_ms']:.1f} | {r['wait_ms']:.1f} | {r['accuracy']:.4f} |")


if __name__ == "__main__":
    main()
