"""The join state's framing (murmur/_join_state.py) and the optimizer
state's encoding (murmur/torch/plain_state.py): both read bytes from
another process, so every malformed message must give a ValueError that
says what is wrong, and a well-formed one must come back as it went."""

import random

import pytest
import torch

from murmur._join_state import JoinStateParts, pack, unpack
from murmur.torch import plain_state


def test_parts_go_to_the_load_of_the_same_name():
    sponsor, joiner = JoinStateParts(), JoinStateParts()
    got = {}
    sponsor.add("a", lambda: b"\x00\x01", None)
    sponsor.add("b", lambda: "text", lambda b: None)
    joiner.add("a", None, lambda b: got.__setitem__("a", b))
    joiner.add("b", lambda: b"", lambda b: got.__setitem__("b", b))
    joiner.load(sponsor.save())
    assert got == {"a": b"\x00\x01", "b": b"text"}


def test_a_mismatch_of_names_loads_nothing_and_names_both_sides():
    sponsor, joiner = JoinStateParts(), JoinStateParts()
    loaded = []
    sponsor.add("torch.optim", lambda: b"x", None)
    joiner.add("torch.optim", None, loaded.append)
    joiner.add("step", None, loaded.append)
    with pytest.raises(ValueError, match=r"has parts \['torch.optim'\], this peer loads \['step', 'torch.optim'\]"):
        joiner.load(sponsor.save())
    assert loaded == []


def test_registration_refuses_what_cannot_work():
    parts = JoinStateParts()
    parts.add("x", lambda: b"", None)
    with pytest.raises(ValueError, match="registered already"):
        parts.add("x", None, lambda b: None)
    with pytest.raises(TypeError, match="give save, load or both"):
        parts.add("y", None, None)
    with pytest.raises(TypeError, match="save must be a callable or None, not int"):
        parts.add("y", 3, None)
    with pytest.raises(ValueError, match="non-empty str"):
        parts.add("", lambda: b"", None)
    bad = JoinStateParts()
    bad.add("n", lambda: 7, None)
    with pytest.raises(TypeError, match="join state 'n': save\\(\\) returned int"):
        bad.save()


def test_an_empty_message_is_no_state_only_where_none_is_expected():
    JoinStateParts().load(b"")
    parts = JoinStateParts()
    parts.add("x", None, lambda b: None)
    with pytest.raises(ValueError, match="does not start with b'MJS1'"):
        parts.load(b"")


def test_malformed_framing_is_a_value_error():
    good = pack({"alpha": b"12345", "beta": b""})
    assert unpack(good) == {"alpha": b"12345", "beta": b""}
    for cut in range(len(good)):
        with pytest.raises(ValueError):
            unpack(good[:cut])
    with pytest.raises(ValueError, match="3 bytes after its 2 parts"):
        unpack(good + b"xyz")
    with pytest.raises(ValueError, match="part 'a' twice"):
        unpack(b"MJS1" + (2).to_bytes(4, "little") + 2 * (b"\x01\x00a" + bytes(8)))
    with pytest.raises(ValueError, match="needs 18446744073709551615 bytes"):
        unpack(b"MJS1" + (1).to_bytes(4, "little") + b"\x01\x00a" + b"\xff" * 8)


def optimizer_states():
    model = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    for optimizer in (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True),
                      torch.optim.Adam(model.parameters(), betas=(0.8, 0.99)),
                      torch.optim.AdamW(model.parameters(), amsgrad=True)):
        for _ in range(2):
            model(torch.randn(3, 5)).sum().backward()
            optimizer.step()
        yield optimizer


def test_an_optimizers_state_comes_back_exactly_and_loads():
    for optimizer in optimizer_states():
        state = optimizer.state_dict()
        back = plain_state.loads(plain_state.dumps(state))
        assert back["param_groups"] == state["param_groups"]
        assert back["state"].keys() == state["state"].keys()
        for index, entries in state["state"].items():
            for name, value in entries.items():
                got = back["state"][index][name]
                assert got.dtype == value.dtype and got.shape == value.shape and torch.equal(got, value)
        optimizer.load_state_dict(back)


def test_plain_state_refuses_structure_nested_too_deep_to_decode():
    # Past the interpreter's recursion limit: a ValueError, whether json or
    # decode() reaches it first (json does on this interpreter).
    text = ('{"l": [' * 600 + "1" + "]}" * 600).encode()
    with pytest.raises(ValueError, match="recursion limit|not valid JSON"):
        plain_state.loads(len(text).to_bytes(8, "little") + text)


def test_plain_state_refuses_what_it_cannot_encode():
    with pytest.raises(TypeError, match=r"state \['f'\]: a builtin_function_or_method is not supported"):
        plain_state.dumps({"f": len})
    with pytest.raises(TypeError, match="a complex64 tensor is not supported"):
        plain_state.dumps({"c": torch.zeros(2, dtype=torch.complex64)})


def test_mangled_optimizer_state_is_a_value_error_or_a_valid_state():
    # Bytes from the network: any cut or flipped byte must end in a
    # ValueError naming the fault, or (a flip inside a tensor's values or a
    # number) decode to some state; never another exception.
    message = plain_state.dumps(next(optimizer_states()).state_dict())
    generator = random.Random(19)
    refused = 0
    for trial in range(1500):
        mangled = bytearray(message)
        if trial % 3 == 0:
            mangled = mangled[:generator.randrange(len(message))]
        else:
            for _ in range(generator.randint(1, 4)):
                mangled[generator.randrange(len(mangled))] = generator.randrange(256)
        try:
            plain_state.loads(bytes(mangled))
        except ValueError:
            refused += 1
    assert refused >= 500  # every cut is refused, at least
