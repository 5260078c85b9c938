"""The one comparer of two runs' outputs: is each named output the same in both, and which one differs first?

Input: two runs, each as its named outputs in order (name -> value): a run's results
(:meth:`.run_log.RunLog.outputs`), a trace's lines per pixel (:meth:`.traces.Trace.outputs`), an evidence
bundle's tests (:meth:`detsim.track.evidence.outcomes.Outcomes.outputs`), warnings, runs and stable artifacts
(:mod:`detsim.track.evidence.previous`); each owner
keeps the provenance beside them. Output: an :class:`OutputDiff`, how many names both hold and every
difference (held by both and different, or by one only), the first one first. What an owner concludes from
it (a result that differs, a trace line beyond tolerance, a new failure) is its own.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Generic, Mapping, TypeVar

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True)
class Difference(Generic[K, V]):
    """One output that differs: held by both runs (``detail``: what the test found) or by one only."""

    name: K
    a: V | None  # its value in run A (None: only run B holds it)
    b: V | None
    detail: Any = None
    only: str | None = None  # "A" or "B": the one run that holds it


@dataclass(frozen=True)
class OutputDiff(Generic[K, V]):
    """Two runs compared output by output: in run A's order, then what run B alone holds."""

    compared: int  # names both runs hold
    differences: tuple[Difference[K, V], ...] = ()


def compare_outputs(a: Mapping[K, V], b: Mapping[K, V],
                    differ: Callable[[V, V], Any] = operator.ne) -> OutputDiff[K, V]:
    """Pair ``a`` and ``b`` by name; an output both hold differs where ``differ(value_a, value_b)`` is truthy
    (what it returns is the difference's ``detail``)."""
    differences, compared = [], 0
    for name, x in a.items():
        if name not in b:
            differences.append(Difference(name, x, None, only="A"))
            continue
        compared += 1
        detail = differ(x, b[name])
        if detail:
            differences.append(Difference(name, x, b[name], detail))
    differences += [Difference(name, None, y, only="B") for name, y in b.items() if name not in a]
    return OutputDiff(compared, tuple(differences))
