#!/usr/bin/python3
"""Measures TCP throughput between two namespaces of netns.sh (an iperf
without iperf), to check that the tbf shaping holds.

    link_check.py serve PORT               # in one namespace
    link_check.py send HOST PORT SECONDS   # in another: prints Mbit/s

The sender streams 256 KiB writes for SECONDS and counts what the receiver
acknowledged at the end (the receiver sends back the byte count it read),
so bytes still queued in the sender's socket buffer are not counted.
"""
import socket
import struct
import sys
import time

CHUNK = 256 * 1024


def serve(port: int) -> None:
    with socket.create_server(("0.0.0.0", port)) as listener:
        conn, _ = listener.accept()
        with conn:
            total = 0
            while True:
                data = conn.recv(CHUNK)
                if not data:
                    break
                total += len(data)
            # The sender half-closed: answer how much arrived.
            conn.sendall(struct.pack("!Q", total))


def send(host: str, port: int, seconds: float) -> None:
    payload = b"\0" * CHUNK
    deadline = time.monotonic() + 5
    while True:  # the server may still be starting
        try:
            conn = socket.create_connection((host, port), timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    with conn:
        conn.settimeout(None)
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            conn.sendall(payload)
        conn.shutdown(socket.SHUT_WR)
        received = struct.unpack("!Q", conn.recv(8))[0]
        elapsed = time.monotonic() - start
    print(f"{received * 8 / elapsed / 1e6:.1f} Mbit/s ({received} bytes in {elapsed:.2f} s)")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    elif len(sys.argv) == 5 and sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)
