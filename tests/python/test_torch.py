"""murmur.torch: GossipOptimizer, ShardSampler and average_model, on jobs
of 4 ranks in this process (one thread per rank)."""

import pytest
import torch
import torch.nn as nn

import murmur
import murmur.torch as mt
from conftest import inside, run_ranks


def make_model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2))


def test_parameters_become_views_of_one_flat_tensor_murmur_uses_in_place():
    """How the no-copy claim is checked: every parameter's storage is the
    flat tensor registered with the C++ Peer (one host tensor, which the
    TensorSet uses in place), and what the C++ allreduce writes there is
    what the parameters read."""
    def body(peer):
        model = make_model()
        with torch.no_grad():
            for p in model.parameters():
                p.fill_(float(peer.rank))
        opt = mt.GossipOptimizer(torch.optim.SGD(model.parameters(), lr=0.0), model, algorithm="allreduce",
                                 peer=peer)
        flat = opt.flat_parameters
        in_flat = all(inside(p, flat) for p in model.parameters())
        shared = all(p.storage().data_ptr() == flat.storage().data_ptr() for p in model.parameters())
        loss = model(torch.ones(3, 6)).sum()
        loss.backward()
        opt.step()
        return in_flat, shared, peer.parameter_count(), [p.flatten()[0].item() for p in model.parameters()]

    for in_flat, shared, count, firsts in run_ranks(4, body, algorithm="allreduce"):
        assert in_flat and shared and count == 6 * 5 + 5 + 5 * 2 + 2
        assert firsts == [1.5] * 4  # lr 0: the step only averaged


def test_gossip_optimizer_trains_and_agrees():
    """Four ranks fit one linear map from their own samples; the gossiped
    models end close to each other and to the truth."""
    truth = torch.randn(6, 2, generator=torch.Generator().manual_seed(3))

    def body(peer):
        torch.manual_seed(0)
        model = nn.Linear(6, 2, bias=False)
        sgd = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
        opt = mt.GossipOptimizer(sgd, model, peer=peer)
        generator = torch.Generator().manual_seed(100 + peer.rank)
        for _ in range(200):
            x = torch.randn(16, 6, generator=generator)
            opt.zero_grad()
            ((model(x) - x @ truth) ** 2).mean().backward()
            opt.step()
        opt.flush()
        averaged = opt.averaged_model()
        return opt.consensus_distance(), (averaged.weight.t() - truth).abs().max().item()

    for distance, error in run_ranks(4, body, algorithm="choco", compress="topk:0.5"):
        assert distance < 0.05 and error < 0.05


def test_state_dict_carries_the_optimizer_and_murmur():
    def body(peer):
        model = make_model()
        opt = mt.GossipOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), model, peer=peer)
        for _ in range(3):
            opt.zero_grad()
            model(torch.ones(2, 6)).sum().backward()
            opt.step()
        return opt.state_dict()

    states = run_ranks(4, body, algorithm="choco", compress="topk:0.5")
    assert all(isinstance(s["murmur"], bytes) and len(s["murmur"]) > 0 for s in states)
    assert all(len(s["optimizer"]["state"]) == 4 for s in states)  # momentum per parameter

    def resume(peer):
        model = make_model()
        opt = mt.GossipOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), model, peer=peer)
        opt.load_state_dict(states[peer.rank])
        opt.zero_grad()
        model(torch.ones(2, 6)).sum().backward()
        opt.step()
        return len(opt.state)

    assert run_ranks(4, resume, algorithm="choco", compress="topk:0.5") == [4] * 4


def test_load_state_dict_names_what_is_missing():
    with murmur.init() as peer:
        model = make_model()
        opt = mt.GossipOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, peer=peer)
        with pytest.raises(KeyError, match="no \\['murmur'\\]"):
            opt.load_state_dict({"optimizer": opt.optimizer.state_dict()})


def test_models_murmur_cannot_gossip_are_refused_naming_the_parameter():
    with murmur.init() as peer:
        model = make_model().double()
        with pytest.raises(TypeError, match="parameter '0.weight': dtype torch.float64"):
            mt.GossipOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, peer=peer)
        with pytest.raises(TypeError, match="not a torch.optim.Optimizer"):
            mt.GossipOptimizer(object(), make_model(), peer=peer)


def test_lr_schedulers_see_the_wrapped_optimizers_groups():
    with murmur.init() as peer:
        model = make_model()
        opt = mt.GossipOptimizer(torch.optim.SGD(model.parameters(), lr=1.0), model, peer=peer)
        scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        model(torch.ones(1, 6)).sum().backward()
        opt.step()
        scheduler.step()
        assert opt.optimizer.param_groups[0]["lr"] == 0.5


def test_average_model_is_the_exact_mean_and_leaves_the_model():
    def body(peer):
        model = make_model(seed=peer.rank)
        averaged = mt.average_model(model, peer)
        return [p.detach().clone() for p in model.parameters()], [p.detach() for p in averaged.parameters()]

    results = run_ranks(4, body, algorithm="dpsgd")
    for i, mean in enumerate(results[0][1]):
        expected = sum(r[0][i] for r in results) / 4
        assert torch.allclose(mean, expected, atol=1e-6)


@pytest.mark.parametrize("partition", ["iid", "dirichlet:0.3"])
def test_shard_sampler_splits_every_example_once(partition):
    labels = torch.arange(1000) % 10
    samplers = [mt.ShardSampler(labels, rank=r, world_size=4, partition=partition, seed=5) for r in range(4)]
    shards = [sorted(iter(s)) for s in samplers]
    assert sorted(i for shard in shards for i in shard) == list(range(1000))
    assert [len(s) for s in samplers] == [len(shard) for shard in shards]
    if partition == "iid":
        assert max(map(len, shards)) - min(map(len, shards)) <= 1
    else:  # label-skewed: some rank's shard is dominated by few classes
        dominant = max(max(torch.bincount(labels[s], minlength=10).tolist()) / len(s) for s in shards)
        assert dominant > 0.3
    first = list(iter(samplers[0]))
    samplers[0].set_epoch(1)
    assert sorted(first) == sorted(iter(samplers[0])) and first != list(iter(samplers[0]))


def test_shard_sampler_matches_the_cxx_partition_and_checks_input():
    labels = torch.arange(100) % 10
    shards = murmur.partition("iid", bytes(labels.to(torch.uint8).tolist()), 10, 3, 7)
    sampler = mt.ShardSampler(labels, rank=1, world_size=3, seed=7, shuffle=False)
    assert list(iter(sampler)) == shards[1]
    with pytest.raises(ValueError, match='partition "dirichlet:0": '):
        mt.ShardSampler(labels, rank=0, world_size=3, partition="dirichlet:0")
    with pytest.raises(ValueError, match="label 10 at index 10 is not below num_classes=10"):
        murmur.partition("iid", bytes(range(20)), 10, 2, 1)
    with pytest.raises(ValueError, match="rank 3 is outside 0..2"):
        mt.ShardSampler(labels, rank=3, world_size=3)


def batches(rank, steps):
    generator = torch.Generator().manual_seed(50 + rank)
    return [torch.randn(8, 6, generator=generator) for _ in range(steps)]


def replay_on_mean_gradients(size, steps, lr, momentum, make_optimizer=None):
    """The reference: one model stepped on the mean of every rank's gradient,
    in one process (SGD with momentum unless make_optimizer(params) says)."""
    model = make_model()
    sgd = (make_optimizer(model.parameters()) if make_optimizer else
           torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum))
    data = [batches(r, steps) for r in range(size)]
    for k in range(steps):
        grads = []
        for r in range(size):
            model.zero_grad()
            model(data[r][k]).pow(2).mean().backward()
            grads.append([p.grad.clone() for p in model.parameters()])
        for i, p in enumerate(model.parameters()):
            p.grad = sum(g[i] for g in grads) / size
        sgd.step()
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("algorithm", ["bsp-a2a", "wfbp-a2a", "mg-wfbp"])
def test_gradient_methods_step_on_the_mean_gradient(algorithm):
    """The gradient hand-off from Python: each rank trains on its own data;
    GossipOptimizer hands every layer's gradient to murmur from the backward
    pass and averages before the local step, so every rank's model is the
    one-process replay on the mean gradient (to float rounding: sums in
    another order). Rank 1 zeroes with set_to_none=True through the model,
    which replaces murmur's views: the hook copies the new gradient back."""
    size, steps, lr, momentum = 4, 6, 0.1, 0.9
    # Made here, not in the ranks' threads: torch's global generator is
    # shared, and ranks seeding it at once would start from different models.
    initial = make_model().state_dict()

    def body(peer):
        model = make_model()
        model.load_state_dict(initial)
        opt = mt.GossipOptimizer(torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum), model, peer=peer)
        assert peer.averages_gradients and opt.gradients is not None
        buffer = opt.gradients.flat
        for x in batches(peer.rank, steps):
            if peer.rank == 1:
                model.zero_grad(set_to_none=True)
            else:
                opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        state = opt.optimizer_state.flat  # the momentum, re-averaged at a view change
        in_buffer = all(inside(p.grad, buffer) and inside(opt.state[p]["momentum_buffer"], state)
                        for p in model.parameters())
        return [p.detach().clone() for p in model.parameters()], in_buffer, peer.stats().algorithm

    expected = replay_on_mean_gradients(size, steps, lr, momentum)
    for params, in_buffer, name in run_ranks(size, body, algorithm=algorithm):
        assert name == algorithm and in_buffer
        for got, want in zip(params, expected):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_gradient_methods_refuse_two_backwards_per_step():
    """Accumulating two micro-batches would write a gradient that may already
    be on the wire: refused, naming why."""
    def body(peer):
        model = make_model()
        opt = mt.GossipOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model, peer=peer)
        model(torch.ones(2, 6)).sum().backward()
        try:
            model(torch.ones(2, 6)).sum().backward()
        except RuntimeError as e:
            message = str(e)
        else:
            message = ""
        opt.step()  # every rank still makes the step's collective
        return message

    for message in run_ranks(2, body, algorithm="bsp-a2a"):
        assert "written twice before step()" in message and "one backward per step" in message


def test_the_optimizer_state_layout_is_found_for_any_torch_optimizer():
    """What GossipOptimizer hands the Peer beside the model, for the gradient
    methods: each parameter's state tensors of its shape, found by stepping
    a copy of the optimizer; the step count is not averaged; an optimizer
    that cannot be stepped so is named in a warning, not a crash."""
    from murmur.torch.optimizer_state import state_layout

    model = make_model()
    params = list(model.parameters())
    before = [p.detach().clone() for p in params]
    assert state_layout(torch.optim.SGD(params, lr=0.1, momentum=0.9), params) == [["momentum_buffer"]] * 4
    assert state_layout(torch.optim.SGD(params, lr=0.1), params) == [[]] * 4
    assert state_layout(torch.optim.Adam(params), params) == [["exp_avg", "exp_avg_sq"]] * 4
    # Per-group options travel: momentum on the first layer's group only.
    groups = [{"params": params[:2], "momentum": 0.9}, {"params": params[2:]}]
    assert state_layout(torch.optim.SGD(groups, lr=0.1), params) == [["momentum_buffer"]] * 2 + [[]] * 2
    with pytest.warns(UserWarning, match="LBFGS's state could not be laid out"):
        assert state_layout(torch.optim.LBFGS(params), params) is None
    for p, b in zip(params, before):
        assert torch.equal(p, b) and p.grad is None  # the real model is not touched


def test_gradient_methods_keep_adams_moments_in_the_state_handed_over():
    """Adam under a gradient method: its moments become views of the state
    handed to the Peer after its first step (re-averaged at a view change),
    and the training is still the one-process replay on the mean gradient."""
    size, steps = 2, 5
    initial = make_model().state_dict()

    def adam(params):
        return torch.optim.Adam(params, lr=0.01)

    def body(peer):
        model = make_model()
        model.load_state_dict(initial)
        opt = mt.GossipOptimizer(adam(model.parameters()), model, peer=peer)
        for x in batches(peer.rank, steps):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        flat = opt.optimizer_state.flat
        assert flat.numel() == 2 * sum(p.numel() for p in model.parameters())
        views = all(inside(opt.state[p][key], flat) for p in model.parameters() for key in ("exp_avg", "exp_avg_sq"))
        return [p.detach().clone() for p in model.parameters()], views

    expected = replay_on_mean_gradients(size, steps, 0, 0, adam)
    for params, views in run_ranks(size, body, algorithm="bsp-a2a"):
        assert views
        for got, want in zip(params, expected):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
