"""GossipOptimizer: any torch.optim optimizer, with the model gossiped by
murmur after each local step."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import torch

from .. import _peer
from .._tensors import tensor_address
from . import plain_state
from .optimizer_state import OptimizerStateHandOff


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
    params = unique_parameters(model)
    for name, p in model.named_parameters():
        # The checks of a registered tensor, on each parameter so that the
        # error names it; contiguity does not matter, the copy fixes it.
        if p.layout != torch.strided or p.dtype != torch.float32:
            tensor_address(p.data, f"parameter '{name}'")
    if not params:
        raise ValueError("murmur.torch.GossipOptimizer: the model has no parameters")
    devices = {p.device for p in params}
    if len(devices) != 1:
        raise ValueError(
            f"murmur.torch.GossipOptimizer: the parameters are on several devices {sorted(map(str, devices))}")
    flat = torch.empty(sum(p.numel() for p in params), dtype=torch.float32, device=params[0].device)
    offset = 0
    with torch.no_grad():
        for p in params:
            n = p.numel()
            flat[offset:offset + n].copy_(p.data.reshape(-1))
            p.data = flat[offset:offset + n].view_as(p)
            offset += n
    return flat


def unique_parameters(model: torch.nn.Module) -> List[torch.nn.Parameter]:
    """model.parameters() in order, a parameter shared by two modules once:
    the layout of the flat parameter and gradient tensors."""
    params: List[torch.nn.Parameter] = []
    seen = set()
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            params.append(p)
    return params


class GradientHandOff:
    """The gradient methods' side of GossipOptimizer (include/murmur/peer.h,
    "Gradient hand-off"): every parameter's ``.grad`` is a view of one flat
    tensor handed to the Peer once (set_gradients), each parameter is a
    layer, and a hook on its gradient accumulator tells the Peer as soon as
    backward has written it (gradient_ready), so wfbp-a2a, mg-wfbp and
    bytescheduler-* communicate while backward goes on.

    The accumulator's hook (``p.expand_as(p).grad_fn.next_functions``, as
    DDP and Horovod do) runs after the gradient is in ``.grad``; a tensor
    hook would run before. One backward per step: a layer reported twice
    before average_gradients() (gradient accumulation over micro-batches)
    raises, since its first value may already be on the wire. A ``.grad``
    that is not the view any more (``zero_grad(set_to_none=True)``, which
    autograd answers with a new tensor) is copied into it and the view put
    back, in the hook, before the Peer reads it: one copy, only then.

    A joiner's first step is its entry (the members' step in progress,
    which overwrites its model): until then the hooks report nothing, since
    a gradient round before the entry would wait for members that are far
    past it (``entered``; GossipOptimizer.step() makes the entry).
    """

    def __init__(self, peer: Any, params: List[torch.nn.Parameter]) -> None:
        if params[0].device.type != "cpu":
            raise ValueError(f"murmur.torch.GossipOptimizer: the gradient methods take CPU parameters, not "
                             f"{params[0].device} (their buffers are host memory)")
        self.peer = peer
        self.params = params
        self.flat = torch.zeros(sum(p.numel() for p in params), dtype=torch.float32)
        self.views: List[torch.Tensor] = []
        offset = 0
        for p in params:
            n = p.numel()
            view = self.flat[offset:offset + n].view_as(p)
            if p.grad is not None:
                view.copy_(p.grad)
            p.grad = view
            self.views.append(view)
            offset += n
        peer.set_gradients(self.flat, [p.numel() for p in params])
        self.reported: set = set()
        self.entered = not peer.joining()
        self.accumulators = []  # kept alive: a hook lives as long as its node
        with torch.enable_grad():
            for layer, p in enumerate(params):
                accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
                accumulator.register_hook(self._hook(layer))
                self.accumulators.append(accumulator)

    def _hook(self, layer: int) -> Callable[..., None]:
        def ready(*_: Any) -> None:
            self.reclaim(layer)
            if not self.entered:
                return
            if layer in self.reported:
                raise RuntimeError(f"murmur.torch.GossipOptimizer: parameter {layer}'s gradient was written twice "
                                   f"before step() ({self.peer.stats().algorithm} averages each step's gradient as "
                                   "backward writes it: one backward per step, no accumulation over micro-batches)")
            self.reported.add(layer)
            self.peer.gradient_ready(layer)
        return ready

    def reclaim(self, layer: int) -> None:
        p, view = self.params[layer], self.views[layer]
        if p.grad is None or p.grad.data_ptr() != view.data_ptr():
            with torch.no_grad():
                if p.grad is None:
                    view.zero_()
                else:
                    view.copy_(p.grad)
            p.grad = view

    def average(self) -> None:
        """Before the optimizer step: every gradient becomes the mean over the ranks."""
        for layer in range(len(self.params)):
            if layer not in self.reported:
                self.reclaim(layer)  # no backward reached it, or its .grad was replaced since
        self.peer.average_gradients()
        self.reported.clear()


class GossipOptimizer(torch.optim.Optimizer):
    """Wraps ``optimizer``: ``step()`` runs its local step, then murmur's
    (gossip every ``period``-th step, in the background where the algorithm
    allows it).

    The gossip settings take murmur-peer's names and spec strings:
    ``algorithm`` (dpsgd, choco, sgp, adpsgd, allreduce, topk-allreduce,
    local-sgd; or a gradient method of the survey, bsp-a2a, wfbp-a2a, mg-wfbp,
    bytescheduler-a2a, signsgd, topk-sgd, ..., which averages the gradients
    before the local step instead: GradientHandOff), ``compress`` ("topk:0.01", "randk:0.1", "qsgd:8", ...),
    ``topology`` (a generator name or a .topo file), ``period`` and
    ``schedule`` ("fixed", "adaptive[:...]"). More PeerConfig fields go in
    ``options`` (gamma, overlap, warmup_steps, timeout_s, ...). Without
    ``peer`` a Peer is created with ``murmur.init(...)``, which blocks until
    every rank has joined. A peer that joins a running job (``join=True``)
    takes a member's model and this optimizer's state (the part
    "torch.optim" of ``Peer.add_join_state``) in its first step().

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
        # The gradient methods average gradients before the local step, not models after it.
        self.gradients = GradientHandOff(peer, unique_parameters(model)) if peer.averages_gradients else None
        # Their members re-average the optimizer's state with the model when
        # the membership changes (the gossip algorithms mix models only).
        self.optimizer_state = (OptimizerStateHandOff(peer, optimizer, unique_parameters(model))
                                if self.gradients is not None else None)
        # A joiner takes a member's model from the Peer and its optimizer's
        # state (momentum, Adam's moments and step counts) from here.
        self.peer.add_join_state("torch.optim", self._save_optimizer_state, self._load_optimizer_state)

    def _save_optimizer_state(self) -> bytes:
        return plain_state.dumps(self.optimizer.state_dict())

    def _load_optimizer_state(self, state: bytes) -> None:
        # From another process: plain_state, not a pickle (no code runs).
        self.optimizer.load_state_dict(plain_state.loads(state))
        self._bind_optimizer_state()

    def _bind_optimizer_state(self) -> None:
        if self.optimizer_state is not None:
            self.optimizer_state.bind()

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
        """The local step, then murmur's step (which may block for the previous round).
        With a gradient method, the gradients are averaged over the ranks first
        (a closure then runs here, before the averaging, not inside the local step);
        a joiner's first step is then its entry alone (_enter)."""
        if self.gradients is None:
            loss = self.optimizer.step(closure)
        else:
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            if not self.gradients.entered:
                return self._enter(loss)
            self._bind_optimizer_state()  # the script may have replaced a state tensor since
            self.gradients.average()
            self.optimizer.step()
            self._bind_optimizer_state()  # the first step makes the state
        self.peer.step()
        return loss

    def _enter(self, loss: Optional[float]) -> Optional[float]:
        """A joiner's first step with a gradient method: murmur's step alone,
        which admits it into the members' step in progress and overwrites its
        model and this optimizer's state with a member's. Its own gradient of
        this step, taken on its model before the entry, is dropped (as a
        model-averaging joiner's first local step is overwritten)."""
        self.peer.step()  # the sponsor's optimizer state is bound in on entry (_load_optimizer_state)
        self.gradients.entered = True
        return loss

    def zero_grad(self, set_to_none: bool = False) -> None:
        """As torch's; with a gradient method the gradients are zeroed in
        place whatever ``set_to_none`` says (they are views of murmur's buffer)."""
        self.optimizer.zero_grad(set_to_none and self.gradients is None)

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
        self._bind_optimizer_state()
        self.peer.load_state(state_dict["murmur"], other_view)

    def __repr__(self) -> str:
        return f"GossipOptimizer({self.optimizer!r}, {self.peer!r})"


def _copy_flat_into(model: torch.nn.Module, flat: torch.Tensor) -> None:
    offset = 0
    with torch.no_grad():
        for p in unique_parameters(model):
            n = p.numel()
            p.copy_(flat[offset:offset + n].view_as(p))
            offset += n
