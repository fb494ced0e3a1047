"""Scaled links: the link that gives a CPU peer training one of murmur's
models the communication-to-computation ratio a seed-paper model has on a
GPU over 10GbE or 100 Gb InfiniBand (Shi et al. 2020; docs/experiments.md,
"Scaled profiles"). For seed model M with P parameters (fp32) and
single-GPU throughput S samples/s at batch B:

    R(M, link) = (4 P / link bytes per s) / (B / S)

and the scaled bandwidth for a model of `model_bytes` whose step computes
for c seconds per peer is model_bytes / (R x c). Latency keeps the named
profile's: scaled by the same time factor it would fall below what the
shaper resolves, and under 1% of a step either way.
"""

# Shi et al. 2020 (docs/experiments.md, docs/seed-paper.md):
# parameters, per-GPU batch, single-GPU samples per second.
SEED_MODELS = {
    "resnet50": {"parameters": 25.6e6, "batch": 64, "samples_per_s": 253.1},
    "bert-large": {"parameters": 340e6, "batch": 8, "samples_per_s": 49.0},
}
# Link bytes per second and the named murmur profile whose latency is kept.
SEED_LINKS = {
    "scaled-10gbe": {"bytes_per_s": 1.25e9, "latency": "25us", "latency_s": 25e-6, "seed_link": "10GbE"},
    "scaled-ib": {"bytes_per_s": 12.5e9, "latency": "1.5us", "latency_s": 1.5e-6, "seed_link": "100Gb IB"},
}


def comm_compute_ratio(model, link):
    """(R, the seed model's transfer seconds, its GPU step seconds)."""
    m, l = SEED_MODELS[model], SEED_LINKS[link]
    transfer_s = 4 * m["parameters"] / l["bytes_per_s"]
    step_s = m["batch"] / m["samples_per_s"]
    return transfer_s / step_s, transfer_s, step_s


def scaled_spec(link, model, model_bytes, compute_s, uplink=False):
    """The link profile spec (lat=..,bw=..[,uplink=..]) of scaled `link`
    for a model of `model_bytes` computing `compute_s` a step, and its
    derivation. uplink=True also sends every edge through the rank's one
    uplink at the same rate (docs/link-profiles.md): a host with one NIC,
    which is what the parameter-server and A2A methods share."""
    ratio, transfer_s, step_s = comm_compute_ratio(model, link)
    bw_bytes = model_bytes / (ratio * compute_s)
    kbit = max(1, round(bw_bytes * 8 / 1e3))
    spec = f"lat={SEED_LINKS[link]['latency']},bw={kbit}kbit"
    if uplink:
        spec += f",uplink={kbit}kbit"
    return spec, {"profile": link, "model": model, "seed_link": SEED_LINKS[link]["seed_link"], "ratio": ratio,
                  "seed_transfer_s": transfer_s, "seed_step_s": step_s, "cpu_compute_s": compute_s,
                  "bw_bytes_per_s": bw_bytes, "latency_s": SEED_LINKS[link]["latency_s"], "spec": spec}
