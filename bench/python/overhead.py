#!/usr/bin/python3
"""The Python path's overhead against murmur-peer: the same gossip setting
(8 ranks, MLP 784-256-128-10, batch 64, choco top-1% on an exponential
graph, 5 epochs) trained once by murmur-peer and once by the PyTorch
example through the `murmur` package, one after the other. Prints, for
each, the background communication time per step (PeerStats.comm_seconds
/ steps: time inside rounds, mean over ranks), the time step() blocked per
step (PeerStats.wait_seconds / steps), the training wall time and the averaged model's accuracy,
then the ratio Python / murmur-peer.

  bench/python/overhead.py --build build [--np 8] [--epochs 5]

One run each: on a shared machine run it when nothing else does
(docs/python.md, "Measured", says what the numbers mean on 2 cores).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOSSIP = ["--algorithm", "choco", "--compress", "topk:0.01", "--topology", "exponential"]


def murmur_peer(build, np, epochs):
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        subprocess.run([os.path.join(build, "src/peer/launcher/murmur-run"), "-np", str(np), "--summary", summary,
                        "--", os.path.join(build, "src/peer/train/murmur-peer"), *GOSSIP, "--model", "mlp",
                        "--epochs", str(epochs)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(summary) as f:
            peers = json.load(f)["peers"]
    wait = sum(p["communication_wait_seconds"] / p["steps"] for p in peers) / len(peers)
    comm = sum(p["communication_thread_seconds"] / p["steps"] for p in peers) / len(peers)
    wall = max(p["wall_seconds"] for p in peers)
    return {"wait_ms_per_step": 1e3 * wait, "comm_ms_per_step": 1e3 * comm, "wall_s": wall,
            "accuracy": peers[0]["average_model_test_accuracy"]}


def python_example(build, np, epochs):
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"), MURMUR_LOG_LEVEL="warn")
    out = subprocess.run([os.path.join(build, "src/peer/launcher/murmur-run"), "-np", str(np), "--",
                          "/usr/bin/python3", os.path.join(ROOT, "examples/pytorch/train_fashion_mnist.py"), *GOSSIP,
                          "--epochs", str(epochs)], check=True, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    line = [x for x in out.splitlines() if '"averaged_accuracy"' in x][-1]
    result = json.loads(line[line.index("{"):])
    return {"wait_ms_per_step": result["wait_ms_per_step"], "comm_ms_per_step": result["comm_ms_per_step"],
            "wall_s": result["seconds"], "accuracy": result["averaged_accuracy"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--np", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    rows = {"murmur-peer": murmur_peer(args.build, args.np, args.epochs),
            "python": python_example(args.build, args.np, args.epochs)}
    print("| run | communication ms/step (background, in rounds) | blocked in step() ms/step "
          "| wall s as reported (murmur-peer: the peer; python: the training loop) | averaged model |")
    print("|---|---:|---:|---:|---:|")
    for name, r in rows.items():
        print(f"| {name} | {r['comm_ms_per_step']:.2f} | {r['wait_ms_per_step']:.2f} | {r['wall_s']:.1f} "
              f"| {100 * r['accuracy']:.2f}% |")
    for what in ("comm", "wait"):
        ratio = rows["python"][f"{what}_ms_per_step"] / rows["murmur-peer"][f"{what}_ms_per_step"]
        print(f"python / murmur-peer, {'communication' if what == 'comm' else 'blocked'} per step: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
