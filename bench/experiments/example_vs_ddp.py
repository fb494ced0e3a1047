#!/usr/bin/python3
"""The PyTorch example (examples/pytorch/train_fashion_mnist.py) under murmur's
algorithms and under DDP/gloo, every run in the same emulated network, bytes
counted on the wire the same way for both.

Brings up netns.sh's namespaces (one per rank, tbf at --rate on both
directions of every link), runs each --runs entry --repeats times under
murmur-run in the namespaces (DDP too: the example's --ddp reads
MURMUR_RANK), takes the namespaces down (also on error or a signal), and
prints one Markdown table:

    sudo bench/experiments/example_vs_ddp.py --rate 470480kbit --runs choco,ddp --repeats 3

--rate 470480kbit is the scaled-10gbe profile's bandwidth (docs/experiments.md,
"Scaled profiles"), calibrated on murmur-peer's compute time per step
(2.4 ms); its 25 us latency is not emulated (no netem here). --calibrate
PROFILE applies the same rule to this example's own compute time instead:
an unshaped one-epoch allreduce run of the example measures it (its
compute_ms_per_step), and the rate becomes the one that gives the MLP that
profile's communication-to-compute ratio R (BERT-Large on the seed link),
bw = 940,584 B / (R x c), as matrix.py --calibrate does for murmur-peer:

    sudo bench/experiments/example_vs_ddp.py --calibrate scaled-10gbe --runs choco,ddp --repeats 3

Columns (each run's own numbers; a range over repeats where there are >1):
- accuracy: the averaged model's test accuracy after the last epoch (DDP:
  its one model); consensus distance (murmur's, DDP: 0).
- payload bytes: murmur's own count of gossip bytes, all ranks (collectives
  such as the evaluations' averaging are not in it). DDP: not counted.
- wire bytes, training: what the ranks' veth0 transmitted from the first
  step to the last, evaluations left out, summed over ranks (the example's
  --wire-interface: Ethernet, IP and TCP headers, ACKs and retransmissions
  included). The same count for both systems.
- wire bytes, whole run: the bridge-side veth ends' rx over the whole job
  (rendezvous, connection set-up, evaluations included).
- training s to target: the first evaluation at or above --target, its
  training time (the slowest rank's, evaluations left out).

Outputs go to --out: table.md, results.json, each run's log and summary.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import common  # noqa: E402
from matrix import scaled_profile  # noqa: E402
from namespaces import namespaces_tx_bytes, netns  # noqa: E402

EXAMPLE = os.path.join(common.REPO, "examples", "pytorch", "train_fashion_mnist.py")
BRIDGE_ADDR = "10.77.0.254"
SSH_TEMPLATE = "ip netns exec {host} sh -c {command}"

RUNS = {
    "choco": ("murmur choco top-1%, exponential", ["--algorithm", "choco", "--compress", "topk:0.01"]),
    "choco-sign": ("murmur choco sign, exponential", ["--algorithm", "choco", "--compress", "sign"]),
    "choco-topk10": ("murmur choco top-10%, exponential", ["--algorithm", "choco", "--compress", "topk:0.1"]),
    "dpsgd": ("murmur dpsgd, exponential", ["--algorithm", "dpsgd"]),
    "sgp": ("murmur sgp (push-sum), exponential", ["--algorithm", "sgp"]),
    "adpsgd": ("murmur adpsgd, exponential", ["--algorithm", "adpsgd"]),
    "allreduce": ("murmur allreduce", ["--algorithm", "allreduce"]),
    "topk-allreduce": ("murmur topk-allreduce top-1%", ["--algorithm", "topk-allreduce", "--compress", "topk:0.01"]),
    "local-sgd": ("murmur local-sgd, period 8", ["--algorithm", "local-sgd", "--period", "8"]),
    # The survey's gradient methods (docs/seed-methods.md): the mean
    # gradient before each step, through GossipOptimizer's gradient hand-off.
    "bsp-a2a": ("murmur bsp-a2a", ["--algorithm", "bsp-a2a"]),
    "wfbp-a2a": ("murmur wfbp-a2a", ["--algorithm", "wfbp-a2a"]),
    "mg-wfbp": ("murmur mg-wfbp", ["--algorithm", "mg-wfbp"]),
    "bytescheduler-a2a": ("murmur bytescheduler-a2a", ["--algorithm", "bytescheduler-a2a"]),
    "bsp-ps": ("murmur bsp-ps, 8 servers", ["--algorithm", "bsp-ps"]),
    "wfbp-ps": ("murmur wfbp-ps, 8 servers", ["--algorithm", "wfbp-ps"]),
    "bytescheduler-ps": ("murmur bytescheduler-ps, 8 servers", ["--algorithm", "bytescheduler-ps"]),
    # signSGD moves every weight by the learning rate each step: its own lr (docs/seed-methods.md).
    "signsgd": ("murmur signsgd (majority vote), lr 0.001", ["--algorithm", "signsgd", "--lr", "0.001"]),
    "topk-sgd": ("murmur topk-sgd, density 0.001", ["--algorithm", "topk-sgd"]),
    "ddp": ("DDP over gloo", ["--ddp"]),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", default="470480kbit", help="tc rate per link, or 'none'")
    p.add_argument("--calibrate", choices=["scaled-10gbe", "scaled-ib"], default=None,
                   help="set --rate from this example's own compute time (an unshaped allreduce epoch first)")
    p.add_argument("--np", type=int, default=8, help="ranks, one namespace each")
    p.add_argument("--runs", default=",".join(RUNS), help=f"comma list of {', '.join(RUNS)}")
    p.add_argument("--repeats", type=int, default=1, help="runs of each entry, one after the other")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--evals-per-epoch", type=int, default=4)
    p.add_argument("--target", type=float, default=0.85, help="test accuracy for the time-to-accuracy column")
    p.add_argument("--extra", default="", help="more example flags for every run (quick checks)")
    p.add_argument("--build", default=common.DEFAULT_BUILD, help="murmur build directory")
    p.add_argument("--out", default=None, help="directory for logs and results (default /tmp/example_vs_ddp-<time>)")
    p.add_argument("--timeout", type=int, default=1200, help="seconds per run before murmur-run stops it")
    return p.parse_args()




def run_one(args, name, repeat, port):
    label, flags = RUNS[name]
    tag = f"{name}-{repeat}"
    summary = os.path.join(args.out, f"{tag}.json")
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.abspath(args.build), "python"))
    # gloo: rank 0 hosts the store in its namespace and binds to veth0 (docs/baseline-ddp.md).
    env.update(MASTER_ADDR="10.77.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="veth0")
    program = ["/usr/bin/python3", EXAMPLE, *flags, "--epochs", str(args.epochs),
               "--evals-per-epoch", str(args.evals_per_epoch), "--wire-interface", "veth0", "--summary", summary,
               *args.extra.split()]
    command = [args.launcher, "-np", str(args.np), "--hostfile", args.hostfile, "--rendezvous-host", BRIDGE_ADDR,
               "--ssh", SSH_TEMPLATE, "--timeout", str(args.timeout), "--", *program]
    log = os.path.join(args.out, f"{tag}.log")
    print(f"{label} #{repeat}: {' '.join(program[1:])}", flush=True)
    before = namespaces_tx_bytes(args.np)
    started = time.monotonic()
    rc = common.run_logged(command, log, env=env)
    row = {"run": name, "label": label, "repeat": repeat, "rc": rc, "log": log, "command": command,
           "job_seconds": time.monotonic() - started, "bridge_rx_bytes": namespaces_tx_bytes(args.np) - before}
    if rc != 0 or not os.path.exists(summary):
        print(f"  FAILED (exit {rc}); see {log}", flush=True)
        row["rc"] = rc or 1
        return row
    with open(summary) as f:
        row["result"] = json.load(f)
    reach = next((e for e in row["result"]["evals"] if e["accuracy"] >= args.target), None)
    row["to_target"] = reach
    r = row["result"]
    print(f"  accuracy {r['averaged_accuracy']:.4f}, wire {r['wire_bytes_all_ranks'] / 1e6:.1f} MB, "
          f"training {r['train_seconds']:.1f} s, to {args.target:g}: "
          f"{'%.1f s' % reach['train_seconds'] if reach else 'not reached'}", flush=True)
    return row


def calibrate(args, profile, port):
    """--rate for `profile` from the example's compute time per step: one
    unshaped epoch of allreduce (mean over ranks of compute_ms_per_step)."""
    up = netns("up", str(args.np), "none", check=False)
    if up.returncode != 0:
        sys.exit(f"example_vs_ddp: netns.sh up failed: {up.stderr.strip()}")
    try:
        one_epoch = argparse.Namespace(**{**vars(args), "epochs": 1, "evals_per_epoch": 1})
        row = run_one(one_epoch, "allreduce", "calibrate", port)
    finally:
        netns("down", check=False)
    if row["rc"] != 0:
        sys.exit(f"example_vs_ddp: the calibration run failed; see {row['log']}")
    compute_s = row["result"]["compute_ms_per_step"] / 1e3
    spec, derivation = scaled_profile(profile, "bert-large", compute_s)
    rate = spec.split("bw=")[1]
    print(f"calibrated: {compute_s * 1e3:.2f} ms compute per step; {profile} (R = {derivation['ratio']:.3f}): "
          f"--rate {rate}", flush=True)
    return rate, {"profile": profile, "compute_s_per_step": compute_s, "run": row, **derivation}


def spread(values, fmt):
    """One value, or the median and the range over the repeats."""
    if len(values) == 1:
        return fmt(values[0])
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})"


def table(rows, target):
    pct = f"{target * 100:g}%"
    lines = [f"| run | n | averaged-model accuracy | consensus distance | payload bytes (murmur's count) | "
             f"wire bytes, training | wire bytes, whole job | training s | training s to {pct} |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in dict.fromkeys(r["run"] for r in rows):
        ok = [r for r in rows if r["run"] == name and r["rc"] == 0]
        failed = sum(1 for r in rows if r["run"] == name and r["rc"] != 0)
        label = RUNS[name][0]
        if not ok:
            lines.append(f"| {label} | 0 | failed ({failed}) | | | | | | |")
            continue
        res = [r["result"] for r in ok]
        reached = [r["to_target"]["train_seconds"] for r in ok if r["to_target"]]
        to_target = spread(reached, lambda v: f"{v:.1f}") if reached else "not reached"
        if reached and len(reached) < len(ok):
            to_target += f" ({len(ok) - len(reached)} of {len(ok)} did not reach it)"
        payload = "not counted" if name == "ddp" else spread([x["bytes_sent_all_ranks"] for x in res],
                                                             lambda v: f"{v:,.0f}")
        distance = "0 (one model)" if name == "ddp" else spread([x["consensus_distance"] for x in res],
                                                                lambda v: f"{v:.3g}")
        lines.append(f"| {label} | {len(ok)}{f' (+{failed} failed)' if failed else ''} | "
                     f"{spread([x['averaged_accuracy'] * 100 for x in res], lambda v: f'{v:.2f}%')} | {distance} | "
                     f"{payload} | {spread([x['wire_bytes_all_ranks'] for x in res], lambda v: f'{v:,.0f}')} | "
                     f"{spread([r['bridge_rx_bytes'] for r in ok], lambda v: f'{v:,.0f}')} | "
                     f"{spread([x['train_seconds'] for x in res], lambda v: f'{v:.1f}')} | {to_target} |")
    return "\n".join(lines)


def main():
    args = parse_args()
    if os.geteuid() != 0:
        sys.exit("example_vs_ddp: needs root (network namespaces)")
    names = args.runs.split(",")
    for n in names:
        if n not in RUNS:
            sys.exit(f"example_vs_ddp: unknown run '{n}' (expected {', '.join(RUNS)})")
    args.launcher = common.binary(args.build, "murmur-run", "example_vs_ddp")
    args.out = args.out or time.strftime("/tmp/example_vs_ddp-%Y%m%d-%H%M%S")
    os.makedirs(args.out, exist_ok=True)
    args.hostfile = os.path.join(args.out, f"hosts-{args.np}.txt")
    with open(args.hostfile, "w") as f:
        f.write(netns("hostfile", str(args.np)).stdout)
    common.stop_on_signals()

    rows, port, calibration = [], 29700, None
    if args.calibrate:
        port += 1
        args.rate, calibration = calibrate(args, args.calibrate, port)
    up = netns("up", str(args.np), args.rate, check=False)
    if up.returncode != 0:
        sys.exit(f"example_vs_ddp: netns.sh up failed: {up.stderr.strip()}")
    print(up.stdout.strip(), flush=True)
    try:
        # Repeats interleave (A B A B ...), so a change in the host's load hits every entry alike.
        for repeat in range(1, args.repeats + 1):
            for name in names:
                port += 1
                rows.append(run_one(args, name, repeat, port))
    finally:
        netns("down", check=False)
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump({"rate": args.rate, "np": args.np, "epochs": args.epochs, "target": args.target,
                       "calibration": calibration, "rows": rows}, f, indent=1)
        text = table(rows, args.target)
        with open(os.path.join(args.out, "table.md"), "w") as f:
            f.write(text + "\n")
        print("\n" + text)
        print(f"\nlogs and summaries: {args.out}")
    if any(r["rc"] != 0 for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as stopped:
        print(f"example_vs_ddp: stopped ({stopped or 'SIGINT'}); the namespaces are removed", file=sys.stderr)
        sys.exit(130)
