"""The soak's resource curves: one panel per series, one line per peer."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402
from proc_sample import SERIES  # noqa: E402


def plot(samples, warmup_min, path, title):
    """Draws `samples` (dicts with minute, rank and the SERIES) to `path`,
    with the end of the warm-up marked in every panel."""
    plt = common.pyplot()
    names = list(SERIES)
    columns = 2
    rows = (len(names) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(12, 2.6 * rows), sharex=True)
    ranks = sorted({s["rank"] for s in samples})
    for ax, name in zip(axes.flat, names):
        for rank in ranks:
            points = sorted((s["minute"], s[name]) for s in samples if s["rank"] == rank)
            ax.plot([m for m, _ in points], [v for _, v in points], marker=".", linewidth=1, label=f"rank {rank}")
        ax.axvline(warmup_min, color="grey", linestyle="--", linewidth=1)
        ax.set_title(SERIES[name], fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("minutes since the peers started (dashed: end of warm-up)")
    axes.flat[0].legend(fontsize=7, ncol=2)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
