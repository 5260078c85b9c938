"""What the parity tests share: reading back the PNG files the report writes, and small golden cases."""

from __future__ import annotations

import struct
import zlib

import numpy as np

SMALL_CASES = ("c02_xds_xbeam_quirk", "s02_intfile_autoscale_adc")  # 128x128, 1 and 4 steps


def decode_png(data: bytes) -> np.ndarray:
    """Read back what encode_png writes (8-bit grey or RGB, filter 0), checking every chunk's CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, kind
        chunks[kind] = chunks.get(kind, b"") + body
        pos += 12 + length
    width, height, depth, colour, *_ = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert depth == 8 and colour in (0, 2) and b"IEND" in chunks
    channels = 1 if colour == 0 else 3
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, 1 + width * channels)
    assert (raw[:, 0] == 0).all()
    pixels = raw[:, 1:].reshape(height, width, channels)
    return pixels[..., 0] if channels == 1 else pixels
