"""average_model: the exact mean of every rank's model."""

from __future__ import annotations

import copy
from typing import Optional

import torch

from .. import _peer


def average_model(model: torch.nn.Module, peer: Optional[_peer.Peer] = None, inplace: bool = False) -> torch.nn.Module:
    """The mean over all ranks of ``model``'s parameters and floating-point
    buffers (a collective: every rank calls it). Returns an averaged copy,
    or ``model`` itself averaged when ``inplace``. ``peer`` defaults to
    ``murmur.peer()``."""
    peer = peer or _peer.peer()
    target = model if inplace else copy.deepcopy(model)
    tensors = [t for t in list(target.parameters()) + list(target.buffers()) if t.is_floating_point()]
    if not tensors:
        return target
    with torch.no_grad():
        flat = torch.cat([t.detach().reshape(-1).to(device="cpu", dtype=torch.float32) for t in tensors])
        peer.average(flat)
        offset = 0
        for t in tensors:
            n = t.numel()
            t.copy_(flat[offset:offset + n].view_as(t))
            offset += n
    return target
