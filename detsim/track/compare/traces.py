"""Per-pixel traces (docs/trace.md): two logs, whatever printed them, read into pixel blocks, aligned, and
every disagreement listed, the first difference first (``detsim-track trace-diff``, ``explain``'s parity).

The prefix is found per file, so a log may be the whole stdout of the program that printed it. Lines
before the first ``pixel`` line are shared by every block of that file (block key :data:`SHARED`). Pixels
pair by their (s, f); within a pixel the n-th line named X in A pairs with the n-th line named X in B."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from detsim.track.compare.outputs import compare_outputs

DEFAULT_RTOL, DEFAULT_ATOL = 1e-6, 1e-12

_PREFIXED = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:(.*)$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\[\]]*$")
_LABEL = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\S*)$")
_TOKEN_SPLIT = re.compile(r"[\s,]+")
SHARED = None  # block key of the lines before any ``pixel`` line


class TraceError(ValueError):
    """A trace file that cannot be read at all."""


@dataclass(frozen=True)
class Line:
    """One parsed trace line."""

    lineno: int  # 1-based line number in the file (0 for JSON records)
    name: str
    labels: tuple[tuple[str, str], ...]
    values: tuple[float, ...]


@dataclass
class Trace:
    """A parsed log: lines grouped by pixel, plus what could not be used."""

    path: str
    prefix: str | None
    blocks: dict = field(default_factory=dict)  # pixel (s, f) or SHARED -> [Line] in file order
    bad: list[tuple[int, str]] = field(default_factory=list)  # (line number, reason)
    count: int = 0  # trace lines read

    def pixels(self) -> list:
        return [key for key in self.blocks if key is not SHARED]

    def outputs(self, pixel) -> dict[tuple[str, int], Line]:
        """The lines that describe ``pixel`` (the shared lines, then its own) by (name, n): the n-th line of
        that name, in order; the named outputs :func:`~.outputs.compare_outputs` pairs."""
        seen: Counter = Counter()
        named = {}
        for line in self.blocks.get(SHARED, []) + (self.blocks.get(pixel, []) if pixel is not SHARED else []):
            seen[line.name] += 1
            named[line.name, seen[line.name]] = line
        return named


def _detect_prefix(lines: list[str]) -> str | None:
    """The most common prefix starting with TRACE, else the most common one followed by a name."""
    counts: Counter = Counter()
    for m in map(_PREFIXED.match, lines):
        if m and _NAME.match((m.group(2).split() or [""])[0]):
            counts[m.group(1)] += 1
    pool = {p: n for p, n in counts.items() if p.upper().startswith("TRACE")} or counts
    return max(pool, key=lambda p: (pool[p], -list(counts).index(p)), default=None)


def _pixel_key(values: tuple[float, ...]):
    return tuple(int(v) if float(v).is_integer() else v for v in values)


def parse_trace(text: str, path: str = "<trace>") -> Trace:
    """Parse a trace log (see the module docstring)."""
    lines = text.splitlines()
    trace = Trace(path=path, prefix=_detect_prefix(lines))
    current = SHARED
    # The prefix may follow other output on the same line (a message printed without its newline).
    marker = re.compile(r"(?:^|\s)" + re.escape(trace.prefix) + r"\s*:") if trace.prefix else None
    for lineno, raw in enumerate(lines, start=1):
        m = marker.search(raw) if marker else None
        if not m:
            continue
        tokens = [t for t in _TOKEN_SPLIT.split(raw[m.end():].strip()) if t]
        parsed = _parse_body(tokens)
        if isinstance(parsed, str):
            trace.bad.append((lineno, f"{parsed}: {raw.strip()[:120]}"))
            continue
        name, labels, values = parsed
        trace.count += 1
        if name == "pixel":
            current = _pixel_key(values)
            trace.blocks.setdefault(current, [])
            continue
        trace.blocks.setdefault(current, []).append(Line(lineno, name, labels, values))
    return trace


def _parse_body(tokens: list[str]):
    """(name, labels, values), or a string saying why the line is bad."""
    if not tokens:
        return "no name after the prefix"
    name, rest = tokens[0], tokens[1:]
    if not _NAME.match(name):
        return f"bad name {name!r}"
    labels, values = [], []
    for token in rest:
        label = _LABEL.match(token)
        if label:
            labels.append((label.group(1), label.group(2)))
            continue
        try:
            values.append(float(token))
        except ValueError:
            return f"non-numeric value {token!r} in {name}"
    if name == "pixel" and len(values) != 2:
        return "a pixel line needs two values (slow fast)"
    return name, tuple(labels), tuple(values)


def _trace_from_json(data: dict, path: str) -> Trace:
    trace = Trace(path=path, prefix=data.get("prefix", "json"))
    for block in data.get("pixels", []):
        key = _pixel_key(tuple(float(v) for v in block["pixel"]))
        lines = trace.blocks.setdefault(key, [])
        for record in block["records"]:
            trace.count += 1
            if record["name"] == "pixel":
                continue
            labels = tuple((str(k), str(v)) for k, v in record.get("labels", {}).items())
            values = tuple(float(v) for v in record["values"])  # "nan"/"inf" strings parse too
            lines.append(Line(0, record["name"], labels, values))
    return trace


def load_trace(path: str | Path) -> Trace:
    """Read a trace log or a ``--trace-json`` file; raises TraceError if it cannot be read."""
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise TraceError(f"{path}: cannot read ({exc.strerror})") from None
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and "pixels" in data:
            try:
                return _trace_from_json(data, str(path))
            except (KeyError, TypeError, ValueError) as exc:
                raise TraceError(f"{path}: malformed trace JSON ({exc})") from None
    return parse_trace(text, str(path))


@dataclass(frozen=True)
class LineDifference:
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
class TraceComparison:
    """Everything trace-diff reports."""

    a: Trace
    b: Trace
    rtol: float
    atol: float
    compared: int = 0
    differences: list[LineDifference] = field(default_factory=list)
    only_a: Counter = field(default_factory=Counter)  # name -> lines without a partner in B
    only_b: Counter = field(default_factory=Counter)
    pixels_only_a: list = field(default_factory=list)
    pixels_only_b: list = field(default_factory=list)
    pairs: list = field(default_factory=list)  # (pixel in A, pixel in B) compared

    @property
    def first(self) -> LineDifference | None:
        return self.differences[0] if self.differences else None


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
        diff, scale = abs(x - y), max(abs(x), abs(y))
        finite = math.isfinite(x) and math.isfinite(y)  # inf <= atol + rtol * inf: never a tolerance for them
        if finite and diff <= atol + rtol * scale:
            continue
        rel = math.inf if not math.isfinite(scale) or scale == 0 else diff / scale
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


def compare_traces(a: Trace, b: Trace, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL) -> TraceComparison:
    """Align the two traces by pixel, name and occurrence, and list every disagreement in A's order."""
    result = TraceComparison(a=a, b=b, rtol=rtol, atol=atol)
    result.pairs, result.pixels_only_a, result.pixels_only_b = _pair_pixels(a, b)
    for pixel_a, pixel_b in result.pairs:
        pixel = pixel_a if pixel_a is not SHARED else pixel_b
        found = compare_outputs(a.outputs(pixel_a), b.outputs(pixel_b), lambda x, y: _compare_values(x, y, rtol, atol))
        result.compared += found.compared
        for d in found.differences:
            if d.only:
                (result.only_a if d.only == "A" else result.only_b)[d.name[0]] += 1
            else:
                result.differences.append(LineDifference(pixel, *d.name, d.a, d.b, *d.detail))
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


def format_comparison(c: TraceComparison) -> str:
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
    per_name: dict[str, list[LineDifference]] = {}
    for d in c.differences:
        per_name.setdefault(d.name, []).append(d)
    out.append("")
    out.append(f"{len(c.differences)} differing lines; by name, in order of first appearance:")
    for name, diffs in per_name.items():
        finite = [d.rel for d in diffs if math.isfinite(d.rel)]
        worst = f"max rel {max(finite):.3g}" if finite else diffs[0].reason
        out.append(f"  {name:<24} {len(diffs):>7} lines  {worst}")
    return "\n".join(out)
