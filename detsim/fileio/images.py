"""Image files in nanoBragg's formats: raw float, SMV (ADSC) and PGM (spec §6.2, §6.3).

Conventions:
    * Images are numpy arrays of shape (slow, fast) = (spixels, fpixels) in C order, so the fast index varies
      fastest on disk. Float images hold expected photons per pixel.
    * The ROI and the pixel mask are boolean arrays of the image's shape; ``True`` means "inside the ROI" or
      "rendered" (mask value non-zero). ``None`` means every pixel.
    * Header lengths are in mm, the wavelength in Å, angles in degrees and XDS_ORGX/ORGY in pixels, as nanoBragg
      writes them; numbers are formatted with C's ``%g`` (6 significant digits).
    * Files are little-endian. Each format has a ``*_writer`` (what puts the file's bytes into an open binary
      file, for :class:`detsim.fileio.safe_write.StagedOutputs`) and a ``write_*`` that writes one file atomically
      (:func:`detsim.fileio.safe_write.atomic_write`): the data go to a temporary file in the destination directory, which
      replaces the destination only once it is complete.

numpy is used throughout; nothing here is on the differentiable path.
"""

from __future__ import annotations

import numbers
import os
from pathlib import Path
from typing import BinaryIO, Mapping, Sequence

import numpy as np
import torch

from detsim.fileio import bounded_read, c_numbers
from detsim.fileio.safe_write import PathLike, Writer, atomic_write
from detsim.host import memory

__all__ = [
    "float_image_writer",
    "image_statistics",
    "int_image",
    "pgm_image",
    "pgm_writer",
    "read_float_image",
    "read_smv",
    "smv_header",
    "smv_header_fields",
    "smv_writer",
    "write_float_image",
    "write_pgm",
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
_UINT16_MAX = 65535.0
_AUTO_INT_PEAK = 55000.0
_PGM_RMSD_LEVEL = 250.0 / 5.0

def _check_2d(array: np.ndarray, what: str) -> None:
    if array.ndim != 2:
        raise ValueError(f"{what} must be a 2-D (slow, fast) array, got shape {array.shape}")


def _mask_or_all(mask: np.ndarray | None, shape: tuple[int, ...], what: str) -> np.ndarray:
    """Return ``mask`` as a boolean array of ``shape``; ``None`` selects every pixel."""
    if mask is None:
        return np.ones(shape, dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != shape:
        raise ValueError(f"{what} has shape {mask.shape}, expected the image shape {shape}")
    return mask


# ---------------------------------------------------------------- raw float images


def float_image_writer(image: np.ndarray) -> Writer:
    """What writes a raw float32 little-endian image with no header (spec §6.3 "floatfile") into a file.

    Args:
        image: (S, F) array of any real dtype; converted to float32.
    """
    shape = np.shape(image)
    if len(shape) != 2:
        raise ValueError(f"float image must be a 2-D (slow, fast) array, got shape {shape}")

    def write(handle: BinaryIO) -> None:
        handle.write(np.ascontiguousarray(image, dtype="<f4").tobytes())

    return write


def write_float_image(path: PathLike, image: np.ndarray) -> None:
    """Write a raw float32 little-endian image with no header (spec §6.3 "floatfile").

    Args:
        path: destination file.
        image: (S, F) array of any real dtype; converted to float32.
    """
    atomic_write(path, float_image_writer(image))


def read_float_image(path: PathLike, shape: tuple[int, int]) -> np.ndarray:
    """Read a raw float32 little-endian image.

    Args:
        path: file written by nanoBragg's ``-floatfile`` or :func:`write_float_image`.
        shape: (spixels, fpixels).

    Returns:
        (S, F) float32 array.

    Raises:
        ValueError: if the file size is not ``4 * S * F`` bytes.
    """
    spixels, fpixels = (int(n) for n in shape)
    expected = 4 * spixels * fpixels
    data = Path(path).read_bytes()
    if len(data) != expected:
        raise ValueError(
            f"{path}: {len(data)} bytes, expected {expected} for a {spixels}x{fpixels} float32 image"
        )
    return np.frombuffer(data, dtype="<f4").reshape(spixels, fpixels).astype(np.float32)


# ---------------------------------------------------------------- statistics and integer images


def image_statistics(
    image: np.ndarray,
    roi_mask: np.ndarray | None = None,
    pixel_mask: np.ndarray | None = None,
) -> dict[str, float]:
    """nanoBragg's image statistics (spec §6.2).

    ``max_I`` (starting from 0), ``mean`` and ``rms`` run over the rendered pixels (inside the ROI and not
    masked); ``rms`` is ``sqrt(sum(I**2) / (n - 1))`` with each square taken in float32, as in C. ``rmsd`` is
    ``sqrt(sum((I - mean)**2) / (m - 1))`` over all m ROI pixels, masked ones included (they hold 0). A count of
    0 is treated as 1 for the mean and counts below 2 as 2 for the divisions by ``n - 1``.

    Args:
        image: (S, F) float image.
        roi_mask: (S, F) bool, True inside the ROI; ``None`` for the whole image.
        pixel_mask: (S, F) bool, True for rendered pixels (``-mask`` value non-zero); ``None`` for all.

    Returns:
        ``{"max_I", "mean", "rms", "rmsd"}`` as floats.
    """
    values = np.asarray(image, dtype=np.float32)
    _check_2d(values, "image")
    roi = _mask_or_all(roi_mask, values.shape, "roi_mask")
    rendered = roi & _mask_or_all(pixel_mask, values.shape, "pixel_mask")

    drawn = values[rendered]
    max_I = float(np.fmax.reduce(drawn.astype(np.float64), initial=0.0))
    total = float(np.sum(drawn, dtype=np.float64))
    squares = float(np.sum(drawn * drawn, dtype=np.float64))
    count = drawn.size
    mean = total / max(count, 1)
    rms = float(np.sqrt(squares / (max(count, 2) - 1)))

    in_roi = values[roi].astype(np.float64)
    deviation = in_roi - mean
    rmsd = float(np.sqrt(np.sum(deviation * deviation) / (max(in_roi.size, 2) - 1)))
    return {"max_I": max_I, "mean": mean, "rms": rms, "rmsd": rmsd}


def int_image(
    image: np.ndarray,
    scale: float | None = None,
    adc: float = 40.0,
    roi_mask: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """Scale a float image to nanoBragg's 16-bit intfile values (spec §6.3 "intfile").

    ``scale`` defaults to ``55000 / max_I`` (1 if ``max_I <= 0``), with ``max_I`` the largest ROI value (at
    least 0). Each ROI pixel becomes ``floorf(clamp(I * scale + adc, 0, 65535) + 0.5)``: the sum is formed in
    double and rounded to float32 before the floor, which is what C's ``floorf`` does with it. Pixels outside the
    ROI are 0, not ``adc``; NaN pixels become 0 (C's conversion is undefined there).

    Args:
        image: (S, F) float image (photons).
        scale: counts per photon; ``None`` or <= 0 selects the automatic scale.
        adc: ADC offset in counts (nanoBragg's default is 40).
        roi_mask: (S, F) bool, True inside the ROI; ``None`` for the whole image.

    Returns:
        (counts, scale_used): the (S, F) uint16 image and the scale applied.
    """
    values = np.asarray(image, dtype=np.float32)
    _check_2d(values, "image")
    roi = _mask_or_all(roi_mask, values.shape, "roi_mask")

    if scale is None or not scale > 0.0:
        max_I = float(np.fmax.reduce(values[roi].astype(np.float64), initial=0.0))
        scale = _AUTO_INT_PEAK / max_I if max_I > 0.0 else 1.0
    scale = float(scale)

    level = values[roi].astype(np.float64) * scale + float(adc)
    level = np.clip(np.nan_to_num(level, nan=0.0), 0.0, _UINT16_MAX)
    rounded = np.floor((level + 0.5).astype(np.float32))

    counts = np.zeros(values.shape, dtype=np.uint16)
    counts[roi] = rounded.astype(np.uint16)
    return counts, scale


def pgm_image(
    image: np.ndarray,
    scale: float | None,
    int_scale: float,
    roi_mask: np.ndarray | None = None,
    pixel_mask: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """Scale a float image to 8-bit PGM values (spec §6.3 "pgm").

    ``scale`` defaults to ``250 / (5 * rmsd)`` with ``rmsd`` from :func:`image_statistics`, or to ``int_scale``
    when ``rmsd`` is 0. Each ROI pixel becomes ``min(I * scale, 255)`` truncated towards zero; pixels outside the
    ROI are 0. Negative and NaN products, for which C's conversion is undefined, become 0.

    Args:
        image: (S, F) float image (photons).
        scale: grey levels per photon; ``None`` or <= 0 selects the automatic scale.
        int_scale: the intfile scale actually used (the fallback).
        roi_mask: (S, F) bool, True inside the ROI; ``None`` for the whole image.
        pixel_mask: (S, F) bool, True for rendered pixels; only affects the automatic scale through ``rmsd``.

    Returns:
        (grey, scale_used): the (S, F) uint8 image and the scale applied.
    """
    values = np.asarray(image, dtype=np.float32)
    _check_2d(values, "image")
    roi = _mask_or_all(roi_mask, values.shape, "roi_mask")

    if scale is None or not scale > 0.0:
        rmsd = image_statistics(values, roi, pixel_mask)["rmsd"]
        scale = _PGM_RMSD_LEVEL / rmsd if rmsd > 0.0 else int_scale
    scale = float(scale)

    level = values[roi].astype(np.float64) * scale
    level = np.clip(np.nan_to_num(level, nan=0.0), 0.0, 255.0)
    grey = np.zeros(values.shape, dtype=np.uint8)
    grey[roi] = np.trunc(level).astype(np.uint8)
    return grey, scale


def pgm_writer(image: np.ndarray, scale: float) -> Writer:
    """What writes an 8-bit binary PGM with nanoBragg's comment line (spec §6.3 "pgm") into a file.

    Args:
        image: (S, F) uint8 grey levels, e.g. from :func:`pgm_image`.
        scale: the scale to record in the ``# pixels scaled by`` comment.
    """
    grey = np.asarray(image)
    _check_2d(grey, "PGM image")
    if grey.dtype != np.uint8:
        raise ValueError(f"PGM image must be uint8, got {grey.dtype}")
    spixels, fpixels = grey.shape
    header = f"P5\n{fpixels} {spixels}\n# pixels scaled by {_format_g(scale)}\n255\n".encode("ascii")

    def write(handle: BinaryIO) -> None:
        handle.write(header)
        handle.write(np.ascontiguousarray(grey).tobytes())

    return write


def write_pgm(path: PathLike, image: np.ndarray, scale: float) -> None:
    """Write an 8-bit binary PGM with nanoBragg's comment line (spec §6.3 "pgm"); see :func:`pgm_writer`."""
    atomic_write(path, pgm_writer(image, scale))


# ---------------------------------------------------------------- SMV


def _format_g(value: float) -> str:
    """Format like C's ``printf("%g")``."""
    return "%g" % float(value)


def _format_smv_value(key: str, value: str | float | int) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        text = "%d" % int(value)
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        text = _format_g(value)
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
        "DIALS_ORIGIN": ",".join(_format_g(v) for v in origin),
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
    if data.size and (data.min() < 0 or data.max() > _UINT16_MAX):
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
    _check_2d(data, "SMV data")
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
