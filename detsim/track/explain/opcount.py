"""The aten ops of one render, counted per op and Python call site, and their difference between commits.

Call sites are shown from the package folder on (``detsim/render_paths.py:88 in _accumulate``) and matched
between commits without their line numbers (lines shift). Deterministic: no timings.
"""

from __future__ import annotations

import re
from typing import Callable

SITE = re.compile(r"^(?:.*?[/\\])?(detsim[/\\].*?):(\d+) in (.+)$")


def short_site(where: str) -> str:
    """``/tmp/x/detsim/engine.py:12 in render`` -> ``detsim/engine.py:12 in render``."""
    match = SITE.match(where or "")
    return f"{match[1]}:{match[2]} in {match[3]}" if match else (where or "?")


def site_key(where: str) -> str:
    """A call site without its line number: ``detsim/engine.py in render``."""
    match = SITE.match(where or "")
    return f"{match[1]} in {match[3]}" if match else (where or "?")


def count_ops(fn: Callable[[], object]) -> list[dict]:
    """Run ``fn`` once; per (op, call site): ``{"op", "site", "calls", "elements"}``, in first-seen order."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from detsim.track.divergence.events import call_site

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
            key = (row["op"], site_key(row["site"]))
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
