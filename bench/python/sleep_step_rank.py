#!/usr/bin/python3
"""One rank of bench/python/overhead.py's --sleep-ms pair, the Python side:
the PyTorch example's MLP (784-256-128-10) wrapped in
murmur.torch.GossipOptimizer, with a sleep of --compute-ms per step where
the example would compute (no backward, so the SGD step has nothing to
apply and only the Python path's own calls run). Its C++ twin is
bench/peer/sleep_step_peer.cc; both print one JSON line per rank.

  murmur-run -np 8 -- /usr/bin/python3 bench/python/sleep_step_rank.py --compute-ms 3
"""
import argparse
import json
import time

import torch

import murmur.torch


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algorithm", default="choco")
    parser.add_argument("--compress", default="topk:0.01")
    parser.add_argument("--topology", default="exponential")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--compute-ms", type=float, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    optimizer = murmur.torch.GossipOptimizer(torch.optim.SGD(model.parameters(), lr=0.05), model,
                                             algorithm=args.algorithm, compress=args.compress,
                                             topology=args.topology)
    peer = optimizer.peer
    # As the C++ twin fills its model: rank + a spread by position.
    with torch.no_grad():
        n = optimizer.flat_parameters.numel()
        optimizer.flat_parameters.copy_(peer.rank + (torch.arange(n) % 1009).float() * 1e-3)
    for _ in range(args.steps):
        time.sleep(args.compute_ms / 1000)
        optimizer.step()
    optimizer.flush()
    stats = peer.stats()
    print(json.dumps({"rank": peer.rank, "steps": stats.steps, "comm_seconds": stats.comm_seconds,
                      "comm_cpu_seconds": stats.comm_cpu_seconds, "wait_seconds": stats.wait_seconds}), flush=True)
    peer.close()


if __name__ == "__main__":
    main()
