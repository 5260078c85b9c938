"""Parity histories drawn as inline SVG on a log scale of 1 - r, with a floor and the acceptance line.

asv draws 1 - r on a linear axis, where 0 and 1e-9 look the same. Here commits are evenly spaced, oldest
first; a value at or below :data:`FLOOR` is drawn on the floor as a hollow marker; a failed point (None) is a
grey cross on the floor, a skipped one (NaN) is not drawn; the line breaks at both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from detsim.track.base.metrics import PARITY_MIN_R

FLOOR = 1e-16  # 1 - r at or below this is drawn on the floor (float64 cannot resolve r closer to 1)
TOP = 1.0  # the axis' top: r = 0
ACCEPT = 1 - PARITY_MIN_R  # the acceptance line on the 1 - r scale
WIDTH, HEIGHT = 300, 130
LEFT, RIGHT, TOP_MARGIN, BOTTOM = 50, 8, 18, 14
# every 4 decades from the top down to the floor
TICKS = [10.0 ** e for e in range(round(math.log10(TOP)), round(math.log10(FLOOR)) - 1, -4)]


@dataclass(frozen=True)
class Frame:
    """The plot area in SVG units: x from ``left`` to ``right``, y from ``top`` (1 - r = TOP) to ``bottom`` (FLOOR)."""

    left: float = LEFT
    right: float = WIDTH - RIGHT
    top: float = TOP_MARGIN
    bottom: float = HEIGHT - BOTTOM


def log_y(value: float, frame: Frame = Frame()) -> tuple[float, bool]:
    """The y of 1 - r = ``value`` on the log axis, and whether it was clamped to the floor (values at or
    below :data:`FLOOR`, 0 and negatives included) or to the top."""
    if value <= FLOOR:
        return frame.bottom, True
    if value >= TOP:
        return frame.top, value > TOP
    share = (math.log10(value) - math.log10(FLOOR)) / (math.log10(TOP) - math.log10(FLOOR))
    return frame.bottom - share * (frame.bottom - frame.top), False


def x_of(index: int, count: int, frame: Frame = Frame()) -> float:
    """Commit ``index`` of ``count``, evenly spaced; a single commit sits in the middle."""
    if count <= 1:
        return (frame.left + frame.right) / 2
    return frame.left + index * (frame.right - frame.left) / (count - 1)


def fmt(value: float | None) -> str:
    """A 1 - r value as the page prints it: ``<= 1e-16`` at the floor, else three significant digits."""
    if value is None:
        return "failed"
    if math.isnan(value):
        return "skipped"
    return f"<= {FLOOR:.0e}" if value <= FLOOR else f"{value:.3g}"


def _tick_label(value: float) -> str:
    return "1" if value == 1 else f"1e{round(math.log10(value))}"


def parity_svg(case: str, points: list[tuple[str, float | None]], *, worst: bool = False,
               subjects: dict[str, str] | None = None, href: str | None = None) -> str:
    """One case's history: ``points`` are (commit, 1 - r) oldest first (None failed, NaN skipped)."""
    frame, subjects = Frame(), subjects or {}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="parity{" worst" if worst else ""}" '
           f'data-case="{escape(case)}" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
           f'role="img" aria-label="1 - r of {escape(case)} per commit, log scale">']
    title = escape(case) + (" (worst)" if worst else "")
    if href:
        title = f'<a href="{escape(href)}">{title}</a>'
    out.append(f'<text x="{frame.left}" y="12" class="title">{title}</text>')
    for tick in TICKS:
        y, _ = log_y(tick, frame)
        out.append(f'<line x1="{frame.left}" x2="{frame.right}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        label = f"&lt;={_tick_label(tick)}" if tick == FLOOR else _tick_label(tick)
        out.append(f'<text x="{frame.left - 3}" y="{y + 3:.1f}" class="tick">{label}</text>')
    y, _ = log_y(ACCEPT, frame)
    out.append(f'<line x1="{frame.left}" x2="{frame.right}" y1="{y:.1f}" y2="{y:.1f}" class="acceptance" '
               f'data-value="{ACCEPT:.6g}"><title>acceptance line: 1 - r = {ACCEPT:.4g} (r &gt;= {PARITY_MIN_R})</title></line>')
    out.append(f'<text x="{frame.left + 3}" y="{y - 3:.1f}" class="accept-label">r &gt;= {PARITY_MIN_R}</text>')
    lines: list[list[str]] = [[]]  # runs of consecutive measured points
    dots = []
    for i, (commit, value) in enumerate(points):
        x = x_of(i, len(points), frame)
        where = f"{commit[:8]} {escape(subjects.get(commit, ''))}".strip()
        if value is None or math.isnan(value):
            lines.append([])
            if value is None:
                dots.append(f'<text x="{x:.1f}" y="{frame.bottom + 4:.1f}" class="failed">x<title>{where}: failed</title></text>')
            continue
        y, _ = log_y(value, frame)
        lines[-1].append(f"{x:.1f},{y:.1f}")
        kind = "floor" if value <= FLOOR else "bad" if value > ACCEPT else "ok"
        dots.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" class="pt {kind}">'
                    f'<title>{where}: 1 - r = {fmt(value)}</title></circle>')
    out += [f'<polyline points="{" ".join(run)}" class="line"/>' for run in lines if len(run) > 1]
    out += dots
    out.append("</svg>")
    return "".join(out)


def worst_case(latest: dict[str, float | None]) -> str | None:
    """The case with the largest measured 1 - r at the latest commit (None: none measured)."""
    measured = {c: v for c, v in latest.items() if v is not None and not math.isnan(v)}
    return max(sorted(measured), key=lambda c: measured[c]) if measured else None
