"""detsim.track.base.hashing: the one image hash, file digests, fingerprints."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

from detsim.track.base.hashing import (
    FINGERPRINT_HEX, IMAGE_HASH, fingerprint, fingerprint_hex, image_sha256, is_sha256, sha256_bytes, sha256_file,
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


@pytest.mark.parametrize(("text", "ok"), [
    ("0" * 64, True), ("a" * 63, False), ("A" * 64, False), ("g" * 64, False), (None, False), (b"0" * 64, False),
])
def test_is_sha256(text, ok):
    assert is_sha256(text) is ok
    assert is_sha256(sha256_bytes(b""))


def test_a_fingerprint_is_the_start_of_the_digest_exactly():
    digest = sha256_bytes(b"image")
    assert fingerprint(digest) == float(int(digest[:13], 16)) and FINGERPRINT_HEX == 13
    assert fingerprint_hex(fingerprint(digest)) == digest[:13]  # 52 bits: exact in a float64
    assert fingerprint_hex(fingerprint("0" * 12 + "1" + "f" * 51)) == "0" * 12 + "1"  # leading zeros kept
    assert fingerprint("f" * 64) == 2.0 ** 52 - 1
