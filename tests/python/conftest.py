"""Shared helpers of murmur's Python tests (ctest runs them with pytest from
tests/python/CMakeLists.txt, with PYTHONPATH at the build's python/ folder
and MURMUR_BUILD_DIR at the build)."""

from __future__ import annotations

import json
import os
import random
import socket
import threading
import time
from typing import Any, Callable, List

import pytest

import murmur


def free_port(count: int = 1) -> int:
    """A port p such that p .. p+count-1 were free a moment ago, for a server
    that the code under test binds later (on every address, as murmur's
    rendezvous and torchrun's store do).

    Chosen below the kernel's ephemeral range (ip_local_port_range), from
    which every outgoing connection on the host takes its local port: a
    port picked from that range can be handed to someone's connect() before
    the server binds it. That happened under load (fuzzers and other tests
    making thousands of loopback connections): torchrun's job failed with
    "rendezvous server cannot bind 0.0.0.0:42060: Address already in use".
    Below the range only an explicit bind takes a port, and the start is
    random, so two tests rarely probe the same one."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral_low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    low = 10000
    if ephemeral_low - low < 1000:
        raise RuntimeError(f"free_port: the ephemeral range starts at {ephemeral_low}; no room below it")
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(low, ephemeral_low - count)
        held: List[socket.socket] = []
        try:
            for p in range(port, port + count):
                s = socket.socket()
                held.append(s)
                s.bind(("0.0.0.0", p))
            return port
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError(f"no {count} consecutive free ports below {ephemeral_low} in 200 tries")


def wait_until_gone(thread: threading.Thread, timeout_s: float = 10.0) -> None:
    """Waits for a joined thread's OS thread to end. join() returns when the
    thread's Python state is gone, before its C++ thread-local destructors
    run: torch's free tensors that need the GIL, and a thread still in them
    when the interpreter finalizes is made to exit from inside one, which
    ends the process in std::terminate ("terminate called without an active
    exception" after every test had passed, 1 run in 3 of test_torch.py)."""
    task = f"/proc/self/task/{thread.native_id}"
    deadline = time.monotonic() + timeout_s
    while os.path.exists(task):
        assert time.monotonic() < deadline, f"thread {thread.name} had not ended {timeout_s} s after its join"
        time.sleep(0.001)


def run_threads(targets: List[Callable[[], Any]]) -> List[Any]:
    """Runs each target in a thread of its own (murmur's C++ Peer releases
    the GIL while it blocks) and waits for all, each thread to its end
    (wait_until_gone); returns their results, re-raising the first
    exception one of them raised."""
    results: List[Any] = [None] * len(targets)
    errors: List[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = targets[i]()
        except BaseException as e:  # noqa: BLE001 (handed to the test thread)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(targets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), f"{t.name} did not finish within 120 s"
    for t in threads:
        wait_until_gone(t)
    if errors:
        raise errors[0]
    return results


def inside(tensor: Any, flat: Any) -> bool:
    """Whether ``tensor``'s data lies in ``flat``'s memory (is a view of it:
    what murmur reads and writes in place)."""
    start = flat.data_ptr()
    return start <= tensor.data_ptr() < start + flat.numel() * flat.element_size()


def run_ranks(size: int, body: Callable[[murmur.Peer], Any], **options: Any) -> List[Any]:
    """A job of `size` ranks in this process, one thread each (run_threads);
    returns body(peer) of each rank, re-raising the first rank's exception."""
    port = free_port()
    options.setdefault("backend", "asio")
    options.setdefault("token", "pytest")
    options.setdefault("join_timeout_s", 30)

    def rank(r: int) -> Any:
        with murmur.Peer(rank=r, world_size=size, rendezvous=f"127.0.0.1:{port}", host_rendezvous=r == 0,
                         **options) as peer:
            return body(peer)

    return run_threads([lambda r=r: rank(r) for r in range(size)])


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
