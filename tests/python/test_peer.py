"""murmur.Peer: jobs of 1 and 4 ranks in this process (one thread per rank,
loopback), the tensor checks, the collectives and C++ errors."""

import collections
import threading

import numpy as np
import pytest
import torch

import murmur
from conftest import run_ranks


def test_a_job_of_one_needs_no_network():
    with murmur.init(algorithm="dpsgd") as peer:
        assert (peer.rank, peer.size, peer.launcher) == (0, 1, "none")
        x = torch.arange(4, dtype=torch.float32)
        peer.add_tensor("x", x)
        peer.step()
        assert peer.average(2.5) == 2.5
        assert peer.consensus_distance() == 0
        assert peer.stats().steps == 1 and peer.metrics()["algorithm"] == "dpsgd"
    assert peer.closed


@pytest.mark.parametrize("tensor, error, text", [
    (torch.ones(3, dtype=torch.float64), TypeError, "dtype torch.float64; murmur gossips float32 only"),
    (torch.ones(4, 4).t(), ValueError, "is not contiguous"),
    (torch.ones(3).to_sparse(), TypeError, "torch.sparse_coo tensors are not supported"),
    (torch.ones(0), ValueError, "empty"),
    (np.ones(3), TypeError, "dtype float64"),
    ([1.0, 2.0], TypeError, "a list is not a torch tensor"),
])
def test_tensors_murmur_cannot_use_in_place_are_refused_by_name(tensor, error, text):
    with murmur.init() as peer:
        with pytest.raises(error, match=text) as info:
            peer.add_tensor("weights", tensor)
        assert "add_tensor('weights')" in str(info.value)


def test_cxx_errors_arrive_with_their_text():
    with pytest.raises(ValueError, match="unknown gossip algorithm 'gossip'; expected one of: dpsgd, choco"):
        murmur.init(algorithm="gossip")
    with pytest.raises(ValueError, match=r"rank 5 is outside 0..1 \(from configuration\)"):
        murmur.init(rank=5, world_size=2, rendezvous="127.0.0.1:1")
    with murmur.init() as peer:
        with pytest.raises(RuntimeError, match="before any add_tensor"):
            peer.step()
    with pytest.raises(RuntimeError, match=r"murmur.Peer.step\(\): the peer is closed"):
        peer.step()


def test_unknown_options_are_named():
    with pytest.raises(TypeError, match="unknown option 'learning_rate'"):
        murmur.init(learning_rate=0.1)


def test_allreduce_writes_the_mean_into_the_callers_tensors():
    """The C++ Peer reads and writes the tensors' own memory: after one
    allreduce step each rank's tensor (same data_ptr) holds the mean."""
    def body(peer):
        x = torch.full((1000,), float(peer.rank))
        y = np.full(7, 10.0 * peer.rank, dtype=np.float32)
        address = x.data_ptr()
        peer.add_tensor("x", x)
        peer.add_tensor("y", y)
        peer.step()
        return x.data_ptr() == address, x[0].item(), y[0], peer.consensus_distance()

    for same_memory, x0, y0, distance in run_ranks(4, body, algorithm="allreduce"):
        assert same_memory and x0 == 1.5 and y0 == 15.0 and distance == 0


def test_collectives_and_averaged_model():
    def body(peer):
        x = torch.full((10,), float(peer.rank))
        peer.add_tensor("x", x)
        mean = peer.averaged_model()
        distance = peer.consensus_distance()
        v = torch.full((3,), float(peer.rank * 2))
        peer.average(v)
        view = peer.view()
        return mean[0].item(), distance, v[0].item(), peer.average(float(peer.rank)), list(view.ranks)

    for mean0, distance, v0, scalar, ranks in run_ranks(4, body, algorithm="dpsgd"):
        # ranks 0..3: mean 1.5; each rank's distance to it, sqrt(mean(10 x (r-1.5)^2))
        assert mean0 == 1.5 and v0 == 3.0 and scalar == 1.5 and ranks == [0, 1, 2, 3]
        assert distance == pytest.approx(np.sqrt(10 * np.mean([(r - 1.5) ** 2 for r in range(4)])), rel=1e-5)


def test_gossip_brings_the_models_together_and_counts_bytes():
    def body(peer):
        x = torch.full((2000,), float(peer.rank))
        peer.add_tensor("x", x)
        before = peer.consensus_distance()
        for _ in range(30):
            peer.step()
        peer.flush()
        stats = peer.stats()
        links = {link.rank: link.bytes_sent for link in stats.links}
        return before, peer.consensus_distance(), stats, links, peer.averaged_model()[0].item()

    for rank, (before, after, stats, links, mean) in enumerate(
            run_ranks(4, body, algorithm="choco", compress="topk:0.1")):
        assert after < 0.2 * before and stats.bytes_sent > 0
        # the rounds' CPU time is part of their wall time (the rest waited)
        assert 0 < stats.comm_cpu_seconds <= stats.comm_seconds
        assert (stats.steps, stats.algorithm, stats.compressor) == (30, "choco", "topk:0.1")
        # the exponential graph on 4 ranks links every rank with the others
        assert sorted(links) == [r for r in range(4) if r != rank] and sum(links.values()) == stats.bytes_sent
        assert mean == pytest.approx(1.5, abs=1e-4)  # choco keeps the mean


def test_murmur_peer_before_init_is_an_error():
    murmur._peer._default = None
    with pytest.raises(RuntimeError, match=r"call murmur.init\(\) first"):
        murmur.peer()


def test_the_schedulers_decisions_reach_python_as_dicts():
    # The callback runs on the thread inside step(): the rank's own thread here.
    decisions = collections.defaultdict(list)

    def body(peer):
        x = torch.full((5000,), float(peer.rank))
        peer.add_tensor("x", x)
        for _ in range(40):
            peer.step()
        peer.flush()
        return threading.get_ident(), peer.stats().period

    for thread, period in run_ranks(2, body, algorithm="choco", compress="topk:0.1", schedule="adaptive",
                                    schedule_interval=5,
                                    on_schedule_decision=lambda d: decisions[threading.get_ident()].append(d)):
        agreed = [d for d in decisions[thread] if d.get("agreed", True)]
        assert len(agreed) >= 3, decisions[thread]
        assert agreed[-1]["event"] == "schedule" and agreed[-1]["period"] == period
        assert {"ratio", "reason", "links"} <= set(agreed[-1])


def test_on_schedule_decision_must_be_callable():
    with pytest.raises(TypeError, match="on_schedule_decision must be a callable, not int"):
        murmur.Peer(rank=0, world_size=1, on_schedule_decision=3)
