"""Every stored baseline of a machine class, the one command that rewrites them together, and where two of them
hold the same fact (docs/bench-gate.md, "Refreshing the baselines").

Two files say what a machine class's images should be: the golden image hashes the tracking run compares
against (``results/baselines/golden_hashes/<class>.json``, :mod:`detsim.track.base.golden`) and the bench gate's
pytest-benchmark baseline (:data:`GATE_BASELINE`, read by :mod:`.bench`). They hold mostly different facts (the
gate: times, instruction counts, float32 and workload images; the golden hashes: every golden case on two paths),
but where a benchmark renders a golden case as the golden hashes do (on the CPU, eager, float64, one torch
thread) both hold its image hash, and the two must be the same: a difference means one file was not refreshed
after an accepted change. :func:`expected_hashes` lists what each file expects of one case's render, for a test
that renders it here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from detsim.track.base.golden import RENDER_DEVICE, RENDER_DTYPE, RENDER_THREADS, BaselineError, for_class, stored
from detsim.track.base.provenance import MachineClass
from detsim.track.judge.bench import GateInputError, load_results

GATE_BASELINE = Path("results") / "baselines" / "pytest-baseline.json"  # relative to the project
REFRESH = "make baselines"  # rewrites every stored baseline of this machine class (Makefile)
GOLDEN_RENDER = {"threads": RENDER_THREADS, "dtype": RENDER_DTYPE, "device": RENDER_DEVICE}  # of every golden hash
SIMULATE = "simulate"  # the gate's benchmarks that render a golden case with detsim.simulate's defaults (eager)


class StoreError(ValueError):
    """A stored baseline that cannot be read (the message names the file)."""


@dataclass(frozen=True)
class Expected:
    """One stored file's image hash of a golden case's eager CPU render, and the class it holds for."""

    store: Path  # the file, relative to the project
    entry: str  # where in it: a benchmark's name, or "cases"
    case: str
    machine: MachineClass
    sha256: str

    def describe(self) -> str:
        return f"{self.store} ({self.entry})"


def gate_expectations(root: Path) -> list[Expected]:
    """The image hashes the gate's baseline holds for golden cases' eager CPU renders (every dtype)."""
    try:
        baseline = load_results(root / GATE_BASELINE)
    except GateInputError as exc:
        raise StoreError(str(exc)) from None
    found = []
    for bench in baseline.values():
        machine, extra = bench.machine_class, bench.extra
        if extra.get("role") == SIMULATE and extra.get("case") and extra.get("sha256") and machine is not None \
                and machine.device == "cpu":
            found.append(Expected(GATE_BASELINE, bench.name, extra["case"], machine, extra["sha256"]))
    return found


def golden_expectation(root: Path, machine: MachineClass, case: str) -> Expected | None:
    """The golden hash of ``case`` stored for ``machine``'s class (None: no file of that class, or no hash of the
    case, or a class the golden hashes are not rendered in)."""
    if any(getattr(machine, key) != value for key, value in GOLDEN_RENDER.items()):
        return None
    try:
        found = for_class(root, machine)
    except BaselineError as exc:
        raise StoreError(str(exc)) from None
    if found is None or case not in found[1]["cases"]:
        return None
    path, data = found
    return Expected(path, "cases", case, machine, data["cases"][case])


def disagreements(root: Path) -> tuple[int, list[str]]:
    """How many facts the gate's baseline and the golden hashes both hold, and a line for each they hold
    differently (empty: they agree)."""
    shared, lines = 0, []
    for gate in gate_expectations(root):
        golden = golden_expectation(root, gate.machine, gate.case)
        if golden is None:
            continue
        shared += 1
        if golden.sha256 != gate.sha256:
            lines.append(f"{gate.case}: {gate.describe()} holds {gate.sha256[:16]}, {golden.describe()} holds "
                         f"{golden.sha256[:16]} for the same render ({gate.machine.describe()})")
    return shared, lines


def expected_hashes(root: Path, case: str, machines: list[MachineClass]) -> list[Expected]:
    """What every stored file expects of ``case``'s eager CPU render in each of ``machines``' classes (a
    class no file holds: nothing)."""
    gate = [e for e in gate_expectations(root) if e.case == case and e.machine in machines]
    golden = [golden_expectation(root, machine, case) for machine in machines]
    return gate + [g for g in golden if g is not None]


def classes_held(root: Path) -> list[str]:
    """The machine classes some stored file holds image hashes for, described, sorted."""
    try:
        golden = [MachineClass.from_record(data["holds_for"]) for data in stored(root).values()]
    except BaselineError as exc:
        raise StoreError(str(exc)) from None
    held = {m for m in [*golden, *(e.machine for e in gate_expectations(root))] if m is not None}
    return sorted(m.describe() for m in held)


def stale_message(lines: list[str]) -> str:
    """What a test or a command says when stored baselines no longer hold: the facts, then the command."""
    return ("stored baselines out of date (recorded before an accepted change, or on another machine class):\n  "
            + "\n  ".join(lines)
            + f"\nafter an accepted change, run `{REFRESH}` on this machine class and commit results/baselines/ "
              "(docs/bench-gate.md, \"Refreshing the baselines\")")
