"""Fashion-MNIST from Debian's dataset-fashion-mnist files (gzip-compressed
IDX, as src/peer/data/idx_file.h reads them): no download, no torchvision."""

from __future__ import annotations

import gzip
import os
import struct
from typing import Tuple

import numpy as np
import torch

DEBIAN_DIR = "/usr/share/datasets/fashion-mnist"


def default_dir() -> str:
    """$MURMUR_DATA_DIR if set and not empty (as murmur-peer), else Debian's."""
    return os.environ.get("MURMUR_DATA_DIR") or DEBIAN_DIR


def _read_idx(path: str, magic: int, dims: int, limit: int = 0) -> np.ndarray:
    """The IDX array at ``path``; with ``limit``, only its first ``limit``
    items are decompressed (tests use a slice: gunzip of the whole training
    set is most of a short run's time)."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: missing; install Debian's dataset-fashion-mnist, "
                                "or set MURMUR_DATA_DIR / --data-dir")
    with gzip.open(path, "rb") as f:
        header = f.read(4 + 4 * dims)
        if len(header) < 4 + 4 * dims or struct.unpack(">I", header[:4])[0] != magic:
            raise ValueError(f"{path}: not an IDX file with magic {magic:#x}")
        shape = list(struct.unpack(">" + "I" * dims, header[4:]))
        if limit:
            shape[0] = min(shape[0], limit)
        want = int(np.prod(shape))
        data = f.read(want)
    if len(data) != want:
        raise ValueError(f"{path}: header says {tuple(shape)} items, the file ends after {len(data)} bytes")
    return np.frombuffer(data, dtype=np.uint8).reshape(shape)


def load(split: str, directory: str = "", limit: int = 0) -> Tuple[torch.Tensor, torch.Tensor]:
    """(images N x 1 x 28 x 28 float32 in [0, 1], labels N int64); split is
    "train" or "t10k"; ``limit``: the first that many examples (0: all)."""
    directory = directory or default_dir()
    images = _read_idx(os.path.join(directory, f"{split}-images-idx3-ubyte.gz"), 0x803, 3, limit)
    labels = _read_idx(os.path.join(directory, f"{split}-labels-idx1-ubyte.gz"), 0x801, 1, limit)
    if len(images) != len(labels):
        raise ValueError(f"{directory}: {len(images)} {split} images but {len(labels)} labels")
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    return x, torch.from_numpy(labels.astype(np.int64))
