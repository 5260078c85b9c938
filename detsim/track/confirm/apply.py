"""Turn a verdict's timing suspects into confirmed regressions or noise by re-measuring them, the largest rise
first (docs/tracking.md). Each gets an equal share of what is left of the budget, so that one long benchmark
cannot use up the time of all the others; outcomes are kept in :data:`CACHE` so that a step judged once is not
re-measured by every later run. A step whose commits up to the latest all run the last good commit's ``detsim``
package is noise without re-measuring; where the package first changed later in that run, that commit is
re-measured and named the first bad one. Only confirmed steps count in the recomputed exit code.
"""

from __future__ import annotations

import ast
import functools
import itertools
import json
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Callable, Mapping

from detsim.track.base.git import benchmark_python, package_tree
from detsim.track.base.output import write_json
from detsim.track.confirm.decision import Confirmation, decide, extra_rounds
from detsim.track.confirm.remeasure import RemeasureError, Target, remeasure
from detsim.track.history.asvresults import load_benchmarks
from detsim.track.verdict.finding import Finding, Status
from detsim.track.history.jsonc import ResultsError, load_config
from detsim.track.history.series import param_labels
from detsim.track.verdict.analysis import Judgement, Report, exit_code, judgement_of

MAX_REMEASURED = 10  # suspects re-measured per run at most, the largest rise first, within BUDGET_S
BUDGET_S = 480.0  # seconds of re-measuring per run: enough for every timed series of the suite (docs/tracking.md)
CACHE = Path(".asv") / "confirmations.json"  # relative to the project
ASV_MACHINE_FILE = Path("~/.asv-machine.json")  # asv's machines defined on this host
DEFAULT_ENV_DIR = Path(".asv") / "env"  # asv's own default env_dir


def target_of(finding: Finding, benchmarks: Mapping[str, dict]) -> Target:
    """The benchmark and parameter values a finding's series was measured with."""
    series = finding.series
    bench = benchmarks.get(series.name)
    if bench is None:
        raise RemeasureError(f"{series.name}: not in the suite's benchmark list")
    labels = param_labels(bench)
    if series.params not in labels:
        raise RemeasureError(f"{series.label}: parameters not in the suite's benchmark list")
    combos = list(itertools.product(*[[ast.literal_eval(v) for v in values] for values in bench.get("params") or []]))
    return Target(series.name, combos[labels.index(series.params)], larger_is_better=series.family == "throughput")


def machines_here() -> set[str] | None:
    """asv's machine names defined on this host (None when asv has none recorded here)."""
    try:
        data = json.loads(ASV_MACHINE_FILE.expanduser().read_text())
    except (OSError, ValueError):
        return None
    return {k for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else None


def _cache_key(report: Report, finding: Finding) -> str:
    s = finding.series
    return "|".join([report.machine, s.env, s.name, s.params, finding.last_good or "", finding.first_bad])


def _load_cache(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: unreadable ({exc}); move it away to re-measure") from None
    if not isinstance(data, dict) or data.get("report") != "detsim-track confirmations":
        raise ResultsError(f"{path}: not a confirmation cache of detsim-track")
    return data


def _with(finding: Finding, confirmation: Confirmation) -> Finding:
    return replace(finding, detail={**finding.detail, **confirmation.record()})


def _run_at_tip(finding: Finding) -> list[str]:
    """The commits of the finding's series from its first bad commit to the latest."""
    commits = [p.commit for p in finding.series.points]
    return commits[commits.index(finding.first_bad):]


def _first_changed(finding: Finding, tree: Callable[[str], str | None]) -> str | None:
    """The first commit of the run at the tip whose ``detsim`` package (``tree``) is not the last good
    commit's, or None when none is (the first bad commit where the last good one's is unknown)."""
    good = tree(finding.last_good)
    if good is None:
        return finding.first_bad
    return next((c for c in _run_at_tip(finding) if tree(c) != good), None)


def _same_package(finding: Finding) -> Finding:
    """``finding`` decided as noise: no commit of its run changed the package."""
    evidence = (f"{finding.first_bad[:8]} and the {len(_run_at_tip(finding)) - 1} commits after it run the same "
                f"detsim package as {finding.last_good[:8]} (its detsim/ tree): the same code on both sides, so "
                "it can only be the machine")
    return replace(finding, detail={**finding.detail, "confirmation": Status.NOISE, "confirmation_evidence": evidence})


DECIDE_BUDGET_S = 900  # the budget the command that decides an undecided step gives re-measuring


def _undecided(machine: str, finding: Finding, why: str) -> Finding:
    """``finding`` left undecided: why it was not re-measured, and the one command that decides it (each
    decided step is kept in :data:`CACHE`, so later runs reuse it)."""
    history = finding.detail.get("confirmation_evidence", "a step in the recorded history")
    return replace(finding, detail={**finding.detail, "confirmation": Status.UNDECIDED,
                                    "confirmation_evidence": f"{history.removesuffix('; not re-measured')}; "
                                                             f"not re-measured: {why}",
                                    "decide_command": f"detsim-track regressions --machine {machine} "
                                                      f"--remeasure-budget {DECIDE_BUDGET_S}"})


def default_measure(root: Path) -> Callable[[Target, str, str, float, float | None], Confirmation]:
    """Re-measuring with asv's own environment of the project (its ``env_dir``), as asv measured."""
    python = benchmark_python(root, load_config(root).get("env_dir", DEFAULT_ENV_DIR))

    def measure(target: Target, commit_a: str, commit_b: str, threshold: float,
                deadline: float | None = None) -> Confirmation:
        return decide(remeasure(root, target, commit_a, commit_b, more=extra_rounds(threshold), python=python,
                                deadline=deadline), threshold)
    return measure


def confirm(judgement: Judgement, root: Path, *, limit: int = MAX_REMEASURED, budget_s: float = BUDGET_S) -> Judgement:
    """The judgement with every machine's suspects re-measured (each machine within ``budget_s`` seconds)
    and the exit codes recomputed."""
    return judgement_of({m: _confirm_machine(r, root, limit=limit, budget_s=budget_s)
                         for m, r in judgement.reports.items()}, judgement.failed)


def _confirm_machine(report: Report, root: Path, *, limit: int = MAX_REMEASURED,
                    budget_s: float = BUDGET_S) -> Report:
    """One machine's ``report`` with its suspects re-measured within ``budget_s`` seconds and its exit code
    recomputed."""
    originals = [f for f in report.regressions if f.detail.get("confirmation") == Status.SUSPECT]
    if not originals:
        return report
    decided: dict[int, Finding] = {}  # id of the report's finding -> what it became
    suspects: dict[int, Finding] = {}  # ... -> the step to re-measure (its first bad commit where the code changed)
    tree = functools.cache(lambda commit: package_tree(root, commit))  # suspects share their commits
    for finding in originals:
        changed = _first_changed(finding, tree) if finding.last_good is not None else finding.first_bad
        if changed is None:
            decided[id(finding)] = _same_package(finding)
        else:
            suspects[id(finding)] = replace(finding, first_bad=changed)
    decided.update(_remeasured(report, root, suspects, limit, budget_s) if suspects else {})
    findings = tuple(decided.get(id(f), f) for f in report.regressions)
    return replace(report, regressions=findings, exit=exit_code(findings, report.unmeasured, report.built))


def _why_not_measured(machine: str, here: set[str] | None, finding: Finding, rank: int, limit: int,
                      budget_s: float, deadline: float) -> str | None:
    """Why the suspect ranked ``rank`` is not re-measured now, or None when it is."""
    if here is not None and machine not in here:
        return f"recorded on machine {machine}, not defined on this host"
    if finding.last_good is None:
        return "no earlier commit recorded"
    if limit == 0:
        return "re-measuring is off (`--remeasure 0`)"
    if rank >= limit:
        return f"over the limit of {limit} re-measurements per run (`detsim-track regressions --remeasure N`)"
    if time.monotonic() > deadline:
        return (f"the re-measuring budget of {budget_s:.0f} s was spent "
                "(`detsim-track regressions --remeasure-budget S`)")
    return None


def _remeasured(report: Report, root: Path, suspects: dict[int, Finding], limit: int,
                budget_s: float) -> dict[int, Finding]:
    """Each suspect (by the id of the report's finding) re-measured, kept from an earlier run, or undecided."""
    measure = default_measure(root)
    cache_path = root / CACHE
    cache = _load_cache(cache_path)
    outcomes = cache.setdefault("outcomes", {})
    here = machines_here()
    benchmarks = load_benchmarks(root / load_config(root).get("results_dir", "results"))
    ranked = sorted(suspects.items(), key=lambda item: -(item[1].detail.get("rise") or 0))
    deadline = time.monotonic() + budget_s
    to_measure = sum(1 for _, f in ranked[:limit] if _cache_key(report, f) not in outcomes and f.last_good is not None)
    decided: dict[int, Finding] = {}
    for rank, (key_id, finding) in enumerate(ranked):
        key = _cache_key(report, finding)
        if key in outcomes:
            kept = outcomes[key]
            decided[key_id] = _with(finding, Confirmation(
                Status(kept["status"]), f"{kept['evidence']} (re-measured on {kept['at']})", kept.get("ratio"),
                kept.get("p_value"), kept.get("rounds", 0)))
            continue
        why = _why_not_measured(report.machine, here, finding, rank, limit, budget_s, deadline)
        if why:
            decided[key_id] = _undecided(report.machine, finding, why)
            continue
        share_s = (deadline - time.monotonic()) / max(to_measure, 1)  # an equal share of what is left
        to_measure -= 1
        try:
            confirmation = measure(target_of(finding, benchmarks), finding.last_good, finding.first_bad,
                                   finding.series.threshold, time.monotonic() + share_s)
        except RemeasureError as exc:
            share = f"{share_s:.0f} s: its share of the {budget_s:.0f} s re-measuring budget"
            decided[key_id] = _undecided(report.machine, finding, f"{exc} ({share})")
            continue
        decided[key_id] = _with(finding, confirmation)
        outcomes[key] = {**asdict(confirmation), "status": confirmation.status.value, "at": report.generated_at}
    if outcomes:
        cache["report"] = "detsim-track confirmations"
        write_json(cache_path, cache)
    return decided

