#!/usr/bin/python3
"""Splits the steps of a murmur trace (murmur-run --trace DIR -> DIR/trace.json)
into where each peer's time went, as a table and, with --png, a figure:

  build/src/peer/launcher/murmur-run -np 4 --trace /tmp/t -- \\
      build/src/peer/train/murmur-peer --algorithm choco --compress topk:0.01 ...
  bench/trace/summarize.py /tmp/t/trace.json --png docs/images/trace-split.png

Per peer, per training step (the mean over steps, the first one left out:
it holds the job's one-time layout agreement):

  main thread (the caller's step):
    compute      forward/backward, optimizer (category "compute")
    waiting      blocked on the gossip round in flight (category "wait" on main)
    hand-off     the rest of the step: copying tensors in and out, the
                 scheduler, starting the next round
  gossip thread (in the background, overlapping the next step):
    compression  encode / decode (outermost ones: error feedback wraps a codec)
    communication  waiting for this round's messages (wait_messages)
    round other  the rest of the rounds (averaging, receipts)

Reads the file only; needs matplotlib for --png (python3 -m pip install
matplotlib), nothing else.
"""
import argparse
import collections
import json
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            trace = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"summarize.py: {path}: {e}")
    if "traceEvents" not in trace:
        sys.exit(f"summarize.py: {path}: no traceEvents (not a Chrome trace)")
    return trace["traceEvents"]


def spans_by_thread(events):
    """{(pid, tid): [(begin, end, cat, name)]} sorted by begin, and thread names."""
    threads = collections.defaultdict(list)
    names = {}
    for e in events:
        if e.get("ph") == "X":
            threads[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e.get("cat", ""), e["name"]))
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    for spans in threads.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
    return threads, names


def inside(spans, begin, end):
    return [s for s in spans if s[0] >= begin and s[1] <= end]


def outermost(spans):
    """Spans not contained in an earlier one of the list (sorted by begin)."""
    out, reach = [], float("-inf")
    for s in spans:
        if s[0] >= reach:
            out.append(s)
            reach = s[1]
        else:
            reach = max(reach, s[1])
    return out


def total(spans):
    return sum(s[1] - s[0] for s in spans)


def self_times(spans):
    """[(span, its duration less its direct children's)] for properly nested
    spans sorted by begin: a wait inside forward_backward (murmur-peer
    --layerwise-update) is waiting, not compute too."""
    out, stack = [], []
    for s in spans:
        while stack and stack[-1][0][1] <= s[0]:
            out.append(tuple(stack.pop()))
        if stack:
            stack[-1][1] -= s[1] - s[0]
        stack.append([s, s[1] - s[0]])
    out.extend(tuple(entry) for entry in reversed(stack))
    return out


def split_peer(pid, threads, names):
    """The per-step split of one peer, in milliseconds."""
    main = [k for k in threads if k[0] == pid and names.get(k) == "main"]
    if not main:
        return None
    main_spans = threads[main[0]]
    steps = [s for s in main_spans if s[3] == "step"][1:]
    if not steps:
        return None
    compute, waiting, handoff = [], [], []
    for b, e, _, _ in steps:
        within = self_times(inside(main_spans, b, e))
        c = sum(t for s, t in within if s[2] == "compute")
        w = sum(t for s, t in within if s[2] == "wait")
        compute.append(c)
        waiting.append(w)
        handoff.append((e - b) - c - w)
    first, last = steps[0][0], steps[-1][1]
    gossip = [k for k in threads if k[0] == pid and names.get(k) == "gossip"]
    compression = communication = rounds = 0.0
    for k in gossip:
        spans = [s for s in threads[k] if s[0] >= first and s[1] <= last]
        compression += total(outermost([s for s in spans if s[2] == "compress"]))
        communication += total([s for s in spans if s[3] == "wait_messages"])
        rounds += total([s for s in spans if s[3] == "round"])
    # Compression may also run on the main thread (an algorithm without a
    # background thread): it is counted in the step, and here as well.
    compression += total(outermost([s for s in main_spans if s[2] == "compress" and s[0] >= first and s[1] <= last]))
    n = len(steps)
    ms = 1e-3
    return {
        "steps": n,
        "step": statistics.mean(e - b for b, e, _, _ in steps) * ms,
        "step_median": statistics.median(e - b for b, e, _, _ in steps) * ms,
        "compute": statistics.mean(compute) * ms,
        "waiting": statistics.mean(waiting) * ms,
        "handoff": statistics.mean(handoff) * ms,
        "compression": compression / n * ms,
        "communication": communication / n * ms,
        "round_other": max(0.0, rounds - communication - compression) / n * ms,
    }


COLUMNS = [
    ("steps", "steps", "{:d}"),
    ("step", "step ms", "{:.2f}"),
    ("step_median", "median", "{:.2f}"),
    ("compute", "compute", "{:.2f}"),
    ("waiting", "waiting", "{:.2f}"),
    ("handoff", "hand-off", "{:.2f}"),
    ("compression", "compression", "{:.2f}"),
    ("communication", "communication", "{:.2f}"),
    ("round_other", "round other", "{:.2f}"),
]


def table(rows):
    head = "| peer | " + " | ".join(c[1] for c in COLUMNS) + " |"
    rule = "|---:|" + "---:|" * len(COLUMNS)
    lines = [head, rule]
    for pid, r in sorted(rows.items()):
        lines.append(f"| {pid} | " + " | ".join(c[2].format(r[c[0]]) for c in COLUMNS) + " |")
    return "\n".join(lines)


def draw(rows, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    peers = sorted(rows)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9.5, 1.2 + 1.1 * len(peers)), sharex=True)
    panels = [
        (top, "main thread (the step)", [("compute", "#4c72b0"), ("waiting", "#c44e52"), ("handoff", "#8c8c8c")]),
        (
            bottom,
            "gossip thread (background)",
            [("compression", "#dd8452"), ("communication", "#55a868"), ("round_other", "#8172b2")],
        ),
    ]
    for ax, label, parts in panels:
        left = [0.0] * len(peers)
        for key, colour in parts:
            widths = [rows[p][key] for p in peers]
            ax.barh([f"rank {p}" for p in peers], widths, left=left, color=colour, label=key.replace("_", " "))
            left = [a + b for a, b in zip(left, widths)]
        ax.set_title(label, fontsize=10, loc="left")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.invert_yaxis()
    bottom.set_xlabel("milliseconds per step (mean)")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="a merged trace (murmur-run --trace DIR writes DIR/trace.json)")
    parser.add_argument("--png", help="also draw the split here")
    parser.add_argument("--title", default="where a step's time goes, per peer")
    args = parser.parse_args()
    threads, names = spans_by_thread(load(args.trace))
    rows = {}
    for pid in sorted({k[0] for k in threads}):
        r = split_peer(pid, threads, names)
        if r is not None:
            rows[pid] = r
    if not rows:
        sys.exit(f"summarize.py: {args.trace}: no training steps (a trace of murmur-peer has 'step' spans on 'main')")
    print(table(rows))
    if args.png:
        draw(rows, args.png, args.title)
        print(f"\nwrote {args.png}")


if __name__ == "__main__":
    main()
