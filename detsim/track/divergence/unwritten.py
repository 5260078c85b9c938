"""Never-written memory: fill it with a value of the run's own, and tell it apart when hashing.

Like ``torch.utils.deterministic.fill_uninitialized_memory``, but run A and run B get different sentinels
(large finite values of opposite signs, with a mantissa no computation is likely to produce exactly), so
an op that reads never-written memory gives different outputs while its inputs hash the same. Dtypes
without a value that rare (bool, 8-bit types, unsigned integers wider than 8 bits) are zeroed in both runs."""

from __future__ import annotations

import torch

from detsim.track.base.hashing import sha256_bytes
from detsim.track.runtime.tensors import tensor_bytes

_FLOAT = (float.fromhex("-0x1.5a5a5a5a5a5a5p+99"), float.fromhex("0x1.a5a5a5a5a5a5ap+98"))
_HALF = (float.fromhex("-0x1.5a4p+14"), float.fromhex("0x1.a58p+13"))  # float16 tops out at 65504
_INT = {torch.int64: (-0x5A5A5A5A5A5A5A5B, 0x25A5A5A5A5A5A5A5), torch.int32: (-0x5A5A5A5B, 0x25A5A5A5),
        torch.int16: (-0x5A5B, 0x25A5)}
_COMPONENT = {torch.complex128: torch.float64, torch.complex64: torch.float32, torch.complex32: torch.float16}


def sentinel(dtype: torch.dtype, run: int):
    """The value never-written elements of ``dtype`` hold in run ``run`` (0: A, 1: B); None: no such value."""
    if dtype in _COMPONENT:
        value = sentinel(_COMPONENT[dtype], run)
        return complex(value, value)
    if dtype == torch.float16:
        return _HALF[run % 2]
    if dtype in (torch.float64, torch.float32, torch.bfloat16):
        return float(torch.tensor(_FLOAT[run % 2], dtype=dtype).item())  # the value as that dtype holds it
    if dtype in _INT:
        return _INT[dtype][run % 2]
    return None


def fill(t: torch.Tensor, run: int) -> None:
    """Fill a freshly allocated tensor with the run's sentinel (zeros where its dtype has none)."""
    if t.is_sparse or t.device.type == "meta" or t.numel() == 0:
        return
    value = sentinel(t.dtype, run)
    try:
        with torch.no_grad():
            t.fill_(0 if value is None else value)
    except (RuntimeError, TypeError):
        pass  # quantized and other exotic layouts keep what they hold


def mask(data: torch.Tensor, run: int) -> torch.Tensor | None:
    """Where a CPU tensor still holds the run's sentinel (None when its dtype has no sentinel)."""
    value = sentinel(data.dtype, run)
    if value is None:
        return None
    if data.is_complex():
        return (data.real == value.real) & (data.imag == value.imag)
    return data == value


def canonical(data: torch.Tensor, run: int | None) -> tuple[str, int, torch.Tensor]:
    """(sha256, never-written count, the written values) of a contiguous CPU tensor; never-written elements
    are hashed as zeros, followed by the map of where they are."""
    where = mask(data, run) if run is not None else None
    if where is None or not bool(where.any()):
        return sha256_bytes(tensor_bytes(data)), 0, data.reshape(-1)
    zeroed = data.clone()
    zeroed[where] = 0
    digest = sha256_bytes(tensor_bytes(zeroed) + b"\0never-written:" + tensor_bytes(where))
    return digest, int(where.sum()), data[~where]
