"""Joining a running job from Python: three ranks gossip, a fourth Peer
made with join=True enters while they run, takes a member's model and,
through join_state / on_join_state, the step that member was in, and the
four agree at the end. All in this process, one thread per rank."""

import threading
from typing import Any, Callable

import pytest
import torch

import murmur
import murmur.torch
from conftest import free_port, inside, run_threads

STEPS = 200


class JoinGate:
    """Orders a joiner's entry against the members' loop by events, not by
    how threads happen to be scheduled: the joiner starts once a member
    reaches step START, and every member waits before step HOLD until the
    joiner's Peer is made (its constructor returns once each member has
    added it to its transport, which their view threads do while the
    members wait). Without the hold, a joiner starved of the GIL for the
    members' last steps found them finished and rank 0's rendezvous closed:
    "Connection refused" after join_timeout_s (CI, on 1f84d6b)."""

    START, HOLD = 40, 60

    def __init__(self) -> None:
        self._started = threading.Event()
        self._admitted = threading.Event()

    def member_at(self, step: int) -> None:
        if step == self.START:
            self._started.set()
        if step == self.HOLD:
            assert self._admitted.wait(60), f"no joiner was admitted within 60 s of step {self.HOLD}"

    def admit(self, make_peer: Callable[[], Any]) -> Any:
        """The joiner's side: waits for START and makes its Peer; the
        members go on once it is made, or once making it failed (they end
        and the joiner's error is the one the test reports)."""
        assert self._started.wait(60), f"no member reached step {self.START} within 60 s"
        try:
            return make_peer()
        finally:
            self._admitted.set()


def test_a_joiner_takes_a_members_model_and_state_and_the_job_agrees():
    port = free_port()
    members = 3
    options = dict(algorithm="dpsgd", topology="exponential", backend="asio", token="pytest-join",
                   rendezvous=f"127.0.0.1:{port}", join_timeout_s=30, timeout_s=30)
    gate = JoinGate()

    def member(rank):
        step = 0
        # The state a sponsor hands over: the step in progress, as bytes.
        with murmur.Peer(rank=rank, world_size=members, host_rendezvous=rank == 0,
                         join_state=lambda: str(step).encode(), **options) as peer:
            x = torch.full((1000,), float(rank))
            peer.add_tensor("x", x)
            views = []
            peer.on_view_change(lambda v: views.append(list(v.ranks)))
            for step in range(STEPS):  # noqa: B007 (join_state reads it)
                gate.member_at(step)
                peer.step()
            peer.flush()
            return x.clone(), views

    def joiner():
        received = []
        with gate.admit(lambda: murmur.Peer(rank=0, world_size=1, join=True, on_join_state=received.append,
                                            **options)) as peer:
            assert peer.joining()
            x = torch.full((1000,), -100.0)  # overwritten by the sponsor's model at entry
            peer.add_tensor("x", x)
            peer.step()  # admitted: this is the step the sponsor was in
            entered = int(received[0].decode())
            entered_with = x.clone()
            for _ in range(entered + 1, STEPS):
                peer.step()
            peer.flush()
            return x.clone(), peer.rank, entered, received, entered_with

    *results, (x, rank, entered, received, entered_with) = run_threads(
        [lambda r=r: member(r) for r in range(members)] + [joiner])
    assert rank == members  # the job gives the joiner the next rank
    assert len(received) == 1 and isinstance(received[0], bytes)
    assert JoinGate.START <= entered < STEPS
    # It entered with a member's model, not its own -100s.
    assert entered_with.min().item() >= 0 and entered_with.max().item() <= members - 1
    for r in range(members):
        assert members in results[r][1][-1], f"rank {r}'s last view {results[r][1][-1]} lacks the joiner"
    final = [results[r][0] for r in range(members)] + [x]
    spread = max((a - b).abs().max().item() for a in final for b in final)
    assert spread < 1e-3, f"the ranks did not agree: spread {spread}"


def test_a_joiner_takes_the_wrapped_optimizers_state_with_the_model():
    # GossipOptimizer hands its optimizer's state (here SGD's momentum) to a
    # joiner by itself; the script's own part ("step") travels beside it.
    port = free_port()
    members = 3
    options = dict(algorithm="dpsgd", topology="exponential", backend="asio", token="pytest-join-optim",
                   rendezvous=f"127.0.0.1:{port}", join_timeout_s=30, timeout_s=30)
    gate = JoinGate()
    sent = {}  # what the sponsor's optimizer held when it handed its state over

    def train(rank, peer, steps, first_step=0, on_entry=None):
        torch.manual_seed(7)
        model = torch.nn.Linear(20, 4)
        sgd = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        optimizer = murmur.torch.GossipOptimizer(sgd, model, algorithm="dpsgd", peer=peer)
        x = torch.full((8, 20), float(rank + 1))
        step = first_step

        def save_step():
            sent["step"] = step
            sent["momentum"] = [sgd.state[p]["momentum_buffer"].clone() for p in model.parameters()]
            return str(step).encode()

        peer.add_join_state("step", save_step if on_entry is None else None, on_entry)
        while step < steps:
            if on_entry is None:
                gate.member_at(step)
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            optimizer.step()
            if on_entry is not None and step == first_step:
                step = entered[0]  # the step the sponsor was in
                momentum = [sgd.state[p]["momentum_buffer"].clone() for p in model.parameters()]
            step += 1
        optimizer.flush()
        return momentum if on_entry is not None else None

    entered = []

    def member(rank):
        with murmur.Peer(rank=rank, world_size=members, host_rendezvous=rank == 0, **options) as peer:
            train(rank, peer, STEPS)

    def joiner():
        with gate.admit(lambda: murmur.Peer(rank=0, world_size=1, join=True, **options)) as peer:
            return train(members, peer, STEPS, on_entry=lambda b: entered.append(int(b.decode())))

    *_, momentum = run_threads([lambda r=r: member(r) for r in range(members)] + [joiner])
    assert entered == [sent["step"]] and JoinGate.START <= entered[0] < STEPS
    # Its own first step's momentum was its own gradient; after entry it is the sponsor's.
    for got, want in zip(momentum, sent["momentum"]):
        assert torch.equal(got, want)


def test_join_state_callbacks_are_callables_or_none():
    config = murmur._murmur.PeerConfig()
    config.join_state = lambda: b"x"
    assert config.join_state() == b"x"
    config.join_state = None
    assert config.join_state is None
    with pytest.raises(TypeError, match="PeerConfig.on_join_state must be a callable or None, not int"):
        config.on_join_state = 3


def test_a_view_change_re_averages_the_wrapped_optimizers_state():
    # A gradient method (bsp-a2a): GossipOptimizer hands the wrapped SGD's
    # momentum to the Peer, and a view change re-averages it with the model.
    # The members' momenta are pushed apart first (as the rounds a lost peer
    # aborts leave them); right after the joiner's view all four ranks hold
    # one model and one momentum. Without the hand-over the members' momenta
    # stay apart by what is left of the push (0.031 between ranks 0 and 1).
    # The joiner's loop is the members': its first GossipOptimizer.step()
    # is its entry.
    port = free_port()
    members = 3
    options = dict(algorithm="bsp-a2a", backend="asio", token="pytest-join-momentum",
                   rendezvous=f"127.0.0.1:{port}", join_timeout_s=30, timeout_s=30)
    gate = JoinGate()
    steps = 120

    def train(rank, peer, joining):
        torch.manual_seed(7)
        model = torch.nn.Linear(20, 4)
        sgd = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        optimizer = murmur.torch.GossipOptimizer(sgd, model, algorithm="bsp-a2a", peer=peer)
        x = torch.full((8, 20), float(rank + 1))
        views = []
        peer.on_view_change(lambda v: views.append(list(v.ranks)))
        entered = []
        step = 0
        peer.add_join_state("step", lambda: str(step).encode(), lambda b: entered.append(int(b.decode())))
        after_view = None  # (model, momentum) at the end of the step the joiner's view came in
        if joining:
            # A gradient round before the entry would wait for members far
            # past it: refused at once, naming why.
            with pytest.raises(RuntimeError, match="before this joiner's first step"):
                peer.gradient_ready(0)
        while step < steps:
            if step == 10 and not joining:
                with torch.no_grad():
                    for p in model.parameters():
                        sgd.state[p]["momentum_buffer"].add_(float(rank))
            if not joining:
                gate.member_at(step)
            seen = len(views)
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            optimizer.step()  # a joiner's first: its entry alone (the sponsor's step in progress)
            if joining and step == 0:
                step = entered[0]
            if after_view is None and (joining or (len(views) > seen and members in views[-1])):
                after_view = ([p.detach().clone() for p in model.parameters()],
                              [sgd.state[p]["momentum_buffer"].clone() for p in model.parameters()])
            step += 1
        optimizer.flush()
        in_flat = all(inside(sgd.state[p]["momentum_buffer"], optimizer.optimizer_state.flat)
                      for p in model.parameters())
        return after_view, in_flat

    def member(rank):
        with murmur.Peer(rank=rank, world_size=members, host_rendezvous=rank == 0, **options) as peer:
            return train(rank, peer, joining=False)

    def joiner():
        with gate.admit(lambda: murmur.Peer(rank=0, world_size=1, join=True, **options)) as peer:
            return train(members, peer, joining=True)

    results = run_threads([lambda r=r: member(r) for r in range(members)] + [joiner])
    for rank, (after_view, in_flat) in enumerate(results):
        assert in_flat, f"rank {rank}'s momentum is not a view of the state handed to the Peer"
        assert after_view is not None, f"rank {rank} saw no view with the joiner"
    (model0, momentum0), _ = results[0]
    for rank, ((model, momentum), _) in enumerate(results[1:], start=1):
        for what, got, want in [("momentum", *pair) for pair in zip(momentum, momentum0)] + \
                               [("model", *pair) for pair in zip(model, model0)]:
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6,
                                       msg=lambda m, r=rank, w=what: f"rank {r}'s {w} after the view: {m}")
