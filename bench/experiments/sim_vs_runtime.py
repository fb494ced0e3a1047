#!/usr/bin/env python3
"""murmur-sim against murmur's own runs of the survey's methods: for each
model, link profile and method, the iteration time murmur-peer measured
(seed_methods.py's run) beside the one murmur-sim predicts for the same
cluster, from a compute profile measured on single-peer runs only.

    bench/experiments/sim_vs_runtime.py --peers 4 --models cnn,mlp:96,40,128,24,80,32,112,48,64,16,72,56 \\
        --profiles loopback,10gbe --repeats 3 --out /tmp/sim-vs-runtime

Per repeat and model, before that repeat's jobs (so that the host's load
from other users is alike):
  - the split: murmur-sim-profile (one process, no communication) measures
    each parameter layer's forward and backward time;
  - solo: murmur-peer alone (-np 1, bsp-a2a, the same epoch as the jobs):
    its train_seconds / steps is the profile's total (samples-per-s), so
    the profile carries the trainer's own per-step costs;
  - concurrent solo: --peers separate single-peer jobs started at once,
    their mean step time: the compute of --peers peers that share this
    host's cores, measured without any communication.
Then every method on every profile (seed_methods.run_one), and murmur-sim
with `stack murmur` and links of the profile's latency plus the fabric's
per-message cost, its bandwidth capped by the fabric's (--fabric-latency-us,
--fabric-GBps: docs/fabric-performance.md's libfabric tcp figures, measured
by fabric_bench, not on these runs), and the jobs' partition knobs
(--partition, --credit, --ps-partition: murmur-peer's flags, which
murmur-sim takes too). Five predictions per row:
  - "cores": the solo profile and `host peers=P cores=C` (C = --cores, this
    host's count): compute P/C times the solo time;
  - "shared": the concurrent-solo total, no host line, and a straggler
    whose slowdown is the slowest-of-P factor: P murmur-sim-profile runs
    at once, each step's slowest of the P against the mean step (a
    synchronous job steps at its slowest peer's pace);
  - "probed": as "shared", with the links' latency replaced by one ring
    step's cost measured on this host under the job's own contention (a
    --peers job of logreg, which has about no compute, under bsp-a2a: its
    communication time per step over 2(P-1) messages; message_probe_s);
  - "split": as "shared", with a cost per message and one per step from
    two such jobs (one ring a step and thirteen; split_probe_s): the
    links' latency is the first, the profile's total grows by the second;
    and the links' concurrent-message from a third (logreg under
    bytescheduler-a2a, thirteen concurrent rings a step;
    concurrent_probe_s), which only bytescheduler-a2a's windows read;
  - "busy": as "split", and the links' busy-latency (what a message costs
    while the host computes: docs/sim-files.md) from the logreg job run
    while --peers murmur-sim-profile processes of the model compute
    (busy_probe_s): murmur's communication threads wait for cores the
    compute holds, so a message sent during backward costs several times
    an idle one (WFBP's, not BSP's, which runs after backward).
With --measured DIR, the jobs are not run: their iteration times are those
a seed_methods.py run wrote to DIR (every repeat of it), and the peers,
model, batch, examples, provider, profiles, links and partition knobs are
those jobs' own (their records and DIR/seed_methods.json); the compute profiles and probes
above are measured now, --repeats times, as before any job.

    bench/experiments/sim_vs_runtime.py --measured /tmp/seed-methods-8 --repeats 3 --out /tmp/sim-vs-8

Errors are (predicted - measured) / measured of the medians over repeats.
Writes a markdown table to stdout and <out>/sim_vs_runtime.json.
"""
import argparse
import concurrent.futures
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import seed_methods  # noqa: E402

# murmur's method -> murmur-sim's cost model of it (paper_methods.h).
SIM_NAMES = {"bsp-a2a": "BSP-A2A", "wfbp-a2a": "WFBP-A2A", "mg-wfbp": "MG-WFBP",
             "bytescheduler-a2a": "ByteScheduler-A2A", "bsp-ps": "BSP-PS", "wfbp-ps": "WFBP-PS",
             "bytescheduler-ps": "ByteScheduler-PS"}
# The predictions, by what tells murmur-sim about the host (module doc).
KINDS = ("cores", "shared", "probed", "split", "busy")
# murmur-peer's --link-profile names (docs/link-profiles.md): one-way latency
# in seconds and bandwidth in bytes/s (None: unlimited). The scaled ones
# (scaled_links.py) are derived per model when the run starts.
LINKS = {"loopback": (0.0, None), "10gbe": (25e-6, 1.25e9), "100gbe": (10e-6, 12.5e9)}


def solo_step_s(args, model, out):
    """Mean step time of a single-peer murmur-peer job (train_seconds / steps)."""
    os.makedirs(out, exist_ok=True)
    metrics = os.path.join(out, "m-{rank}.jsonl")
    command = [common.binary(args.build, "murmur-run"), "-np", "1", "--timeout", str(args.timeout), "--",
               common.binary(args.build, "murmur-peer"), "--algorithm", "bsp-a2a", "--model", model,
               "--epochs", "1", "--batch", str(args.batch), "--train-examples", str(args.train_examples),
               "--seed", "1", "--provider", args.provider, "--metrics", metrics, "--blas-threads", "1"]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-3000:])
        sys.exit(f"failed ({done.returncode}): single-peer {model}")
    epoch = common.events(common.read_metrics(metrics, 0), common.Event.EPOCH)[-1]
    return epoch[common.Key.TRAIN_SECONDS] / epoch[common.Key.STEP]


def compute_profiles(args, model, out):
    """The layer split and the solo and concurrent-solo step times."""
    os.makedirs(out, exist_ok=True)
    split = os.path.join(out, "split.profile")
    common.run_or_exit([common.binary(args.build, "murmur-sim-profile"), "--model", model, "--batch", str(args.batch),
                        "--steps", "30", "--out", split], f"murmur-sim-profile --model {model}")
    solo = solo_step_s(args, model, os.path.join(out, "solo"))
    with concurrent.futures.ThreadPoolExecutor(args.peers) as pool:
        shared = list(pool.map(lambda i: solo_step_s(args, model, os.path.join(out, f"concurrent-{i}")),
                               range(args.peers)))
        steps = list(pool.map(lambda i: step_times(args, model, os.path.join(out, f"steps-{i}.txt")),
                              range(args.peers)))
    # A synchronous job steps at its slowest peer's pace: the mean over
    # steps of the slowest of the P concurrent peers' step, against the
    # mean step.
    count = min(len(t) for t in steps)
    slowest = statistics.mean(max(t[k] for t in steps) for k in range(count))
    mean = statistics.mean(x for t in steps for x in t[:count])
    return {"split": split, "solo_step_s": solo, "shared_step_s": statistics.mean(shared),
            "slowest_factor": max(1.0, slowest / mean)}


def step_times(args, model, path):
    """Each step's training time of murmur-sim-profile, run alongside the others."""
    common.run_or_exit([common.binary(args.build, "murmur-sim-profile"), "--model", model, "--batch", str(args.batch),
                        "--steps", "60", "--out", os.devnull, "--step-times", path], f"murmur-sim-profile {model}")
    with open(path) as f:
        return [float(line) for line in f if line.strip()]


def write_profile(split, step_s, batch, path):
    with open(split) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text + f"samples-per-s {batch / step_s:.6g}  # single-peer step {1e3 * step_s:.3f} ms\n")


def probe_spec(spec):
    """What the probes run under: `spec` without its bandwidth items. The
    probes measure a message's cost; a scaled link's bandwidth, far below
    the host's, would add a probe model's bytes to it."""
    items = [i for i in spec.split(",") if not i.startswith(("bw=", "uplink="))]
    return ",".join(items) or "loopback"


def message_probe_s(args, profile, spec, out):
    """One ring step's cost on this host under the job's own contention: a
    --peers job of murmur-peer's logreg (7,850 parameters, about no
    compute) under bsp-a2a, its communication time per step over the
    ring's 2(P-1) messages. A communication benchmark of the cluster, as
    nccl-tests is for a GPU one; none of the predicted jobs."""
    run = seed_methods.run_one(seed_args(args, "logreg"), "bsp-a2a", profile, out, probe_spec(spec))
    return run["comm_ms"] / 1e3 / (2 * (args.peers - 1))


def busy_probe_s(args, model, profile, spec, out):
    """One message's cost while the host computes: message_probe_s's job run
    while --peers murmur-sim-profile processes of `model` compute without
    pause (one per peer, as the job's forward and backward passes do)."""
    command = [common.binary(args.build, "murmur-sim-profile"), "--model", model, "--batch", str(args.batch),
               "--steps", "100000", "--out", os.devnull]
    load = []
    try:
        for _ in range(args.peers):
            load.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        message_s = message_probe_s(args, profile, spec, out)
        # A load that ended early would make this an idle figure.
        ended = [p.returncode for p in load if p.poll() is not None]
        if ended:
            sys.exit(f"busy probe: {len(ended)} of the {args.peers} murmur-sim-profile loads ended during the probe "
                     f"(exit status {ended[0]}): {' '.join(command)}")
        return message_s
    finally:
        for process in load:
            process.kill()
            process.wait()


# A model of 13 parameter layers and almost no compute (6,394 parameters).
SPLIT_PROBE_MODEL = "mlp:" + ",".join(["8"] * 12)


def split_probe_s(args, profile, spec, out):
    """(per message, per step): two jobs of almost no compute, logreg under
    bsp-a2a (one ring, 2(P-1) messages a step) and SPLIT_PROBE_MODEL under
    wfbp-a2a (13 rings, 13 x 2(P-1) messages); their iteration times'
    difference is the messages', the rest of the first a cost per step
    (the hand-offs between the trainer and the communication thread,
    waiting for the slowest peer) that does not grow with messages."""
    spec = probe_spec(spec)
    one = seed_methods.run_one(seed_args(args, "logreg"), "bsp-a2a", profile, out + "-one", spec)
    many = seed_methods.run_one(seed_args(args, SPLIT_PROBE_MODEL), "wfbp-a2a", profile, out + "-many", spec)
    ring = 2 * (args.peers - 1)
    message = max(0.0, (many["iteration_ms"] - one["iteration_ms"]) / 1e3 / (12 * ring))
    return message, max(0.0, one["iteration_ms"] / 1e3 - ring * message), one["iteration_ms"] / 1e3


# logreg's one layer (7,850 parameters) cut into 13 partitions of at most
# 604, all in one window: 13 concurrent rings a step.
CONCURRENT_PROBE_RINGS = 13
CONCURRENT_PROBE_PARTITION = 604
CONCURRENT_PROBE_CREDIT = 7852


def concurrent_probe_s(args, profile, spec, out, one_ring_iteration_s, message_s):
    """What each further ring of a step costs per message when rings post
    their steps together (murmur's bytescheduler-a2a window; the links'
    concurrent-message, docs/sim-files.md): logreg under bytescheduler-a2a,
    its layer in CONCURRENT_PROBE_RINGS partitions of one window, against
    the split probe's logreg under bsp-a2a (one ring): the difference, less
    the leader's announcement (a message), over the 12 further rings' 2(P-1)
    messages. At most a lone message's cost (murmur-sim's rule)."""
    probe_args = seed_args(args, "logreg")
    probe_args.partition, probe_args.credit = CONCURRENT_PROBE_PARTITION, CONCURRENT_PROBE_CREDIT
    run = seed_methods.run_one(probe_args, "bytescheduler-a2a", profile, out, probe_spec(spec))
    extra = run["iteration_ms"] / 1e3 - one_ring_iteration_s - message_s
    per_message = extra / ((CONCURRENT_PROBE_RINGS - 1) * 2 * (args.peers - 1))
    return min(message_s, max(0.0, per_message))


def write_cluster(args, profile, spec, link, cores, path, slowest_factor=1.0, message_s=None, busy_s=None,
                  concurrent_s=None):
    """A murmur-sim cluster file: `link` is the profile's (latency s,
    bandwidth B/s or None); `message_s`, when given, replaces its latency;
    `busy_s` is its busy-latency (no less than the latency); `concurrent_s`
    its concurrent-message (no more than the latency)."""
    latency, bandwidth = link
    latency = message_s if message_s is not None else latency + args.fabric_latency_us * 1e-6
    bandwidth = min(bandwidth or float("inf"), args.fabric_GBps * 1e9)
    link = f"latency={latency * 1e6:.3f}us bandwidth={bandwidth / 1e6:.3f}MB/s"
    if busy_s is not None:
        link += f" busy-latency={max(busy_s, latency) * 1e6:.3f}us"
    if concurrent_s is not None:
        link += f" concurrent-message={min(concurrent_s, latency) * 1e6:.3f}us"
    with open(path, "w") as f:
        f.write(f"# {args.peers} murmur peers on one host, link profile {profile} ({spec}) over "
                f"libfabric {args.provider}\n"
                f"gpus {args.peers}\ngpus-per-node 1\nstack murmur\ninter-node {link}\nintra-node {link}\n")
        if cores:
            f.write(f"host peers={args.peers} cores={cores}\n")
        if slowest_factor > 1:
            f.write(f"straggler rank=0 slowdown={slowest_factor:.4f}  # the slowest of {args.peers} concurrent peers\n")


def predict(args, profile_file, cluster_file, methods):
    """murmur-sim's iteration time in seconds, by murmur method name."""
    command = [common.binary(args.build, "murmur-sim"), "--model", profile_file, "--cluster", cluster_file,
               "--method", ",".join(SIM_NAMES[m] for m in methods), "--csv"]
    for flag, value in knob_flags(args).items():
        command += [flag, str(value)]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"murmur-sim failed ({done.returncode}): {done.stderr.strip()}")
    # The model's name may hold commas (mlp:96,40,...): csv unquotes it.
    by_sim_name = {row["method"]: float(row["iteration_ms"]) / 1e3 for row in csv.DictReader(io.StringIO(done.stdout))}
    return {m: by_sim_name[SIM_NAMES[m]] for m in methods}


# The methods' partition knobs: murmur-peer's flags, which murmur-sim takes
# too (in parameters), by this script's argument that sets each.
KNOB_FLAGS = {"--bytescheduler-partition": "partition", "--bytescheduler-credit": "credit",
              "--ps-partition": "ps_partition"}


def knob_flags(args):
    """The knobs the jobs ran with, as flags (none: murmur-peer's defaults).
    --credit counts only with --partition, as seed_methods.run_one passes it."""
    flags = {}
    if args.partition:
        flags["--bytescheduler-partition"], flags["--bytescheduler-credit"] = args.partition, args.credit
    if args.ps_partition:
        flags["--ps-partition"] = args.ps_partition
    return flags


def seed_args(args, model):
    """seed_methods.run_one's arguments for one model."""
    return types.SimpleNamespace(build=args.build, peers=args.peers, timeout=args.timeout, model=model, epochs=1,
                                 batch=args.batch, train_examples=args.train_examples, provider=args.provider,
                                 partition=args.partition, credit=args.credit, ps_partition=args.ps_partition,
                                 servers=0, sign_lr=0.001)


def model_tag(model):
    """A model name as part of a directory name (mlp:16,8 -> mlp-16_8)."""
    return model.replace(":", "-").replace(",", "_")


def resolve_links(args, model, out):
    """(specs: profile -> --link-profile spec, links: profile -> (latency s,
    bandwidth B/s or None)) for `model`: the scaled profiles' bandwidth
    follows the model's bytes and compute (seed_methods.py)."""
    scaled = types.SimpleNamespace(**vars(seed_args(args, model)), out=out, compute_s_per_step=0, model_bytes=0,
                                   scale_model=args.scale_model)
    specs, derivations = seed_methods.resolve_specs(scaled, args.profiles)
    return specs, links_of(args.profiles, derivations)


def links_of(profiles, derivations):
    links = {p: LINKS[p] for p in profiles if p in LINKS}
    for d in derivations:
        links[d["profile"]] = (d["latency_s"], d["bw_bytes_per_s"])
    return links


# murmur-peer's flags that fix a measured job's shape, and the attribute of
# this script's arguments each sets (--measured).
SHAPE_FLAGS = {"--model": "model", "--batch": "batch", "--train-examples": "train_examples", "--provider": "provider"}


def flag_value(command, flag):
    """The word after `flag` in a job's command line (None: not given)."""
    return command[command.index(flag) + 1] if flag in command else None


def load_measured(args, directory):
    """A seed_methods.py output directory as this script's measured side:
    sets args' shape (peers, batch, train examples, provider, profiles) and
    the methods' partition knobs from the jobs' own command lines, refusing
    a directory whose jobs differ in them, and returns (model, specs, links, {(profile, method): [iteration s]})."""
    path = os.path.join(directory, "seed_methods.json")
    try:
        with open(path) as f:
            table = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"--measured: cannot read {path}: {e}")
    shape, measured, knobs = None, {}, {}
    for row in table["rows"]:
        if row["method"] not in SIM_NAMES:
            continue  # murmur-sim models the survey's methods only
        summary_path = os.path.join(directory, f"{row['profile']}-{row['method']}-0", "summary.json")
        summary = common.read_summary(summary_path)
        command = summary["command"]
        if "--servers" in command:
            sys.exit(f"--measured: {summary_path}: the job ran with --servers, which murmur-sim's cost models do "
                     f"not have (every peer serves)")
        if row["profile"] not in LINKS and row["profile"] not in {d["profile"] for d in table["scaled"]}:
            sys.exit(f"--measured: {summary_path}: link profile '{row['profile']}' is neither one this script "
                     f"knows ({', '.join(LINKS)}) nor a scaled one the run derived")
        this = {"peers": summary["np"]}
        for flag, key in SHAPE_FLAGS.items():
            this[key] = flag_value(command, flag)
            if this[key] is None:
                sys.exit(f"--measured: {summary_path}: the job's command has no {flag}")
        if shape is None:
            shape = this
        elif this != shape:
            sys.exit(f"--measured: {summary_path}: a job of another shape ({this}) than the others ({shape})")
        measured[(row["profile"], row["method"])] = [r["iteration_ms"] / 1e3 for r in row["runs"]]
        for flag, key in KNOB_FLAGS.items():
            given = flag_value(command, flag)
            if given is not None:
                value = int(given)
                if knobs.setdefault(key, value) != value:
                    sys.exit(f"--measured: {summary_path}: {flag} {value}, another job's {knobs[key]}")
    if not measured:
        sys.exit(f"--measured: {path} has no run of a method murmur-sim models ({', '.join(SIM_NAMES)})")
    args.peers, args.batch = int(shape["peers"]), int(shape["batch"])
    args.partition, args.credit = knobs.get("partition", 0), knobs.get("credit", args.credit)
    args.ps_partition = knobs.get("ps_partition", 0)
    args.train_examples, args.provider = int(shape["train_examples"]), shape["provider"]
    args.profiles = list(dict.fromkeys(profile for profile, _ in measured))
    return shape["model"], table["specs"], links_of(args.profiles, table["scaled"]), measured


def predictions(args, model, profiles, specs, link_of, methods, base):
    """Yields (profile, method, {kind: predicted s, and the probes' figures})
    for one repeat: the compute profiles, the probes and murmur-sim's
    predictions (KINDS, module doc), measured and made before any job they
    predict."""
    compute = compute_profiles(args, model, base)
    solo_file, shared_file = os.path.join(base, "solo.profile"), os.path.join(base, "shared.profile")
    write_profile(compute["split"], compute["solo_step_s"], args.batch, solo_file)
    write_profile(compute["split"], compute["shared_step_s"], args.batch, shared_file)
    for profile in profiles:
        spec, link = specs[profile], link_of[profile]
        cores_cluster = os.path.join(base, f"{profile}-cores.cluster")
        shared_cluster = os.path.join(base, f"{profile}-shared.cluster")
        write_cluster(args, profile, spec, link, args.cores, cores_cluster)
        write_cluster(args, profile, spec, link, 0, shared_cluster, compute["slowest_factor"])
        probed_cluster = os.path.join(base, f"{profile}-probed.cluster")
        message_s = message_probe_s(args, profile, spec, os.path.join(base, f"{profile}-probe"))
        write_cluster(args, profile, spec, link, 0, probed_cluster, compute["slowest_factor"], message_s)
        # The split probe's per-step cost joins the profile's total, less the
        # straggler's slowdown, which murmur-sim applies to it.
        split_message_s, split_step_s, one_ring_s = split_probe_s(args, profile, spec,
                                                                  os.path.join(base, f"{profile}-split"))
        concurrent_s = concurrent_probe_s(args, profile, spec, os.path.join(base, f"{profile}-concurrent"), one_ring_s,
                                          split_message_s)
        split_cluster = os.path.join(base, f"{profile}-split.cluster")
        split_file = os.path.join(base, f"{profile}-split.profile")
        write_cluster(args, profile, spec, link, 0, split_cluster, compute["slowest_factor"], split_message_s,
                      concurrent_s=concurrent_s)
        write_profile(compute["split"], compute["shared_step_s"] + split_step_s / compute["slowest_factor"],
                      args.batch, split_file)
        busy_s = busy_probe_s(args, model, profile, spec, os.path.join(base, f"{profile}-busy"))
        busy_cluster = os.path.join(base, f"{profile}-busy.cluster")
        write_cluster(args, profile, spec, link, 0, busy_cluster, compute["slowest_factor"], split_message_s, busy_s,
                      concurrent_s)
        predicted = {"cores": predict(args, solo_file, cores_cluster, methods),
                     "shared": predict(args, shared_file, shared_cluster, methods),
                     "probed": predict(args, shared_file, probed_cluster, methods),
                     "split": predict(args, split_file, split_cluster, methods),
                     "busy": predict(args, split_file, busy_cluster, methods)}
        for method in methods:
            yield profile, method, {**{kind: predicted[kind][method] for kind in KINDS}, "message_s": message_s,
                                    "split_message_s": split_message_s, "split_step_s": split_step_s,
                                    "concurrent_message_s": concurrent_s, "busy_message_s": busy_s}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=common.DEFAULT_BUILD)
    p.add_argument("--peers", type=int, default=4)
    p.add_argument("--models", default="cnn,mlp:96,40,128,24,80,32,112,48,64,16,72,56",
                   help="murmur-peer --model values; ';' separates them when one holds commas (mlp:H1,H2,...)")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--train-examples", type=int, default=4000, help="per peer (one epoch)")
    p.add_argument("--provider", default="tcp")
    p.add_argument("--profiles", default="loopback,10gbe")
    p.add_argument("--methods", default=",".join(SIM_NAMES))
    p.add_argument("--cores", type=int, default=os.cpu_count(), help="this host's cores (the cluster's host line)")
    p.add_argument("--fabric-latency-us", type=float, default=18.0,
                   help="libfabric tcp's one-way message cost (half fabric_bench's 8-byte round trip)")
    p.add_argument("--fabric-GBps", type=float, default=0.5, help="libfabric tcp's throughput between two peers")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--partition", type=int, default=0, help="bytescheduler's partition (0: its default)")
    p.add_argument("--credit", type=int, default=4000000, help="with --partition: bytescheduler's credit")
    p.add_argument("--ps-partition", type=int, default=0, help="the -ps methods' largest shard (0: its default)")
    p.add_argument("--scale-model", default="bert-large", choices=sorted(seed_methods.SEED_MODELS),
                   help="the seed model of the scaled profiles")
    p.add_argument("--out", default="/tmp/murmur-sim-vs-runtime")
    p.add_argument("--measured", metavar="DIR",
                   help="predict the jobs of a seed_methods.py output directory instead of running them: the "
                        "peers, model, batch, examples, provider, profiles and links are those jobs' own")
    args = p.parse_args()
    common.stop_on_signals()
    methods = args.methods.split(",")
    for m in methods:
        if m not in SIM_NAMES:
            sys.exit(f"--methods: murmur-sim has no cost model of '{m}' (known: {', '.join(SIM_NAMES)})")
    cells = {}  # (model, profile, method) -> {"measured": [...], kind: [...], ...}
    if args.measured:
        model, specs, link_of, measured = load_measured(args, args.measured)
        models, links = [model], {model: (specs, link_of)}
        methods = [m for m in methods if any(key[1] == m for key in measured)]
        if not methods:
            sys.exit(f"--measured: {args.measured} has no job of --methods {args.methods}")
        for (profile, method), times in measured.items():
            if method in methods:
                cells[(model, profile, method)] = {"measured": times}
        print(f"measured: {model}, {args.peers} peers, {args.train_examples} examples a peer, "
              f"{', '.join(args.profiles)}; {', '.join(methods)}", file=sys.stderr)
    else:
        models = split_models(args.models)
        args.profiles = args.profiles.split(",")
        for profile in args.profiles:
            if profile not in LINKS and profile not in seed_methods.SEED_LINKS:
                sys.exit(f"--profiles: '{profile}' is not one of {', '.join([*LINKS, *seed_methods.SEED_LINKS])}")
        # Once per model, before the repeats: every repeat runs on the same links.
        links = {model: resolve_links(args, model, os.path.join(args.out, f"{model_tag(model)}-links"))
                 for model in models}
    for repeat in range(args.repeats):
        for model in models:
            specs, link_of = links[model]
            base = os.path.join(args.out, f"{model_tag(model)}-{repeat}")
            for profile, method, predicted in predictions(args, model, args.profiles, specs, link_of, methods, base):
                if args.measured and (model, profile, method) not in cells:
                    continue  # the measured directory has no such job
                cell = cells.setdefault((model, profile, method), {"measured": []})
                for key, value in predicted.items():
                    cell.setdefault(key, []).append(value)
                if not args.measured:
                    run = seed_methods.run_one(seed_args(args, model), method, profile,
                                               os.path.join(base, f"{profile}-{method}"), specs[profile])
                    cell["measured"].append(run["iteration_ms"] / 1e3)
                print(f"done: {model} {method} on {profile} ({repeat + 1}/{args.repeats})", file=sys.stderr)
    report(args, cells)


def split_models(text):
    """'cnn,mlp:96,40' -> ['cnn', 'mlp:96,40']: a word after a comma that is a
    number continues the mlp's hidden sizes; ';' always separates."""
    models = []
    for part in text.replace(";", "\n").split("\n"):
        for word in part.split(","):
            if models and word.isdigit() and models[-1].startswith("mlp:"):
                models[-1] += "," + word
            elif word:
                models.append(word)
    return models


def report(args, cells):
    rows = []
    for (model, profile, method), cell in cells.items():
        measured = statistics.median(cell["measured"])
        row = {"model": model, "profile": profile, "method": method, "measured_ms": 1e3 * measured,
               "measured_min_ms": 1e3 * min(cell["measured"]), "measured_max_ms": 1e3 * max(cell["measured"])}
        for kind in KINDS:
            predicted = statistics.median(cell[kind])
            row[f"{kind}_ms"] = 1e3 * predicted
            row[f"{kind}_error"] = (predicted - measured) / measured
        row["runs"] = cell
        rows.append(row)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "sim_vs_runtime.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("| model | link | method | measured ms (min-max) | " + " | ".join(f"{k} ms | error" for k in KINDS) + " |")
    print("|---|---|---|---|" + "---:|---:|" * len(KINDS))
    for r in rows:
        model = "deep mlp" if r["model"].startswith("mlp:") else r["model"]
        predicted = " | ".join(f"{r[k + '_ms']:.1f} | {100 * r[k + '_error']:+.0f}%" for k in KINDS)
        print(f"| {model} | {r['profile']} | {r['method']} | {r['measured_ms']:.1f} ({r['measured_min_ms']:.0f}-"
              f"{r['measured_max_ms']:.0f}) | {predicted} |")
    probes = {}
    for r in rows:
        probes.setdefault(r["profile"], r["runs"]["message_s"])
    for profile, values in probes.items():
        print(f"\nmessage probe, {profile}: {1e6 * statistics.median(values):.0f} us per ring step "
              f"({1e6 * min(values):.0f}-{1e6 * max(values):.0f})")
    for r in rows:
        if r["profile"] in probes:
            m, t = r["runs"]["split_message_s"], r["runs"]["split_step_s"]
            b = r["runs"]["busy_message_s"]
            c = r["runs"]["concurrent_message_s"]
            print(f"\nsplit probe, {r['profile']}: {1e6 * statistics.median(m):.0f} us per message "
                  f"({1e6 * min(m):.0f}-{1e6 * max(m):.0f}), {1e3 * statistics.median(t):.2f} ms per step "
                  f"({1e3 * min(t):.2f}-{1e3 * max(t):.2f}); concurrent probe: {1e6 * statistics.median(c):.0f} us "
                  f"per further concurrent message ({1e6 * min(c):.0f}-{1e6 * max(c):.0f}); busy probe: "
                  f"{1e6 * statistics.median(b):.0f} us per message while the host computes "
                  f"({1e6 * min(b):.0f}-{1e6 * max(b):.0f})")
            del probes[r["profile"]]
    for kind in KINDS:
        errors = [abs(r[f"{kind}_error"]) for r in rows]
        print(f"\nmedian |error|, {kind}: {100 * statistics.median(errors):.1f}% (max {100 * max(errors):.1f}%, "
              f"{len(errors)} rows)")


if __name__ == "__main__":
    main()
