"""A setup's tensors moved in one copy: packed bytes unpack to the same tensors, graphs are kept."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from detsim.model.structure_factors import HKLTable, StructureFactors
from detsim.rendering.setup_transfer import _pack, _unpack, map_tensors, moved, tensors_of
from detsim.track.measure.launches import counting


@dataclass(frozen=True)
class _Inner:
    vector: torch.Tensor
    label: str


@dataclass(frozen=True)
class _Outer:
    inner: _Inner
    pixels: torch.Tensor
    scalar: torch.Tensor
    structure: StructureFactors
    config: object  # never walked
    count: int = 3


def _outer(config=None) -> _Outer:
    g = torch.Generator().manual_seed(1)
    table = HKLTable(h_min=0, k_min=0, l_min=0, values=torch.rand(3, 2, 5, generator=g, dtype=torch.float64).numpy(),
                     count=30, source="t")
    structure = StructureFactors(table, 5.0, dtype=torch.float32)
    return _Outer(inner=_Inner(torch.rand(7, 3, generator=g, dtype=torch.float64), "x"),
                  pixels=torch.arange(5, dtype=torch.int32), scalar=torch.tensor(2.5, dtype=torch.float64),
                  structure=structure, config=config)


def test_packed_bytes_unpack_to_the_same_tensors_bit_for_bit():
    tensors = tensors_of(_outer()) + [torch.empty(0, dtype=torch.int32), torch.rand(4, 4).t()]  # empty, strided
    for a, b in zip(tensors, _unpack(_pack(tensors), tensors), strict=True):
        assert (a.dtype, a.shape) == (b.dtype, b.shape) and torch.equal(a, b)


def test_every_tensor_is_moved_in_one_copy_and_the_rest_kept():
    config = torch.ones(2)  # a configuration's own tensors stay where they are
    value = _outer(config)
    with counting("meta") as counts:
        there = moved(value, torch.device("meta"))
    assert (counts.copies, counts.kernels, counts.syncs) == (1, 0, 0)
    assert [t.device.type for t in tensors_of(there)] == ["meta"] * 4 and there.structure.device.type == "meta"
    assert there.config is config and there.inner.label == "x" and there.count == 3
    assert [(t.dtype, t.shape) for t in tensors_of(there)] == [(t.dtype, t.shape) for t in tensors_of(value)]
    assert map_tensors(_Inner(None, "y"), torch.neg).label == "y"  # nothing to change: the same object


def test_a_tensor_carrying_a_graph_is_moved_with_it():
    x = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    value = _outer()
    value = _Outer(value.inner, value.pixels, x * 2, value.structure, None)
    there = moved(value, torch.device("meta"))
    assert there.scalar.grad_fn is not None and not there.pixels.requires_grad
