"""GossipOptimizer: any torch.optim optimizer, with the model gossiped by
murmur after each local step."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import torch

from .. import _peer
from .._tensors import tensor_address


def flatten_parameters(model: torch.nn.Module) -> torch.Tensor:
    """Moves ``model``'s parameters into one flat float32 tensor and makes
    each parameter a view of it; returns the flat tensor.

    Why: murmur's C++ Peer gossips one registered host tensor in place, with
    no copy at all, but gathers several into a staging vector before every
    step and scatters them back after it (src/peer/api/tensor_set.h). One
    copy here, once, saves two per step. Optimizer state is keyed by the
    Parameter objects, which stay the same, so an optimizer made before or
    after this call works. A parameter shared by two modules is laid out once.
    """
    params: List[torch.nn.Parameter] = []
    seen = set()
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        # The checks of a registered tensor, on each parameter so that the
        # error names it; contiguity does not matter, the copy fixes it.
        if p.layout != torch.strided or p.dtype != torch.float32:
            tensor_address(p.data, f"parameter '{name}'")
        params.append(p)
    if not params:
        raise ValueError("murmur.torch.GossipOptimizer: the model has no parameters")
    devices = {p.device for p in params}
    if len(devices) != 1:
        raise ValueError(f"murmur.torch.GossipOptimizer: the parameters are on several devices {sorted(map(str, devices))}")
    flat = torch.empty(sum(p.numel() for p in params), dtype=torch.float32, device=params[0].device)
    offset = 0
    with torch.no_grad():
        for p in params:
            n = p.numel()
            flat[offset:offset + n].copy_(p.data.reshape(-1))
            p.data = flat[offset:offset + n].view_as(p)
            offset += n
    return flat


class GossipOptimizer(torch.optim.Optimizer):
    """Wraps ``optimizer``: ``step()`` runs its local step, then murmur's
    (gossip every ``period``-th step, in the background where the algorithm
    allows it).

    The gossip settings take murmur-peer's names and spec strings:
    ``algorithm`` (dpsgd, choco, sgp, adpsgd, allreduce, topk-allreduce,
    local-sgd), ``compress`` ("topk:0.01", "randk:0.1", "qsgd:8", ...),
    ``topology`` (a generator name or a .topo file), ``period`` and
    ``schedule`` ("fixed", "adaptive[:...]"). More PeerConfig fields go in
    ``options`` (gamma, overlap, warmup_steps, timeout_s, ...). Without
    ``peer`` a Peer is created with ``murmur.init(...)``, which blocks until
    every rank has joined.

    The model's parameters must be float32 and dense; they are moved once
    into one flat tensor that murmur reads and writes in place.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, model: torch.nn.Module, algorithm: str = "choco",
                 compress: str = "topk:0.01", topology: str = "exponential", period: int = 1,
                 schedule: str = "fixed", peer: Optional[_peer.Peer] = None, **options: Any) -> None:
        # Not torch.optim.Optimizer.__init__: the wrapped optimizer owns the
        # parameter groups and the state, which are shared below, so that LR
        # schedulers and gradient clipping see the real ones.
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"murmur.torch.GossipOptimizer: optimizer is a {type(optimizer).__name__}, "
                            "not a torch.optim.Optimizer")
        self.optimizer = optimizer
        self.model = model
        self.flat_parameters = flatten_parameters(model)
        if peer is None:
            peer = _peer.init(algorithm=algorithm, compress=compress, topology=topology, period=period,
                              schedule=schedule, **options)
        self.peer = peer
        self.peer.add_tensor("parameters", self.flat_parameters)

    # The wrapped optimizer's groups, state and defaults are this one's.
    @property
    def param_groups(self) -> List[Dict[str, Any]]:  # type: ignore[override]
        return self.optimizer.param_groups

    @param_groups.setter
    def param_groups(self, value: List[Dict[str, Any]]) -> None:
        self.optimizer.param_groups = value

    @property
    def state(self) -> Dict[Any, Any]:  # type: ignore[override]
        return self.optimizer.state

    @state.setter
    def state(self, value: Dict[Any, Any]) -> None:
        self.optimizer.state = value

    @property
    def defaults(self) -> Dict[str, Any]:  # type: ignore[override]
        return self.optimizer.defaults

    @defaults.setter
    def defaults(self, value: Dict[str, Any]) -> None:
        self.optimizer.defaults = value

    def step(self, closure: Optional[Callable[[], float]] = None) -> Optional[float]:  # type: ignore[override]
        """The local step, then murmur's step (which may block for the previous round)."""
        loss = self.optimizer.step(closure)
        self.peer.step()
        return loss

    def zero_grad(self, set_to_none: bool = False) -> None:
        self.optimizer.zero_grad(set_to_none)

    def flush(self) -> None:
        """Waits for the gossip round in flight and folds it into the model."""
        self.peer.flush()

    def finish(self) -> None:
        """Ends this rank's part in the gossip; the model holds its final parameters."""
        self.peer.finish()

    def averaged_model(self) -> torch.nn.Module:
        """A copy of the model holding the mean of every rank's parameters (a collective)."""
        import copy

        mean = self.peer.averaged_model()
        averaged = copy.deepcopy(self.model)
        _copy_flat_into(averaged, mean)
        return averaged

    def consensus_distance(self) -> float:
        """How far the ranks' models have drifted apart (a collective)."""
        return self.peer.consensus_distance()

    def state_dict(self) -> Dict[str, Any]:
        """The wrapped optimizer's state and murmur's (algorithm and scheduler),
        for a checkpoint; waits for the round in flight first. Every rank calls it."""
        self.peer.flush()
        return {"optimizer": self.optimizer.state_dict(), "murmur": self.peer.save_state()}

    def load_state_dict(self, state_dict: Dict[str, Any], other_view: bool = False) -> None:
        """Restores state_dict()'s result; before the first step(), on every rank
        (the model's parameters are the caller's to load, as in PyTorch)."""
        missing = {"optimizer", "murmur"} - set(state_dict)
        if missing:
            raise KeyError(f"murmur.torch.GossipOptimizer.load_state_dict: no {sorted(missing)} in the state dict "
                           "(was it saved by GossipOptimizer.state_dict()?)")
        self.optimizer.load_state_dict(state_dict["optimizer"])
        self.peer.load_state(state_dict["murmur"], other_view)

    def __repr__(self) -> str:
        return f"GossipOptimizer({self.optimizer!r}, {self.peer!r})"


def _copy_flat_into(model: torch.nn.Module, flat: torch.Tensor) -> None:
    offset = 0
    seen = set()
    with torch.no_grad():
        for p in model.parameters():
            if id(p) in seen:
                continue
            seen.add(id(p))
            n = p.numel()
            p.copy_(flat[offset:offset + n].view_as(p))
            offset += n
