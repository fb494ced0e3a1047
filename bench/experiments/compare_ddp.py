#!/usr/bin/python3
"""murmur against PyTorch DDP (gloo) on the same emulated links.

For each --rate, brings up netns.sh's namespaces (one per rank, tbf on both
directions of every link), runs every system in --systems one after the
other under murmur-run, then takes the namespaces down (also on error or a
signal), and prints one Markdown table over all rates:

    sudo bench/experiments/compare_ddp.py --rate 1gbit --rate 100mbit

Systems: ddp (ddp_mlp.py, gloo), allreduce, choco (top-k 1%, exponential
graph), dpsgd (exponential graph); all MLP, 5 epochs, batch 64 per rank,
iid shards, the same recipe (ddp_mlp.py's docstring lists it).

Columns:
- accuracy: the final averaged model's test accuracy (DDP: its one model).
- wall s: murmur-run's wall time, first spawn to last exit, for both.
- setup s: time before the first training step (DDP: importing torch,
  loading data, joining gloo; murmur: loading data and joining, read from
  the first step event at --log-every 1).
- t->85%: time from the rank's start to the first evaluation whose
  test accuracy reached --target (--evals-per-epoch per epoch, the last at
  its end, at the same steps in every system). DDP: rank 0's
  model; murmur: the mean over ranks of each rank's own model (the averaged
  model is only evaluated at the end), at the slowest rank's time.
- training s to 85%: the same point's time without the setup and the
  test-set passes (train_seconds in both systems' records; murmur: the
  slowest rank's). Every murmur rank evaluates its own model each time,
  DDP's rank 0 its one model while the others wait at the next all-reduce.
- payload MB: what the systems count as sent, over all ranks (DDP's is an
  estimate: 2(N-1)/N x model bytes per step per rank).
- wire MB: bytes the namespaces' veth ends transmitted, over all ranks,
  headers and rendezvous traffic included (from /sys/class/net counters of
  the bridge-side ends).

Outputs go to --out: the table (table.md), results.json, and each run's log,
summary and metrics.
"""
import argparse
import glob
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import common  # noqa: E402
from namespaces import namespaces_tx_bytes, netns  # noqa: E402
from common import Event, Key  # noqa: E402

DDP = os.path.join(HERE, "ddp_mlp.py")
BRIDGE_ADDR = "10.77.0.254"
SSH_TEMPLATE = "ip netns exec {host} sh -c {command}"

SYSTEMS = {
    "ddp": ("DDP gloo (allreduce)", None),
    "allreduce": ("murmur allreduce", ["--algorithm", "allreduce"]),
    "choco": ("murmur choco top-k 1% (exp.)", ["--algorithm", "choco", "--compress", "topk:0.01",
                                                "--topology", "exponential"]),
    "dpsgd": ("murmur dpsgd (exp.)", ["--algorithm", "dpsgd", "--topology", "exponential"]),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", action="append", help="tc rate per link, or 'none' (default: 1gbit and 100mbit)")
    p.add_argument("--np", type=int, default=8, help="ranks, one namespace each")
    p.add_argument("--systems", default="ddp,allreduce,choco,dpsgd", help=f"comma list of {', '.join(SYSTEMS)}")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--train-examples", type=int, default=0, help="cap each shard (quick checks)")
    p.add_argument("--target", type=float, default=0.85, help="test accuracy for the time-to-accuracy column")
    p.add_argument("--evals-per-epoch", type=int, default=1,
                   help="test-set passes per epoch in every system (the time-to-accuracy resolution)")
    p.add_argument("--build", default=common.DEFAULT_BUILD, help="murmur build directory")
    p.add_argument("--out", default=None, help="directory for logs and results (default /tmp/compare_ddp-<time>)")
    p.add_argument("--timeout", type=int, default=1200, help="seconds per run before murmur-run stops it")
    return p.parse_args()




def murmur_curve(metrics_glob):
    """Per evaluation (every rank evaluates at the same steps): the slowest
    rank's time and training time, the mean of the ranks' own accuracies;
    and the first step event's time (the setup before training)."""
    by_step, first_step = {}, []
    for path in sorted(glob.glob(metrics_glob)):
        records = common.read_jsonl(path)
        for e in common.events(records, Event.EVAL):
            by_step.setdefault(e[Key.STEP], []).append(e)
        steps = common.events(records, Event.STEP)
        if steps:
            first_step.append(steps[0][Key.TIME])
    curve = [{Key.EPOCH: v[0][Key.EPOCH], Key.STEP: k, Key.TIME: max(e[Key.TIME] for e in v),
              Key.TEST_ACCURACY: sum(e[Key.TEST_ACCURACY] for e in v) / len(v),
              Key.TRAIN_SECONDS: max(e[Key.TRAIN_SECONDS] for e in v) if all(Key.TRAIN_SECONDS in e for e in v)
              else None}
             for k, v in sorted(by_step.items())]
    return curve, (max(first_step) if first_step else None)


def run_one(args, rate, system, out_dir, port):
    label, flags = SYSTEMS[system]
    tag = f"{rate}-{system}"
    summary_path = os.path.join(out_dir, f"{tag}.summary.json")
    hostfile = os.path.join(out_dir, f"hosts-{args.np}.txt")
    launcher = args.launcher
    env = dict(os.environ)
    shared = ["--epochs", str(args.epochs), "--evals-per-epoch", str(args.evals_per_epoch)]
    if args.train_examples:
        shared += ["--train-examples", str(args.train_examples)]
    if system == "ddp":
        ddp_summary = os.path.join(out_dir, f"{tag}.ddp.json")
        program = ["/usr/bin/python3", DDP, "--summary", ddp_summary, *shared]
        # Rank 0 hosts gloo's store in its namespace; gloo binds to veth0.
        env.update(MASTER_ADDR="10.77.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="veth0")
    else:
        metrics = os.path.join(out_dir, f"{tag}.metrics-{{rank}}.jsonl")
        program = [args.peer_binary, "--model", "mlp", *flags, *shared,
                   "--log-every", "1", "--metrics", metrics]
    command = [launcher, "-np", str(args.np), "--hostfile", hostfile, "--rendezvous-host", BRIDGE_ADDR,
               "--ssh", SSH_TEMPLATE, "--summary", summary_path, "--timeout", str(args.timeout), "--", *program]
    log_path = os.path.join(out_dir, f"{tag}.log")
    print(f"[{rate}] {label}: {' '.join(command[:1] + ['...'] + program[1:])}", flush=True)
    before = namespaces_tx_bytes(args.np)
    started = time.monotonic()
    rc = common.run_logged(command, log_path, env=env)
    elapsed = time.monotonic() - started
    wire = namespaces_tx_bytes(args.np) - before
    row = {"rate": rate, "system": system, "label": label, "rc": rc, "log": log_path, "wire_bytes": wire,
           "command": command}
    if rc != 0:
        print(f"[{rate}] {label}: FAILED (exit {rc}); see {log_path}", flush=True)
        return row
    summary = common.read_summary(summary_path)
    row.update(accuracy=summary[Key.AVERAGE_MODEL_TEST_ACCURACY], wall_seconds=summary[Key.WALL_SECONDS],
               payload_bytes=summary[Key.BYTES_SENT])
    if system == "ddp":
        with open(ddp_summary) as f:
            ddp = json.load(f)
        row.update(curve=ddp.get("evals", ddp["epochs"]), setup_seconds=ddp["setup_seconds"],
                   payload_is_estimate=True)
    else:
        curve, setup = murmur_curve(os.path.join(out_dir, f"{tag}.metrics-*.jsonl"))
        row.update(curve=curve, setup_seconds=setup, payload_is_estimate=False)
    row["time_to_target"] = common.first_reaching(row["curve"], args.target)
    print(f"[{rate}] {label}: accuracy {row['accuracy']:.4f}, wall {row['wall_seconds']:.1f} s "
          f"(script saw {elapsed:.1f} s), wire {wire / 1e6:.1f} MB", flush=True)
    return row


def table(rows, target):
    pct = f"{target * 100:g}%"
    lines = [f"| link | system | accuracy | wall s | setup s | t->{pct} s | training s to {pct} | payload MB | "
             "wire MB |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r["rc"] != 0:
            lines.append(f"| {r['rate']} | {r['label']} | failed (exit {r['rc']}) | | | | | | |")
            continue
        t = r["time_to_target"]
        reach = f"{t[Key.TIME]:.1f} (ep. {t[Key.EPOCH]}, step {t.get(Key.STEP, '-')})" if t else "not reached"
        train = t.get(Key.TRAIN_SECONDS) if t else None
        reach += " | " + ("-" if not t else "n/a" if train is None else f"{train:.1f}")
        payload = f"{r['payload_bytes'] / 1e6:.1f}" + (" (est.)" if r["payload_is_estimate"] else "")
        setup = f"{r['setup_seconds']:.1f}" if r["setup_seconds"] is not None else "-"
        lines.append(f"| {r['rate']} | {r['label']} | {r['accuracy'] * 100:.2f}% | {r['wall_seconds']:.1f} | "
                     f"{setup} | {reach} | {payload} | {r['wire_bytes'] / 1e6:.1f} |")
    return "\n".join(lines)


def main():
    args = parse_args()
    if os.geteuid() != 0:
        sys.exit("compare_ddp: needs root (network namespaces)")
    rates = args.rate or ["1gbit", "100mbit"]
    systems = args.systems.split(",")
    for s in systems:
        if s not in SYSTEMS:
            sys.exit(f"compare_ddp: unknown system '{s}' (expected {', '.join(SYSTEMS)})")
    args.launcher = common.binary(args.build, "murmur-run", "compare_ddp")
    args.peer_binary = common.binary(args.build, "murmur-peer", "compare_ddp")
    out_dir = args.out or time.strftime("/tmp/compare_ddp-%Y%m%d-%H%M%S")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, f"hosts-{args.np}.txt"), "w") as f:
        f.write(netns("hostfile", str(args.np)).stdout)

    # SIGTERM and SIGHUP unwind like Ctrl-C, so the finally below runs.
    common.stop_on_signals()

    rows = []
    port = 29500
    try:
        for rate in rates:
            up = netns("up", str(args.np), rate, check=False)
            if up.returncode != 0:
                sys.exit(f"compare_ddp: netns.sh up failed: {up.stderr.strip()}")
            print(up.stdout.strip(), flush=True)
            try:
                for system in systems:
                    port += 1
                    rows.append(run_one(args, rate, system, out_dir, port))
            finally:
                netns("down", check=False)
    finally:
        with open(os.path.join(out_dir, "results.json"), "w") as f:
            json.dump({"np": args.np, "epochs": args.epochs, "target": args.target, "rows": rows}, f, indent=1)
        text = table(rows, args.target)
        with open(os.path.join(out_dir, "table.md"), "w") as f:
            f.write(text + "\n")
        print("\n" + text)
        print(f"\nlogs, summaries and metrics: {out_dir}")
    if any(r["rc"] != 0 for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as stopped:
        print(f"compare_ddp: stopped ({stopped or 'SIGINT'}); the namespaces are removed", file=sys.stderr)
        sys.exit(130)
