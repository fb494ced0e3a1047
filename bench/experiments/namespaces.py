"""The emulated cluster of netns.sh from Python: run its commands, and read
what the namespaces sent (shared by compare_ddp.py and example_vs_ddp.py)."""

import os
import subprocess

NETNS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "netns.sh")


def netns(*args, check=True):
    """netns.sh ARGS..., output captured (needs root for up and down)."""
    return subprocess.run([NETNS, *args], check=check, text=True, capture_output=True)


def namespaces_tx_bytes(n):
    """Bytes the n namespaces have transmitted so far: the rx of each
    bridge-side veth end, headers, ACKs and retransmissions included."""
    total = 0
    for i in range(n):
        with open(f"/sys/class/net/murmur-v{i}/statistics/rx_bytes") as f:
            total += int(f.read())
    return total
