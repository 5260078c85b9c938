"""Aligning two parsed traces and listing where they disagree, first difference first (the rules of
docs/trace.md, "trace-diff")."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from detsim.track.traces.tracelog import SHARED, Line, Trace

DEFAULT_RTOL, DEFAULT_ATOL = 1e-6, 1e-12


@dataclass(frozen=True)
class Difference:
    """Two aligned lines that disagree."""

    pixel: object
    name: str
    occurrence: int  # 1-based, per name within the pixel
    a: Line
    b: Line
    reason: str  # "values", "count" or "labels"
    rel: float  # largest relative difference over the components (inf for count/labels)
    abs: float
    component: int | None


@dataclass
class Comparison:
    """Everything trace-diff reports."""

    a: Trace
    b: Trace
    rtol: float
    atol: float
    compared: int = 0
    differences: list[Difference] = field(default_factory=list)
    only_a: Counter = field(default_factory=Counter)  # name -> lines without a partner in B
    only_b: Counter = field(default_factory=Counter)
    pixels_only_a: list = field(default_factory=list)
    pixels_only_b: list = field(default_factory=list)
    pairs: list = field(default_factory=list)  # (pixel in A, pixel in B) compared

    @property
    def first(self) -> Difference | None:
        return self.differences[0] if self.differences else None


def _relative(x: float, y: float) -> float:
    if x == y or (math.isnan(x) and math.isnan(y)):
        return 0.0
    scale = max(abs(x), abs(y))
    return math.inf if not math.isfinite(scale) or scale == 0 else abs(x - y) / scale


def _compare_values(a: Line, b: Line, rtol: float, atol: float):
    """(reason, rel, abs, component) for a disagreement, or None."""
    common = {k for k, _ in a.labels} & {k for k, _ in b.labels}
    if any(dict(a.labels)[k] != dict(b.labels)[k] for k in common):
        return "labels", math.inf, math.inf, None
    if len(a.values) != len(b.values):
        return "count", math.inf, math.inf, None
    worst = None
    for i, (x, y) in enumerate(zip(a.values, b.values)):
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        diff = abs(x - y)
        finite = math.isfinite(x) and math.isfinite(y)  # inf <= atol + rtol * inf: never a tolerance for them
        if finite and diff <= atol + rtol * max(abs(x), abs(y)):
            continue
        rel = _relative(x, y)
        if worst is None or rel > worst[1] or math.isnan(diff):
            worst = ("values", rel, diff, i)
    return worst


def _pair_pixels(a: Trace, b: Trace) -> tuple[list, list, list]:
    """(pairs, only in A, only in B): which pixel block of A is compared with which of B."""
    pa, pb = a.pixels(), b.pixels()
    if not pa and not pb:
        return [(SHARED, SHARED)], [], []
    if not pa and len(pb) == 1:
        return [(SHARED, pb[0])], [], []
    if not pb and len(pa) == 1:
        return [(pa[0], SHARED)], [], []
    pairs = [(p, p) for p in pa if p in pb]
    return pairs, [p for p in pa if p not in pb], [p for p in pb if p not in pa]


def _numbered(lines: list[Line]):
    """(name, n) -> the n-th line of that name, in order."""
    seen: Counter = Counter()
    for line in lines:
        seen[line.name] += 1
        yield (line.name, seen[line.name]), line


def compare(a: Trace, b: Trace, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> Comparison:
    """Align the two traces by pixel, name and occurrence, and list every disagreement in A's order."""
    result = Comparison(a=a, b=b, rtol=rtol, atol=atol)
    result.pairs, result.pixels_only_a, result.pixels_only_b = _pair_pixels(a, b)
    for pixel_a, pixel_b in result.pairs:
        pixel = pixel_a if pixel_a is not SHARED else pixel_b
        index_b = dict(_numbered(b.sequence(pixel_b)))
        for key, line in _numbered(a.sequence(pixel_a)):
            partner = index_b.pop(key, None)
            if partner is None:
                result.only_a[line.name] += 1
                continue
            result.compared += 1
            found = _compare_values(line, partner, rtol, atol)
            if found is not None:
                result.differences.append(Difference(pixel, line.name, key[1], line, partner, *found))
        for name, _ in index_b:
            result.only_b[name] += 1
    return result


def _fmt_pixel(pixel) -> str:
    if pixel is SHARED:
        return "(no pixel line)"
    if isinstance(pixel, tuple) and len(pixel) == 2:
        return f"(s={pixel[0]}, f={pixel[1]})"
    return str(pixel)


def _where(line: Line, trace: Trace) -> str:
    return f"{trace.path}:{line.lineno}" if line.lineno else trace.path


def _values(line: Line) -> str:
    return " ".join(repr(v) for v in line.values) or "(no values)"


def _labels(line: Line) -> str:
    return " ".join(f"{k}={v}" for k, v in line.labels)


def format_comparison(c: Comparison) -> str:
    """The human-readable report printed by the subcommand."""
    out = [f"A: {c.a.path}  ({c.a.count} lines, prefix {c.a.prefix})",
           f"B: {c.b.path}  ({c.b.count} lines, prefix {c.b.prefix})",
           f"tolerance: |a-b| <= {c.atol:g} + {c.rtol:g} * max(|a|,|b|); {c.compared} aligned lines compared"]
    for label, trace in (("A", c.a), ("B", c.b)):
        for lineno, reason in trace.bad:
            out.append(f"bad line in {label}: {trace.path}:{lineno}: {reason}")
    for label, pixels in (("A", c.pixels_only_a), ("B", c.pixels_only_b)):
        if pixels:
            out.append(f"pixels only in {label}: " + ", ".join(_fmt_pixel(p) for p in pixels))
    for label, names in (("A", c.only_a), ("B", c.only_b)):
        if names:
            listed = ", ".join(f"{n} ({k})" for n, k in sorted(names.items()))
            out.append(f"only in {label} (name (lines without a partner)): {listed}")
    first = c.first
    if first is None:
        out.append("no difference beyond tolerance" if c.compared else "nothing in common to compare")
        return "\n".join(out)
    labels = _labels(first.a) or _labels(first.b)
    out += ["",
            f"FIRST DIFFERENCE: {first.name} at pixel {_fmt_pixel(first.pixel)}, occurrence {first.occurrence}"
            + (f" [{labels}]" if labels else ""),
            *(f"  {side} {_where(line, trace)}: {_values(line)}"
              + (f"   [{_labels(line)}]" if first.reason == "labels" else "")
              for side, line, trace in (("A", first.a, c.a), ("B", first.b, c.b)))]
    if first.reason == "values":
        out.append(f"  component {first.component}: relative difference {first.rel:.3g} (absolute {first.abs:.3g})")
    elif first.reason == "count":
        out.append(f"  different number of values: {len(first.a.values)} in A, {len(first.b.values)} in B")
    else:
        out.append("  labels disagree: the two logs are out of step here (a line missing on one side?)")
    per_name: dict[str, list[Difference]] = {}
    for d in c.differences:
        per_name.setdefault(d.name, []).append(d)
    out.append("")
    out.append(f"{len(c.differences)} differing lines; by name, in order of first appearance:")
    for name, diffs in per_name.items():
        finite = [d.rel for d in diffs if math.isfinite(d.rel)]
        worst = f"max rel {max(finite):.3g}" if finite else diffs[0].reason
        out.append(f"  {name:<24} {len(diffs):>7} lines  {worst}")
    return "\n".join(out)
