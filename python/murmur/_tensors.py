"""Turning a tensor into the (address, count, memory kind) that murmur's C++
Peer reads and writes in place, or a clear error saying why it cannot be.

murmur gossips dense float32 memory. A torch tensor or numpy array that is
float32, dense, contiguous and on the CPU (or on CUDA, in a build with CUDA)
is used where it lies: nothing is copied. Anything else is refused with a
TypeError or ValueError naming the tensor and the conversion to make;
murmur does not convert silently, because a converted copy would not be the
memory the caller trains.
"""

from __future__ import annotations

from typing import Any, Tuple

from . import _murmur


def tensor_address(tensor: Any, what: str) -> Tuple[int, int, "_murmur.MemoryKind"]:
    """(data address, float count, memory kind) of ``tensor``; ``what`` names
    it in errors (e.g. "parameter 'fc1.weight'")."""
    if hasattr(tensor, "data_ptr") and hasattr(tensor, "is_contiguous"):
        return _torch_address(tensor, what)
    if hasattr(tensor, "__array_interface__") and hasattr(tensor, "flags"):
        return _numpy_address(tensor, what)
    raise TypeError(f"{what}: a {type(tensor).__name__} is not a torch tensor or a numpy array")


def _torch_address(tensor: Any, what: str) -> Tuple[int, int, "_murmur.MemoryKind"]:
    import torch

    if tensor.layout != torch.strided:
        raise TypeError(f"{what}: {tensor.layout} tensors are not supported; murmur gossips dense memory "
                        "(convert with .to_dense())")
    if tensor.dtype != torch.float32:
        raise TypeError(f"{what}: dtype {tensor.dtype}; murmur gossips float32 only "
                        "(convert the model with .float() before wrapping it)")
    if not tensor.is_contiguous():
        raise ValueError(f"{what}: tensor of shape {tuple(tensor.shape)} and strides {tensor.stride()} is not "
                         "contiguous; murmur reads and writes the memory in place (use .contiguous() on the "
                         "parameter's data before registering it)")
    if tensor.numel() == 0:
        raise ValueError(f"{what}: the tensor is empty")
    if tensor.device.type == "cpu":
        kind = _murmur.MemoryKind.HOST
    elif tensor.device.type == "cuda":
        # A murmur built without CUDA refuses DEVICE at add_tensor(), naming it.
        kind = _murmur.MemoryKind.DEVICE
    else:
        raise TypeError(f"{what}: tensors on {tensor.device} are not supported (CPU or CUDA only)")
    return tensor.data_ptr(), tensor.numel(), kind


def _numpy_address(array: Any, what: str) -> Tuple[int, int, "_murmur.MemoryKind"]:
    if str(array.dtype) != "float32":
        raise TypeError(f"{what}: dtype {array.dtype}; murmur gossips float32 only (use .astype(numpy.float32))")
    if not array.flags["C_CONTIGUOUS"]:
        raise ValueError(f"{what}: array of shape {array.shape} is not C-contiguous (numpy.ascontiguousarray)")
    if not array.flags["WRITEABLE"]:
        raise ValueError(f"{what}: array is read-only; murmur writes the averaged values into it")
    if array.size == 0:
        raise ValueError(f"{what}: the array is empty")
    return array.__array_interface__["data"][0], int(array.size), _murmur.MemoryKind.HOST
