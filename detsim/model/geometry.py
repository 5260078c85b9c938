"""Detector geometry: conventions, beam centres, pivots, pix0 and pixel positions (spec §3).

Convention:
    Lab-frame vectors, SI units (m). ``fdet``, ``sdet``, ``odet`` are the detector's fast, slow and
    normal unit vectors after rotation; ``pix0_m`` is the *corner* of pixel (0, 0), so the centre of
    pixel (s, f) is ``pix0 + (f + 1/2) p fdet + (s + 1/2) p sdet`` (spec §3.3 step 7).
    MOSFLM and DENZO measure Xbeam along the slow axis and Ybeam along the fast one; ADXV measures Ybeam
    from the far edge; XDS and DIALS ignore Xbeam/Ybeam in favour of ORGX/ORGY (spec §3.1).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from detsim.model.config import BeamConfig, Convention, CrystalConfig, DetectorConfig, Pivot, as_float
from detsim.model.rotation import cross3, dot3, norm3, rotate_axis, rotate_xyz, unit
from detsim.model.units import deg_to_rad, mm_to_m


@dataclass(frozen=True)
class ConventionAxes:
    """Unrotated lab-frame axes of a convention (spec §3.1 table)."""

    beam: tuple[float, float, float]
    fdet: tuple[float, float, float]
    sdet: tuple[float, float, float]
    odet: tuple[float, float, float]
    twotheta_axis: tuple[float, float, float]
    polar: tuple[float, float, float]
    spindle: tuple[float, float, float]
    pivot: Pivot | None  # the pivot the convention forces; None = taken from the configuration


_MOSFLM_AXES = ConventionAxes(
    beam=(1, 0, 0), fdet=(0, 0, 1), sdet=(0, -1, 0), odet=(1, 0, 0),
    twotheta_axis=(0, 0, -1), polar=(0, 0, 1), spindle=(0, 0, 1), pivot=Pivot.BEAM,
)
CONVENTION_AXES: dict[Convention, ConventionAxes] = {
    Convention.MOSFLM: _MOSFLM_AXES,
    Convention.DENZO: _MOSFLM_AXES,
    Convention.ADXV: ConventionAxes(
        beam=(0, 0, 1), fdet=(1, 0, 0), sdet=(0, -1, 0), odet=(0, 0, 1),
        twotheta_axis=(-1, 0, 0), polar=(1, 0, 0), spindle=(1, 0, 0), pivot=Pivot.BEAM,
    ),
    Convention.XDS: ConventionAxes(
        beam=(0, 0, 1), fdet=(1, 0, 0), sdet=(0, 1, 0), odet=(0, 0, 1),
        twotheta_axis=(1, 0, 0), polar=(1, 0, 0), spindle=(1, 0, 0), pivot=Pivot.SAMPLE,
    ),
    Convention.DIALS: ConventionAxes(
        beam=(0, 0, 1), fdet=(1, 0, 0), sdet=(0, 1, 0), odet=(0, 0, 1),
        twotheta_axis=(0, 1, 0), polar=(0, 1, 0), spindle=(0, 1, 0), pivot=Pivot.SAMPLE,
    ),
    Convention.CUSTOM: ConventionAxes(
        beam=(1, 0, 0), fdet=(0, 0, 1), sdet=(0, -1, 0), odet=(1, 0, 0),
        twotheta_axis=(0, 1, 0), polar=(0, 0, 1), spindle=(0, 0, 1), pivot=None,
    ),
}


@dataclass(frozen=True)
class LabFrame:
    """Beam-side lab vectors after the convention and CUSTOM overrides (unit vectors, shape (3,))."""

    beam: Tensor  # direction of travel of the incident beam
    polar: Tensor  # polarization (E-vector) axis
    vert: Tensor  # unit(beam x polar)
    spindle: Tensor


@dataclass(frozen=True)
class DetectorGeometry:
    """Resolved detector geometry; tensors have shape (3,) unless noted. Lengths in metres."""

    fdet: Tensor
    sdet: Tensor
    odet: Tensor
    pix0_m: Tensor
    pixel_m: Tensor  # () pixel size
    close_distance_m: Tensor  # () pix0 . odet, used by the solid angle (spec §3.3 step 6)
    distance_m: Tensor  # () close_distance / ratio, used by the curved detector and auto-oversample
    fbeam_m: Tensor  # () direct-beam position along fdet (recomputed, for headers)
    sbeam_m: Tensor
    fclose_m: Tensor
    sclose_m: Tensor
    xbeam_m: float  # the Xbeam/Ybeam the convention resolved (header values)
    ybeam_m: float
    detsize_f_m: float
    detsize_s_m: float
    pivot: Pivot
    fpixels: int
    spixels: int


def _vec(values, device, dtype) -> Tensor:
    return torch.as_tensor(values, dtype=dtype, device=device)


def _scalar(value, device, dtype) -> Tensor:
    """A () tensor; keeps the autograd graph when ``value`` is already a tensor."""
    return torch.as_tensor(value, dtype=dtype, device=device).reshape(())


def lab_frame(
    detector: DetectorConfig, beam: BeamConfig, crystal: CrystalConfig, *, device, dtype
) -> LabFrame:
    """Beam, polarization and spindle axes of the convention, with CUSTOM overrides (spec §3.1)."""
    axes = CONVENTION_AXES[detector.convention]
    custom = detector.convention is Convention.CUSTOM
    beam_v = beam.beam_vector if custom and beam.beam_vector is not None else axes.beam
    polar_v = beam.polar_vector if custom and beam.polar_vector is not None else axes.polar
    spindle_v = crystal.spindle_axis if custom and crystal.spindle_axis is not None else axes.spindle
    b = unit(_vec(beam_v, device, dtype))
    p = unit(_vec(polar_v, device, dtype))
    return LabFrame(beam=b, polar=p, vert=unit(cross3(b, p)),
                    spindle=unit(_vec(spindle_v, device, dtype)))


def detector_geometry(detector: DetectorConfig, frame: LabFrame, *, device, dtype) -> DetectorGeometry:
    """Place the detector in the lab frame (spec §3.1-§3.3)."""
    det = detector
    axes = CONVENTION_AXES[det.convention]
    custom = det.convention is Convention.CUSTOM
    pixel = mm_to_m(det.pixel_mm)
    detsize_f = mm_to_m(det.detsize_f_mm) if det.detsize_f_mm is not None else pixel * det.fpixels
    detsize_s = mm_to_m(det.detsize_s_mm) if det.detsize_s_mm is not None else pixel * det.spixels

    fclose, sclose, fbeam, sbeam, xbeam, ybeam = _beam_centre(det, pixel, detsize_f, detsize_s)
    pivot = det.pivot if axes.pivot is None else axes.pivot

    fdet0 = det.fdet_vector if custom and det.fdet_vector is not None else axes.fdet
    sdet0 = det.sdet_vector if custom and det.sdet_vector is not None else axes.sdet
    odet0 = det.odet_vector if custom and det.odet_vector is not None else axes.odet
    tt_axis = det.twotheta_axis if custom and det.twotheta_axis is not None else axes.twotheta_axis
    f0 = unit(_vec(fdet0, device, dtype))
    s0 = unit(_vec(sdet0, device, dtype))
    o0 = _vec(odet0, device, dtype)
    if float(norm3(o0)) != 1.0:  # spec §2.3: a non-unit odet is replaced by f x s
        o0 = unit(cross3(f0, s0))
    tt_axis_t = _vec(tt_axis, device, dtype)  # deliberately not normalized (spec §2.3)

    rx, ry, rz = (_scalar(deg_to_rad(v), device, dtype) for v in (det.rotx_deg, det.roty_deg, det.rotz_deg))
    twotheta = _scalar(deg_to_rad(det.twotheta_deg), device, dtype)
    b = frame.beam

    # spec §3.3: ratio uses the detector rotations but not the two-theta swing.
    ratio = dot3(b, rotate_xyz(o0, rx, ry, rz))
    if float(ratio) == 0.0:
        ratio = torch.full_like(ratio, torch.finfo(torch.float64).tiny)
    distance = _scalar(mm_to_m(det.distance_mm), device, dtype)
    if det.close_distance_mm is None:
        close_distance = torch.abs(ratio * distance)
    else:
        close_distance = _scalar(mm_to_m(det.close_distance_mm), device, dtype)

    def swing(v: Tensor) -> Tensor:
        return rotate_axis(rotate_xyz(v, rx, ry, rz), tt_axis_t, twotheta)

    fdet, sdet, odet = swing(f0), swing(s0), swing(o0)
    if pivot is Pivot.SAMPLE:
        pix0 = swing(-fclose * f0 - sclose * s0 + close_distance * o0)
    else:
        pix0 = -fbeam * fdet - sbeam * sdet + (close_distance / ratio) * b

    # spec §3.3 step 6: reporting values, recomputed from the final pix0.
    close_distance = dot3(pix0, odet)
    distance = close_distance / ratio
    beam_spot = distance * b - pix0
    return DetectorGeometry(
        fdet=fdet, sdet=sdet, odet=odet, pix0_m=pix0,
        pixel_m=_scalar(pixel, device, dtype),
        close_distance_m=close_distance, distance_m=distance,
        fbeam_m=dot3(fdet, beam_spot), sbeam_m=dot3(sdet, beam_spot),
        fclose_m=-dot3(pix0, fdet), sclose_m=-dot3(pix0, sdet),
        xbeam_m=as_float(xbeam), ybeam_m=as_float(ybeam),
        detsize_f_m=as_float(detsize_f), detsize_s_m=as_float(detsize_s),
        pivot=pivot, fpixels=det.fpixels, spixels=det.spixels,
    )


def _beam_centre(det: DetectorConfig, pixel, detsize_f, detsize_s) -> tuple:
    """Beam-centre bookkeeping of the convention (spec §3.1), m.

    Returns:
        (fclose, sclose, fbeam, sbeam, xbeam, ybeam): Fclose/Sclose place pix0 for the SAMPLE pivot,
        Fbeam/Sbeam for the BEAM pivot; xbeam/ybeam are the reported beam centre.
    """
    fclose = (det.orgx_px - 0.5) * pixel if det.orgx_px is not None else detsize_f / 2
    sclose = (det.orgy_px - 0.5) * pixel if det.orgy_px is not None else detsize_s / 2
    xclose = mm_to_m(det.xclose_mm) if det.xclose_mm is not None else fclose
    yclose = mm_to_m(det.yclose_mm) if det.yclose_mm is not None else sclose
    xbeam = mm_to_m(det.xbeam_mm) if det.xbeam_mm is not None else None
    ybeam = mm_to_m(det.ybeam_mm) if det.ybeam_mm is not None else None
    conv = det.convention
    if conv in (Convention.MOSFLM, Convention.DENZO):
        xbeam = (detsize_s + pixel) / 2 if xbeam is None else xbeam
        ybeam = (detsize_f + pixel) / 2 if ybeam is None else ybeam
        half = 0.5 * pixel if conv is Convention.MOSFLM else 0.0
        fbeam, sbeam = ybeam + half, xbeam + half
    elif conv is Convention.ADXV:
        xbeam = (detsize_f + pixel) / 2 if xbeam is None else xbeam
        ybeam = (detsize_s - pixel) / 2 if ybeam is None else ybeam
        fbeam, sbeam = xbeam, detsize_s - ybeam
    else:  # XDS, DIALS, CUSTOM
        xbeam = xclose if xbeam is None else xbeam
        ybeam = yclose if ybeam is None else ybeam
        fbeam, sbeam = xbeam, ybeam
        if conv is Convention.CUSTOM:
            fclose, sclose = xbeam, ybeam
    return fclose, sclose, fbeam, sbeam, xbeam, ybeam


def subpixel_indices(oversample: int, dtype, device) -> tuple[Tensor, Tensor]:
    """Subpixel indices within a pixel (spec §3.4).

    Returns:
        (i_s, i_f), each of shape (O,) with O = oversample**2, in nanoBragg's loop order (slow subpixel
        outer, fast inner).
    """
    idx = torch.arange(oversample, dtype=dtype, device=device)
    return (idx[:, None].expand(oversample, oversample).reshape(-1),
            idx[None, :].expand(oversample, oversample).reshape(-1))


def pixel_positions(
    geom: DetectorGeometry,
    s_index: Tensor,
    f_index: Tensor,
    oversample: int,
    layer_offsets_m: Tensor,
    curved: bool,
    beam: Tensor,
) -> Tensor:
    """Lab positions of every subpixel of the given pixels (spec §3.4).

    Args:
        s_index, f_index: (P,) slow and fast pixel indices.
        oversample: subpixels per axis (N_os).
        layer_offsets_m: (T,) depth of each sensor layer along odet.
        curved: place every subpixel at ``distance`` from the sample (spec §3.4).
        beam: (3,) beam direction, used by the curved detector.

    Returns:
        (P, T, O, 3) positions in metres, O = N_os**2 in loop order.
    """
    dtype = geom.pix0_m.dtype
    i_s, i_f = subpixel_indices(oversample, dtype, geom.pix0_m.device)
    sub = geom.pixel_m / oversample
    if dtype != torch.float64:
        # float32 is held to tolerances, not to nanoBragg's bits: two broadcast multiply-adds
        fdet = f_index.to(dtype)[:, None] * geom.pixel_m + ((i_f + 0.5) * sub)[None, :]  # (P, O)
        sdet = s_index.to(dtype)[:, None] * geom.pixel_m + ((i_s + 0.5) * sub)[None, :]  # (P, O)
        layer_origin = geom.pix0_m + layer_offsets_m[:, None] * geom.odet  # (T, 3)
        pos = torch.addcmul(layer_origin[None, :, None, :], fdet[:, None, :, None], geom.fdet)
        return _curve(pos.addcmul_(sdet[:, None, :, None], geom.sdet), geom, curved, beam)
    # nanoBragg.c L2694-L2703, operation for operation: Fdet = sub*(f*N_os + i_f) + sub/2.0, and each
    # component Fdet*fdet + Sdet*sdet + Odet*odet + pix0, left to right, without fused multiply-adds
    fdet = sub * (f_index.to(dtype)[:, None] * oversample + i_f[None, :]) + sub / 2.0  # (P, O)
    sdet = sub * (s_index.to(dtype)[:, None] * oversample + i_s[None, :]) + sub / 2.0  # (P, O)
    pos = (fdet[:, None, :, None] * geom.fdet + sdet[:, None, :, None] * geom.sdet
           + (layer_offsets_m[:, None] * geom.odet)[None, :, None, :] + geom.pix0_m)
    return _curve(pos, geom, curved, beam)


def _curve(pos: Tensor, geom: DetectorGeometry, curved: bool, beam: Tensor) -> Tensor:
    """Flat positions (P, T, O, 3), or on the curved detector where ``curved`` (spec §3.4)."""
    if curved:
        # Start at distance*beam, rotate about sdet by y/distance then about fdet by z/distance, where
        # y, z are the lab components of the flat position (spec §3.4).
        start = (geom.distance_m * beam).expand_as(pos)
        turned = rotate_axis(start, geom.sdet.expand_as(pos), pos[..., 1] / geom.distance_m)
        pos = rotate_axis(turned, geom.fdet.expand_as(pos), pos[..., 2] / geom.distance_m)
    return pos

