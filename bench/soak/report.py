"""The soak's result table: per series, the peers' range and the worst peer."""
from proc_sample import SERIES
from verdict import LAUNCHER, TOLERANCES, label, worst


def _range(values, fmt):
    lo, hi = min(values), max(values)
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}-{fmt.format(hi)}"


def table(results, warmup_min):
    """Markdown: one row per series over the peers, then murmur-run's rows.
    results: verdict.judge's first value."""
    peers = {k: r for k, r in results.items() if k[0] != LAUNCHER}
    launcher = {k: r for k, r in results.items() if k[0] == LAUNCHER}
    text = _rows(peers, warmup_min, "all peers")
    if launcher:
        text += "\n\n" + _rows(launcher, warmup_min, "murmur-run")
    return text


def _rows(results, warmup_min, who):
    lines = [f"| series | tolerance | at warm-up end ({warmup_min:g} min), {who} | max after, {who} | "
             "worst: growth (limit - base) | slope after warm-up, worst, per hour | verdict |",
             "|---|---|---:|---:|---:|---:|---|"]
    for series in SERIES:
        rs = [r for (rank, s), r in results.items() if s == series]
        judged = [r for r in rs if "base" in r]
        if not judged:
            lines.append(f"| {series} | | | | | | no samples after warm-up |")
            continue
        fmt = "{:.1f}" if series.endswith("_mib") else "{:.0f}"
        relative, absolute = TOLERANCES[series]
        tolerance = (f"+{relative:.0%} +{absolute:g}" if relative else f"+{absolute:g}")
        rank, w = worst(results, series)
        ok = sum(1 for r in rs if r["ok"])
        lines.append(f"| {series} | {tolerance} | {_range([r['base'] for r in judged], fmt)} | "
                     f"{_range([r['max_after'] for r in judged], fmt)} | {label(rank)}: {w['growth']:+.1f} "
                     f"({w['limit'] - w['base']:.1f}) | {w['slope_per_hour']:+.1f} | "
                     f"{'pass' if ok == len(rs) else 'FAIL'} ({ok}/{len(rs)}) |")
    return "\n".join(lines)
