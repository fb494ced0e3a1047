"""ShardSampler: this rank's shard of a data set, cut as murmur-peer cuts it."""

from __future__ import annotations

from typing import Any, Iterator, Optional

import torch

from .. import _murmur, _peer


class ShardSampler(torch.utils.data.Sampler):
    """Yields the indices of this rank's shard, reshuffled every epoch.

    ``partition`` is murmur-peer's ``--partition``: "iid" (a uniform random
    split) or "dirichlet:<alpha>" (label-skewed shards); the split is the
    C++ one (src/peer/data/partition.h), so a rank gets the same examples
    as murmur-peer's rank with the same seed. ``labels`` are the data set's
    labels (a tensor, array or sequence of ints in 0..num_classes-1); rank
    and world size default to ``murmur.peer()``'s. Every rank computes the
    whole partition, so no shard is sent.
    """

    def __init__(self, labels: Any, rank: Optional[int] = None, world_size: Optional[int] = None,
                 partition: str = "iid", seed: int = 1, shuffle: bool = True,
                 num_classes: Optional[int] = None) -> None:
        if rank is None or world_size is None:
            peer = _peer.peer()
            rank = peer.rank if rank is None else rank
            world_size = peer.size if world_size is None else world_size
        labels = torch.as_tensor(labels)
        if labels.dim() != 1 or labels.is_floating_point():
            raise ValueError(f"murmur.torch.ShardSampler: labels must be one integer per example, "
                             f"not a {labels.dtype} tensor of shape {tuple(labels.shape)}")
        if len(labels) and (int(labels.min()) < 0 or int(labels.max()) > 255):
            raise ValueError("murmur.torch.ShardSampler: labels must be in 0..255")
        if num_classes is None:
            num_classes = int(labels.max()) + 1 if len(labels) else 1
        if not 0 <= rank < world_size:
            raise ValueError(f"murmur.torch.ShardSampler: rank {rank} is outside 0..{world_size - 1}")
        shards = _murmur.partition(partition, labels.to(torch.uint8).numpy().tobytes(), num_classes,
                                   world_size, seed)
        self.indices = torch.tensor(shards[rank], dtype=torch.int64)
        self.rank, self.world_size, self.seed, self.shuffle = rank, world_size, seed, shuffle
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """A new order for each epoch (as torch's DistributedSampler)."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        if not self.shuffle:
            return iter(self.indices.tolist())
        generator = torch.Generator()
        generator.manual_seed(self.seed * 1_000_003 + self.rank * 10_007 + self.epoch)
        return iter(self.indices[torch.randperm(len(self.indices), generator=generator)].tolist())

    def __len__(self) -> int:
        return len(self.indices)
