"""The soak's verdict: does any peer's resource series grow after warm-up?

A series passes when every sample after the warm-up stays at or below

    limit = base * (1 + relative) + absolute

where base is the series' value in the first sample at or after the end of
the warm-up. Counts (descriptors, threads, mappings) get a small absolute
allowance and no relative one: a leak of one socket per gossip round would
cross it within minutes, while a reconnect or the metrics file being reopened
does not. Memory gets both, because the allocator's pools and the adaptive
scheduler's changing message sizes move RSS by a few MiB either way without
anything being lost. docs/testing.md ("Soak") gives the numbers' evidence.

The fitted slope (least squares over the samples after warm-up, per hour)
is reported beside the verdict, not judged: over 25 minutes a slope is too
noisy to bound tighter than the limit above already does.
"""

# series: (relative, absolute) growth allowed after warm-up.
TOLERANCES = {
    "rss_mib": (0.05, 16.0),
    "hwm_mib": (0.05, 16.0),
    "fds": (0.0, 2),
    "threads": (0.0, 2),
    "sockets": (0.0, 2),
    "anon_inodes": (0.0, 2),
    "maps": (0.0, 32),
    "shm_maps": (0.0, 2),
}

# The rank soak.py gives murmur-run's own samples: it hosts the rendezvous
# server, whose key-value store every peer's collectives write to.
LAUNCHER = -1


def label(rank):
    return "murmur-run" if rank == LAUNCHER else f"rank {rank}"


# Fewer samples after warm-up than this cannot show a trend: the run fails.
MIN_SAMPLES_AFTER_WARMUP = 2


def slope_per_hour(points):
    """Least-squares slope of [(minute, value)], in units per hour (0 for
    fewer than two distinct minutes)."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(m for m, _ in points) / n
    my = sum(v for _, v in points) / n
    sxx = sum((m - mx) ** 2 for m, _ in points)
    if sxx == 0:
        return 0.0
    return 60.0 * sum((m - mx) * (v - my) for m, v in points) / sxx


def judge_series(points, warmup_min, relative, absolute):
    """Verdict on one peer's series, points = [(minute, value)] in time
    order. Returns a dict: base, limit, max_after, max_minute, growth,
    slope_per_hour, samples_after, ok, and reason when not ok."""
    after = [(m, v) for m, v in points if m >= warmup_min]
    result = {"samples_after": len(after), "slope_per_hour": slope_per_hour(after)}
    if len(after) < MIN_SAMPLES_AFTER_WARMUP:
        result.update(ok=False, reason=f"{len(after)} samples after the warm-up of {warmup_min:g} min, "
                                       f"need {MIN_SAMPLES_AFTER_WARMUP}")
        return result
    base = after[0][1]
    limit = base * (1 + relative) + absolute
    max_minute, max_after = max(after, key=lambda p: p[1])
    result.update(base=base, limit=limit, max_after=max_after, max_minute=max_minute,
                  growth=max_after - base, ok=max_after <= limit)
    if not result["ok"]:
        result["reason"] = (f"grew from {base:g} at minute {after[0][0]:.1f} to {max_after:g} at minute "
                            f"{max_minute:.1f}, above the limit {limit:g}")
    return result


def judge(samples, warmup_min, tolerances=TOLERANCES):
    """Verdict on every (rank, series). samples: dicts with 'minute', 'rank'
    and the series' values. Returns (results, failures): results maps
    (rank, series) to judge_series' dict; failures are messages naming the
    rank, the series, the values and the minute."""
    by_rank = {}
    for s in sorted(samples, key=lambda s: s["minute"]):
        by_rank.setdefault(s["rank"], []).append(s)
    results, failures = {}, []
    for rank in sorted(by_rank):
        for series, (relative, absolute) in tolerances.items():
            points = [(s["minute"], s[series]) for s in by_rank[rank] if s.get(series) is not None]
            r = judge_series(points, warmup_min, relative, absolute)
            results[(rank, series)] = r
            if not r["ok"]:
                failures.append(f"{label(rank)} {series}: {r['reason']}")
    return results, failures


def pids_changed(samples):
    """Messages for every rank whose pid changed between samples: a peer
    restarted, so the soak no longer watches one continuous process."""
    first, messages = {}, []
    for s in sorted(samples, key=lambda s: s["minute"]):
        pid = first.setdefault(s["rank"], s["pid"])
        if s["pid"] != pid:
            messages.append(f"{label(s['rank'])}: pid {pid} became {s['pid']} at minute {s['minute']:.1f} "
                            "(restarted: not one continuous process)")
            first[s["rank"]] = s["pid"]
    return messages


def worst(results, series):
    """The (rank, result) of `series` with the largest growth relative to
    its allowance (the peer closest to failing, or failing most)."""
    def margin(item):
        r = item[1]
        if "limit" not in r:
            return float("inf")
        room = r["limit"] - r["base"]
        return r["growth"] / room if room > 0 else (float("inf") if r["growth"] > 0 else 0.0)
    candidates = [(rank, r) for (rank, s), r in results.items() if s == series]
    return max(candidates, key=margin) if candidates else None
