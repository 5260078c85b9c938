"""SMV (ADSC) image files as nanoBragg writes them: the header's keys, its bytes, the writer and the reader
(spec §6.3 "SMV header", "intfile", "noisefile").

An SMV file is a text header of ``KEY=value;`` lines (512 bytes, or the next multiple of 512 that holds it)
followed by little-endian uint16 pixels in C order, (slow, fast) = (SIZE2, SIZE1). Header lengths are in mm,
the wavelength in Å, angles in degrees and XDS_ORGX/ORGY in pixels, as nanoBragg writes them; numbers are
formatted with C's ``%g``. The integer images come from :func:`detsim.fileio.images.int_image` (intfile) and
the noise image; :func:`smv_writer` puts a file's bytes into an open binary file (for
:class:`detsim.fileio.safe_write.StagedOutputs`), :func:`write_smv` writes one file atomically.
"""

from __future__ import annotations

import numbers
import os
from typing import BinaryIO, Mapping, Sequence

import numpy as np

from detsim.fileio import bounded_read, c_numbers
from detsim.fileio.images import UINT16_MAX, check_2d, format_g
from detsim.fileio.safe_write import PathLike, Writer, atomic_write
from detsim.host import memory

__all__ = [
    "read_smv",
    "smv_header",
    "smv_header_fields",
    "smv_writer",
    "write_smv",
]

SMV_HEADER_BYTES = 512
_SMV_FIXED = {
    "HEADER_BYTES": str(SMV_HEADER_BYTES),
    "DIM": "2",
    "BYTE_ORDER": "little_endian",
    "TYPE": "unsigned_short",
}
_SMV_BYTE_ORDERS = {"little_endian": "<u2", "big_endian": ">u2"}


def _format_smv_value(key: str, value: str | float | int) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        text = "%d" % int(value)
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        text = format_g(value)
    else:
        raise TypeError(f"SMV header value for {key} must be str, int or float, got {type(value).__name__}")
    if any(c in text for c in ";\n{}\f"):
        raise ValueError(f"SMV header value for {key} contains a reserved character: {text!r}")
    return text


def smv_header_fields(
    *,
    fpixels: int,
    spixels: int,
    pixel_mm: float,
    distance_mm: float,
    wavelength_A: float,
    xbeam_mm: float,
    ybeam_mm: float,
    fbeam_mm: float,
    sbeam_mm: float,
    detsize_s_mm: float,
    dials_origin_mm: Sequence[float],
    orgx: float,
    orgy: float,
    close_distance_mm: float,
    phi0_deg: float = 0.0,
    osc_deg: float = 0.0,
    twotheta_deg: float = 0.0,
) -> dict[str, str | float | int]:
    """nanoBragg's SMV header keys, in its order, from the detector geometry (spec §6.3 "SMV header").

    The beam-centre keys for other programs are derived here: ``ADXV_CENTER = (Fbeam, D_s - Sbeam)``,
    ``MOSFLM_CENTER = (Sbeam - p/2, Fbeam - p/2)``, ``DENZO_BEAM = (Sbeam, Fbeam)``.

    Args:
        fpixels, spixels: image size (fast, slow).
        pixel_mm: pixel size p.
        distance_mm: the DISTANCE value (spec §3.3 step 6).
        wavelength_A: nominal wavelength in Å.
        xbeam_mm, ybeam_mm: Xbeam, Ybeam as nanoBragg reports them.
        fbeam_mm, sbeam_mm: the recomputed Fbeam, Sbeam.
        detsize_s_mm: detector size along slow, D_s.
        dials_origin_mm: the three DIALS origin components.
        orgx, orgy: XDS origin in pixels.
        close_distance_mm: sample to detector plane along its normal.
        phi0_deg: starting spindle angle (written as PHI and OSC_START).
        osc_deg: oscillation range.
        twotheta_deg: detector two-theta.

    Returns:
        Ordered mapping for :func:`smv_header` / :func:`write_smv`.
    """
    origin = tuple(float(v) for v in dials_origin_mm)
    if len(origin) != 3:
        raise ValueError(f"dials_origin_mm needs 3 components, got {len(origin)}")
    pixel, fbeam, sbeam = float(pixel_mm), float(fbeam_mm), float(sbeam_mm)
    return {
        "SIZE1": int(fpixels),
        "SIZE2": int(spixels),
        "PIXEL_SIZE": pixel,
        "DISTANCE": float(distance_mm),
        "WAVELENGTH": float(wavelength_A),
        "BEAM_CENTER_X": float(xbeam_mm),
        "BEAM_CENTER_Y": float(ybeam_mm),
        "ADXV_CENTER_X": fbeam,
        "ADXV_CENTER_Y": float(detsize_s_mm) - sbeam,
        "MOSFLM_CENTER_X": sbeam - 0.5 * pixel,
        "MOSFLM_CENTER_Y": fbeam - 0.5 * pixel,
        "DENZO_X_BEAM": sbeam,
        "DENZO_Y_BEAM": fbeam,
        "DIALS_ORIGIN": ",".join(format_g(v) for v in origin),
        "XDS_ORGX": float(orgx),
        "XDS_ORGY": float(orgy),
        "CLOSE_DISTANCE": float(close_distance_mm),
        "PHI": float(phi0_deg),
        "OSC_START": float(phi0_deg),
        "OSC_RANGE": float(osc_deg),
        "TWOTHETA": float(twotheta_deg),
        "DETECTOR_SN": "000",
        "BEAMLINE": "fake",
    }


def smv_header(fields: Mapping[str, str | float | int]) -> bytes:
    """Build an SMV header (spec §6.3 "SMV header"): 512 bytes, or the next multiple of 512 that holds it.

    The header is ``{\\n``, the fixed keys HEADER_BYTES, DIM=2, BYTE_ORDER=little_endian and
    TYPE=unsigned_short, then one ``KEY=value;`` line per field in the given order, then ``}`` and a form feed,
    padded with spaces. As in nanoBragg, the DIALS_ORIGIN line has no ``;``. Strings are written as they are,
    integers with ``%d`` and other numbers with ``%g``.

    HEADER_BYTES is 512 whenever the text fits, as in nanoBragg, whose golden headers this reproduces byte for
    byte. A longer text (long numbers in every key) is padded to the next multiple of 512 and HEADER_BYTES says
    so; nanoBragg writes such a text whole but still labels it 512, which shifts the image for every reader.

    Args:
        fields: header keys and values. The fixed keys may appear only with their fixed values (HEADER_BYTES
            only with the size the header turns out to need).

    Returns:
        ASCII bytes, a multiple of 512 long.

    Raises:
        ValueError: for a conflicting fixed key or a malformed key or value.
    """
    lines = [f"{key}={value};\n" for key, value in _SMV_FIXED.items() if key != "HEADER_BYTES"]
    given_size = None
    for key, value in fields.items():
        if not key or not key.replace("_", "").isalnum() or not key.isascii():
            raise ValueError(f"invalid SMV header key {key!r}")
        text = _format_smv_value(key, value)
        if key == "HEADER_BYTES":
            given_size = text
            continue
        if key in _SMV_FIXED:
            if text != _SMV_FIXED[key]:
                raise ValueError(f"SMV header key {key} is fixed to {_SMV_FIXED[key]!r}, got {text!r}")
            continue
        terminator = "\n" if key == "DIALS_ORIGIN" else ";\n"
        lines.append(f"{key}={text}{terminator}")
    size = SMV_HEADER_BYTES
    while True:
        header = ("{\n" + f"HEADER_BYTES={size};\n" + "".join(lines) + "}\f").encode("ascii")
        if len(header) <= size:
            break
        size = -(-len(header) // SMV_HEADER_BYTES) * SMV_HEADER_BYTES  # its label may add a digit: check again
    if given_size is not None and given_size != str(size):
        raise ValueError(f"SMV header key HEADER_BYTES={given_size} does not match the {size} bytes the header needs")
    return header.ljust(size, b" ")


def _uint16_bytes(data: np.ndarray) -> bytes:
    """Little-endian bytes of an integer image whose values all fit in uint16."""
    if not (np.issubdtype(data.dtype, np.integer) or data.dtype == np.bool_):
        raise ValueError(f"SMV data must be an integer array, got dtype {data.dtype}")
    if data.size and (data.min() < 0 or data.max() > UINT16_MAX):
        raise ValueError(f"SMV data must lie in 0..65535, got {data.min()}..{data.max()}")
    return np.ascontiguousarray(data, dtype="<u2").tobytes()


def smv_writer(data: np.ndarray, header_fields: Mapping[str, str | float | int]) -> Writer:
    """What writes an SMV image into a file: the header of :func:`smv_header`, then little-endian uint16 pixels.

    Args:
        data: (S, F) integer image with values in 0..65535 (normally uint16).
        header_fields: keys for :func:`smv_header`, e.g. from :func:`smv_header_fields`. SIZE1 and SIZE2, if
            given, must equal F and S; if absent they are written first.

    Raises:
        ValueError: if the data are not 2-D, do not match SIZE1/SIZE2, or are not integers in range.
    """
    data = np.asarray(data)
    check_2d(data, "SMV data")
    spixels, fpixels = data.shape
    fields = dict(header_fields)
    for key, size in (("SIZE1", fpixels), ("SIZE2", spixels)):
        if key in fields and str(fields[key]).strip() != str(size):
            raise ValueError(f"SMV header {key}={fields[key]} does not match the data shape {data.shape}")
    if "SIZE1" not in fields or "SIZE2" not in fields:
        fields = {"SIZE1": fpixels, "SIZE2": spixels, **fields}
    header = smv_header(fields)

    def write(handle: BinaryIO) -> None:
        handle.write(header)
        handle.write(_uint16_bytes(data))

    return write


def write_smv(path: PathLike, data: np.ndarray, header_fields: Mapping[str, str | float | int]) -> None:
    """Write an SMV image (header, then little-endian uint16 pixels); see :func:`smv_writer`."""
    atomic_write(path, smv_writer(data, header_fields))


def _parse_smv_header(path: PathLike, raw: bytes) -> dict[str, str]:
    if not raw.startswith(b"{"):
        raise ValueError(f"{path}: not an SMV file (it does not start with '{{')")
    end = raw.find(b"}")
    if end < 0:
        raise ValueError(f"{path}: truncated SMV header (no closing '}}')")
    try:
        text = raw[1:end].decode("ascii")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: SMV header is not ASCII text") from None
    header: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{path}: malformed SMV header line {line!r}")
        spaces = c_numbers.C_SPACES  # only these precede a number C's atof reads
        header[key.strip()] = value.strip(spaces).removesuffix(";").strip(spaces)
    if end >= _header_int(path, header, "HEADER_BYTES"):
        raise ValueError(f"{path}: SMV header text runs past HEADER_BYTES={header['HEADER_BYTES']}")
    return header


def _header_int(path: PathLike, header: Mapping[str, str], key: str) -> int:
    if key not in header:
        raise ValueError(f"{path}: SMV header has no {key}")
    value = c_numbers.parse_int(header[key])
    if value is None:
        raise ValueError(f"{path}: SMV header {key}={header[key]!r} is not an integer")
    if value <= 0:
        raise ValueError(f"{path}: SMV header {key}={value} must be positive")
    return value


SMV_MAX_HEADER_BYTES = 1 << 16  # far more than any SMV header; HEADER_BYTES beyond it is refused


def read_smv(path: PathLike) -> tuple[dict[str, str], np.ndarray]:
    """Read an SMV image such as nanoBragg's intfile or noisefile.

    The header is read first (at most :data:`SMV_MAX_HEADER_BYTES`), then exactly the pixels it announces, once
    the file's size and the memory available are known to match them: a device, a FIFO, a directory or an
    empty file is refused before anything is read, and no read grows with the file.

    Args:
        path: the SMV file.

    Returns:
        (header, data): every header key with its value as a string (surrounding spaces and the ``;`` removed),
        and the (SIZE2, SIZE1) uint16 image in native byte order.

    Raises:
        ValueError: naming the file, for a file that is not a regular one or is empty, a malformed or truncated
            header, an unsupported TYPE or BYTE_ORDER, a data section whose size does not match SIZE1 x SIZE2,
            or an image larger than the memory available.
    """
    with bounded_read.open_regular(path, "SMV image", ValueError) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise ValueError(f"{os.fspath(path)}: is an empty file, not an SMV image")
        head = handle.read(SMV_MAX_HEADER_BYTES)
        if not head.startswith(b"{"):
            raise ValueError(f"{path}: not an SMV file (it does not start with '{{')")
        if b"}" not in head and size > len(head):
            raise ValueError(f"{path}: no SMV header end ('}}') within its first {SMV_MAX_HEADER_BYTES} bytes")
        header = _parse_smv_header(path, head)
        header_bytes = _header_int(path, header, "HEADER_BYTES")
        fpixels = _header_int(path, header, "SIZE1")
        spixels = _header_int(path, header, "SIZE2")
        if header.get("TYPE", "unsigned_short") != "unsigned_short":
            raise ValueError(f"{path}: unsupported SMV TYPE={header['TYPE']} (only unsigned_short)")
        dtype = _SMV_BYTE_ORDERS.get(header.get("BYTE_ORDER", "little_endian"))
        if dtype is None:
            raise ValueError(f"{path}: unknown SMV BYTE_ORDER={header['BYTE_ORDER']}")
        expected = header_bytes + 2 * fpixels * spixels
        if size != expected:
            raise ValueError(
                f"{path}: {size} bytes, expected {expected} ({header_bytes}-byte header + {spixels}x{fpixels} uint16)"
            )
        import torch  # here, not with the module: the command line reads -img/-mask headers before torch is needed

        available = memory.available_bytes(torch.device("cpu"))
        if SMV_READ_BYTES_PER_PIXEL * fpixels * spixels > available:
            raise ValueError(f"{path}: a {spixels}x{fpixels} image needs "
                             f"{memory.gib(SMV_READ_BYTES_PER_PIXEL * fpixels * spixels)} of memory to read, more "
                             f"than the {memory.gib(available)} available")
        handle.seek(header_bytes)
        raw = handle.read(2 * fpixels * spixels)
    if len(raw) != 2 * fpixels * spixels:
        raise ValueError(f"{path}: the file shrank while it was read")
    data = np.frombuffer(raw, dtype=dtype).reshape(spixels, fpixels)
    return header, data.astype(np.uint16)


SMV_READ_BYTES_PER_PIXEL = 2 + 2  # the pixels as read, and as native uint16
