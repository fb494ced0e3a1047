#!/usr/bin/python3
"""The Python path's overhead against murmur-peer: the same gossip setting
(8 ranks, MLP 784-256-128-10, batch 64, choco top-1% on an exponential
graph, 5 epochs) trained once by murmur-peer and once by the PyTorch
example through the `murmur` package, one after the other, each with a
timeline (murmur-run --trace). Prints, for each, per training step and as
the mean over ranks:

  in rounds       the background thread's wall time inside gossip rounds
                  (PeerStats.comm_seconds; murmur-peer's
                  communication_thread_seconds), split into
    CPU           that thread's CPU time in them (comm_cpu_seconds): the
                  rounds' own work (encode, send, decode, mix)
    messages      time blocked waiting for this round's messages (the
                  trace's wait_messages spans on the gossip thread): how
                  much later than this rank its neighbours finished their step
    rest          neither: runnable but without a core, locks
  blocked         the time step() blocked the trainer (wait_seconds)

then the ratio Python / murmur-peer of each. What the Python path itself
could add is CPU work in the round; the waits follow the neighbours'
compute (PyTorch's step is longer and more uneven than murmur-peer's) and
how many ranks share a core (docs/python.md, "Measured").

With --sleep-ms MS the two sides compute alike: each rank sleeps MS per
step instead of training, the same model size, the same gossip, once
through the C++ API (bench/peer/sleep_step_peer) and once through
GossipOptimizer (bench/python/sleep_step_rank.py), --steps steps. The
neighbours' messages then come equally late in both jobs and the rounds'
wall time compares the two ways of driving the Peer and nothing else.

  bench/python/overhead.py --build build [--np 8] [--epochs 5]
  bench/python/overhead.py --build build --sleep-ms 3 [--np 8] [--steps 600]

One run each: on a shared machine run it when nothing else does.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOSSIP = ["--algorithm", "choco", "--compress", "topk:0.01", "--topology", "exponential"]


def message_wait_seconds(trace_path):
    """{rank: seconds the gossip thread waited in wait_messages}."""
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    gossip = {(e["pid"], e["tid"]) for e in events
              if e.get("ph") == "M" and e.get("name") == "thread_name" and e["args"]["name"] == "gossip"}
    waited = collections.defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and e["name"] == "wait_messages" and (e["pid"], e["tid"]) in gossip:
            waited[e["pid"]] += e["dur"] * 1e-6
    return waited


def per_step(ranks, waited):
    """Mean over ranks of each figure per step, in ms; ranks: [(rank, steps, wall, cpu, blocked)]."""
    rows = [(wall / steps, cpu / steps, waited.get(rank, 0.0) / steps, blocked / steps)
            for rank, steps, wall, cpu, blocked in ranks]
    mean = [1e3 * sum(r[i] for r in rows) / len(rows) for i in range(4)]
    return {"comm": mean[0], "cpu": mean[1], "messages": mean[2], "rest": mean[0] - mean[1] - mean[2],
            "blocked": mean[3]}


def murmur_peer(build, np, epochs, tmp):
    summary = os.path.join(tmp, "summary.json")
    subprocess.run([os.path.join(build, "src/peer/launcher/murmur-run"), "-np", str(np), "--summary", summary,
                    "--trace", os.path.join(tmp, "peer"), "--", os.path.join(build, "src/peer/train/murmur-peer"),
                    *GOSSIP, "--model", "mlp", "--epochs", str(epochs)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(summary) as f:
        peers = json.load(f)["peers"]
    ranks = [(p["rank"], p["steps"], p["communication_thread_seconds"], p["communication_thread_cpu_seconds"],
              p["communication_wait_seconds"]) for p in peers]
    row = per_step(ranks, message_wait_seconds(os.path.join(tmp, "peer", "trace.json")))
    row.update(wall_s=max(p["wall_seconds"] for p in peers), accuracy=peers[0]["average_model_test_accuracy"])
    return row


def python_example(build, np, epochs, tmp):
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"), MURMUR_LOG_LEVEL="warn")
    summary = os.path.join(tmp, "python.json")
    subprocess.run([os.path.join(build, "src/peer/launcher/murmur-run"), "-np", str(np), "--trace",
                    os.path.join(tmp, "python"), "--", "/usr/bin/python3",
                    os.path.join(ROOT, "examples/pytorch/train_fashion_mnist.py"), *GOSSIP, "--epochs", str(epochs),
                    "--summary", summary], check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(summary) as f:
        result = json.load(f)
    ranks = [(r["rank"], r["steps"], r["comm_seconds"], r["comm_cpu_seconds"], r["wait_seconds"])
             for r in result["per_rank"]]
    row = per_step(ranks, message_wait_seconds(os.path.join(tmp, "python", "trace.json")))
    row.update(wall_s=result["seconds"], accuracy=result["averaged_accuracy"])
    return row


def sleeping_pair(build, np, sleep_ms, steps, tmp):
    """Both sides of --sleep-ms: {side: row} as the trainers' rows."""
    rows = {}
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"), MURMUR_LOG_LEVEL="warn")
    common = ["--compute-ms", str(sleep_ms), "--steps", str(steps), "--algorithm", "choco", "--topology", "exponential"]
    for side, command in (("C++ API", [os.path.join(build, "bench/peer/sleep_step_peer"), *common, "--compressor",
                                       "topk:0.01"]),
                          ("python", ["/usr/bin/python3", os.path.join(ROOT, "bench/python/sleep_step_rank.py"),
                                      *common, "--compress", "topk:0.01"])):
        trace = os.path.join(tmp, side.replace(" ", "_").replace("+", "p"))
        out = subprocess.run([os.path.join(build, "src/peer/launcher/murmur-run"), "-np", str(np), "--trace", trace,
                              "--", *command], check=True, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True).stdout
        ranks = [json.loads(line[line.index("{"):]) for line in out.splitlines() if '"comm_cpu_seconds"' in line]
        if len(ranks) != np:
            sys.exit(f"overhead.py: {side}: {len(ranks)} of {np} ranks reported")
        row = per_step([(r["rank"], r["steps"], r["comm_seconds"], r["comm_cpu_seconds"], r["wait_seconds"])
                        for r in ranks], message_wait_seconds(os.path.join(trace, "trace.json")))
        rows[side] = row
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--np", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--sleep-ms", type=float, default=None,
                        help="both sides sleep this long per step instead of training")
    parser.add_argument("--steps", type=int, default=600, help="with --sleep-ms: steps per rank")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.sleep_ms is not None:
            rows = sleeping_pair(args.build, args.np, args.sleep_ms, args.steps, tmp)
            title = f"{args.np} ranks sleeping {args.sleep_ms:g} ms per step, {args.steps} steps"
        else:
            rows = {"murmur-peer": murmur_peer(args.build, args.np, args.epochs, tmp),
                    "python": python_example(args.build, args.np, args.epochs, tmp)}
            title = f"{args.np} ranks training"
    base_name, other = list(rows)
    print(f"{title}, ms per step, mean over ranks")
    trained = args.sleep_ms is None
    print("| run | in rounds | of which CPU | waiting for messages | rest | blocked in step() |" +
          (" wall s (murmur-peer: the peer; python: the script) | averaged model |" if trained else ""))
    print("|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if trained else ""))
    for name, r in rows.items():
        print(f"| {name} | {r['comm']:.2f} | {r['cpu']:.2f} | {r['messages']:.2f} | {r['rest']:.2f} "
              f"| {r['blocked']:.2f} |" + (f" {r['wall_s']:.1f} | {100 * r['accuracy']:.2f}% |" if trained else ""))
    for what, label in (("comm", "in rounds"), ("cpu", "CPU in rounds"), ("messages", "waiting for messages"),
                        ("rest", "rest"), ("blocked", "blocked in step()")):
        base = rows[base_name][what]
        ratio = rows[other][what] / base if base > 0 else float("nan")
        print(f"{other} / {base_name}, {label} per step: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
