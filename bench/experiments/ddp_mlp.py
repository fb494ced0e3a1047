#!/usr/bin/python3
"""Baseline outside murmur: PyTorch DDP over gloo training murmur's "mlp" on
Fashion-MNIST with murmur-peer's recipe, one process per rank.

Run it under murmur-run, which starts the ranks (here or in the namespaces
of netns.sh), relays their output and reads their @murmur result events:

    murmur-run -np 8 -- /usr/bin/python3 bench/experiments/ddp_mlp.py --summary ddp.json

or under torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT). The rank and
world size come from RANK/WORLD_SIZE, else MURMUR_RANK/MURMUR_WORLD_SIZE.

Rendezvous: rank 0 hosts gloo's TCP store at MASTER_ADDR:MASTER_PORT
(default 127.0.0.1:29500). Inside netns.sh's namespaces that is rank 0's
namespace, MASTER_ADDR=10.77.0.1, and gloo must be told the interface with
GLOO_SOCKET_IFNAME=veth0 (without it gloo binds to the address this host's
name resolves to, which does not exist inside a namespace).

What matches murmur-peer --model mlp (docs/models.md, docs/training.md):
784-256-128-10 with ReLU; weights uniform in +-sqrt(6/fan_in), the output
layer +-sqrt(3/fan_in), biases 0; softmax cross-entropy (mean over the
batch); SGD momentum 0.9 with weight decay 1e-4 added to the gradient (the
same update as murmur's SgdOptimizer: v = mu v + g + wd w; w -= lr v); lr
0.05 with linear warm-up from lr/10 over half an epoch, then cosine decay to
0 (src/peer/model/lr_schedule.cc, evaluated per step); batch 64 per rank;
iid shards: the 60,000 training images shuffled once with --seed and cut
into N disjoint parts, each rank reshuffling its part every epoch;
ceil(shard / batch) steps per epoch, the last batch short; pixels
(p/255 - 0.2860)/0.3530. DDP averages gradients, murmur's allreduce averages
parameters after each local step; from the same start the two give the same
iterates in exact arithmetic (the momentum buffers average alike), so the
accuracies should agree to noise. The random streams differ from murmur's.

Output: one line per epoch (rank 0), @murmur progress and result events
(docs/launcher.md), and with --summary a JSON file (rank 0) with
average_model_test_accuracy, wall_seconds, bytes_sent (an ESTIMATE, see
estimated_bytes_sent) and epochs: [{"epoch", "time", "test_accuracy"}].
"""
import argparse
import datetime
import gzip
import json
import math
import os
import sys
import time

START = time.monotonic()  # murmur-peer's clock starts in train(), before loading data

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

PIXEL_MEAN = 0.2860
PIXEL_STD = 0.3530


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=os.environ.get("MURMUR_DATA_DIR", "/usr/share/datasets/fashion-mnist"))
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=64, help="examples per step per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--warmup-epochs", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--train-examples", type=int, default=0, help="cap each rank's shard (0: all)")
    p.add_argument("--summary", help="JSON summary written by rank 0")
    p.add_argument("--timeout", type=float, default=300, help="seconds gloo waits for a peer")
    p.add_argument("--log-every", type=int, default=50, help="steps between progress events")
    p.add_argument("--evals-per-epoch", type=int, default=1,
                   help="test-set passes per epoch on rank 0, the last at its end (murmur-peer's rule)")
    return p.parse_args()


def env_int(*names):
    for n in names:
        if n in os.environ:
            return int(os.environ[n])
    sys.exit(f"ddp_mlp: none of {', '.join(names)} is set: start it with murmur-run or torchrun")


def read_idx(path):
    """An IDX file (gzip): uint8 array shaped by its header."""
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        sys.exit(f"ddp_mlp: cannot read {path}: {e} (install dataset-fashion-mnist or pass --data-dir)")
    magic = int.from_bytes(raw[0:4], "big")
    if magic >> 8 != 0x08:  # 0x0000 08 ndim: unsigned bytes
        sys.exit(f"ddp_mlp: {path}: not a uint8 IDX file (magic {magic:#x})")
    ndim = magic & 0xFF
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != math.prod(dims):
        sys.exit(f"ddp_mlp: {path}: {data.size} values, header says {dims}")
    return data.reshape(dims)


def load_split(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    return images.reshape(len(images), -1), labels.astype(np.int64)


def normalize(pixels):
    table = ((np.arange(256) / 255.0 - PIXEL_MEAN) / PIXEL_STD).astype(np.float32)
    return table[pixels]


def make_mlp(seed):
    torch.manual_seed(seed)
    layers = [nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10)]
    dense = [m for m in layers if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for i, m in enumerate(dense):
            gain = 3.0 if i == len(dense) - 1 else 6.0
            bound = math.sqrt(gain / m.in_features)
            m.weight.uniform_(-bound, bound)
            m.bias.zero_()
    return nn.Sequential(*layers)


def learning_rate_at(base, warmup_steps, total_steps, step):
    """src/peer/model/lr_schedule.cc with decay "cosine"."""
    if step < warmup_steps:
        return base * (0.1 + 0.9 * max(step, 0) / warmup_steps)
    span = total_steps - warmup_steps
    if span <= 0:
        return 0.0
    t = min(max((step - warmup_steps) / span, 0.0), 1.0)
    return base * 0.5 * (1.0 + math.cos(math.pi * t))


def evaluate(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            correct += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    model.train()
    return correct / len(x)


def emit_event(event):
    # murmur-run reads these (docs/launcher.md); stdout is a pipe, so flush.
    print("@murmur " + json.dumps(event), flush=True)


def main():
    args = parse_args()
    torch.set_num_threads(1)  # eight ranks share two cores, as murmur-peer's --blas-threads 1
    torch.set_num_interop_threads(1)
    rank = env_int("RANK", "MURMUR_RANK")
    world = env_int("WORLD_SIZE", "MURMUR_WORLD_SIZE")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    if os.environ["MASTER_ADDR"].startswith("127.") and "GLOO_SOCKET_IFNAME" not in os.environ:
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"

    # Data before the network, as murmur-peer: a missing file fails at once.
    train_x, train_y = load_split(args.data_dir, "train")
    order = np.random.default_rng(args.seed).permutation(len(train_x))
    shard = np.array_split(order, world)[rank]  # disjoint, iid
    if args.train_examples > 0:
        shard = shard[:args.train_examples]
    mean_shard = len(train_x) // world
    if args.train_examples > 0:
        mean_shard = min(mean_shard, args.train_examples)
    x = torch.from_numpy(normalize(train_x[shard]))
    y = torch.from_numpy(train_y[shard])
    del train_x, train_y
    if rank == 0:
        test_x, test_y = load_split(args.data_dir, "t10k")
        test_x, test_y = torch.from_numpy(normalize(test_x)), torch.from_numpy(test_y)

    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.timeout))
    model = DistributedDataParallel(make_mlp(args.seed))  # broadcasts rank 0's weights
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                weight_decay=args.weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    parameters = sum(p.numel() for p in model.parameters())
    model_bytes = 4 * parameters

    steps_per_epoch = (mean_shard + args.batch - 1) // args.batch
    total_steps = steps_per_epoch * args.epochs
    warmup_steps = round(args.warmup_epochs * steps_per_epoch)
    # Estimated payload a rank sends per step: a ring all-reduce of the
    # gradients moves 2(N-1)/N of the buffer out of every rank. gloo's real
    # algorithm, framing and DDP's control messages are not counted.
    per_step_bytes = 2 * (world - 1) / world * model_bytes

    rng = torch.Generator().manual_seed(args.seed * 1000003 + rank)
    setup_seconds = time.monotonic() - START  # imports, data, joining the group
    epochs, evals = [], []
    step = 0
    eval_seconds = 0.0  # rank 0's test-set passes; the others wait for it at the next all-reduce

    def timed_eval(epoch):
        """Rank 0: one test-set pass, recorded in evals with its times."""
        nonlocal eval_seconds
        eval_start = time.monotonic()
        acc = evaluate(model.module, test_x, test_y)
        eval_seconds += time.monotonic() - eval_start
        now = time.monotonic() - START
        # train_seconds: as murmur-peer's, the time without the setup and the test-set passes.
        evals.append({"epoch": epoch + 1, "step": step, "time": now, "test_accuracy": acc,
                      "eval_seconds": eval_seconds, "train_seconds": now - setup_seconds - eval_seconds})
        return evals[-1]
    for epoch in range(args.epochs):
        perm = torch.randperm(len(x), generator=rng)
        loss_sum, correct, seen = 0.0, 0, 0
        for s in range(steps_per_epoch):
            idx = perm[(s * args.batch) % len(x):][:args.batch]
            for g in optimizer.param_groups:
                g["lr"] = learning_rate_at(args.lr, warmup_steps, total_steps, step)
            out = model(x[idx])
            loss = loss_fn(out, y[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # DDP averages the gradients over the ranks here
            optimizer.step()
            step += 1
            loss_sum += loss.item() * len(idx)
            correct += (out.argmax(1) == y[idx]).sum().item()
            seen += len(idx)
            if not math.isfinite(loss.item()):
                sys.exit(f"ddp_mlp: rank {rank}: the loss is {loss.item()} at step {step}: lower --lr")
            if (rank == 0 and args.evals_per_epoch > 1 and s + 1 < steps_per_epoch
                    and (s + 1) % max(1, steps_per_epoch // args.evals_per_epoch) == 0):
                timed_eval(epoch)
            if (s + 1) % args.log_every == 0 or s + 1 == steps_per_epoch:
                emit_event({"event": "progress", "rank": rank, "epoch": epoch + 1, "epochs": args.epochs,
                            "step": s + 1, "steps": steps_per_epoch, "loss": loss_sum / seen,
                            "accuracy": correct / seen, "bytes_sent": int(per_step_bytes * step)})
        if rank == 0:
            point = timed_eval(epoch)
            acc = point["test_accuracy"]
            epochs.append({**point, "loss": loss_sum / seen, "train_accuracy": correct / seen})
            print(f"epoch {epoch + 1}/{args.epochs}: loss {loss_sum / seen:.4f}, test accuracy {acc:.4f}, "
                  f"{epochs[-1]['time']:.1f} s", flush=True)

    final_acc = epochs[-1]["test_accuracy"] if rank == 0 else None
    # Every rank reports the (identical) model's accuracy, as murmur's peers do.
    shared = torch.tensor([final_acc if rank == 0 else 0.0], dtype=torch.float64)
    dist.broadcast(shared, 0)
    final_acc = shared.item()
    wall = time.monotonic() - START
    sent = int(per_step_bytes * step)
    emit_event({"event": "result", "rank": rank, "test_accuracy": final_acc,
                "average_model_test_accuracy": final_acc, "bytes_sent": sent, "bytes_received": sent,
                "wall_seconds": wall, "algorithm": "ddp-gloo", "bytes_are_estimates": True,
                "steps": step, "parameters": parameters})
    if rank == 0 and args.summary:
        summary = {
            "average_model_test_accuracy": final_acc,
            "wall_seconds": wall,
            "setup_seconds": setup_seconds,
            "bytes_sent": sent * world,
            "bytes_sent_is_estimate": True,
            "bytes_sent_estimate": "2(N-1)/N x model bytes x steps x N (ring all-reduce payload)",
            "model_bytes": model_bytes,
            "parameters": parameters,
            "steps": step,
            "world_size": world,
            "backend": "gloo",
            "torch": torch.__version__,
            "epochs": epochs,
            "evals": evals,
        }
        tmp = args.summary + ".tmp"
        with open(tmp, "w") as f:
            json.dump(summary, f, indent=1)
        os.replace(tmp, args.summary)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
