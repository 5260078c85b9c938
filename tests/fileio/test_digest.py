"""detsim.fileio.digest: sha256 of bytes and of files, as hashlib computes them."""

from __future__ import annotations

import hashlib

from detsim.fileio.digest import sha256_bytes, sha256_file


def test_bytes_and_files_hash_as_hashlib_does(tmp_path):
    data = bytes(range(256)) * 5000  # over one 1 MiB read block: the file is read in pieces
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    expected = hashlib.sha256(data).hexdigest()
    assert sha256_bytes(data) == expected and sha256_file(path) == expected and sha256_file(str(path)) == expected
