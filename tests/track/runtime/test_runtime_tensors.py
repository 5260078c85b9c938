"""detsim.track.runtime.tensors: a tensor's own bytes and their sha256."""

from __future__ import annotations

import hashlib

import torch

from detsim.track.runtime.tensors import tensor_bytes, tensor_sha256


def test_tensor_hash_sees_the_dtype_and_every_bit(device, dtype):
    t = torch.linspace(0, 1, 7, dtype=dtype, device=device)
    assert len(tensor_bytes(t)) == 7 * t.element_size()
    assert tensor_sha256(t) == hashlib.sha256(t.cpu().numpy().tobytes()).hexdigest()
    assert tensor_sha256(t) != tensor_sha256(t.to(torch.float64 if dtype == torch.float32 else torch.float32))
    flipped = t.clone()
    flipped[3] = torch.nextafter(flipped[3], torch.tensor(2.0, dtype=dtype, device=device))
    assert tensor_sha256(flipped) != tensor_sha256(t)


def test_tensor_bytes_of_views_are_those_of_the_values():
    z = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex128)
    assert tensor_bytes(z.conj()) == tensor_bytes(torch.tensor([1 - 2j, 3 + 4j], dtype=torch.complex128))
    m = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    assert tensor_bytes(m.T) == tensor_bytes(m.T.contiguous())
