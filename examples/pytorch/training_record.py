"""What the example records about one rank's training, the same way for
murmur and for DDP: the test accuracy at each evaluation with the wall time
and the training time it took to get there, and (with an interface named)
the bytes this rank's network interface transmitted while training.

Evaluations are measurement, not training: their time and the bytes they
send (murmur's averaged-model collective) are left out of train_seconds and
of the training wire bytes, so both systems are charged for training only.

Not thread-safe; one per rank, used from the training loop's thread.
"""

from __future__ import annotations

import os
import time
from typing import Dict, List, Optional


def evaluation_steps(steps_per_epoch: int, evals_per_epoch: int) -> List[int]:
    """The step counts within an epoch after which to evaluate: evenly spaced,
    the last at the epoch's end (murmur-peer's rule)."""
    if evals_per_epoch < 1:
        raise ValueError(f"--evals-per-epoch {evals_per_epoch}: expected at least 1")
    k = min(evals_per_epoch, steps_per_epoch)
    return sorted({round((j + 1) * steps_per_epoch / k) for j in range(k)})


class WireCounter:
    """Bytes transmitted by one network interface, read from
    /sys/class/net/IFACE/statistics/tx_bytes: every frame, with its Ethernet,
    IP and TCP headers, including retransmissions and ACKs. Inside a network
    namespace (`ip netns exec`) /sys shows that namespace's interfaces."""

    def __init__(self, interface: str):
        self.path = f"/sys/class/net/{interface}/statistics/tx_bytes"
        if not os.path.exists(self.path):
            raise FileNotFoundError(f"--wire-interface {interface}: {self.path} does not exist "
                                    "(is the interface in this network namespace?)")

    def read(self) -> int:
        with open(self.path) as f:
            return int(f.read())


class TrainingRecord:
    """Training time and wire bytes with the evaluations taken out.

    start() when the first step begins; pause() before an evaluation and
    resume() after it; stop() after the last step."""

    def __init__(self, wire: Optional[WireCounter]):
        self.wire = wire
        self.started = 0.0
        self.train_seconds = 0.0
        self.wire_bytes = 0
        self.evals: List[Dict[str, float]] = []
        self._since = 0.0
        self._wire_since = 0

    def start(self) -> None:
        self.started = time.monotonic()
        self._since = self.started
        self._wire_since = self.wire.read() if self.wire else 0

    def pause(self) -> None:
        self.train_seconds += time.monotonic() - self._since
        if self.wire:
            self.wire_bytes += self.wire.read() - self._wire_since

    def resume(self) -> None:
        self._since = time.monotonic()
        self._wire_since = self.wire.read() if self.wire else 0

    def stop(self) -> None:
        self.pause()

    def add_eval(self, epoch: int, step: int, accuracy: float) -> Dict[str, float]:
        """One evaluation taken while paused; `step` counts from the start."""
        entry = {"epoch": epoch, "step": step, "accuracy": accuracy, "train_seconds": self.train_seconds,
                 "seconds": time.monotonic() - self.started}
        self.evals.append(entry)
        return entry
