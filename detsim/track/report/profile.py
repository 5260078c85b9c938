"""What grew between two commits: self ``Ir`` per function (callgrind), and aten ops per Python call site.

C++ template names are shortened to the kernel they run (:func:`short_name`; the full name stays in the JSON).
Op call sites are shown from the package folder on (``detsim/rendering/paths.py:88 in _accumulate``) and matched
between commits without their line numbers (lines shift). Op counts are deterministic: no timings.
"""

from __future__ import annotations

import re
import shutil
from html import escape
from pathlib import Path
from typing import Callable

from detsim.track.base.fresh import ChildError, run

_ROW = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$")
_KERNEL = re.compile(r"(\w+_kernel)\b")
GENERIC = ("cpu_serial_kernel", "cpu_kernel", "cpu_index_kernel")  # loops that run another op's lambda
_LIB = re.compile(r"\s+\[[^\]]*\]$")
SITE = re.compile(r"^(?:.*?[/\\])?(detsim[/\\].*?):(\d+) in (.+)$")


class ProfileError(RuntimeError):
    """callgrind_annotate is missing or failed."""


def parse_annotate(text: str) -> dict[str, int]:
    """``{"file:function [lib]": self Ir}`` from ``callgrind_annotate --inclusive=no`` output."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        match = _ROW.match(line)
        if not match or match[2].strip() == "PROGRAM TOTALS":
            continue
        counts[match[2].strip()] = counts.get(match[2].strip(), 0) + int(match[1].replace(",", ""))
    return counts


def function_counts(callgrind_file: Path) -> dict[str, int]:
    """Self Ir per function of a callgrind output file (every function, no threshold)."""
    tool = shutil.which("callgrind_annotate")
    if tool is None:
        raise ProfileError("callgrind_annotate is not installed (Debian package `valgrind`)")
    try:
        done = run([tool, "--inclusive=no", "--threshold=100", str(callgrind_file)]).check("callgrind_annotate")
    except ChildError as exc:
        raise ProfileError(f"{exc} ({callgrind_file})") from None
    return parse_annotate(done.stdout)


def short_name(entry: str, width: int = 90) -> str:
    """A readable name: without the source file and library, a template callback longer than ``width``
    reduced to its kernel."""
    name = _LIB.sub("", entry)
    head, sep, tail = name.partition(":")
    if sep and not head.endswith(":") and not tail.startswith(":") and ("/" in head or head == "???" or "." in head):
        name = tail
    if len(name) > width:
        kernels = _KERNEL.findall(name)
        specific = [k for k in kernels if not k.startswith(GENERIC)] or kernels  # the op's own kernel first
        prefix = "at::native::" if "at::native" in name else ""
        name = f"{prefix}{specific[0]} (…)" if kernels else name[:width - 1] + "…"
    return name


def diff_profiles(old: dict[str, int], new: dict[str, int]) -> dict:
    """``{"old_total", "new_total", "change", "rows": [{"function", "name", "old", "new", "delta", "share"}]}``:
    rows sorted by their share of the total change (largest first), then the rest by size."""
    old_total, new_total = sum(old.values()), sum(new.values())
    change = new_total - old_total
    rows = []
    for function in sorted(set(old) | set(new)):
        delta = new.get(function, 0) - old.get(function, 0)
        if delta:
            rows.append({"function": function, "name": short_name(function), "old": old.get(function, 0),
                         "new": new.get(function, 0), "delta": delta,
                         "share": delta / change if change else 0.0})
    sign = 1 if change >= 0 else -1
    rows.sort(key=lambda r: (-sign * r["delta"], r["function"]))
    return {"old_total": old_total, "new_total": new_total, "change": change, "rows": rows}


def mega(n: int) -> str:
    return f"{n / 1e6:+.2f} M" if abs(n) >= 10_000 else f"{n:+,}"


def format_profile_diff(diff: dict, top: int = 10) -> list[str]:
    """The total change, then one line per function: ``+1.23 M Ir (41% of the rise) NAME``."""
    change, old = diff["change"], diff["old_total"]
    word = "rise" if change >= 0 else "fall"
    ratio = f" ({change / old:+.1%})" if old else ""
    lines = [f"instructions {old:,} -> {diff['new_total']:,}: {mega(change)} Ir{ratio}"]
    for row in diff["rows"][:top]:
        lines.append(f"  {mega(row['delta'])} Ir ({row['share']:.0%} of the {word}) {row['name']}")
    return lines


def svg_bars(rows: list[dict], title: str, top: int = 10) -> str:
    """A horizontal bar chart of the top rows' Ir change (red: grew, blue: shrank), as SVG text."""
    rows = rows[:top]
    width, bar_x, bar_w, row_h = 980, 560, 380, 22
    height = 40 + row_h * max(len(rows), 1)
    biggest = max((abs(r["delta"]) for r in rows), default=1) or 1
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" '
             f'font-size="12">', f'<text x="8" y="20" font-size="14">{escape(title)}</text>']
    for i, row in enumerate(rows):
        y = 34 + i * row_h
        w = max(1, round(bar_w * abs(row["delta"]) / biggest))
        colour = "#c0392b" if row["delta"] > 0 else "#2e6da4"
        parts.append(f'<text x="8" y="{y + 14}">{escape(row["name"][:70])}</text>')
        parts.append(f'<rect x="{bar_x}" y="{y + 2}" width="{w}" height="{row_h - 6}" fill="{colour}"/>')
        parts.append(f'<text x="{bar_x + w + 4}" y="{y + 14}">{escape(mega(row["delta"]))} Ir</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def short_site(where: str, line: bool = True) -> str:
    """``/tmp/x/detsim/rendering/engine.py:12 in render`` -> ``detsim/rendering/engine.py:12 in render``; without
    its ``line`` number (``detsim/rendering/engine.py in render``), what matches a call site across commits."""
    match = SITE.match(where or "")
    if not match:
        return where or "?"
    return f"{match[1]}:{match[2]} in {match[3]}" if line else f"{match[1]} in {match[3]}"


def count_ops(fn: Callable[[], object]) -> list[dict]:
    """Run ``fn`` once; per (op, call site): ``{"op", "site", "calls", "elements"}``, in first-seen order."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from detsim.track.compare.run_log import call_site

    rows: dict[tuple[str, str], dict] = {}

    class _Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            result = func(*args, **(kwargs or {}))
            site = short_site(call_site())
            row = rows.setdefault((str(func), site), {"op": str(func), "site": site, "calls": 0, "elements": 0})
            row["calls"] += 1
            outs = result if isinstance(result, (list, tuple)) else [result]
            row["elements"] += sum(t.numel() for t in outs if isinstance(t, torch.Tensor))
            return result

    with torch.no_grad(), _Count():
        fn()
    return list(rows.values())


def diff_ops(old: list[dict], new: list[dict]) -> list[dict]:
    """Rows whose calls or elements changed: ``{"op", "site", "calls_old", "calls_new", "elements_old",
    "elements_new", "delta"}`` (delta: elements), largest rise first, then largest fall."""
    def grouped(rows):
        out: dict[tuple[str, str], dict] = {}
        for row in rows:
            key = (row["op"], short_site(row["site"], line=False))
            slot = out.setdefault(key, {"site": row["site"], "calls": 0, "elements": 0})
            slot["calls"] += row["calls"]
            slot["elements"] += row["elements"]
        return out

    a, b = grouped(old), grouped(new)
    changes = []
    for key in list(dict.fromkeys([*a, *b])):
        x = a.get(key, {"site": None, "calls": 0, "elements": 0})
        y = b.get(key, {"site": None, "calls": 0, "elements": 0})
        if (x["calls"], x["elements"]) == (y["calls"], y["elements"]):
            continue
        changes.append({"op": key[0], "site": y["site"] or x["site"], "calls_old": x["calls"], "calls_new": y["calls"],
                        "elements_old": x["elements"], "elements_new": y["elements"],
                        "delta": y["elements"] - x["elements"]})
    changes.sort(key=lambda r: (-r["delta"], r["op"], r["site"]))
    return changes


def format_op_changes(changes: list[dict], top: int = 8) -> list[str]:
    """One line per changed op: ``+4096 elements (+1 call) aten.exp.default at detsim/x.py:12 in f``."""
    lines = []
    for row in changes[:top]:
        calls = row["calls_new"] - row["calls_old"]
        lines.append(f"{row['delta']:+,} elements ({calls:+d} call{'s' if abs(calls) != 1 else ''}) "
                     f"{row['op']} at {row['site']}")
    return lines
