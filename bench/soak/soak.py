#!/usr/bin/python3
"""The soak (issue 20): one long training job, its peers' resources sampled.

    bench/soak/soak.py --minutes 30 --out /tmp/soak --plot docs/img/soak-resources.png
    bench/soak/soak.py --minutes 3 --interval-s 15          # a short try

First a short reference job (--short-epochs, same settings) measures the
seconds per epoch and the accuracy to compare against; then ONE job of
--peers murmur-peer processes under murmur-run trains for as many epochs as
fill --minutes (times --margin). It is one continuous run of the same
processes: a short job looped would restart them and reset exactly what a
soak watches. The job is the MLP on Fashion-MNIST, CHOCO-SGD top-1% on an
exponential graph with --schedule adaptive over --provider tcp (as
bench/experiments/matrix.py's choco-adaptive), links shaped to the
scaled-10gbe profile of docs/experiments.md.

Every --interval-s, per peer (found as murmur-run's descendants carrying
MURMUR_RANK) and for murmur-run itself (rank -1 in the samples: it hosts
the rendezvous server every peer's collectives write keys to), from /proc: VmRSS, VmHWM, threads, open descriptors by kind
(sockets and anonymous inodes are libfabric's endpoints, connections and
wait objects) and memory mappings (all, and /dev/shm or fi_*). The run fails
(exit 1) when any series grows after --warmup-min beyond verdict.py's
tolerance, when a peer restarts, fails or the job does not finish, when it
trained for less than --minutes, or when its averaged model's accuracy falls
more than --accuracy-drop below the short run's.

Writes to --out: samples.csv (one row per sample), summary.json, the
reference and soak jobs' logs, metrics and summaries, and the plot (also to
--plot when given).
"""
import argparse
import csv
import json
import math
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import common  # noqa: E402
import proc_sample  # noqa: E402
import report  # noqa: E402
import verdict  # noqa: E402
from common import Event, Key  # noqa: E402
from plot import plot  # noqa: E402

# docs/experiments.md: 10GbE scaled to the CPU MLP's compute per step.
SCALED_10GBE = "lat=25us,bw=470480kbit"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=30, help="training time of the soak job")
    p.add_argument("--peers", type=int, default=8)
    p.add_argument("--interval-s", type=float, default=60, help="seconds between samples")
    p.add_argument("--warmup-min", type=float, default=None,
                   help="minutes excluded from the verdict (default 5, or a third of runs under 15 minutes)")
    p.add_argument("--profile", default=SCALED_10GBE, help="murmur-run --profile (default: scaled-10gbe)")
    p.add_argument("--provider", default="tcp", help="murmur-peer --provider")
    p.add_argument("--backend", default="libfabric", help="murmur-peer --backend")
    p.add_argument("--schedule", default="adaptive:min_ratio=0.0625",
                   help="murmur-peer --schedule. The floor keeps choco (gamma 0.1) above its stability bound "
                        "of about gamma/2 (docs/scheduler-results.md): with the default floor (0.001) a "
                        "1300-epoch soak diverged at epoch ~600 (docs/testing.md, 'Soak')")
    p.add_argument("--short-epochs", type=int, default=5, help="epochs of the reference run (README's main job)")
    p.add_argument("--epochs", type=int, default=None, help="soak epochs (default: from the reference run's pace)")
    p.add_argument("--margin", type=float, default=1.15,
                   help="epochs for this many times --minutes at the reference pace (the soak must not end early)")
    p.add_argument("--accuracy-drop", type=float, default=0.01,
                   help="the soak's averaged-model accuracy may be this far below the short run's")
    p.add_argument("--launcher-nice", type=int, default=None,
                   help="renice murmur-run (its rendezvous server) to this after start; below 0 needs root")
    p.add_argument("--log-level", default=None, help="MURMUR_LOG_LEVEL for the jobs (e.g. warn: no per-round lines)")
    p.add_argument("--build", default=common.DEFAULT_BUILD)
    p.add_argument("--out", default=None, help="output directory (default /tmp/soak-<time>)")
    p.add_argument("--plot", default=None, help="also write the plot here, e.g. docs/img/soak-resources.png")
    args = p.parse_args()
    if args.warmup_min is None:
        args.warmup_min = 5.0 if args.minutes >= 15 else args.minutes / 3
    args.out = args.out or f"/tmp/soak-{time.strftime('%Y%m%d-%H%M%S')}"
    return args


def job_command(args, name, epochs, timeout_s):
    """murmur-run's command line for a job `name` in --out."""
    launcher = common.binary(args.build, "murmur-run", "soak")
    peer = common.binary(args.build, "murmur-peer", "soak")
    return [launcher, "-np", str(args.peers), "--profile", args.profile,
            "--summary", os.path.join(args.out, f"{name}.summary.json"), "--timeout", str(int(timeout_s)), "--",
            peer, "--model", "mlp", "--algorithm", "choco", "--compress", "topk:0.01", "--topology", "exponential",
            "--schedule", args.schedule, "--provider", args.provider, "--backend", args.backend,
            "--epochs", str(epochs), "--metrics", os.path.join(args.out, f"{name}.metrics-{{rank}}.jsonl")]


def job_environment(args):
    env = dict(os.environ)
    if args.log_level:
        env["MURMUR_LOG_LEVEL"] = args.log_level
    return env


def reference_run(args):
    """The short job: (seconds per epoch, its summary). Exits if it fails."""
    command = job_command(args, "reference", args.short_epochs, 1800)
    print(f"reference: {shlex.join(command)}", flush=True)
    rc = common.run_logged(command, os.path.join(args.out, "reference.log"), env=job_environment(args))
    if rc != 0:
        sys.exit(f"soak: the reference run failed (exit {rc}); see {args.out}/reference.log")
    summary = common.read_summary(os.path.join(args.out, "reference.summary.json"))
    # Epoch to epoch on rank 0: the pace of training, without the setup.
    times = [e[Key.TIME] for e in common.events(common.read_metrics(
        os.path.join(args.out, "reference.metrics-{rank}.jsonl"), 0), Event.EPOCH)]
    per_epoch = (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else summary[Key.WALL_SECONDS]
    print(f"reference: accuracy {summary[Key.AVERAGE_MODEL_TEST_ACCURACY]:.4f}, {per_epoch:.2f} s per epoch",
          flush=True)
    return per_epoch, summary


def wait_for_peers(launcher, np_, deadline_s=120):
    """{rank: pid} once all np_ peers are running; exits if they never are."""
    start = time.time()
    while time.time() - start < deadline_s:
        peers = proc_sample.peers_of(launcher.pid)
        if len(peers) == np_:
            return peers
        if launcher.poll() is not None:
            sys.exit(f"soak: murmur-run exited ({launcher.returncode}) before its {np_} peers were found")
        time.sleep(0.5)
    sys.exit(f"soak: only {len(proc_sample.peers_of(launcher.pid))} of {np_} peers after {deadline_s} s")


def renice_threads(pid, nice):
    """Sets every thread of `pid` to `nice`. On an overloaded host a starved
    rendezvous server misses the peers' 3 s heartbeat deadline and the job
    loses every peer at once (docs/testing.md, "Soak"). Linux's priority is
    per thread and only new threads inherit it: hence each task, once the
    peers run (murmur-run's server thread exists by then)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        os.setpriority(os.PRIO_PROCESS, int(task), nice)


def load_average():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def soak_run(args, epochs, writer, csv_file):
    """Runs the soak job, sampling until it exits. Returns (rc, samples,
    events): events are peers seen exiting before the launcher."""
    timeout_s = args.minutes * 60 * 3 + 600
    command = job_command(args, "soak", epochs, timeout_s)
    print(f"soak: {shlex.join(command)}", flush=True)
    log = open(os.path.join(args.out, "soak.log"), "w")
    log.write(shlex.join(command) + "\n")
    log.flush()
    launcher = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=job_environment(args))
    samples, exited = [], []
    try:
        peers = wait_for_peers(launcher, args.peers)
        if args.launcher_nice is not None:
            renice_threads(launcher.pid, args.launcher_nice)
        t0, k = time.time(), 0
        while True:
            minute = (time.time() - t0) / 60
            for rank, pid in sorted({**peers, verdict.LAUNCHER: launcher.pid}.items()):
                values = proc_sample.sample(pid)
                if values is None:
                    if rank != verdict.LAUNCHER and (rank, pid) not in exited:
                        exited.append((rank, pid))
                        print(f"  minute {minute:.1f}: rank {rank} (pid {pid}) exited", flush=True)
                    continue
                row = {"minute": round(minute, 3), "rank": rank, "pid": pid, **values}
                samples.append(row)
                writer.writerow(row)
            csv_file.flush()
            if samples:
                last = [s for s in samples if s["minute"] == round(minute, 3) and s["rank"] != verdict.LAUNCHER]
                if last:
                    print(f"  minute {minute:5.1f}: rss {min(s['rss_mib'] for s in last):.0f}-"
                          f"{max(s['rss_mib'] for s in last):.0f} MiB, fds {max(s['fds'] for s in last)}, "
                          f"threads {max(s['threads'] for s in last)}", flush=True)
            k += 1
            # Sleep to the next tick, waking early when the job ends.
            try:
                launcher.wait(timeout=max(0.0, t0 + k * args.interval_s - time.time()))
                break
            except subprocess.TimeoutExpired:
                pass
            # A restarted peer has a new pid under the same rank: follow it so
            # that verdict.pids_changed reports it.
            peers.update(proc_sample.peers_of(launcher.pid))
    except BaseException:
        launcher.terminate()
        launcher.wait()
        raise
    return launcher.returncode, samples, exited


def accuracy_check(args, reference, soak_summary):
    ref = reference[Key.AVERAGE_MODEL_TEST_ACCURACY]
    got = soak_summary[Key.AVERAGE_MODEL_TEST_ACCURACY]
    ok = got >= ref - args.accuracy_drop
    return {"reference": ref, "soak": got, "ok": ok}


def main():
    args = parse_args()
    common.stop_on_signals()
    os.makedirs(args.out, exist_ok=True)
    result = {"args": vars(args), "load_average_start": load_average(), "started_unix": time.time()}
    per_epoch, reference = reference_run(args)
    epochs = args.epochs or max(1, math.ceil(args.minutes * 60 * args.margin / per_epoch))
    result.update(reference_seconds_per_epoch=per_epoch, epochs=epochs,
                  reference_accuracy=reference[Key.AVERAGE_MODEL_TEST_ACCURACY])
    how = "as given" if args.epochs else f"for {args.minutes:g} min x {args.margin:g} at the reference pace"
    print(f"soak: {epochs} epochs ({how})", flush=True)
    with open(os.path.join(args.out, "samples.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["minute", "rank", "pid", *proc_sample.SERIES])
        writer.writeheader()
        rc, samples, exited = soak_run(args, epochs, writer, f)
    result.update(load_average_end=load_average(), rc=rc, exited=exited)

    failures = []
    if rc != 0:
        failures.append(f"murmur-run exited {rc}: see {args.out}/soak.log")
    summary_path = os.path.join(args.out, "soak.summary.json")
    soak_summary = common.read_summary(summary_path) if rc == 0 and os.path.exists(summary_path) else None
    if soak_summary is not None:
        finished = len(soak_summary[common.SUMMARY_PEERS])
        if finished != args.peers:
            failures.append(f"{finished} of {args.peers} peers finished")
        wall = soak_summary[Key.WALL_SECONDS]
        result["wall_seconds"] = wall
        if wall < args.minutes * 60:
            failures.append(f"the job trained {wall / 60:.1f} min, less than --minutes {args.minutes:g} "
                            "(it ran faster than the reference run's pace)")
        result["accuracy"] = accuracy_check(args, reference, soak_summary)
        if not result["accuracy"]["ok"]:
            a = result["accuracy"]
            failures.append(f"accuracy {a['soak']:.4f} is more than {args.accuracy_drop} below the short run's "
                            f"{a['reference']:.4f}")
    elif rc == 0:
        failures.append(f"murmur-run wrote no {summary_path}")
    failures += verdict.pids_changed(samples)
    results, series_failures = verdict.judge(samples, args.warmup_min)
    failures += series_failures
    result["series"] = {f"{rank}/{series}": r for (rank, series), r in results.items()}
    result["failures"] = failures
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(result, f, indent=1)

    print(report.table(results, args.warmup_min))
    if "accuracy" in result:
        a = result["accuracy"]
        print(f"\naveraged-model test accuracy: soak {a['soak']:.4f} ({epochs} epochs), "
              f"short run {a['reference']:.4f} ({args.short_epochs} epochs)")
    print(f"load average: start {result['load_average_start']}, end {result['load_average_end']}")
    if samples:
        title = (f"soak: {args.peers} peers, choco top-1% adaptive, {args.profile}, "
                 f"{samples[-1]['minute']:.0f} min")
        for path in filter(None, [os.path.join(args.out, "soak-resources.png"), args.plot]):
            # murmur-run's 20 MiB would squash the peers' curves: it is in the table only.
            plot([s for s in samples if s["rank"] != verdict.LAUNCHER], args.warmup_min, path, title)
            print(f"plot: {path}")
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        sys.exit(1)
    print(f"\nPASSED: every series within tolerance after {args.warmup_min:g} min; results in {args.out}")


if __name__ == "__main__":
    main()
