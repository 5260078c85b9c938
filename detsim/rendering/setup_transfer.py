"""A prepared setup moved to a device in one copy: every tensor packed into one host buffer, copied once,
and unpacked there as views (views launch no kernel).

The tensors of a setup are found by walking its dataclasses (frame, geometry, lattice, sources, first
sweep) and its structure factors; the configuration it was prepared from is left as it is. Where a tensor
carries an autograd graph, bytes cannot carry it: each tensor is then moved on its own, with ``.to``, which
autograd sees through.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch
from torch import Tensor

from detsim.model.structure_factors import StructureFactors

ALIGN_BYTES = 16  # every packed tensor starts at a multiple of this, so its bytes view as any dtype
UNWALKED = frozenset({"config"})  # fields kept as they are (a configuration may hold tensors of its own)


def map_tensors(value: Any, change: Callable[[Tensor], Tensor]) -> Any:
    """``value`` with every tensor it holds replaced by ``change(tensor)``, always in the same order; a
    dataclass or structure factors holding no tensor are returned as they are."""
    if isinstance(value, Tensor):
        return change(value)
    if isinstance(value, StructureFactors):
        return value if value.values is None else value.with_values(change(value.values))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {}
        for f in dataclasses.fields(value):
            if f.name in UNWALKED:
                continue
            old = getattr(value, f.name)
            new = map_tensors(old, change)
            if new is not old:
                changed[f.name] = new
        return dataclasses.replace(value, **changed) if changed else value
    return value


def tensors_of(value: Any) -> list[Tensor]:
    """Every tensor ``value`` holds, in :func:`map_tensors`' order."""
    found: list[Tensor] = []
    map_tensors(value, lambda t: found.append(t) or t)
    return found


def moved(value: Any, device: torch.device) -> Any:
    """``value`` with every tensor on ``device``: one host-to-device copy of them all, unless one requires
    grad (then a copy each). Structure factors say their new device."""
    tensors = tensors_of(value)
    if any(t.requires_grad for t in tensors):
        return map_tensors(value, lambda t: t.to(device))
    unpacked = iter(_unpack(_pack(tensors).to(device), tensors))
    return map_tensors(value, lambda t: next(unpacked))


def _offsets(tensors: list[Tensor]) -> list[int]:
    """Where each tensor's bytes start in the packed buffer (aligned), and the buffer's length last."""
    offsets, at = [], 0
    for t in tensors:
        offsets.append(at)
        at += -(-t.numel() * t.element_size() // ALIGN_BYTES) * ALIGN_BYTES
    return offsets + [at]


def _pack(tensors: list[Tensor]) -> Tensor:
    """(bytes,) uint8 on the host: each tensor's bytes at its offset."""
    offsets = _offsets(tensors)
    buffer = torch.empty(offsets[-1], dtype=torch.uint8)
    for t, at in zip(tensors, offsets):
        nbytes = t.numel() * t.element_size()
        buffer[at:at + nbytes] = t.detach().contiguous().reshape(-1).view(torch.uint8)
    return buffer


def _unpack(buffer: Tensor, like: list[Tensor]) -> list[Tensor]:
    """Views of ``buffer`` with the dtypes and shapes of ``like``."""
    offsets = _offsets(like)
    return [buffer[at:at + t.numel() * t.element_size()].view(t.dtype).view(t.shape) for t, at in zip(like, offsets)]


__all__ = ["map_tensors", "moved", "tensors_of"]
