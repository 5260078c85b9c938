"""Re-measure one benchmark at two commits, interleaved, each measurement in a fresh process.

Each commit's ``detsim`` package is exported into a temporary folder. One server (:mod:`.fork_server`), pinned to
one CPU so that both commits share its core, imports torch once and forks a fresh process per commit each round;
the two sample in turn, a fraction of a second apart, so a busy spell of the machine weighs on both alike
(docs/tracking.md). A side's figure in a round is the minimum of its samples (a neighbour on a shared machine
only ever adds time), in the lower-is-better direction (a throughput's inverse).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from detsim.track.base.git import CommitError, benchmark_python, export_package
from detsim.track.base.fresh import ChildError, Conversation

FORK_SERVER = Path(__file__).with_name("fork_server.py")
ROUNDS = 16  # rounds, before any extension: 8 blocks of two, the fewest that let p < 0.01 with room
SAMPLES = 3  # samples per side and round, taken in turn with the other side's, after a warm-up call (one for calls
# over fork_server.LONG_CALL_S)
MEASUREMENT_TIMEOUT_S = 600
PRELOADED = ("torch",)  # what the fork server imports once for every forked measurement


class RemeasureError(RuntimeError):
    """A re-measurement that could not be made (one line: which commit, what failed)."""


@dataclass(frozen=True)
class Target:
    benchmark: str  # asv's name, e.g. "bench_engine.PathThroughput.track_ns_per_pixel_step"
    params: tuple  # the parameter values, as the benchmark's setup receives them
    larger_is_better: bool = False  # a throughput: its inverse is compared

    @property
    def label(self) -> str:
        return f"{self.benchmark}{self.params if self.params else ''}"


@dataclass(frozen=True)
class Remeasurement:
    commit_a: str
    commit_b: str
    a: tuple[float, ...]  # per-round figures at commit_a (lower is better)
    b: tuple[float, ...]  # ... at commit_b, same rounds
    order: str  # which side sampled first in each round, e.g. "ABBAAB..."


def _figure(answer: dict, target: Target, commit: str, package: Path) -> float:
    if not Path(answer["detsim_file"]).resolve().is_relative_to(package.resolve()):
        raise RemeasureError(f"{commit[:8]}: imported detsim from {answer['detsim_file']}, not the exported commit")
    values = [float(v) for v in answer["samples"]]
    if not values or min(values) <= 0:
        raise RemeasureError(f"{target.label} gave no positive samples at {commit[:8]}: {values}")
    return 1.0 / max(values) if target.larger_is_better else min(values)


def remeasure(root: Path, target: Target, commit_a: str, commit_b: str, *, rounds: int = ROUNDS,
              more: Callable[[Remeasurement], int] | None = None, python: str | None = None,
              deadline: float | None = None) -> Remeasurement:
    """``rounds`` rounds of ``target`` at ``commit_a`` and ``commit_b``, then as many more as
    ``more(remeasurement so far)`` asks for (0 to stop). Past ``deadline`` (``time.monotonic()``) no
    round starts: :class:`RemeasureError` says how far it got."""
    python = python or benchmark_python(root)
    figures: dict[str, list[float]] = {"A": [], "B": []}
    order = ""
    commits = {"A": commit_a, "B": commit_b}
    with tempfile.TemporaryDirectory(prefix="detsim-confirm-") as tmp:
        work = Path(tmp)
        try:
            packages = {side: export_package(root, commit, work / side) for side, commit in commits.items()}
            spec = work / "spec.json"
            spec.write_text(json.dumps({"benchmark": target.benchmark, "params": list(target.params),
                                        "samples": SAMPLES, "root": str(root.resolve()), "preload": list(PRELOADED),
                                        "packages": {side: str(path) for side, path in packages.items()}}))
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            with Conversation([python, "-P", str(FORK_SERVER), str(spec)], cwd=work, env=env,
                              cpu=max(os.sched_getaffinity(0)), what="the measuring server",
                              timeout=MEASUREMENT_TIMEOUT_S) as server:  # one JSON answer per round's order
                todo = rounds
                while todo > 0:
                    if deadline is not None and time.monotonic() > deadline:
                        raise RemeasureError(f"the time given to re-measuring ran out after {len(order)} rounds")
                    first = "AB" if len(order) % 2 == 0 else "BA"
                    answer = server.ask({"order": first})
                    if "error" in answer:
                        commit = commits.get(answer.get("side"), commit_a)
                        raise RemeasureError(f"{target.label} did not run at {commit[:8]}: {answer['error']}")
                    for side in "AB":
                        figures[side].append(_figure(answer[side], target, commits[side], packages[side]))
                    order += first[0]
                    todo -= 1
                    if todo == 0 and more:  # a batch done: as many more as ``more`` asks for
                        todo = more(_result(commits, figures, order))
        except (CommitError, ChildError) as exc:
            raise RemeasureError(str(exc)) from None
    return _result(commits, figures, order)


def _result(commits: dict, figures: dict, order: str) -> Remeasurement:
    return Remeasurement(commit_a=commits["A"], commit_b=commits["B"], a=tuple(figures["A"]), b=tuple(figures["B"]),
                         order=order)
