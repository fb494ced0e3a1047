"""The PyTorch example's training record (examples/pytorch/training_record.py):
when it evaluates, and how it reads an interface's transmitted bytes."""

import os
import socket
import sys

import pytest

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "examples", "pytorch"))
from training_record import TrainingRecord, WireCounter, evaluation_steps  # noqa: E402


def test_evaluations_are_evenly_spaced_and_the_last_ends_the_epoch():
    assert evaluation_steps(117, 1) == [117]
    assert evaluation_steps(117, 4) == [29, 58, 88, 117]
    assert evaluation_steps(3, 10) == [1, 2, 3]  # at most one per step


def test_no_evaluation_is_an_error_naming_the_flag():
    with pytest.raises(ValueError, match="--evals-per-epoch 0"):
        evaluation_steps(117, 0)


def test_a_missing_interface_is_an_error_naming_it():
    with pytest.raises(FileNotFoundError, match="--wire-interface no-such-if0"):
        WireCounter("no-such-if0")


def test_bytes_sent_while_training_are_counted():
    """1 MiB over loopback between start() and stop(): the record holds at
    least that (lo carries every sender on this host, so only >= holds; that
    paused time is left out is not testable on a shared interface)."""
    record = TrainingRecord(WireCounter("lo"))
    server = socket.create_server(("127.0.0.1", 0))
    sender = socket.create_connection(server.getsockname())
    receiver, _ = server.accept()
    payload = b"x" * (1 << 20)
    record.start()
    sender.sendall(payload)
    got = 0
    while got < len(payload):
        got += len(receiver.recv(1 << 16))
    record.stop()
    assert record.wire_bytes >= len(payload)
    assert record.train_seconds > 0
    for s in (sender, receiver, server):
        s.close()
