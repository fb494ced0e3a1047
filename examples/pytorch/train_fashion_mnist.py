#!/usr/bin/env python3
"""A PyTorch MLP or CNN on Fashion-MNIST, gossiped by murmur.

    murmur-run -np 8 -- python3 examples/pytorch/train_fashion_mnist.py --algorithm choco --compress topk:0.01
    python3 -m torch.distributed.run --nproc_per_node 4 examples/pytorch/train_fashion_mnist.py
    python3 -m torch.distributed.run --nproc_per_node 4 examples/pytorch/train_fashion_mnist.py --ddp

Each rank trains on its shard (murmur.torch.ShardSampler); --evals-per-epoch
times per epoch (the last at its end) the ranks evaluate the averaged model,
each on its slice of the test set, and rank 0 prints the accuracy with the
wall and training time so far. The last line rank 0 prints is one JSON
object (accuracy, consensus distance, bytes, the evaluations) for scripts
and tests; --summary also writes it to a file. --ddp trains the same script
with torch DDP over gloo instead, as the baseline (under torchrun, or under
murmur-run, whose MURMUR_RANK/MURMUR_WORLD_SIZE it then reads; MASTER_ADDR
and MASTER_PORT as torchrun's).

--wire-interface IFACE adds the bytes IFACE transmitted during training,
summed over ranks (training_record.py says what they include): meant for one
network namespace per rank (bench/experiments/netns.sh), where each rank's
interface carries its traffic only, so both systems are counted alike.
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
from training_record import TrainingRecord, WireCounter, evaluation_steps  # noqa: E402


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


class ShardBatches:
    """The batches a DataLoader(TensorDataset(x, y), batch_size, sampler,
    drop_last=True) yields, the same examples in the same order, gathered
    with one index per batch: the DataLoader indexes and stacks example by
    example in Python, a fifth of the MLP's step on one core, and uneven
    steps keep a rank's neighbours waiting for its messages
    (bench/python/overhead.py)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, batch_size: int, sampler) -> None:
        self.x, self.y, self.batch_size, self.sampler = x, y, batch_size, sampler

    def __len__(self) -> int:
        return len(self.sampler) // self.batch_size

    def __iter__(self):
        order = torch.tensor(list(self.sampler), dtype=torch.long)
        for b in range(len(self)):
            index = order[b * self.batch_size:(b + 1) * self.batch_size]
            yield self.x[index], self.y[index]


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    return correct_count(model, x, y) / len(x)


def correct_count(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> int:
    model.eval()
    with torch.no_grad():
        correct = sum(int((model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum()) for i in range(0, len(x), 1000))
    model.train()
    return correct


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--algorithm", default="choco", help="dpsgd choco sgp adpsgd allreduce topk-allreduce local-sgd, "
                   "or a gradient method: bsp-a2a wfbp-a2a mg-wfbp bytescheduler-a2a bsp-ps wfbp-ps "
                   "bytescheduler-ps signsgd topk-sgd")
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
    p.add_argument("--evals-per-epoch", type=int, default=1, help="evaluations of the averaged model per epoch")
    p.add_argument("--wire-interface", default="", help="count the bytes this interface transmits in training")
    p.add_argument("--summary", default="", help="rank 0 writes the result JSON to this file")
    p.add_argument("--ddp", action="store_true", help="torch DDP over gloo instead of murmur")
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
    loader = ShardBatches(x_train, y_train, args.batch_size, sampler)
    # Every rank takes the same number of steps: the gossip rounds pair up.
    steps = min_steps(peer, len(loader))
    eval_after = evaluation_steps(steps, args.evals_per_epoch)
    record = TrainingRecord(WireCounter(args.wire_interface) if args.wire_interface else None)
    # Each rank evaluates its slice of the test set; the mean of the counts is the accuracy.
    x_slice, y_slice = x_test[peer.rank::peer.size], y_test[peer.rank::peer.size]
    record.start()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader):
            if step == steps:
                break
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
            if step + 1 in eval_after:
                optimizer.flush()  # the round in flight is training: its time and bytes count
                record.pause()
                averaged = optimizer.averaged_model()
                acc = peer.average(float(correct_count(averaged, x_slice, y_slice))) * peer.size / len(x_test)
                entry = record.add_eval(epoch + 1, epoch * steps + step + 1, acc)
                if peer.rank == 0:
                    print(f"epoch {epoch + 1} step {step + 1}: averaged-model accuracy {acc:.4f} at "
                          f"{entry['seconds']:.1f} s ({entry['train_seconds']:.1f} s training)", flush=True)
                record.resume()
        record.pause()
        distance = optimizer.consensus_distance()
        if peer.rank == 0:
            print(f"epoch {epoch + 1}: averaged-model accuracy {acc:.4f}, consensus distance {distance:.4g}",
                  flush=True)
        record.resume()
    optimizer.finish()
    record.stop()
    local = accuracy(model, x_test, y_test)
    stats = peer.stats()
    bytes_sent = peer.average(float(stats.bytes_sent)) * peer.size
    result = {"launcher": peer.launcher, "ranks": peer.size, "algorithm": args.algorithm,
              "compress": args.compress, "topology": args.topology, "period": args.period, "epochs": args.epochs,
              "steps_per_epoch": steps, "averaged_accuracy": acc, "mean_local_accuracy": peer.average(local),
              "consensus_distance": distance, "bytes_sent_all_ranks": int(bytes_sent),
              # per step, mean over ranks: time step() blocked, and murmur's background time in rounds
              "wait_ms_per_step": 1e3 * peer.average(stats.wait_seconds / max(stats.steps, 1)),
              "comm_ms_per_step": 1e3 * peer.average(stats.comm_seconds / max(stats.steps, 1)),
              # per step, mean over ranks: training time outside step()'s waits (forward, backward,
              # the optimizer's update and the hand-off): what a round can hide behind; scaled
              # profiles are calibrated on it (bench/experiments/example_vs_ddp.py --calibrate)
              "compute_ms_per_step": 1e3 * peer.average((record.train_seconds - stats.wait_seconds) /
                                                        max(stats.steps, 1)),
              # the slowest rank's: the job trains until its last rank has
              "train_seconds": max_over_ranks(peer, record.train_seconds),
              "seconds": time.monotonic() - record.started, "evals": record.evals,
              # each rank's own, for splitting the rounds' time (bench/python/overhead.py)
              "per_rank": per_rank_stats(peer, stats)}
    if args.wire_interface:
        result["wire_bytes_all_ranks"] = int(round(peer.average(float(record.wire_bytes)) * peer.size))
        result["wire_interface"] = args.wire_interface
    report(peer.rank, result, args.summary)
    peer.close()
    return 0


def gather_over_ranks(peer, values: list) -> list:
    """Every rank's list of floats, by rank (murmur's collectives are means:
    each rank puts size x its values in a row of its own and the mean of
    the rows holds every rank's; float32, so about 7 significant digits)."""
    rows = torch.zeros(peer.size, len(values), dtype=torch.float32)
    rows[peer.rank] = torch.tensor(values, dtype=torch.float32) * peer.size
    peer.average(rows)
    return rows.tolist()


def max_over_ranks(peer, value: float) -> float:
    """The largest of every rank's value."""
    return max(row[0] for row in gather_over_ranks(peer, [value]))


def per_rank_stats(peer, stats) -> list:
    """Steps, time in rounds (wall and CPU) and time step() blocked, of every rank."""
    names = ("steps", "comm_seconds", "comm_cpu_seconds", "wait_seconds")
    rows = gather_over_ranks(peer, [float(getattr(stats, name)) for name in names])
    return [dict(rank=rank, **{name: (round(v) if name == "steps" else v) for name, v in zip(names, row)})
            for rank, row in enumerate(rows)]


def report(rank: int, result: dict, summary: str) -> None:
    if rank != 0:
        return
    text = json.dumps(result)
    print(text, flush=True)
    if summary:
        with open(summary, "w") as f:
            f.write(text + "\n")


def min_steps(peer, own: int) -> int:
    """The fewest batches any rank has (iid shards differ by one example,
    Dirichlet shards by much more)."""
    return int(min(row[0] for row in gather_over_ranks(peer, [float(own)])))


def train_ddp(args, model, sgd, x_train, y_train, x_test, y_test) -> int:
    import torch.distributed as dist

    # torchrun sets RANK and WORLD_SIZE; murmur-run (e.g. into netns.sh's namespaces) its own names.
    launcher = "torchrun" if "RANK" in os.environ else "murmur-run"
    rank = int(os.environ.get("RANK", os.environ.get("MURMUR_RANK", "-1")))
    size = int(os.environ.get("WORLD_SIZE", os.environ.get("MURMUR_WORLD_SIZE", "-1")))
    if rank < 0 or size < 1:
        raise SystemExit("train_fashion_mnist.py --ddp: no RANK/WORLD_SIZE (torchrun) or "
                         "MURMUR_RANK/MURMUR_WORLD_SIZE (murmur-run) in the environment")
    dist.init_process_group("gloo", rank=rank, world_size=size)
    ddp = nn.parallel.DistributedDataParallel(model)
    sampler = torch.utils.data.distributed.DistributedSampler(torch.utils.data.TensorDataset(x_train, y_train),
                                                              num_replicas=size, rank=rank, seed=args.seed)
    loader = ShardBatches(x_train, y_train, args.batch_size, sampler)
    steps = len(loader)
    eval_after = evaluation_steps(steps, args.evals_per_epoch)
    record = TrainingRecord(WireCounter(args.wire_interface) if args.wire_interface else None)
    x_slice, y_slice = x_test[rank::size], y_test[rank::size]

    # Tensors handed to gloo stay referenced from Python until the group is
    # destroyed: if gloo's worker thread drops the last reference, it needs the
    # GIL to free the Python object, while the main thread, holding the GIL,
    # joins that thread in ~ProcessGroupGloo (torch 1.13; seen as a hang at exit).
    handed_to_gloo = []

    def all_sum(value: float) -> float:
        t = torch.tensor([value], dtype=torch.float64)
        handed_to_gloo.append(t)
        dist.all_reduce(t)
        return float(t.item())

    record.start()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader):
            sgd.zero_grad()
            F.cross_entropy(ddp(x), y).backward()
            sgd.step()
            if step + 1 in eval_after:
                record.pause()
                acc = all_sum(correct_count(model, x_slice, y_slice)) / len(x_test)
                entry = record.add_eval(epoch + 1, epoch * steps + step + 1, acc)
                if rank == 0:
                    print(f"epoch {epoch + 1} step {step + 1}: DDP accuracy {acc:.4f} at "
                          f"{entry['seconds']:.1f} s ({entry['train_seconds']:.1f} s training)", flush=True)
                record.resume()
    record.stop()
    result = {"launcher": launcher, "ranks": size, "algorithm": "ddp", "epochs": args.epochs,
              "steps_per_epoch": steps, "averaged_accuracy": acc,
              "seconds": time.monotonic() - record.started, "evals": record.evals}
    times = [torch.zeros(1, dtype=torch.float64) for _ in range(size)]
    mine = torch.tensor([record.train_seconds], dtype=torch.float64)
    handed_to_gloo += [*times, mine]
    dist.all_gather(times, mine)
    result["train_seconds"] = max(float(t.item()) for t in times)  # the slowest rank's, as murmur's
    if args.wire_interface:
        result["wire_bytes_all_ranks"] = int(all_sum(record.wire_bytes))
        result["wire_interface"] = args.wire_interface
    report(rank, result, args.summary)
    del ddp  # its reducer holds the group too; both go while handed_to_gloo still holds the tensors
    dist.destroy_process_group()
    handed_to_gloo.clear()
    return 0


if __name__ == "__main__":
    sys.exit(main())
