"""Step-count resolution: nanoBragg's range/step/count rules (spec §5.3).

Each sampled axis (spindle phi, horizontal and vertical divergence, dispersion, sensor thickness) is
described by a range R, a step Δ and a count n, any of which may be unset (``None``). These functions
turn the given subset into a complete :class:`Steps`, reproducing nanoBragg's rules, including the
ones that look odd (``ceil(R/Δ)`` adds a step; a divergence count alone implies a 1 rad range).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Steps:
    """A resolved sampling axis: ``count`` samples ``step`` apart over ``range``."""

    range: float
    step: float
    count: int


_NONE = Steps(0.0, 0.0, 1)


def _unset(x: float | None) -> bool:
    return x is None or x < 0


def _unset_step(x: float | None) -> bool:
    return x is None or x <= 0


def resolve_phi(osc: float | None, step: float | None, count: int | None) -> Steps:
    """Spindle sweep (radians in, radians out); phi values are phi0 + i*step (spec §5.3)."""
    if count is None or count < 0:
        if _unset(osc):
            return _NONE if _unset_step(step) else Steps(step, step, 2)
        if _unset_step(step):
            return Steps(osc, osc / 2.0, 2)
        return Steps(osc, step, math.ceil(osc / step))
    count = max(count, 1)
    if _unset(osc):
        if _unset_step(step):
            osc = math.radians(1.0)
            return Steps(osc, osc / count, count)
        return Steps(step, step, 2)
    if step is None or step < 0:
        return Steps(osc, osc / count, count)
    return Steps(osc, step, count)


def _resolve_range_step_count(rng: float | None, step: float | None, count: int | None,
                              count_only_range: float) -> Steps:
    """Shared rule of divergence, dispersion and thickness, before the sanity clamp (spec §5.3)."""
    if count is None or count <= 0:
        if _unset(rng):
            return _NONE if _unset_step(step) else Steps(step, step, 2)
        if _unset_step(step):
            return Steps(rng, rng, 2)
        return Steps(rng, step, math.ceil(rng / step))
    if _unset(rng):
        if _unset_step(step):
            return Steps(count_only_range, count_only_range / count, count)
        return Steps(step, step, 2)
    if _unset_step(step):
        count = max(count, 2)
        return Steps(rng, rng / (count - 1), count)
    return Steps(rng, step, count)


def _sane(s: Steps) -> Steps:
    """Afterwards: a non-positive range, step or count means a single sample (spec §5.3)."""
    return _NONE if (s.range <= 0 or s.step <= 0 or s.count <= 0) else s


def resolve_divergence(rng: float | None, step: float | None, count: int | None) -> Steps:
    """One divergence axis (radians). A count alone implies a 1.0 rad range (spec §5.3)."""
    return _sane(_resolve_range_step_count(rng, step, count, count_only_range=1.0))


def resolve_dispersion(fraction: float, count: int | None) -> Steps:
    """Dispersion as a fraction of lambda0; there is no step flag (spec §5.3)."""
    return _sane(_resolve_range_step_count(fraction, None, count, count_only_range=1.0))


def resolve_thickness(thick_m: float, count: int | None) -> Steps:
    """Sensor layers: R only gives 2 layers T/2 apart; R and n give n layers T/(n-1) apart (spec §5.3)."""
    if count is None or count <= 0:
        steps = Steps(thick_m, thick_m / 2.0, 2) if thick_m > 0 else _NONE
    else:
        steps = _resolve_range_step_count(thick_m, None, count, count_only_range=0.5e-6)
    return _sane(steps)


def resolve_mosaic_domains(spread_rad: float, domains: int | None) -> int:
    """Number of mosaic domains: 10 by default with a spread, 1 without (spec §2.1)."""
    if spread_rad <= 0:
        return 1
    return 10 if domains is None or domains <= 0 else domains
