"""A torch state_dict (an optimizer's: nested dicts and lists of tensors,
numbers, strings, booleans and None) as bytes that load without pickle.

Why not torch.save/torch.load: the bytes come from another process over
the network (a sponsor's join state), and torch.load unpickles, which can
run any code; torch 1.13's ``weights_only=True`` refuses the floats every
optimizer's param_groups hold. Here the structure is JSON and the tensors
are raw bytes after it, each described in the JSON by dtype, shape and
where its bytes are; ``loads`` checks all of it and raises ValueError
naming what is wrong.

Layout: u64 JSON length (little-endian), the JSON (UTF-8), the tensors'
bytes. In the JSON a dict is {"d": [[key, value], ...]} (keys may be ints,
as optimizer state's are), a list is {"l": [...]}, a tuple {"t": [...]},
a tensor {"T": [dtype, shape, offset, length]}; numbers, strings,
booleans and None are themselves.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any, List

import torch

_LENGTH = struct.Struct("<Q")
# The dtypes an optimizer's state holds; anything else is refused.
_DTYPES = {name: getattr(torch, name) for name in
           ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")}


def dumps(state: Any) -> bytes:
    blobs: List[bytes] = []
    offset = 0

    def encode(value: Any, where: str) -> Any:
        nonlocal offset
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, torch.Tensor):
            name = str(value.dtype).replace("torch.", "")
            if name not in _DTYPES:
                raise TypeError(f"murmur: state {where}: a {name} tensor is not supported")
            data = value.detach().to("cpu").contiguous()
            raw = data.reshape(-1).view(torch.uint8).numpy().tobytes() if data.numel() else b""
            blobs.append(raw)
            entry = {"T": [name, list(data.shape), offset, len(raw)]}
            offset += len(raw)
            return entry
        if isinstance(value, dict):
            for key in value:
                if not isinstance(key, (int, str)) or isinstance(key, bool):
                    raise TypeError(f"murmur: state {where}: a {type(key).__name__} key is not supported")
            return {"d": [[key, encode(v, f"{where}[{key!r}]")] for key, v in value.items()]}
        if isinstance(value, (list, tuple)):
            items = [encode(v, f"{where}[{k}]") for k, v in enumerate(value)]
            return {"t": items} if isinstance(value, tuple) else {"l": items}
        raise TypeError(f"murmur: state {where}: a {type(value).__name__} is not supported")

    text = json.dumps(encode(state, "")).encode()
    return _LENGTH.pack(len(text)) + text + b"".join(blobs)


def loads(message: bytes) -> Any:
    if len(message) < _LENGTH.size:
        raise ValueError(f"murmur: state of {len(message)} bytes: too short for its header")
    (length,) = _LENGTH.unpack_from(message)
    if length > len(message) - _LENGTH.size:
        raise ValueError(f"murmur: state: its JSON is {length} bytes, {len(message) - _LENGTH.size} follow the header")
    try:
        tree = json.loads(message[_LENGTH.size:_LENGTH.size + length].decode())
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ValueError(f"murmur: state: its structure is not valid JSON ({type(e).__name__}: {e})") from None
    blob = memoryview(message)[_LENGTH.size + length:]

    def decode(node: Any, where: str) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or len(node) != 1:
            raise ValueError(f"murmur: state {where}: unexpected {json.dumps(node)[:80]}")
        (kind, body), = node.items()
        if kind == "T":
            return tensor(body, where)
        if kind in ("l", "t") and isinstance(body, list):
            items = [decode(v, f"{where}[{k}]") for k, v in enumerate(body)]
            return tuple(items) if kind == "t" else items
        if kind == "d" and isinstance(body, list):
            out = {}
            for pair in body:
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], (int, str))
                        and not isinstance(pair[0], bool)):
                    raise ValueError(f"murmur: state {where}: a dict entry is not a [key, value] pair")
                out[pair[0]] = decode(pair[1], f"{where}[{pair[0]!r}]")
            return out
        raise ValueError(f"murmur: state {where}: unknown node '{kind}'")

    def tensor(body: Any, where: str) -> torch.Tensor:
        if not (isinstance(body, list) and len(body) == 4 and body[0] in _DTYPES and isinstance(body[1], list)
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in body[1])
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in body[2:])):
            raise ValueError(f"murmur: state {where}: a tensor's description {json.dumps(body)[:80]} is not "
                             "[dtype, shape, offset, length]")
        name, shape, offset, size = body
        dtype = _DTYPES[name]
        count = math.prod(shape)
        expected = count * torch.empty((), dtype=dtype).element_size()
        if size != expected:
            raise ValueError(f"murmur: state {where}: a {name} tensor of shape {shape} takes {expected} bytes, "
                             f"not {size}")
        if offset + size > len(blob):
            raise ValueError(f"murmur: state {where}: the tensor's bytes [{offset}, {offset + size}) lie past "
                             f"the {len(blob)} that follow the structure")
        raw = bytearray(blob[offset:offset + size])  # a copy: the tensor owns its memory
        if not raw:
            return torch.empty(shape, dtype=dtype)
        return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).reshape(shape)

    try:
        return decode(tree, "")
    except RecursionError:
        raise ValueError("murmur: state: nested deeper than this interpreter's recursion limit") from None
