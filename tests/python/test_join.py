"""Joining a running job from Python: three ranks gossip, a fourth Peer
made with join=True enters while they run, takes a member's model and,
through join_state / on_join_state, the step that member was in, and the
four agree at the end. All in this process, one thread per rank."""

import threading

import pytest
import torch

import murmur
import murmur.torch
from conftest import free_port, run_threads

STEPS = 200


def test_a_joiner_takes_a_members_model_and_state_and_the_job_agrees():
    port = free_port()
    members = 3
    options = dict(algorithm="dpsgd", topology="exponential", backend="asio", token="pytest-join",
                   rendezvous=f"127.0.0.1:{port}", join_timeout_s=30, timeout_s=30)
    reached = threading.Event()  # a member is far enough in for the joiner to start

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
                if step == 40:
                    reached.set()
                peer.step()
            peer.flush()
            return x.clone(), views

    def joiner():
        reached.wait(60)
        received = []
        with murmur.Peer(rank=0, world_size=1, join=True, on_join_state=received.append, **options) as peer:
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
    assert 40 <= entered < STEPS
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
    reached = threading.Event()
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
            if step == 40:
                reached.set()
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
        reached.wait(60)
        with murmur.Peer(rank=0, world_size=1, join=True, **options) as peer:
            return train(members, peer, STEPS, on_entry=lambda b: entered.append(int(b.decode())))

    *_, momentum = run_threads([lambda r=r: member(r) for r in range(members)] + [joiner])
    assert entered == [sent["step"]] and 40 <= entered[0] < STEPS
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
