"""murmur.Peer: the C++ murmur::Peer for Python (include/murmur/peer.h and
docs/embedding.md have the full contract; docs/python.md the Python side).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable, List, Optional

from . import _murmur
from ._join_state import JoinStateParts
from ._launch import Launch, resolve_launch
from ._tensors import tensor_address

# Keyword arguments of Peer()/init() that are not PeerConfig field names:
# the names murmur-peer's flags use.
_ALIASES = {"compress": "compressor", "size": "world_size"}


def make_config(launch: Launch, options: dict) -> "_murmur.PeerConfig":
    """A PeerConfig from a resolved launch and keyword options (PeerConfig
    field names, or ``compress``). Raises TypeError for an unknown option."""
    config = _murmur.PeerConfig()
    if launch.rank is not None:
        config.rank, config.world_size = launch.rank, launch.world_size
    if launch.rendezvous:
        config.rendezvous = launch.rendezvous
    config.host_rendezvous = launch.host_rendezvous
    if launch.token:
        config.token = launch.token
    for key, value in options.items():
        if value is None:
            continue
        field = _ALIASES.get(key, key)
        if field.startswith("_") or not hasattr(config, field):
            raise TypeError(f"murmur: unknown option '{key}' (the options are PeerConfig's fields, "
                            "include/murmur/peer.h, and 'compress')")
        setattr(config, field, value)
    return config


class Peer:
    """One process's part in a murmur job.

    Create it with ``murmur.init(...)`` (or ``Peer(...)`` with the same
    arguments). Joining blocks until every rank has joined. Register tensors
    with ``add_tensor`` before the first ``step()``; call ``step()`` after
    each local update; ``close()`` (or leaving a ``with`` block) finishes
    and leaves the job.

    Options are the C++ ``PeerConfig`` fields (``algorithm``, ``compressor``
    or ``compress``, ``topology``, ``period``, ``schedule``, ``gamma``,
    ``overlap``, ``backend``, ``timeout_s``, ...), with murmur-peer's names and
    spec strings; ``rank``/``world_size`` and ``rendezvous`` override the
    launcher's variables. With ``schedule="adaptive..."``,
    ``on_schedule_decision=f`` calls ``f(decision)`` with each of the
    scheduler's decisions as a dict (period, ratio, reason, per-link
    estimates; docs/scheduler.md), inside step(); ``f`` must not call the Peer.
    """

    def __init__(self, *, rank: Optional[int] = None, world_size: Optional[int] = None, **options: Any) -> None:
        self._launch = resolve_launch(rank=rank, world_size=world_size)
        # The config's join_state pair carries every part of add_join_state();
        # the options' own pair is the part "PeerConfig".
        self._join_state = JoinStateParts()
        save, load = options.pop("join_state", None), options.pop("on_join_state", None)
        if save is not None or load is not None:
            self._join_state.add("PeerConfig", save, load)
        decision = options.pop("on_schedule_decision", None)
        config = make_config(self._launch, options)
        if decision is not None:
            if not callable(decision):
                raise TypeError(f"murmur: on_schedule_decision must be a callable, not {type(decision).__name__}")
            config.on_schedule_decision = lambda text: decision(json.loads(text))
        config.join_state = self._join_state.save
        config.on_join_state = self._join_state.load
        self._tensors: List[Any] = []  # kept alive: murmur holds their addresses
        self._peer = _murmur.Peer(config)

    # -- where this process sits ------------------------------------------
    @property
    def rank(self) -> int:
        """This process's rank in the job."""
        return self._peer.rank()

    @property
    def size(self) -> int:
        """The number of ranks the job was launched with."""
        return self._peer.world_size()

    world_size = size

    @property
    def local_rank(self) -> int:
        """The rank among the processes on this host (for choosing a GPU)."""
        return self._launch.local_rank

    @property
    def launcher(self) -> str:
        """Where rank and size came from: murmur-run, torchrun, slurm, mpirun, arguments or none."""
        return self._launch.source

    def host(self, rank: int) -> str:
        """The host name of ``rank``."""
        return self._peer.host(rank)

    def view(self) -> "_murmur.PeerView":
        """The membership view the gossip runs in now (generation, ranks, who left or joined)."""
        return self._peer.view()

    def joining(self) -> bool:
        """Whether this peer joins a running job (its first step() takes the job's model)."""
        return self._peer.joining()

    def on_view_change(self, callback: Callable[["_murmur.PeerView"], None]) -> None:
        """Calls ``callback(view)`` with every new view, from inside step(); it must not call the Peer."""
        self._peer.on_view_change(callback)

    # -- the gossiped tensors ---------------------------------------------
    def add_tensor(self, name: str, tensor: Any) -> None:
        """Registers ``tensor`` (float32, contiguous, dense; torch or numpy) to be
        gossiped in place. Before the first step() only; every rank registers
        the same sizes in the same order."""
        data, count, kind = tensor_address(tensor, f"murmur.Peer.add_tensor('{name}')")
        self._peer.add_tensor(name, data, count, kind)
        self._tensors.append(tensor)

    def parameter_count(self) -> int:
        """The number of floats registered."""
        return self._peer.parameter_count()

    def add_join_state(self, name: str, save: Optional[Callable[[], bytes]],
                       load: Optional[Callable[[bytes], None]]) -> None:
        """Registers a part of the state a sponsor hands a joiner with the
        model (GossipOptimizer's is the wrapped optimizer's): ``save()``
        (bytes or str) runs inside the sponsor's step(), ``load(bytes)``
        inside the joiner's first step(), which is the step the sponsor was
        in. Before the first step(); every rank registers the same names
        (a mismatch raises ValueError in the joiner's first step())."""
        self._join_state.add(name, save, load)

    # -- the gradient hand-off (the survey's gradient methods) --------------
    @property
    def averages_gradients(self) -> bool:
        """Whether the algorithm averages gradients before the optimizer step
        (bsp-a2a, wfbp-a2a, mg-wfbp, bytescheduler-*, *-ps, signsgd, topk-sgd)
        rather than models after it; the other algorithms ignore the
        gradient calls below."""
        return self._peer.averages_gradients()

    def set_gradients(self, tensor: Any, layer_sizes: List[int]) -> None:
        """Hands over the gradient buffer once, before the first step():
        ``tensor`` (float32, contiguous, CPU) holds every layer's gradient,
        ``layer_sizes`` values each, front layer first, the same on every rank."""
        data, count, kind = tensor_address(tensor, "murmur.Peer.set_gradients()")
        if kind != _murmur.MemoryKind.HOST:
            raise ValueError("murmur.Peer.set_gradients(): the gradient buffer must be CPU memory "
                             "(the gradient methods average host buffers)")
        self._peer.set_gradients(data, count, [int(n) for n in layer_sizes])
        self._tensors.append(tensor)

    def set_optimizer_state(self, tensor: Any) -> None:
        """Hands over the optimizer's state beside the parameters (SGD's
        momentum, Adam's moments) once, before the first step(): ``tensor``
        (float32, contiguous, CPU), the same size on every rank. When the
        membership changes the members re-average it with the parameters,
        so that they go on with one optimizer as well as one model. Only
        the gradient methods use it (GossipOptimizer hands it over by itself)."""
        data, count, kind = tensor_address(tensor, "murmur.Peer.set_optimizer_state()")
        if kind != _murmur.MemoryKind.HOST:
            raise ValueError("murmur.Peer.set_optimizer_state(): the optimizer's state must be CPU memory "
                             "(the gradient methods re-average host buffers)")
        self._peer.set_optimizer_state(data, count)
        self._tensors.append(tensor)

    def gradient_ready(self, layer: int) -> None:
        """From the backward pass: ``layer``'s gradient is final for this step
        and may be averaged in place from now on. Does not block (its first
        call in a job runs the layout check across ranks)."""
        self._peer.gradient_ready(layer)

    def average_gradients(self) -> None:
        """After backward, before the optimizer step: blocks until every
        layer's gradient is the mean over the members."""
        self._peer.average_gradients()

    def wait_layer_averaged(self, layer: int) -> None:
        """The layer-wise step, instead of waiting for every layer at once:
        after backward, blocks until ``layer``'s gradient alone is the mean
        (bytescheduler-a2a and -ps finish front layers first, so the next
        forward pass can start on them); update that layer, and call
        average_gradients() (it then returns at once) before step()."""
        self._peer.wait_layer_averaged(layer)

    def step(self) -> None:
        """After each local update: every period-th call takes part in a gossip round."""
        self._peer.step()

    def flush(self) -> None:
        """Waits for the round in flight and folds it into the tensors."""
        self._peer.flush()

    def finish(self) -> None:
        """Ends this rank's part in the gossip; the tensors hold its final model."""
        self._peer.finish()

    # -- checkpoints --------------------------------------------------------
    def save_state(self) -> bytes:
        """The algorithm's and scheduler's state (after flush(), on every rank)."""
        return self._peer.save_state()

    def load_state(self, state: bytes, other_view: bool = False) -> None:
        """Restores save_state()'s bytes; before the first step(), on every rank."""
        self._peer.load_state(state, other_view)

    # -- collectives (every rank calls them, in the same order) -------------
    def average(self, value: Any) -> Any:
        """Exact mean over all ranks: of a float (returned), or of a float32
        tensor or array (averaged in place and returned)."""
        if isinstance(value, (int, float)):
            return self._peer.average_scalar(float(value))
        data, count, kind = tensor_address(value, "murmur.Peer.average()")
        self._peer.average(data, count, kind)
        return value

    def averaged_model(self, out: Any = None) -> Any:
        """The mean of every rank's registered tensors, flat, into ``out`` (a
        float32 CPU tensor of parameter_count() values; allocated when None)."""
        if out is None:
            import torch

            out = torch.empty(self.parameter_count(), dtype=torch.float32)
        data, count, kind = tensor_address(out, "murmur.Peer.averaged_model(out)")
        if count != self.parameter_count() or kind != _murmur.MemoryKind.HOST:
            raise ValueError(f"murmur.Peer.averaged_model(out): out must be host memory of "
                             f"{self.parameter_count()} floats, not {count}")
        self._peer.averaged_model(data)
        return out

    def consensus_distance(self) -> float:
        """sqrt(mean over ranks of ||x_i - x_mean||^2): how far the models have drifted apart."""
        return self._peer.consensus_distance()

    def stats(self) -> "_murmur.PeerStats":
        """Steps, rounds, bytes sent and received, time blocked (any thread)."""
        return self._peer.stats()

    def metrics(self) -> dict:
        """stats() as a plain dict (for loggers), without the per-link list."""
        s = self._peer.stats()
        names = ("steps", "rounds", "wait_seconds", "comm_seconds", "comm_cpu_seconds", "bytes_sent", "bytes_received",
                 "collective_bytes_sent", "period", "ratio", "algorithm", "compressor")
        return {name: getattr(s, name) for name in names}

    # -- leaving --------------------------------------------------------------
    def close(self) -> None:
        """Finishes (if not done) and leaves the job. Idempotent."""
        # ~Peer leaves through a barrier of all ranks, so rank 0, which may
        # serve the rendezvous (torchrun), does not leave before the others.
        self._peer.close()

    def leave_now(self, why: str) -> None:
        """For a trainer that stops early: the next close() (or the end of a
        ``with`` block, or the interpreter's exit) leaves the job at once,
        without finishing and without waiting for the other ranks, who drop
        this rank from their view straight away and go on. Later calls raise."""
        if not self._peer.closed:
            self._peer.leave_now(why)

    @property
    def closed(self) -> bool:
        return self._peer.closed

    def __enter__(self) -> "Peer":
        return self

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        # An exception leaving the block (KeyboardInterrupt from Ctrl-C, or
        # the trainer's own) means this rank will not take another step:
        # the others must not wait for it at the leave barrier.
        if exc_type is not None and not _is_clean_exit(exc):
            self.leave_now(f"{exc_type.__name__} in the trainer")
        self.close()

    def __repr__(self) -> str:
        if self._peer.closed:
            return "<murmur.Peer closed>"
        return f"<murmur.Peer rank {self.rank} of {self.size} ({self.launcher})>"


_default: Optional[Peer] = None
# The exception that ended the program, recorded by the hook init()
# installs: Python calls sys.excepthook for an uncaught exception (not for
# SystemExit) before the atexit handlers run. sys.last_value would not do:
# the REPL, IPython and pytest set it for errors already handled.
_uncaught: Optional[BaseException] = None
_previous_excepthook: Optional[Callable[..., Any]] = None


def _is_clean_exit(exc: Optional[BaseException]) -> bool:
    return isinstance(exc, SystemExit) and exc.code in (0, None)


def _record_uncaught(exc_type: Any, exc: BaseException, traceback: Any) -> None:
    global _uncaught
    _uncaught = exc
    assert _previous_excepthook is not None
    _previous_excepthook(exc_type, exc, traceback)


def init(**options: Any) -> Peer:
    """Joins the job this process was launched into and returns its Peer.

    The rank and the rendezvous come from ``rank``/``world_size``/
    ``rendezvous`` when given, else from murmur-run's, torchrun's, Slurm's or
    Open MPI's variables (docs/python.md, "Launchers"). The other options
    are Peer's. Blocks until every rank has joined. The Peer is also kept as
    ``murmur.peer()`` and closed when the interpreter exits.
    """
    global _default, _previous_excepthook
    peer = Peer(**options)
    _default = peer
    if _previous_excepthook is None:
        _previous_excepthook = sys.excepthook
        sys.excepthook = _record_uncaught
    return peer


def peer() -> Peer:
    """The Peer of the last ``murmur.init()``; RuntimeError before it."""
    if _default is None or _default.closed:
        raise RuntimeError("murmur.peer(): call murmur.init() first")
    return _default


def _close_default() -> None:
    if _default is None:
        return
    # At exit after an uncaught exception (Ctrl-C's KeyboardInterrupt
    # included): leave at once, as __exit__ does, rather than wait at the
    # barrier for ranks still training. A sys.exit(1) is not seen here (no
    # hook runs for SystemExit): call leave_now() before it.
    if _uncaught is not None:
        _default.leave_now(f"{type(_uncaught).__name__} in the trainer")
    _default.close()
