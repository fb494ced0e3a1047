"""The state a sponsor hands a joiner with the model, from several owners.

PeerConfig has one ``join_state``/``on_join_state`` pair, but in a PyTorch
script several parties have state a joiner needs: GossipOptimizer (the
wrapped optimizer's momentum and step counts), the user's script (the step,
the epoch, a learning-rate schedule). Each registers a named part with
``Peer.add_join_state(name, save, load)``; the Peer installs the one pair
below, which packs every part into one message and unpacks it on the
joiner, calling each ``load`` with its own bytes.

The message (little-endian):
    b"MJS1", u32 part count, then per part: u16 name length, the name
    (UTF-8), u64 payload length, the payload.

It arrives from another process over the network: ``unpack`` checks every
length against what is left and raises ValueError naming what is wrong;
the payloads are handed to their ``load`` as bytes (what a ``load`` does
with them is its own to check: GossipOptimizer loads with
``torch.load(weights_only=True)``, no arbitrary pickles).

Thread safety: the parts are registered before the first step() on the
caller's thread; save and load run inside step() on the caller's thread.
"""

from __future__ import annotations

import struct
from typing import Callable, Dict, Optional, Tuple

MAGIC = b"MJS1"
_COUNT = struct.Struct("<I")
_NAME_LENGTH = struct.Struct("<H")
_PAYLOAD_LENGTH = struct.Struct("<Q")

Save = Optional[Callable[[], bytes]]
Load = Optional[Callable[[bytes], None]]


def _as_bytes(name: str, value: object) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    raise TypeError(f"murmur: join state '{name}': save() returned {type(value).__name__}; it must return bytes or str")


def pack(parts: Dict[str, bytes]) -> bytes:
    out = [MAGIC, _COUNT.pack(len(parts))]
    for name, payload in parts.items():
        encoded = name.encode()
        out += [_NAME_LENGTH.pack(len(encoded)), encoded, _PAYLOAD_LENGTH.pack(len(payload)), payload]
    return b"".join(out)


def unpack(message: bytes) -> Dict[str, bytes]:
    """The parts of a message from pack(); ValueError for anything else."""
    view = memoryview(message)
    if bytes(view[:4]) != MAGIC:
        raise ValueError(f"murmur: the sponsor's join state does not start with {MAGIC!r} "
                         f"(got {bytes(view[:4])!r}, {len(message)} bytes): not from a murmur.Peer")
    at = 4

    def take(n: int, what: str) -> memoryview:
        nonlocal at
        if n > len(view) - at:
            raise ValueError(f"murmur: the sponsor's join state is cut short: {what} needs {n} bytes at offset "
                             f"{at}, {len(view) - at} left of {len(message)}")
        piece = view[at:at + n]
        at += n
        return piece

    (count,) = _COUNT.unpack(take(_COUNT.size, "the part count"))
    parts: Dict[str, bytes] = {}
    for k in range(count):
        (name_length,) = _NAME_LENGTH.unpack(take(_NAME_LENGTH.size, f"part {k}'s name length"))
        try:
            name = bytes(take(name_length, f"part {k}'s name")).decode()
        except UnicodeDecodeError as e:
            raise ValueError(f"murmur: the sponsor's join state: part {k}'s name is not UTF-8 ({e})") from None
        (length,) = _PAYLOAD_LENGTH.unpack(take(_PAYLOAD_LENGTH.size, f"part '{name}''s length"))
        if name in parts:
            raise ValueError(f"murmur: the sponsor's join state has part '{name}' twice")
        parts[name] = bytes(take(length, f"part '{name}'"))
    if at != len(view):
        raise ValueError(f"murmur: the sponsor's join state has {len(view) - at} bytes after its {count} parts")
    return parts


class JoinStateParts:
    """The named parts of one Peer, and the PeerConfig pair that carries them.

    A sponsor sends every part that has a ``save``; a joiner calls the
    ``load`` of each part it receives. A part may have only one of the two
    (PeerConfig's own ``join_state``/``on_join_state``, given as options,
    become the part "PeerConfig": a member passes the first, a joiner the
    second), but a part received without a ``load``, or a ``load`` whose
    part did not come, is an error: the joiner would go on without state
    its script expects.
    """

    def __init__(self) -> None:
        self._parts: Dict[str, Tuple[Save, Load]] = {}

    def add(self, name: str, save: Save, load: Load) -> None:
        if not isinstance(name, str) or not name or len(name.encode()) > 0xFFFF:
            raise ValueError(f"murmur.Peer.add_join_state(): the name must be a non-empty str, not {name!r}")
        for what, f in (("save", save), ("load", load)):
            if f is not None and not callable(f):
                raise TypeError(f"murmur.Peer.add_join_state('{name}'): {what} must be a callable or None, "
                                f"not {type(f).__name__}")
        if save is None and load is None:
            raise TypeError(f"murmur.Peer.add_join_state('{name}'): give save, load or both")
        if name in self._parts:
            raise ValueError(f"murmur.Peer.add_join_state('{name}'): a part of that name is registered already")
        self._parts[name] = (save, load)

    def save(self) -> bytes:
        """PeerConfig.join_state: runs inside the sponsor's step()."""
        return pack({name: _as_bytes(name, save()) for name, (save, _) in self._parts.items() if save is not None})

    def load(self, message: bytes) -> None:
        """PeerConfig.on_join_state: runs inside the joiner's first step().
        Every part is checked against the registered names before any load
        runs, so a mismatch changes nothing."""
        loads = {name: load for name, (_, load) in self._parts.items() if load is not None}
        if not message and not loads:
            return  # a sponsor with no join state at all (a C++ one), and nothing expected
        parts = unpack(message)
        if set(parts) != set(loads):
            raise ValueError(f"murmur: the sponsor's join state has parts {sorted(parts)}, this peer loads "
                             f"{sorted(loads)} (every rank must call add_join_state() with the same names)")
        for name, load in loads.items():
            load(parts[name])
