#!/usr/bin/env python3
"""A PyTorch MLP or CNN on Fashion-MNIST, gossiped by murmur.

    murmur-run -np 8 -- python3 examples/pytorch/train_fashion_mnist.py --algorithm choco --compress topk:0.01
    python3 -m torch.distributed.run --nproc_per_node 4 examples/pytorch/train_fashion_mnist.py
    python3 -m torch.distributed.run --nproc_per_node 4 examples/pytorch/train_fashion_mnist.py --ddp

Each rank trains on its shard (murmur.torch.ShardSampler); after each epoch
every rank evaluates the averaged model and rank 0 prints it. The last line
rank 0 prints is one JSON object (accuracy, consensus distance, bytes) for
scripts and tests. --ddp trains the same script with torch DDP over gloo
instead (under torchrun), as the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist  # noqa: E402  (beside this script)


def make_model(kind: str) -> nn.Module:
    if kind == "mlp":
        # murmur-peer's --model mlp (docs/models.md), for comparisons.
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    if kind == "cnn":
        return nn.Sequential(nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
    raise ValueError(f"--model '{kind}': expected mlp or cnn")


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        correct = sum(int((model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum()) for i in range(0, len(x), 1000))
    model.train()
    return correct / len(x)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--algorithm", default="choco", help="dpsgd choco sgp adpsgd allreduce topk-allreduce local-sgd")
    p.add_argument("--compress", default="topk:0.01", help="compressor spec (docs/compressors.md)")
    p.add_argument("--topology", default="exponential")
    p.add_argument("--period", type=int, default=1)
    p.add_argument("--schedule", default="fixed")
    p.add_argument("--gamma", type=float, default=None, help="choco's consensus step size")
    p.add_argument("--backend", default=None, help="libfabric (default) or asio")
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64, help="per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--partition", default="iid", help="iid or dirichlet:<alpha>")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data-dir", default="")
    p.add_argument("--train-examples", type=int, default=0, help="use the first N training examples (0: all)")
    p.add_argument("--test-examples", type=int, default=0, help="evaluate on the first N test examples (0: all)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per process")
    p.add_argument("--ddp", action="store_true", help="torch DDP over gloo instead of murmur (under torchrun)")
    return p.parse_args()


def main() -> int:
    args = parse_args()
    torch.set_num_threads(args.threads)
    x_train, y_train = fashion_mnist.load("train", args.data_dir, args.train_examples)
    x_test, y_test = fashion_mnist.load("t10k", args.data_dir, args.test_examples)

    torch.manual_seed(args.seed)  # the same initial model on every rank
    model = make_model(args.model)
    sgd = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    if args.ddp:
        return train_ddp(args, model, sgd, x_train, y_train, x_test, y_test)

    import murmur
    import murmur.torch

    options = {"gamma": args.gamma, "backend": args.backend}  # None: murmur's default
    optimizer = murmur.torch.GossipOptimizer(sgd, model, algorithm=args.algorithm, compress=args.compress,
                                             topology=args.topology, period=args.period, schedule=args.schedule,
                                             **options)
    peer = optimizer.peer
    sampler = murmur.torch.ShardSampler(y_train, partition=args.partition, seed=args.seed, num_classes=10)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_train, y_train),
                                         batch_size=args.batch_size, sampler=sampler, drop_last=True)
    # Every rank takes the same number of steps: the gossip rounds pair up.
    steps = min_steps(peer, len(loader))
    start = time.monotonic()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader):
            if step == steps:
                break
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        optimizer.flush()
        averaged = optimizer.averaged_model()
        acc = accuracy(averaged, x_test, y_test)
        distance = optimizer.consensus_distance()
        if peer.rank == 0:
            print(f"epoch {epoch + 1}: averaged-model accuracy {acc:.4f}, consensus distance {distance:.4g}",
                  flush=True)
    optimizer.finish()
    local = accuracy(model, x_test, y_test)
    stats = peer.stats()
    bytes_sent = peer.average(float(stats.bytes_sent)) * peer.size
    result = {"launcher": peer.launcher, "ranks": peer.size, "algorithm": args.algorithm,
              "compress": args.compress, "epochs": args.epochs, "steps_per_epoch": steps,
              "averaged_accuracy": acc, "mean_local_accuracy": peer.average(local),
              "consensus_distance": distance, "bytes_sent_all_ranks": int(bytes_sent),
              # per step, mean over ranks: time step() blocked, and murmur's background time in rounds
              "wait_ms_per_step": 1e3 * peer.average(stats.wait_seconds / max(stats.steps, 1)),
              "comm_ms_per_step": 1e3 * peer.average(stats.comm_seconds / max(stats.steps, 1)),
              "seconds": time.monotonic() - start}
    if peer.rank == 0:
        print(json.dumps(result), flush=True)
    peer.close()
    return 0


def min_steps(peer, own: int) -> int:
    """The fewest batches any rank has (iid shards differ by one example,
    Dirichlet shards by much more). murmur's collectives are means, so each
    rank puts size x its count in a slot of its own and the mean of the
    vector holds every rank's count."""
    counts = torch.zeros(peer.size, dtype=torch.float32)
    counts[peer.rank] = float(own) * peer.size
    peer.average(counts)
    return int(counts.min().item())


def train_ddp(args, model, sgd, x_train, y_train, x_test, y_test) -> int:
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    ddp = nn.parallel.DistributedDataParallel(model)
    sampler = torch.utils.data.distributed.DistributedSampler(torch.utils.data.TensorDataset(x_train, y_train),
                                                              num_replicas=size, rank=rank, seed=args.seed)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_train, y_train),
                                         batch_size=args.batch_size, sampler=sampler, drop_last=True)
    start = time.monotonic()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            sgd.zero_grad()
            F.cross_entropy(ddp(x), y).backward()
            sgd.step()
        acc = accuracy(model, x_test, y_test)
        if rank == 0:
            print(f"epoch {epoch + 1}: DDP accuracy {acc:.4f}", flush=True)
    if rank == 0:
        print(json.dumps({"launcher": "torchrun", "ranks": size, "algorithm": "ddp", "epochs": args.epochs,
                          "averaged_accuracy": acc, "seconds": time.monotonic() - start}), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
