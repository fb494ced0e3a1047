"""The wrapped optimizer's state in one flat tensor that the Peer re-averages
with the parameters when the membership changes (the gradient methods)."""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional, Tuple

import torch

# Torch's name for the per-parameter step count (Adam, AdamW, NAdam, RAdam,
# Adamax, Adagrad, ...): a count the ranks share anyway, never averaged.
STEP_KEY = "step"


def state_layout(optimizer: torch.optim.Optimizer, params: List[torch.nn.Parameter]) -> Optional[List[List[str]]]:
    """For each of ``params``, the keys of the state ``optimizer`` keeps as a
    float32 tensor of the parameter's shape (SGD's "momentum_buffer", Adam's
    "exp_avg" and "exp_avg_sq"), in the order the optimizer makes them.

    Found by one step of a new optimizer of the same type and groups on
    zero-valued stand-ins with zero gradients, since torch optimizers make
    their state at their first step and the Peer must know its size before
    then: costs one more copy of the parameters and the state, once. None
    when that optimizer cannot be made or stepped so (LBFGS wants a closure;
    a custom optimizer may take other arguments)."""
    stand_ins = {id(p): torch.nn.Parameter(torch.zeros_like(p)) for p in params}
    groups = []
    for group in optimizer.param_groups:
        options = {k: v for k, v in group.items() if k != "params"}
        groups.append({**options, "params": [stand_ins[id(p)] for p in group["params"] if id(p) in stand_ins]})
    try:
        probe = type(optimizer)(groups)
        for s in stand_ins.values():
            s.grad = torch.zeros_like(s)
        probe.step()
    except Exception as e:  # noqa: BLE001 (any optimizer: say why, train on without it)
        warnings.warn(f"murmur.torch.GossipOptimizer: {type(optimizer).__name__}'s state could not be laid out "
                      f"({type(e).__name__}: {e}); it is not re-averaged when the membership changes, so after a "
                      "lost or joined peer the ranks' optimizers may stay apart", stacklevel=3)
        return None
    layout = []
    for p in params:
        state = probe.state.get(stand_ins[id(p)], {})
        layout.append([k for k, v in state.items()
                       if k != STEP_KEY and torch.is_tensor(v) and v.dtype == torch.float32 and v.shape == p.shape])
    return layout


class OptimizerStateHandOff:
    """Keeps the wrapped optimizer's per-parameter state tensors as views of
    one flat CPU tensor handed to the Peer once (set_optimizer_state), so that
    a view change re-averages the momentum (or Adam's moments) with the
    parameters: without it the survivors of a lost peer keep the different
    momenta that the aborted rounds left them, and their models drift apart.

    The optimizer makes its state at its first step, and may replace a
    tensor (load_state_dict does): bind() copies each tensor that is not
    its view any more into the view and puts the view in its place.
    GossipOptimizer calls it before and after each local step and after
    every load, so the flat tensor holds the live state whenever the Peer
    can change the view. Not thread-safe: the training thread's, like the
    optimizer."""

    def __init__(self, peer: Any, optimizer: torch.optim.Optimizer, params: List[torch.nn.Parameter]) -> None:
        self.optimizer = optimizer
        layout = state_layout(optimizer, params)
        self.views: List[Tuple[torch.nn.Parameter, Dict[str, torch.Tensor]]] = []
        total = sum(p.numel() * len(keys) for p, keys in zip(params, layout or []))
        self.flat = torch.zeros(total, dtype=torch.float32)
        offset = 0
        for p, keys in zip(params, layout or []):
            views = {}
            for key in keys:
                views[key] = self.flat[offset:offset + p.numel()].view_as(p)
                offset += p.numel()
            self.views.append((p, views))
        if total:
            peer.set_optimizer_state(self.flat)

    def bind(self) -> None:
        """Makes every state tensor of the layout a view of the flat tensor
        again, copying in the value of one the optimizer replaced. Before the
        optimizer's first step there is no state yet: the views stay zero."""
        state = self.optimizer.state
        for p, views in self.views:
            entry = state.get(p)
            if not entry:
                continue
            for key, view in views.items():
                value = entry.get(key)
                if value is None or value is view:
                    continue
                if value.data_ptr() != view.data_ptr():
                    with torch.no_grad():
                        view.copy_(value)
                entry[key] = view
