#!/usr/bin/env python3
"""The chaos driver: issue 18's failure scenarios on real training jobs.

Each scenario runs murmur-run with murmur-peer (MLP on Fashion-MNIST,
choco top-1% on an exponential graph unless named) and injects its faults
when the peers' metrics files say they reached the right epoch; the
uninterrupted run of the same job runs beside it. Results: one markdown
table per scenario on stdout and a CSV in --out, with the commands.

    bench/resilience/chaos.py --scenarios kill,restart,stop,launcher,join,resume,straggler,quiet

Scenarios:
  baseline    no fault (every other scenario's reference)
  kill        SIGKILL one peer in epoch 2, another in epoch 3 (ranks 3
              and 5; in a smaller job, its last rank in their place, and
              one kill only where both would be the same rank)
  restart     --on-failure restart --max-restarts 1: the peer killed in
              epoch 2 is started again and joins as a new member
  join        two more peers join with murmur-run --join in epoch 3
  stop        SIGSTOP one peer for --stop-seconds in epoch 2, then SIGCONT
  stop-restart  the same under --on-failure restart --max-restarts 1: the
              woken peer learns it is out and exits, murmur-run starts it
              again, and it rejoins as a new member
  resume      the job stopped after epoch 2 (--stop-after-epoch, with
              --checkpoint-dir) and started again with --resume: with
              the same seeds its accuracy is the baseline's to the digit
              (tests/peer/train_job_test.cc compares the checkpoints' bytes)
  launcher    SIGKILL murmur-run (and the rendezvous it hosts) in epoch 1,
              then one peer in epoch 3 (rank 5, or the last rank)
  straggler   one peer held to a quarter of a core for the whole run
              (SIGSTOP/SIGCONT duty cycle, 25 ms of every 100 ms running:
              containers without cgroup v2 delegation cannot set cpu.max)
  quiet       no fault, the other core kept busy: counts false alarms

What each row reports: survivors, their averaged model's test accuracy
(mean over survivors), wall time and its ratio to the baseline, the view
changes, and per kill the time until each survivor adopted the view
without the victim (min-max over survivors).
"""
import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402

E, K = common.Event, common.Key


SCENARIOS = ("baseline", "kill", "restart", "join", "stop", "stop-restart", "resume", "launcher", "straggler", "quiet")
# The scenarios that take a peer out and measure what the others do without it.
NEED_A_SURVIVOR = ("kill", "restart", "stop", "stop-restart", "launcher")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenarios", default="kill,restart,stop,launcher,join,resume,straggler,quiet")
    p.add_argument("--algorithms", default="choco", help="comma list; 'kill' runs each of them")
    p.add_argument("--np", type=int, default=8)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--runs", type=int, default=1, help="repetitions of each row (report ranges)")
    p.add_argument("--stop-seconds", type=float, default=20)
    p.add_argument("--train-examples", type=int, default=0, help="cap each shard (0: whole shard)")
    p.add_argument("--peer-args", default="", help="more murmur-peer flags, e.g. '--provider tcp'")
    p.add_argument("--build", default=common.DEFAULT_BUILD)
    p.add_argument("--out", default=None)
    p.add_argument("--timeout", type=int, default=1200)
    args = p.parse_args()
    scenarios = args.scenarios.split(",")
    unknown = [s for s in scenarios if s not in SCENARIOS]
    if unknown:
        p.error(f"--scenarios: unknown {', '.join(unknown)} (known: {', '.join(SCENARIOS)})")
    if args.np < 1:
        p.error(f"--np {args.np}: at least 1 peer")
    victims = [s for s in scenarios if s in NEED_A_SURVIVOR]
    if args.np < 2 and victims:
        p.error(f"--np {args.np}: scenarios {', '.join(victims)} take a peer out and need at least 2 (a victim and a survivor)")
    return args


def peer_flags(algorithm):
    flags = ["--model", "mlp", "--algorithm", algorithm]
    if algorithm in ("choco", "dpsgd", "sgp", "adpsgd"):
        flags += ["--topology", "one-peer-exponential" if algorithm == "sgp" else "exponential"]
    if algorithm == "choco":
        flags += ["--compress", "topk:0.01"]
    return flags


class Job:
    """One murmur-run job and its peers' metrics files, read as they grow."""

    def __init__(self, args, name, algorithm, out_dir, policy=("--on-failure", "continue"), extra=()):
        self.dir = out_dir / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.metrics = str(self.dir / "metrics-{rank}.jsonl")
        self.launcher = common.binary(args.build, "murmur-run", "chaos")
        peer = common.binary(args.build, "murmur-peer", "chaos")
        self.program = [peer, *peer_flags(algorithm), "--epochs", str(args.epochs), "--metrics", self.metrics]
        if args.train_examples:
            self.program += ["--train-examples", str(args.train_examples)]
        self.program += args.peer_args.split() + list(extra)
        self.port = free_port()
        self.token = f"chaos-{os.getpid()}-{self.port}"
        self.command = [self.launcher, "-np", str(args.np), *policy, "--min-np", str(args.np // 2),
                        "--rendezvous-port", str(self.port), "--token", self.token,
                        "--summary", str(self.dir / "summary.json"), "--timeout", str(args.timeout), "--",
                        *self.program]
        self.joiners = []
        self.np = args.np
        self.log = open(self.dir / "murmur-run.log", "w")
        self.start = time.time()
        self.process = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT)
        self.kills = []  # (rank, unix time)

    def join(self, count):
        """murmur-run --join: `count` more peers into this running job."""
        command = [self.launcher, "-np", str(count), "--join", f"127.0.0.1:{self.port}", "--token", self.token,
                   "--", *self.program]
        log = open(self.dir / f"join-{len(self.joiners)}.log", "w")
        self.joiners.append((time.time(), subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)))

    def ranks(self):
        """Every rank that wrote a metrics file (joiners and restarts have new ranks)."""
        prefix, suffix = Path(self.metrics).name.split("{rank}")
        out = []
        for path in self.dir.glob(prefix + "*" + suffix):
            middle = path.name[len(prefix):len(path.name) - len(suffix)]
            if middle.isdigit():
                out.append(int(middle))
        return sorted(out)

    def records(self, rank):
        path = Path(self.metrics.replace("{rank}", str(rank)))
        if not path.exists():
            return []
        out = []
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a line being written
        return out

    def summary(self, rank):
        return [r for r in self.records(rank) if r.get(K.EVENT) == E.SUMMARY][-1]

    def pid(self, rank):
        for r in self.records(rank):
            if r.get(K.EVENT) == E.START:
                return r[K.PID]
        return None

    def epochs_done(self, rank):
        return sum(1 for r in self.records(rank) if r.get(K.EVENT) == E.EPOCH)

    def wait_epoch(self, rank, epoch, timeout=1200):
        """Until `rank` is in `epoch` (1-based): epoch - 1 epochs done."""
        deadline = time.time() + timeout
        while self.epochs_done(rank) < epoch - 1:
            # murmur-run may be gone (scenario "launcher"): the peer's own
            # summary or exit ends the wait.
            if time.time() > deadline or self.finished_or_gone(rank):
                return False
            time.sleep(0.2)  # polling files another process writes
        return True

    def wait_started(self, rank, timeout=600):
        """Until `rank` trains (its start record is written)."""
        deadline = time.time() + timeout
        while self.pid(rank) is None:
            if time.time() > deadline:
                return False
            time.sleep(0.2)  # polling a file another process writes
        return True

    def rank_or_last(self, rank):
        """`rank`, or the job's last rank where it has no such rank: a
        wait for a rank that never starts would last the whole timeout."""
        return min(rank, self.np - 1)

    def signal_peer(self, rank, signo):
        pid = self.pid(rank)
        if pid:
            os.kill(pid, signo)
            if signo == signal.SIGKILL:
                self.kills.append((rank, time.time()))

    def wait(self, timeout):
        """Until every peer's summary (murmur-run may be dead) or the timeout."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            ranks = self.ranks()
            if len(ranks) >= self.np and all(self.finished_or_gone(r) for r in ranks):
                break
            time.sleep(0.5)  # polling files other processes write
        self.end = time.time()
        for process in [self.process] + [p for _, p in self.joiners]:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()

    def finished_or_gone(self, rank):
        if any(r.get(K.EVENT) == E.SUMMARY for r in self.records(rank)):
            return True
        pid = self.pid(rank)
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
            return False
        except ProcessLookupError:
            return True

    def result(self):
        survivors, accuracy, delays, entered = [], [], {}, {}
        generations = set()
        for rank in self.ranks():
            recs = self.records(rank)
            summary = [r for r in recs if r.get(K.EVENT) == E.SUMMARY]
            if summary:
                survivors.append(rank)
                accuracy.append(summary[-1][K.AVERAGE_MODEL_TEST_ACCURACY])
            for r in recs:
                if r.get(K.EVENT) != E.VIEW:
                    continue
                generations.add(r[K.GENERATION])
                for joined in r[K.JOINED]:
                    entered.setdefault(joined, r[K.UNIX_TIME])
                for victim, at in self.kills:
                    if victim not in r[K.MEMBERS] and summary:
                        delays.setdefault(victim, {}).setdefault(rank, r[K.UNIX_TIME] - at)
        views = len(generations)
        per_kill = {v: (min(d.values()), max(d.values())) for v, d in delays.items() if d}
        # A new member's time from its start (a join, or the kill its
        # restart followed) to the first view that has it.
        starts = [t for _, t in self.kills] + [t for t, _ in self.joiners]
        join_delay = sorted(t - min(starts) for t in entered.values()) if starts and entered else []
        # And from the new member's own process start: its start record's
        # time less the setup it reports (dataset, join), which excludes
        # the launcher's reaction to the kill.
        own_delay = []
        for rank, at in sorted(entered.items()):
            start = next((r for r in self.records(rank) if r.get(K.EVENT) == E.START), None)
            summary = [r for r in self.records(rank) if r.get(K.EVENT) == E.SUMMARY]
            if start and summary and K.UNIX_TIME in start:
                own_delay.append(at - (start[K.UNIX_TIME] - summary[-1][K.SETUP_SECONDS]))
        # The job's time is its finishers' (a peer the others expelled may
        # take longer to learn it and exit; the driver waits for it too).
        walls = [self.summary(rank)[K.WALL_SECONDS] for rank in survivors]
        return {"survivors": len(survivors), "accuracy": sum(accuracy) / len(accuracy) if accuracy else float("nan"),
                "accuracy_range": (min(accuracy), max(accuracy)) if accuracy else (float("nan"),) * 2,
                "wall": max(walls) if walls else self.end - self.start, "views": views, "view_delay": per_kill, "join_delay": join_delay,
                "own_start_delay": sorted(own_delay)}


def seconds_list(values):
    return " ".join(f"{d:.2f}" for d in values)


def busy_core(stop):
    while not stop.is_set():
        pass  # the load itself: one core kept busy on purpose (scenario "quiet")


def duty_cycle(job, rank, stop, running=0.025, period=0.1):
    pid = None
    while pid is None and not stop.is_set():
        pid = job.pid(rank)
        time.sleep(0.1)
    while not stop.is_set():
        try:
            os.kill(pid, signal.SIGSTOP)
            time.sleep(period - running)
            os.kill(pid, signal.SIGCONT)
            time.sleep(running)
        except ProcessLookupError:
            return


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_resume(args, algorithm, out_dir, index):
    """Scenario "resume": two jobs, the second continuing the first's checkpoints."""
    name = f"resume-{algorithm}-{index}"
    checkpoints = str(out_dir / name / "checkpoints")
    first = Job(args, name + "-stopped", algorithm, out_dir, extra=("--checkpoint-dir", checkpoints,
                                                                      "--stop-after-epoch", "2"))
    first.wait(args.timeout)
    second = Job(args, name, algorithm, out_dir, extra=("--checkpoint-dir", checkpoints, "--resume"))
    second.wait(args.timeout)
    result = second.result()
    result["wall"] += first.result()["wall"]
    return result | {"scenario": "resume", "algorithm": algorithm,
                     "command": " ".join(first.command) + " ; then the same with --resume"}


def run_scenario(args, scenario, algorithm, out_dir, index):
    if scenario == "resume":
        return run_resume(args, algorithm, out_dir, index)
    policy = ("--on-failure", "restart", "--max-restarts", "1") if scenario in ("restart", "stop-restart") else ("--on-failure",
                                                                                                "continue")
    job = Job(args, f"{scenario}-{algorithm}-{index}", algorithm, out_dir, policy)
    stop = threading.Event()
    helpers = []
    if scenario == "kill":
        first, second = job.rank_or_last(3), job.rank_or_last(5)
        if job.wait_epoch(first, 2):
            job.signal_peer(first, signal.SIGKILL)
        if second != first and job.wait_epoch(second, 3):
            job.signal_peer(second, signal.SIGKILL)
    elif scenario == "restart":
        victim = job.rank_or_last(3)
        if job.wait_epoch(victim, 2):
            job.signal_peer(victim, signal.SIGKILL)
    elif scenario == "join":
        if job.wait_epoch(0, 3):
            job.join(2)
    elif scenario in ("stop", "stop-restart"):
        victim = job.rank_or_last(3)
        if job.wait_epoch(victim, 2):
            job.signal_peer(victim, signal.SIGSTOP)
            time.sleep(args.stop_seconds)  # the fault itself: stopped this long
            job.signal_peer(victim, signal.SIGCONT)
    elif scenario == "launcher":
        if job.wait_started(0):
            job.process.send_signal(signal.SIGKILL)
        victim = job.rank_or_last(5)
        if job.wait_epoch(victim, 3):
            job.signal_peer(victim, signal.SIGKILL)
    elif scenario == "straggler":
        helpers.append(threading.Thread(target=duty_cycle, args=(job, job.rank_or_last(3), stop)))
    elif scenario == "quiet":
        helpers.append(threading.Thread(target=busy_core, args=(stop,)))
    for h in helpers:
        h.start()
    job.wait(args.timeout)
    stop.set()
    for h in helpers:
        h.join()
    return job.result() | {"scenario": scenario, "algorithm": algorithm, "command": " ".join(job.command)}


def main():
    args = parse_args()
    out_dir = Path(args.out or f"/tmp/chaos-{int(time.time())}")
    out_dir.mkdir(parents=True, exist_ok=True)
    algorithms = args.algorithms.split(",")
    rows = []
    for algorithm in algorithms:
        for index in range(args.runs):
            base = run_scenario(args, "baseline", algorithm, out_dir, index)
            rows.append(base | {"ratio": 1.0})
            for scenario in args.scenarios.split(","):
                if scenario != "kill" and algorithm != algorithms[0]:
                    continue
                row = run_scenario(args, scenario, algorithm, out_dir, index)
                rows.append(row | {"ratio": row["wall"] / base["wall"]})
                print(json.dumps(rows[-1]), flush=True)
    with open(out_dir / "chaos.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scenario", "algorithm", "finished", "accuracy", "accuracy_min", "accuracy_max", "wall_s", "ratio",
                    "views", "view_delay_s", "join_delay_s", "own_start_delay_s"])
        for r in rows:
            delays = "; ".join(f"rank {v}: {a:.2f}-{b:.2f}" for v, (a, b) in sorted(r["view_delay"].items()))
            lo, hi = r["accuracy_range"]
            w.writerow([r["scenario"], r["algorithm"], r["survivors"], f"{r['accuracy']:.4f}", f"{lo:.4f}", f"{hi:.4f}",
                        f"{r['wall']:.1f}", f"{r['ratio']:.2f}", r["views"], delays,
                        seconds_list(r["join_delay"]),
                        seconds_list(r["own_start_delay"])])
    print("| scenario | algorithm | finished | avg-model accuracy (min-max) | wall s | vs baseline | views | "
          "kill -> new view (s, min-max over survivors) | start -> in a view (s) | own process start -> in a view (s) |")
    print("|---|---|---:|---:|---:|---:|---:|---|---|---|")
    for r in rows:
        delays = "; ".join(f"rank {v}: {a:.2f}-{b:.2f}" for v, (a, b) in sorted(r["view_delay"].items()))
        lo, hi = r["accuracy_range"]
        joins = seconds_list(r["join_delay"])
        print(f"| {r['scenario']} | {r['algorithm']} | {r['survivors']} | {r['accuracy']:.4f} ({lo:.4f}-{hi:.4f}) | "
              f"{r['wall']:.1f} | {r['ratio']:.2f} | {r['views']} | {delays} | {joins} | "
              f"{seconds_list(r['own_start_delay'])} |")
    print(f"\nresults: {out_dir}/chaos.csv; commands in each row's murmur-run.log folder", file=sys.stderr)


if __name__ == "__main__":
    main()
