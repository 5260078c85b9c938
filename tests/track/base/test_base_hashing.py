"""detsim.track.base.hashing: the one image hash, file and tensor digests."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

from detsim.track.base.hashing import (
    IMAGE_HASH, image_sha256, is_sha256, sha256_bytes, sha256_file, tensor_bytes, tensor_sha256,
)


def test_bytes_and_files_hash_as_hashlib_does(tmp_path):
    data = bytes(range(256)) * 5000  # over one 1 MiB read block: the file is read in pieces
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    expected = hashlib.sha256(data).hexdigest()
    assert sha256_bytes(data) == expected and sha256_file(path) == expected


def test_image_hash_is_little_endian_float64_c_order():
    image = np.arange(6, dtype=np.float32).reshape(2, 3)
    expected = hashlib.sha256(image.astype("<f8").tobytes()).hexdigest()
    assert image_sha256(image) == expected
    assert image_sha256(image.astype(">f8")) == expected  # byte order of the input does not matter
    assert image_sha256(np.asfortranarray(image)) == expected  # nor its memory layout
    assert image_sha256(image.T) != expected  # but the (slow, fast) order does
    assert "little-endian float64" in IMAGE_HASH and "C order" in IMAGE_HASH


def test_image_hash_is_the_same_for_a_tensor_of_any_dtype(device):
    values = np.array([[0.0, 1.5], [2.25, 0.5]], dtype=np.float32)  # exact in every dtype below
    expected = image_sha256(values)
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        assert image_sha256(torch.tensor(values, dtype=dtype, device=device)) == expected, dtype
    assert image_sha256(torch.tensor(values, requires_grad=True, device=device)) == expected


def test_a_changed_value_changes_the_image_hash():
    image = np.ones((4, 4))
    changed = image.copy()
    changed[3, 3] = np.nextafter(1.0, 2.0)
    assert image_sha256(image) != image_sha256(changed)


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


@pytest.mark.parametrize(("text", "ok"), [
    ("0" * 64, True), ("a" * 63, False), ("A" * 64, False), ("g" * 64, False), (None, False), (b"0" * 64, False),
])
def test_is_sha256(text, ok):
    assert is_sha256(text) is ok
    assert is_sha256(sha256_bytes(b""))
