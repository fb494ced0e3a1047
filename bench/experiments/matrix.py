#!/usr/bin/python3
"""One command for the experiment matrix: algorithms x topologies x link profiles x peers.

    bench/experiments/matrix.py --algorithms dpsgd,choco,allreduce,choco-adaptive \\
        --topologies exponential,ring --profiles scaled-10gbe --peers 8 --epochs 3 --out /tmp/mx

Each cell is one run, one after the other:

    murmur-run -np N --profile P --summary DIR/<tag>.summary.json -- \\
        murmur-peer --algorithm A --topology T ... --metrics DIR/<tag>.metrics-{rank}.jsonl

and the script writes DIR/results.csv (one row per run), DIR/table.md and
PNG plots (accuracy against time, bytes sent, throughput, consensus distance
over epochs). Runs that cannot exist (a random d-regular graph with d > n-1
or n*d odd) are skipped and listed in the table with the reason.

Algorithms: murmur-peer's names, plus "choco-adaptive" (choco top-k with
--schedule adaptive --provider tcp). Centralized algorithms (allreduce,
topk-allreduce, local-sgd) ignore the topology: they run once per profile
and peer count with topology "n/a".

Profiles: murmur's named ones (10gbe, ib-hdr100, ...), any lat=..,bw=.. spec,
or "scaled-10gbe" / "scaled-ib": links that give a CPU peer training the MLP
the same communication-to-computation ratio that 10GbE / 100 Gb InfiniBand
give a GPU training a seed-paper model (Shi et al. 2020). For model M with
P parameters (fp32) and single-GPU throughput S samples/s at batch B:

    R(M, link) = (4 P / link bytes per s) / (B / S)

and the scaled bandwidth for the MLP (235,146 parameters, 940,584 bytes)
with compute time c seconds per step per peer is

    bw_scaled = 940,584 / (R x c)

--scale-model picks M (default bert-large, the paper's communication-bound
case; resnet50's ratios are 20x smaller and leave the CPU peer's links
practically unshaped), --compute-s-per-step gives c (default: measured, see
docs/experiments.md), or --calibrate measures it first with an unshaped run
at the largest --peers. Latency keeps the named profile's (25 us, 1.5 us):
scaled by the same time factor it would fall below a microsecond, which the
shaper cannot resolve and which is < 1% of a step either way.
"""
import argparse
import csv
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import common  # noqa: E402
from common import Event, Key  # noqa: E402
from scaled_links import SEED_LINKS, SEED_MODELS, scaled_spec  # noqa: E402

CENTRALIZED = {"allreduce", "topk-allreduce", "local-sgd"}
MLP_PARAMETERS = 235146
BATCH = 64

# Measured on this 2-core machine: median over ranks of compute_seconds / steps,
# 8 peers, MLP, batch 64, unshaped (bench/experiments/matrix.py --calibrate).
DEFAULT_COMPUTE_S_PER_STEP = 0.0024


def scaled_profile(link, model, compute_s):
    """The lat=..,bw=.. spec of a scaled profile for the MLP, and its derivation."""
    return scaled_spec(link, model, 4 * MLP_PARAMETERS, compute_s)


def derivation_table(compute_s):
    lines = ["| seed model | link | model MB | transfer s | GPU step s | R | MLP bw at c = "
             f"{compute_s * 1e3:.2f} ms | MLP transfer ms |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for model in SEED_MODELS:
        for link in SEED_LINKS:
            _, d = scaled_profile(link, model, compute_s)
            lines.append(f"| {model} | {d['seed_link']} | {4 * SEED_MODELS[model]['parameters'] / 1e6:.1f} | "
                         f"{d['seed_transfer_s']:.4f} | {d['seed_step_s']:.4f} | {d['ratio']:.3f} | "
                         f"{d['bw_bytes_per_s'] * 8 / 1e6:.0f} Mbit/s | "
                         f"{4 * MLP_PARAMETERS / d['bw_bytes_per_s'] * 1e3:.2f} |")
    return "\n".join(lines)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--algorithms", default="dpsgd,choco,allreduce,sgp,choco-adaptive")
    p.add_argument("--topologies", default="ring,exponential,random")
    p.add_argument("--profiles", default="scaled-10gbe,scaled-ib,10gbe,ib-hdr100",
                   help="named, scaled-10gbe, scaled-ib or lat=..,bw=.. (separate with ';' when specs hold commas)")
    p.add_argument("--peers", default="4,8,16")
    p.add_argument("--degree", type=int, default=4, help="degree of the random topology")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--evals-per-epoch", type=int, default=4)
    p.add_argument("--train-examples", type=int, default=0, help="cap each shard (0: the whole shard)")
    p.add_argument("--compress", default="topk:0.01", help="choco's compressor")
    p.add_argument("--target", type=float, default=0.85, help="test accuracy for the time-to-accuracy column")
    p.add_argument("--scale-model", default="bert-large", choices=sorted(SEED_MODELS))
    p.add_argument("--compute-s-per-step", type=float, default=DEFAULT_COMPUTE_S_PER_STEP,
                   help="CPU peer's compute seconds per step for the scaled profiles")
    p.add_argument("--calibrate", action="store_true", help="measure --compute-s-per-step first (unshaped run)")
    p.add_argument("--plot-profile", default=None, help="profile of the accuracy-vs-time plot (default: first)")
    p.add_argument("--plot-peers", type=int, default=None, help="peers of the accuracy-vs-time plot (default: 8)")
    p.add_argument("--build", default=common.DEFAULT_BUILD, help="murmur build directory")
    p.add_argument("--out", default=None, help="output directory (default /tmp/matrix-<time>)")
    p.add_argument("--timeout", type=int, default=900, help="seconds per run before murmur-run stops it")
    p.add_argument("--dry-run", action="store_true", help="print the derivation and the runs, run nothing")
    p.add_argument("--merge", default=None,
                   help="comma list of earlier --out directories: merge their results.json into --out "
                        "(csv, table, plots) and run nothing")
    return p.parse_args()


def split_profiles(text):
    return [s for s in (text.split(";") if ";" in text else text.split(",")) if s]


def calibrate(args, peers, out_dir):
    """compute_seconds / steps, median over ranks, of an unshaped one-epoch run."""
    metrics = os.path.join(out_dir, "calibrate.metrics-{rank}.jsonl")
    summary = os.path.join(out_dir, "calibrate.summary.json")
    command = [args.launcher, "-np", str(peers), "--summary", summary, "--", args.peer_binary, "--model", "mlp",
               "--algorithm", "allreduce", "--epochs", "1", "--metrics", metrics]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    s = common.read_summary(summary)
    per_rank = [p[Key.COMPUTE_SECONDS] / p[Key.STEPS] for p in s[common.SUMMARY_PEERS]]
    return statistics.median(per_rank)


def plan(args, profiles):
    """(algorithm, topology, profile, peers) cells, and the skipped ones with reasons."""
    runs, skipped = [], []
    for profile in profiles:
        for peers in [int(x) for x in args.peers.split(",")]:
            for algorithm in args.algorithms.split(","):
                if algorithm in CENTRALIZED:
                    runs.append((algorithm, "n/a", profile, peers))
                    continue
                for topology in args.topologies.split(","):
                    cell = (algorithm, topology, profile, peers)
                    if topology == "random" and args.degree > peers - 1:
                        skipped.append((cell, f"random {args.degree}-regular needs more than {args.degree} peers"))
                    elif topology == "random" and (peers * args.degree) % 2:
                        skipped.append((cell, f"random {args.degree}-regular needs n*d even"))
                    else:
                        runs.append(cell)
    return runs, skipped


def peer_flags(algorithm, topology, args):
    flags = []
    if algorithm == "choco-adaptive":
        flags += ["--algorithm", "choco", "--compress", args.compress, "--schedule", "adaptive", "--provider", "tcp"]
    else:
        flags += ["--algorithm", algorithm]
        if algorithm in ("choco", "topk-allreduce"):
            flags += ["--compress", args.compress]
    if topology != "n/a":
        flags += ["--topology", topology]
        if topology == "random":
            flags += ["--degree", str(args.degree)]
    return flags


def run_cell(args, cell, spec, out_dir):
    algorithm, topology, profile, peers = cell
    tag = f"{profile}-{peers}-{algorithm}-{topology.replace('/', '')}"
    summary_path = os.path.join(out_dir, f"{tag}.summary.json")
    metrics = os.path.join(out_dir, f"{tag}.metrics-{{rank}}.jsonl")
    program = [args.peer_binary, "--model", "mlp", *peer_flags(algorithm, topology, args), "--epochs",
               str(args.epochs), "--evals-per-epoch", str(args.evals_per_epoch), "--metrics", metrics]
    if args.train_examples:
        program += ["--train-examples", str(args.train_examples)]
    command = [args.launcher, "-np", str(peers), "--summary", summary_path, "--timeout", str(args.timeout)]
    if spec not in ("none", "loopback"):
        command += ["--profile", spec]
    command += ["--", *program]
    log_path = os.path.join(out_dir, f"{tag}.log")
    row = {"algorithm": algorithm, "topology": topology, "profile": profile, "peers": peers, "spec": spec,
           "log": log_path}
    print(f"[{profile} n={peers}] {algorithm} {topology}: {shlex.join(command)}", flush=True)
    row["rc"] = common.run_logged(command, log_path)
    if row["rc"] != 0:
        print(f"  FAILED (exit {row['rc']}); see {log_path}", flush=True)
        return row
    summary = common.read_summary(summary_path)
    rank0 = common.read_metrics(metrics, 0)
    eval_events = common.events(rank0, Event.EVAL)
    evals = [(e[Key.TIME], e[Key.TEST_ACCURACY], e[Key.BYTES_SENT]) for e in eval_events]
    epochs = [(e[Key.EPOCH], e[Key.TIME], e[Key.CONSENSUS_DISTANCE]) for e in common.events(rank0, Event.EPOCH)]
    # The time and the training time (without the setup and the test-set
    # passes: murmur-peer's train_seconds) of the first evaluation reaching
    # the target.
    reach, train_reach = common.time_to_target(eval_events, args.target) or (None, None)
    images = sum(p[Key.STEPS] for p in summary[common.SUMMARY_PEERS]) * BATCH
    row.update(accuracy=summary[Key.AVERAGE_MODEL_TEST_ACCURACY], wall_s=summary[Key.WALL_SECONDS],
               time_to_target_s=reach, train_to_target_s=train_reach,
               images_per_s=images / summary[Key.WALL_SECONDS], bytes_sent=summary[Key.BYTES_SENT], evals=evals,
               epochs=epochs,
               train_evals=[(e[Key.TRAIN_SECONDS], e[Key.TEST_ACCURACY]) for e in eval_events
                            if Key.TRAIN_SECONDS in e])
    print(f"  accuracy {row['accuracy']:.4f}, wall {row['wall_s']:.1f} s, "
          f"t->{args.target:g} {reach if reach is None else round(reach, 1)} "
          f"(training {train_reach if train_reach is None else round(train_reach, 1)}), "
          f"{row['bytes_sent'] / 1e6:.1f} MB sent", flush=True)
    return row


CSV_FIELDS = ["algorithm", "topology", "profile", "peers", "accuracy", "wall_s", "time_to_target_s",
              "train_to_target_s", "images_per_s", "bytes_sent", "spec", "rc"]


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            out = dict(r)
            for k in ("time_to_target_s", "train_to_target_s"):
                out[k] = "" if r.get(k) is None else f"{r[k]:.2f}"
            for k in ("accuracy", "wall_s", "images_per_s"):
                if k in r:
                    out[k] = f"{r[k]:.4f}" if k == "accuracy" else f"{r[k]:.2f}"
            w.writerow(out)


def markdown(rows, skipped, target):
    pct = f"{target * 100:g}%"
    lines = [f"| profile | peers | algorithm | topology | accuracy | wall s | t->{pct} s (rank 0) | "
             f"training s to {pct} | images/s | MB sent |", "|---|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        head = f"| {r['profile']} | {r['peers']} | {r['algorithm']} | {r['topology']} |"
        if r["rc"] != 0:
            lines.append(f"{head} failed (exit {r['rc']}) | | | | | |")
            continue
        reach = f"{r['time_to_target_s']:.1f}" if r["time_to_target_s"] is not None else "not reached"
        train = r.get("train_to_target_s")
        train = "-" if reach == "not reached" else "n/a" if train is None else f"{train:.1f}"
        lines.append(f"{head} {r['accuracy'] * 100:.2f}% | {r['wall_s']:.1f} | {reach} | {train} | "
                     f"{r['images_per_s']:.0f} | {r['bytes_sent'] / 1e6:.1f} |")
    for (algorithm, topology, profile, peers), why in skipped:
        lines.append(f"| {profile} | {peers} | {algorithm} | {topology} | skipped: {why} | | | | | |")
    return "\n".join(lines)


def label(r):
    return f"{r['algorithm']} {r['topology']}" if r["topology"] != "n/a" else r["algorithm"]


def plots(rows, out_dir, plot_profile, plot_peers, target):
    plt = common.pyplot(exit_if_missing=False)
    ok = [r for r in rows if r["rc"] == 0]
    written = []

    def save(fig, name):
        path = os.path.join(out_dir, name)
        fig.tight_layout()
        fig.savefig(path, dpi=80)
        plt.close(fig)
        written.append(path)

    def accuracy_against(curves, xlabel, what, name):
        """curves: (row, [(x, accuracy)]) pairs."""
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for r, points in curves:
            ax.plot([x for x, _ in points], [a * 100 for _, a in points], marker=".", label=label(r))
        ax.axhline(target * 100, color="grey", lw=0.8, ls="--")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("test accuracy, % (rank 0's model)")
        ax.set_ylim(60, 90)
        ax.set_title(f"accuracy vs {what}: {plot_profile}, {plot_peers} peers")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        save(fig, name)

    sliced = [r for r in ok if r["profile"] == plot_profile and r["peers"] == plot_peers]
    if sliced:
        accuracy_against([(r, [(t, a) for t, a, _ in r["evals"]]) for r in sliced], "time since start, s (rank 0)",
                         "time", "accuracy_vs_time.png")
        timed = [(r, r["train_evals"]) for r in sliced if r.get("train_evals")]
        if timed:
            accuracy_against(timed, "training time, s (rank 0; without the setup and the test-set passes)",
                             "training time", "accuracy_vs_training_time.png")

        fig, ax = plt.subplots(figsize=(7, 4.2))
        for r in sliced:
            if r["topology"] != "n/a":
                ax.semilogy([e for e, _, _ in r["epochs"]], [max(c, 1e-6) for _, _, c in r["epochs"]], marker="o",
                            label=label(r))
        ax.set_xlabel("epoch")
        ax.set_ylabel("consensus distance (log)")
        ax.set_title(f"consensus distance: {plot_profile}, {plot_peers} peers")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        save(fig, "consensus_distance.png")

    def bars(key, scale, ylabel, title, name, log=False):
        fig, ax = plt.subplots(figsize=(9, 5.4))
        names = [f"{label(r)}\n{r['profile']} n={r['peers']}" for r in ok]
        ax.bar(range(len(ok)), [r[key] * scale for r in ok], color="tab:blue")
        ax.set_xticks(range(len(ok)))
        ax.set_xticklabels(names, rotation=70, ha="right", fontsize=7)
        if log:
            ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
        save(fig, name)

    if ok:
        bars("bytes_sent", 1e-6, "MB sent, all peers (log)", "bytes on the wire (payload)", "bytes_sent.png", log=True)
        bars("images_per_s", 1, "training images / s, all peers", "throughput", "throughput.png")
    return written


def merge(args, out_dir):
    """One CSV, table and set of plots from several earlier runs of this script."""
    rows, skipped = [], []
    for d in args.merge.split(","):
        with open(os.path.join(d, "results.json")) as f:
            r = json.load(f)
        rows += r["rows"]
        skipped += [(tuple(s[:4]), s[4]) for s in r["skipped"]]
    write_csv(rows, os.path.join(out_dir, "results.csv"))
    text = markdown(rows, skipped, args.target)
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    profiles = split_profiles(args.profiles)
    write_plots(rows, out_dir, args.plot_profile or profiles[0], args.plot_peers or 8, args.target)


def write_plots(rows, out_dir, plot_profile, plot_peers, target):
    try:
        written = plots(rows, out_dir, plot_profile, plot_peers, target)
    except ImportError as e:
        # The CSV and the table are written; only the plots need matplotlib.
        sys.exit(f"matrix.py: results.csv and table.md are in {out_dir}, but {e} "
                 f"(--merge {out_dir} --out DIR redraws them without running anything)")
    print(f"\nresults.csv, table.md, {', '.join(os.path.basename(w) for w in written)} in {out_dir}")


def main():
    args = parse_args()
    if args.merge:
        out_dir = args.out or time.strftime("/tmp/matrix-%Y%m%d-%H%M%S")
        os.makedirs(out_dir, exist_ok=True)
        return merge(args, out_dir)
    args.launcher = common.binary(args.build, "murmur-run", "matrix")
    args.peer_binary = common.binary(args.build, "murmur-peer", "matrix")
    out_dir = args.out or time.strftime("/tmp/matrix-%Y%m%d-%H%M%S")
    os.makedirs(out_dir, exist_ok=True)
    profiles = split_profiles(args.profiles)

    compute_s = args.compute_s_per_step
    if args.calibrate and not args.dry_run:
        compute_s = calibrate(args, max(int(x) for x in args.peers.split(",")), out_dir)
        print(f"calibrated: {compute_s * 1e3:.3f} ms compute per step per peer", flush=True)
    specs, derivations = {}, []
    for p in profiles:
        if p in SEED_LINKS:
            specs[p], d = scaled_profile(p, args.scale_model, compute_s)
            derivations.append(d)
            print(f"{p}: R = {d['ratio']:.3f} ({args.scale_model} on {d['seed_link']}), c = {compute_s * 1e3:.2f} ms "
                  f"-> {d['spec']}", flush=True)
        else:
            specs[p] = p
    print(derivation_table(compute_s), flush=True)

    runs, skipped = plan(args, profiles)
    for cell, why in skipped:
        print(f"skip {cell}: {why}", flush=True)
    if args.dry_run:
        for cell in runs:
            print("run", cell)
        return

    common.stop_on_signals()

    rows = []
    try:
        for cell in runs:
            rows.append(run_cell(args, cell, specs[cell[2]], out_dir))
    finally:
        write_csv(rows, os.path.join(out_dir, "results.csv"))
        with open(os.path.join(out_dir, "results.json"), "w") as f:
            json.dump({"argv": sys.argv, "compute_s_per_step": compute_s, "derivations": derivations,
                       "skipped": [list(c) + [w] for c, w in skipped], "rows": rows}, f, indent=1)
        text = markdown(rows, skipped, args.target)
        with open(os.path.join(out_dir, "table.md"), "w") as f:
            f.write(derivation_table(compute_s) + "\n\n" + text + "\n")
        print("\n" + text)
        write_plots(rows, out_dir, args.plot_profile or profiles[0], args.plot_peers or 8, args.target)
    if any(r["rc"] != 0 for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt as stopped:
        print(f"matrix: stopped ({stopped or 'SIGINT'})", file=sys.stderr)
        sys.exit(130)
