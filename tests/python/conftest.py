"""Shared helpers of murmur's Python tests (ctest runs them with pytest from
tests/python/CMakeLists.txt, with PYTHONPATH at the build's python/ folder
and MURMUR_BUILD_DIR at the build)."""

from __future__ import annotations

import json
import os
import socket
import threading
from typing import Any, Callable, List

import pytest

import murmur


def free_port(count: int = 1) -> int:
    """A port p such that p .. p+count-1 were free a moment ago on loopback.

    The sockets probed stay open until the end, so that the kernel does not
    hand back the same port, whose neighbour is taken, again and again."""
    held: List[socket.socket] = []
    try:
        for _ in range(200):
            first = socket.socket()
            held.append(first)
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            if port + count > 65536:
                continue
            try:
                for extra in range(1, count):
                    s = socket.socket()
                    held.append(s)
                    s.bind(("127.0.0.1", port + extra))
            except OSError:
                continue
            return port
    finally:
        for s in held:
            s.close()
    raise RuntimeError(f"no {count} consecutive free ports on loopback in 200 tries")


def run_ranks(size: int, body: Callable[[murmur.Peer], Any], **options: Any) -> List[Any]:
    """A job of `size` ranks in this process, one thread each (murmur's C++
    Peer releases the GIL while it blocks); returns body(peer) of each rank,
    re-raising the first rank's exception."""
    port = free_port()
    results: List[Any] = [None] * size
    errors: List[BaseException] = []
    options.setdefault("backend", "asio")
    options.setdefault("token", "pytest")
    options.setdefault("join_timeout_s", 30)

    def rank(r: int) -> None:
        try:
            with murmur.Peer(rank=r, world_size=size, rendezvous=f"127.0.0.1:{port}", host_rendezvous=r == 0,
                             **options) as peer:
                results[r] = body(peer)
        except BaseException as e:  # noqa: BLE001 (handed to the test thread)
            errors.append(e)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a rank did not finish within 120 s"
    if errors:
        raise errors[0]
    return results


@pytest.fixture
def build_dir() -> str:
    path = os.environ.get("MURMUR_BUILD_DIR", "")
    if not path:
        pytest.skip("MURMUR_BUILD_DIR is not set (ctest sets it)")
    return path


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "pytorch", "train_fashion_mnist.py")


def result_events(output: str) -> dict:
    """The "@murmur" result event that each murmur-peer prints at its end,
    by rank (docs/launcher.md, "Output and events")."""
    results = {}
    for line in output.splitlines():
        if line.startswith("@murmur ") and '"result"' in line:
            event = json.loads(line[len("@murmur "):])
            if event.get("event") == "result":
                results[event["rank"]] = event
    return results
