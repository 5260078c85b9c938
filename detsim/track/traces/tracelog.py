"""Per-pixel trace logs (docs/trace.md), whatever printed them, read into pixel blocks.

The prefix is found per file, so a log may be the whole stdout of the program that printed it. Lines
before the first ``pixel`` line are shared by every block of that file (block key :data:`SHARED`)."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

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

    def sequence(self, pixel) -> list[Line]:
        """The lines that describe ``pixel``: the shared lines, then the pixel's own."""
        return self.blocks.get(SHARED, []) + (self.blocks.get(pixel, []) if pixel is not SHARED else [])


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
