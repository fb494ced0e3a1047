#!/usr/bin/env python3
"""The survey's methods (the A2A and parameter-server families, signSGD and
TopK-SGD; allreduce for reference) and murmur's gossip (dpsgd, and choco
with top-1% compression, both on the exponential graph, as the main job
runs) as murmur-peer jobs on this host: one row per method and link profile with the iteration time,
the communication time, how much of it overlapped computation, the time
the trainer waited, and the test accuracy of the averaged model.

    bench/experiments/seed_methods.py --peers 4 --model cnn --epochs 1 \\
        --train-examples 4000 --profiles loopback,10gbe --repeats 3 --out /tmp/seed-methods

Methods: murmur-peer --algorithm names; NAME+layerwise runs NAME with
--layerwise-update (each layer's update made in the next forward pass, as
its mean comes in: ByteScheduler's cross-iteration overlap), e.g.
--methods bytescheduler-a2a,bytescheduler-a2a+layerwise.

Profiles: murmur-peer's --link-profile values (loopback, 10gbe, lat=..,bw=..)
or "scaled-10gbe" / "scaled-ib" (scaled_links.py, docs/experiments.md): the
link that gives this model on this host the communication-to-computation
ratio --scale-model has on a GPU over 10GbE or 100 Gb InfiniBand, every
rank behind one uplink of that rate (a host with one NIC; without it a
parameter server's seven pushes would each get a link of their own). The
compute time per step it scales by is measured first, once per invocation,
with an unshaped bsp-a2a job of the same shape (--compute-s-per-step sets
it instead).

Per iteration, from rank 0's last epoch record: train_seconds / steps,
communication_thread_seconds / steps, communication_overlap_seconds / steps
and communication_wait_seconds / steps; the busiest rank's bytes_sent per
step in models (murmur-run's summary); with --repeats N, the median of N
runs, interleaved (every method once, then again), so that a change in the
host's load spreads over all methods. Time to --target: rank 0's training
seconds (train_seconds, without setup and test passes) at its first
evaluation reaching it (--evals-per-epoch sets how often it looks), the
median and range over the repeats, and the step of that evaluation (every
step a repeat crossed at, when they differ). Speeds are what this host gives
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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from scaled_links import SEED_LINKS, SEED_MODELS, scaled_spec  # noqa: E402

METHODS = ["bsp-a2a", "wfbp-a2a", "mg-wfbp", "bytescheduler-a2a", "bsp-ps", "wfbp-ps", "bytescheduler-ps",
           "signsgd", "topk-sgd", "allreduce", "dpsgd", "choco"]
# murmur's gossip algorithms as the main job runs them (scripts/demo.sh):
# the exponential graph, CHOCO-SGD with top-1% compression.
GOSSIP_FLAGS = {"dpsgd": ["--topology", "exponential"],
                "choco": ["--topology", "exponential", "--compress", "topk:0.01"]}


def run_one(args, method, profile, out, spec=None):
    """One job; `spec` is the --link-profile value (default: `profile`)."""
    os.makedirs(out, exist_ok=True)
    spec = spec or profile
    algorithm, _, variant = method.partition("+")
    if variant not in ("", "layerwise"):
        sys.exit(f"--methods: {method}: the only variant is +layerwise")
    metrics = os.path.join(out, "m-{rank}.jsonl")
    summary = os.path.join(out, "summary.json")
    command = [common.binary(args.build, "murmur-run"), "-np", str(args.peers),
               "--timeout", str(args.timeout), "--summary", summary, "--",
               common.binary(args.build, "murmur-peer"), "--algorithm", algorithm,
               "--model", args.model, "--epochs", str(args.epochs), "--batch", str(args.batch),
               "--train-examples", str(args.train_examples), "--seed", "1", "--provider", args.provider,
               "--metrics", metrics, "--blas-threads", "1"]
    evals_per_epoch = getattr(args, "evals_per_epoch", 1)
    if evals_per_epoch > 1:
        command += ["--evals-per-epoch", str(evals_per_epoch)]
    if spec != "loopback":
        command += ["--link-profile", spec]
    if algorithm.startswith("bytescheduler-") and args.partition:
        command += ["--bytescheduler-partition", str(args.partition), "--bytescheduler-credit", str(args.credit)]
    if algorithm.endswith("-ps") and args.servers:
        command += ["--servers", str(args.servers)]
    if algorithm.endswith("-ps") and getattr(args, "ps_partition", 0):
        command += ["--ps-partition", str(args.ps_partition)]
    command += GOSSIP_FLAGS.get(algorithm, [])
    if variant:
        command += ["--layerwise-update"]
    if algorithm == "signsgd":
        # Every step moves each weight by the learning rate: SGD's would
        # throw the model about (docs/seed-methods.md).
        command += ["--lr", str(args.sign_lr)]
    elif getattr(args, "lr", 0):
        command += ["--lr", str(args.lr)]
    common.run_or_exit(command, f"{method} on {profile}")
    records = common.read_metrics(metrics, 0)
    epoch = common.events(records, common.Event.EPOCH)[-1]
    steps = epoch[common.Key.STEP]
    K = common.Key
    first = common.first_reaching(common.events(records, common.Event.EVAL), getattr(args, "target", 0.85))
    summary_record = common.read_summary(summary)
    peers = summary_record[common.SUMMARY_PEERS]
    model_bytes = 4 * peers[0][K.PARAMETERS]
    return {
        "method": method,
        "profile": profile,
        "steps": steps,
        "iteration_ms": 1e3 * epoch[K.TRAIN_SECONDS] / steps,
        "comm_ms": 1e3 * epoch[K.COMMUNICATION_THREAD_SECONDS] / steps,
        "overlap_ms": 1e3 * epoch.get(K.COMMUNICATION_OVERLAP_SECONDS, 0.0) / steps,
        "wait_ms": 1e3 * epoch[K.COMMUNICATION_WAIT_SECONDS] / steps,
        "accuracy": summary_record["average_model_test_accuracy"],
        "train_to_target_s": first.get(K.TRAIN_SECONDS) if first else None,
        "step_at_target": first[K.STEP] if first else None,
        # The busiest rank's bytes sent per step, in models: what its one
        # uplink carries (a hot parameter server shows here).
        "most_sent_models": max(p[K.BYTES_SENT] for p in peers) / (model_bytes * max(1, peers[0][K.STEPS])),
        "spec": spec,
    }


def calibrate(args, out):
    """(compute seconds per step, median over ranks; the model's bytes) of an
    unshaped bsp-a2a job shaped as the measured ones."""
    run_one(args, "bsp-a2a", "loopback", out)
    peers = common.read_summary(os.path.join(out, "summary.json"))[common.SUMMARY_PEERS]
    compute_s = statistics.median(p[common.Key.COMPUTE_SECONDS] / p[common.Key.STEPS] for p in peers)
    return compute_s, 4 * peers[0][common.Key.PARAMETERS]


def resolve_specs(args, profiles):
    """profile name -> --link-profile spec; scaled ones are derived here."""
    specs = {p: p for p in profiles if p not in SEED_LINKS}
    scaled = [p for p in profiles if p in SEED_LINKS]
    if not scaled:
        return specs, []
    compute_s = args.compute_s_per_step
    model_bytes = None
    if not compute_s or compute_s <= 0:
        compute_s, model_bytes = calibrate(args, os.path.join(args.out, "calibrate"))
        print(f"calibrated: {compute_s * 1e3:.2f} ms of compute per step (unshaped bsp-a2a, median over ranks)",
              file=sys.stderr)
    else:
        model_bytes = args.model_bytes
        if not model_bytes:
            sys.exit("--compute-s-per-step needs --model-bytes (4 x the model's parameters)")
    derivations = []
    for p in scaled:
        specs[p], derivation = scaled_spec(p, args.scale_model, model_bytes, compute_s, uplink=True)
        derivation["model_bytes"] = model_bytes
        derivations.append(derivation)
        print(f"{p}: R = {derivation['ratio']:.3f} ({args.scale_model} on {derivation['seed_link']}), "
              f"c = {compute_s * 1e3:.2f} ms, {model_bytes} bytes -> {specs[p]}", file=sys.stderr)
    return specs, derivations


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
    p.add_argument("--lr", type=float, default=0,
                   help="every other method's peak learning rate (0: murmur-peer's default)")
    p.add_argument("--credit", type=int, default=4000000)
    p.add_argument("--ps-partition", type=int, default=0, help="the -ps methods' largest shard (0: its default)")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--out", default="/tmp/murmur-seed-methods")
    p.add_argument("--evals-per-epoch", type=int, default=1, help="test-set evaluations per epoch (time to target)")
    p.add_argument("--target", type=float, default=0.85, help="test accuracy for the time-to-target column")
    p.add_argument("--scale-model", default="bert-large", choices=sorted(SEED_MODELS),
                   help="the seed model whose ratio the scaled profiles give")
    p.add_argument("--compute-s-per-step", type=float, default=0,
                   help="compute seconds per step for the scaled profiles (0: measure it)")
    p.add_argument("--model-bytes", type=int, default=0, help="with --compute-s-per-step: 4 x the parameters")
    args = p.parse_args()
    common.stop_on_signals()
    profiles = args.profiles.split(";") if ";" in args.profiles else args.profiles.split(",")
    specs, derivations = resolve_specs(args, profiles)
    runs = {}
    for repeat in range(args.repeats):
        for profile in profiles:
            for method in args.methods.split(","):
                out = os.path.join(args.out, f"{profile}-{method}-{repeat}")
                runs.setdefault((profile, method), []).append(run_one(args, method, profile, out, specs[profile]))
                print(f"done: {method} on {profile} ({repeat + 1}/{args.repeats})", file=sys.stderr)
    rows = []
    for (profile, method), done in runs.items():
        row = dict(done[0])
        for k in ("iteration_ms", "comm_ms", "overlap_ms", "wait_ms", "accuracy", "most_sent_models"):
            row[k] = statistics.median(r[k] for r in done)
        reached = [r["train_to_target_s"] for r in done if r["train_to_target_s"] is not None]
        # A median only when every run got there; otherwise how many did.
        row["train_to_target_s"] = statistics.median(reached) if len(reached) == len(done) else None
        row["reached"] = len(reached)
        steps_at = sorted({r["step_at_target"] for r in done if r["step_at_target"] is not None})
        row["step_at_target"] = "/".join(str(s) for s in steps_at) if steps_at else None
        row["runs"] = done
        rows.append(row)
    with open(os.path.join(args.out, "seed_methods.json"), "w") as f:
        json.dump({"rows": rows, "specs": specs, "scaled": derivations}, f, indent=1)
    target = f"{args.target * 100:g}%"
    print(f"| link | method | steps | iteration ms (min-max) | comm ms | overlap ms | wait ms | accuracy | "
          f"step at {target} | training s to {target} (min-max) | most sent, models/step |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        low = min(x["iteration_ms"] for x in r["runs"])
        high = max(x["iteration_ms"] for x in r["runs"])
        if r["train_to_target_s"] is not None:
            times = [x["train_to_target_s"] for x in r["runs"]]
            reach = f"{r['train_to_target_s']:.1f} ({min(times):.1f}-{max(times):.1f})"
        else:
            reach = f"not reached ({r['reached']} of {len(r['runs'])} runs)"
        # Runs of one method may cross at different evaluations: all are listed.
        step_at = r["step_at_target"] or "-"
        print(f"| {r['profile']} | {r['method']} | {r['steps']} | {r['iteration_ms']:.1f} ({low:.0f}-{high:.0f}) | "
              f"{r['comm_ms']:.1f} | {r['overlap_ms']:.1f} | {r['wait_ms']:.1f} | {r['accuracy']:.4f} | "
              f"{step_at} | {reach} | {r['most_sent_models']:.2f} |")
    for p, spec in specs.items():
        if spec != p:
            print(f"\n{p}: --link-profile {spec}")


if __name__ == "__main__":
    main()
