"""Image files in nanoBragg's formats: raw float and PGM, and the image statistics and integer (intfile) values
(spec §6.2, §6.3); the SMV files that hold the integer images are :mod:`detsim.fileio.smv`'s.

Conventions:
    * Images are numpy arrays of shape (slow, fast) = (spixels, fpixels) in C order, so the fast index varies
      fastest on disk. Float images hold expected photons per pixel.
    * The ROI and the pixel mask are boolean arrays of the image's shape; ``True`` means "inside the ROI" or
      "rendered" (mask value non-zero). ``None`` means every pixel.
    * The PGM's scale is written with C's ``%g`` (6 significant digits, :func:`format_g`, as the SMV header's
      numbers are).
    * Files are little-endian. Each format has a ``*_writer`` (what puts the file's bytes into an open binary
      file, for :class:`detsim.fileio.safe_write.StagedOutputs`) and a ``write_*`` that writes one file atomically
      (:func:`detsim.fileio.safe_write.atomic_write`): the data go to a temporary file in the destination directory, which
      replaces the destination only once it is complete.

numpy is used throughout; nothing here is on the differentiable path.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import numpy as np

from detsim.fileio.safe_write import PathLike, Writer, atomic_write

__all__ = [
    "float_image_writer",
    "image_statistics",
    "int_image",
    "pgm_image",
    "pgm_writer",
    "read_float_image",
    "write_float_image",
    "write_pgm",
]

UINT16_MAX = 65535.0  # the largest count of an integer image (an SMV file's pixel)
_AUTO_INT_PEAK = 55000.0
_PGM_RMSD_LEVEL = 250.0 / 5.0


def format_g(value: float) -> str:
    """Format like C's ``printf("%g")``."""
    return "%g" % float(value)


def check_2d(array: np.ndarray, what: str) -> None:
    """Refuse an image that is not a (slow, fast) array, naming ``what`` it is."""
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
    check_2d(values, "image")
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
    check_2d(values, "image")
    roi = _mask_or_all(roi_mask, values.shape, "roi_mask")

    if scale is None or not scale > 0.0:
        max_I = float(np.fmax.reduce(values[roi].astype(np.float64), initial=0.0))
        scale = _AUTO_INT_PEAK / max_I if max_I > 0.0 else 1.0
    scale = float(scale)

    level = values[roi].astype(np.float64) * scale + float(adc)
    level = np.clip(np.nan_to_num(level, nan=0.0), 0.0, UINT16_MAX)
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
    check_2d(values, "image")
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
    check_2d(grey, "PGM image")
    if grey.dtype != np.uint8:
        raise ValueError(f"PGM image must be uint8, got {grey.dtype}")
    spixels, fpixels = grey.shape
    header = f"P5\n{fpixels} {spixels}\n# pixels scaled by {format_g(scale)}\n255\n".encode("ascii")

    def write(handle: BinaryIO) -> None:
        handle.write(header)
        handle.write(np.ascontiguousarray(grey).tobytes())

    return write


def write_pgm(path: PathLike, image: np.ndarray, scale: float) -> None:
    """Write an 8-bit binary PGM with nanoBragg's comment line (spec §6.3 "pgm"); see :func:`pgm_writer`."""
    atomic_write(path, pgm_writer(image, scale))
