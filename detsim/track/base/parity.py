"""The one parity loop of the suite: cases rendered one by one, each image held against its reference image.
``detsim-track parity``, the GPU check's parity steps and the asv suite's golden renders all run it.

Input: cases (:class:`~.golden.GoldenCase`: the golden ones, or a user's case folders), ``read`` (the commit's
reader of nanoBragg argument lists), ``render`` (the caller's render of a configuration, timed:
:func:`.timing.timed`), the line on r; optionally ``keep_going`` (asked before each case: False leaves the rest
not run) and ``leave`` (a configuration -> why the caller leaves that case to another path, or None). Each case's
configuration is read, and it is rendered, in its folder (its input files are relative to it). Output: one
:class:`CaseParity` per case, in order, ending in a :class:`~.status.Status`: OK (r meets the line), FAILED (it
does not, or r is undefined), CRASHED (the case could not be read or rendered, or its image is not the
reference's shape: ``error``, one line), SKIPPED (left: ``error`` says why), NOT_RUN (``keep_going`` said stop).
Imports the standard library, numpy and the base only: the asv suite loads it beside any commit's ``detsim``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from .golden import GoldenCase, working_directory
from .metrics import PARITY_MIN_R, image_metrics, passes_parity
from .status import Status
from .timing import Timed


@dataclass(frozen=True)
class CaseParity:
    """One case's parity, and what it was computed from (None where the case did not get that far)."""

    case: GoldenCase
    status: Status
    error: str = ""  # CRASHED: ``ErrorType: first line``; SKIPPED: why the case was left
    metrics: dict | None = None  # :func:`~.metrics.image_metrics` of the image against the reference
    image: np.ndarray | None = None  # detsim's image, float64 (slow, fast)
    reference: np.ndarray | None = None  # the case's reference image, float32 (slow, fast)
    config: Any = None  # the configuration rendered
    seconds: float | None = None  # the render's wall seconds (prepare + render, to the device's last kernel)


def detector_shape(config) -> tuple[int, int]:
    """(slow, fast) pixels of a configuration, as every commit's ``DetectorConfig`` names them."""
    return config.detector.spixels, config.detector.fpixels


def reference_of(case: GoldenCase, shape: tuple[int, int]) -> np.ndarray:
    """The case's reference image, which must have the detector shape its arguments give (ValueError)."""
    reference = case.reference(shape)
    if reference.shape != shape:
        raise ValueError(f"{case.folder / 'image.bin'}: a {reference.shape[0]}x{reference.shape[1]} image, but "
                         f"the arguments give a {shape[0]}x{shape[1]} detector")
    return reference


def case_parity(case: GoldenCase, read: Callable[[list[str]], Any], render: Callable[[Any], Timed], *,
                min_r: float = PARITY_MIN_R, leave: Callable[[Any], str | None] | None = None) -> CaseParity:
    """One case through the loop (see the module docstring); never raises for a broken case."""
    config = None
    try:
        config = case.config(read)
        why = leave(config) if leave is not None else None
        if why:
            return CaseParity(case, Status.SKIPPED, why, config=config)
        shape = detector_shape(config)
        reference = reference_of(case, shape)
        with working_directory(case.folder):  # older commits read some input files while rendering
            done = render(config)
        image = done.result[0] if isinstance(done.result, tuple) else done.result
        ours = np.asarray(image.detach().cpu().double().numpy() if hasattr(image, "detach") else image, np.float64)
        if ours.shape != shape:
            raise ValueError(f"image shape {ours.shape} != golden shape {shape}")
    except Exception as exc:  # noqa: BLE001 - one broken case is recorded, the others go on
        return CaseParity(case, Status.CRASHED, f"{type(exc).__name__}: {exc}".splitlines()[0], config=config)
    metrics = image_metrics(ours, reference)
    status = Status.OK if passes_parity(metrics["r"], min_r) else Status.FAILED
    return CaseParity(case, status, metrics=metrics, image=ours, reference=reference, config=config,
                      seconds=done.wall_s)


def golden_parity(cases: Iterable[GoldenCase], read: Callable[[list[str]], Any], render: Callable[[Any], Timed], *,
                  min_r: float = PARITY_MIN_R, keep_going: Callable[[], bool] = lambda: True,
                  leave: Callable[[Any], str | None] | None = None) -> Iterator[CaseParity]:
    """Every case through the loop, in order (see the module docstring)."""
    for case in cases:
        if not keep_going():
            yield CaseParity(case, Status.NOT_RUN)
            continue
        yield case_parity(case, read, render, min_r=min_r, leave=leave)
