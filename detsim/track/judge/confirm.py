"""Confirming a verdict's timing suspects by re-measuring them, before any becomes a regression (docs/tracking.md).

Re-measuring (:func:`in_rounds`): one benchmark at two commits, interleaved, each measurement in a fresh process;
the two commits are made ready by a project's :data:`Sides`: detsim's (:func:`detsim_sides`) unless the command
plugs in another's (:class:`Measurer`: a target's two installed commits, :mod:`detsim.track.target.retiming`).
For detsim, each commit's ``detsim`` package is exported into a temporary folder. One server
(:mod:`.fork_server`), pinned to one CPU so that both commits share its core, imports torch once and forks a fresh
process per commit each round; the two sample in turn, a fraction of a second apart, so a busy spell of the
machine weighs on both alike. A side's figure in a round is the minimum of its samples (a neighbour on a shared
machine only ever adds time), in the lower-is-better direction (a throughput's inverse).

Deciding (:func:`decide`): confirmed or noise, by a test on the log ratios ``log(b / a)`` of the paired rounds, two
consecutive rounds (one started by each side) averaged into one block, which cancels any effect of sampling first
and a drift of the machine across the pair.

Applying (:func:`confirm`): the suspects, the largest rise first, each with an equal share of what is left of the
budget, so that one long benchmark cannot use up the time of all the others; outcomes are kept in :data:`CACHE` so
that a step judged once is not re-measured by every later run. A step whose commits up to the latest all run the
last good commit's ``detsim`` package is noise without re-measuring; where the package first changed later in that
run, that commit is re-measured and named the first bad one. Only confirmed steps count in the recomputed exit code.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import itertools
import json
import math
import os
import shlex
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, ContextManager, Iterator, Mapping

from detsim.track.base.git import CommitError, benchmark_python, export_package, package_tree
from detsim.track.base.fresh import ChildError, Conversation
from detsim.track.judge.family import Family
from detsim.track.judge.finding import Finding, Confirmation
from detsim.track.judge.results_files import ResultsError, load_benchmarks, load_config
from detsim.track.judge.benchmarks import param_labels
from detsim.track.judge.thresholds import ALPHA, EXTEND_BELOW_P
from detsim.track.judge.verdict import Judgement, Report, exit_code, judgement_of
from detsim.track.base.output import write_json

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


Sample = Callable[[str], Mapping[str, float]]  # one round, its sides in the order given ("AB" or "BA"): each
# side's figure (lower is better)
Sides = Callable[[Target, str, str], ContextManager[Sample]]  # both commits made ready to be sampled side by side


@contextlib.contextmanager
def detsim_sides(root: Path, target: Target, commit_a: str, commit_b: str, *, python: str) -> Iterator[Sample]:
    """detsim's package at both commits, exported, sampled by one fork server (module docstring)."""
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

                def sample(first: str) -> dict[str, float]:
                    answer = server.ask({"order": first})
                    if "error" in answer:
                        commit = commits.get(answer.get("side"), commit_a)
                        raise RemeasureError(f"{target.label} did not run at {commit[:8]}: {answer['error']}")
                    return {side: _figure(answer[side], target, commits[side], packages[side]) for side in "AB"}

                yield sample
        except (CommitError, ChildError) as exc:
            raise RemeasureError(str(exc)) from None


def in_rounds(sample: Sample, commit_a: str, commit_b: str, *, rounds: int = ROUNDS,
              more: Callable[[Remeasurement], int] | None = None, deadline: float | None = None) -> Remeasurement:
    """``rounds`` rounds of ``sample``, each side going first every other round, then as many more as
    ``more(remeasurement so far)`` asks for (0 to stop). Past ``deadline`` (``time.monotonic()``) no round
    starts: :class:`RemeasureError` says how far it got."""
    commits = {"A": commit_a, "B": commit_b}
    figures: dict[str, list[float]] = {"A": [], "B": []}
    order = ""
    todo = rounds
    while todo > 0:
        if deadline is not None and time.monotonic() > deadline:
            raise RemeasureError(f"the time given to re-measuring ran out after {len(order)} rounds")
        first = "AB" if len(order) % 2 == 0 else "BA"
        got = sample(first)
        for side in "AB":
            figures[side].append(got[side])
        order += first[0]
        todo -= 1
        if todo == 0 and more:  # a batch done: as many more as ``more`` asks for
            todo = more(_result(commits, figures, order))
    return _result(commits, figures, order)


def remeasure(root: Path, target: Target, commit_a: str, commit_b: str, *, rounds: int = ROUNDS,
              more: Callable[[Remeasurement], int] | None = None, python: str | None = None,
              deadline: float | None = None) -> Remeasurement:
    """:func:`in_rounds` of detsim's ``target`` at ``commit_a`` and ``commit_b`` (:func:`detsim_sides`)."""
    with detsim_sides(root, target, commit_a, commit_b, python=python or benchmark_python(root)) as sample:
        return in_rounds(sample, commit_a, commit_b, rounds=rounds, more=more, deadline=deadline)


def _result(commits: dict, figures: dict, order: str) -> Remeasurement:
    return Remeasurement(commit_a=commits["A"], commit_b=commits["B"], a=tuple(figures["A"]), b=tuple(figures["B"]),
                         order=order)


@dataclass(frozen=True)
class Decision:
    status: Confirmation  # CONFIRMED (slower by more than the threshold, significantly) or NOISE (no such difference)
    evidence: str  # one line: what decided
    ratio: float | None = None  # median per-round B / A (lower is better: above 1 is slower)
    p_value: float | None = None
    rounds: int = 0

    def to_dict(self) -> dict:
        return {"confirmation": self.status.value, "confirmation_evidence": self.evidence,
                "remeasured_ratio": None if self.ratio is None else round(self.ratio, 4),
                "remeasured_p": None if self.p_value is None else float(f"{self.p_value:.3g}"),
                "remeasured_rounds": self.rounds}


def signed_rank_greater(differences: list[float]) -> float:
    """One-sided p-value that the differences are centred above zero (Wilcoxon signed-rank, exact): zeros are
    dropped, ties share their average rank (the null is computed on doubled ranks, still exact)."""
    d = [x for x in differences if x != 0]
    n = len(d)
    if n == 0:
        return 1.0
    order = sorted(abs(x) for x in d)
    first, last = {}, {a: i for i, a in enumerate(order)}  # |x| -> its first and last place in ``order``
    for i, a in enumerate(order):
        first.setdefault(a, i)
    ranks2 = [first[abs(x)] + last[abs(x)] + 2 for x in d]  # twice the average rank, an integer
    w2 = sum(r for r, x in zip(ranks2, d) if x > 0)
    counts = Counter({0: 1})  # the null distribution of twice the positive rank sum
    for r in ranks2:
        counts += Counter({total + r: c for total, c in counts.items()})
    return sum(c for total, c in counts.items() if total >= w2) / 2 ** n


def block_logs(m: Remeasurement) -> list[float]:
    """The mean log ratio of each pair of consecutive rounds (one started by A, one by B)."""
    logs = [math.log(b / a) for a, b in zip(m.a, m.b)]
    return [(x + y) / 2 for x, y in zip(logs[0::2], logs[1::2])]


def _look(m: Remeasurement) -> tuple[float, float]:
    blocks = block_logs(m)
    return math.exp(statistics.median(blocks)), signed_rank_greater(blocks)


def extra_rounds(threshold: float):
    """The ``more`` callback of :func:`remeasure`: :data:`ROUNDS` more, once, for an undecided first look (p
    between ALPHA and :data:`~.thresholds.EXTEND_BELOW_P`, or below ALPHA with a ratio between half the threshold
    and it)."""
    def more(m: Remeasurement) -> int:
        if len(m.a) > ROUNDS:
            return 0
        ratio, p = _look(m)
        undecided = ALPHA <= p < EXTEND_BELOW_P or (p < ALPHA and 1 + threshold / 2 < ratio <= 1 + threshold)
        return ROUNDS if undecided and ratio > 1 else 0
    return more


def decide(m: Remeasurement, threshold: float) -> Decision:
    """Confirmed or noise, from the paired rounds of ``m`` against the benchmark's ``threshold``."""
    ratio, p = _look(m)
    head = (f"re-measured {m.commit_a[:8]} and {m.commit_b[:8]} in {len(m.a)} rounds of fresh processes sampling "
            f"in turn: x{ratio:.3f}, signed-rank p={p:.2g}")
    if p < ALPHA and ratio > 1 + threshold:
        return Decision(Confirmation.CONFIRMED, f"{head}: slower by more than {threshold:.0%}", ratio, p, len(m.a))
    why = (f"not significant (p >= {ALPHA})" if p >= ALPHA
           else f"a difference within the {threshold:.0%} threshold")
    return Decision(Confirmation.NOISE, f"{head}: {why}", ratio, p, len(m.a))


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
    return Target(series.name, combos[labels.index(series.params)], larger_is_better=series.family == Family.THROUGHPUT)


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


def _with(finding: Finding, **detail) -> Finding:
    """``finding`` with ``detail`` added to its evidence (how its step was decided)."""
    return replace(finding, detail={**finding.detail, **detail})


def _run_at_tip(finding: Finding) -> list[str]:
    """The commits of the finding's series from its first bad commit to the latest."""
    commits = [p.commit for p in finding.series.points]
    return commits[commits.index(finding.first_bad):]


def _first_changed(finding: Finding, tree: Callable[[str], str | None]) -> str | None:
    """The first commit of the run at the tip whose ``detsim`` package (``tree``) is not the last good
    commit's, or None when none is (the first bad commit where there is no last good one, or its package is
    unknown)."""
    good = None if finding.last_good is None else tree(finding.last_good)
    if good is None:
        return finding.first_bad
    return next((c for c in _run_at_tip(finding) if tree(c) != good), None)


DECIDE_BUDGET_S = 900  # the budget the command that decides an undecided step gives re-measuring
REMEASURES = "re-measures the undecided steps"  # what the command that decides a step does


def _undecided(machine: str, finding: Finding, why: str, repo: Path | None = None) -> Finding:
    """A step left undecided: why it was not re-measured, and the command that decides it by re-measuring
    (each decided step is kept in :data:`CACHE`, so later runs reuse it), with the run's ``--repo`` as it was
    given, so that it pastes."""
    where = f" --repo {shlex.quote(str(repo))}" if repo is not None else ""
    history = finding.detail.get("confirmation_evidence", "a step in the recorded history")
    command = f"detsim-track regressions{where} --machine {machine} --remeasure-budget {DECIDE_BUDGET_S}"
    return _with(finding, confirmation=Confirmation.UNDECIDED, decide_command=command,
                 confirmation_evidence=f"{history.removesuffix('; not re-measured')}; not re-measured: {why}")


Measure = Callable[[Target, str, str, float, float | None], Decision]  # target, commit_a, commit_b, threshold,
# deadline -> the step decided


def measuring(sides: Sides) -> Measure:
    """The one way a step is decided: ``sides`` makes both commits ready, :func:`in_rounds` samples them in turn
    (:func:`extra_rounds` more where the first look is undecided) and :func:`decide` judges the rounds."""
    def measure(target: Target, commit_a: str, commit_b: str, threshold: float,
                deadline: float | None = None) -> Decision:
        with sides(target, commit_a, commit_b) as sample:
            rounds = in_rounds(sample, commit_a, commit_b, more=extra_rounds(threshold), deadline=deadline)
        return decide(rounds, threshold)
    return measure


def default_measure(root: Path) -> Measure:
    """detsim's re-measuring: its package at both commits, with asv's own environment of the project (its
    ``env_dir``), as asv measured."""
    python = benchmark_python(root, load_config(root).get("env_dir", DEFAULT_ENV_DIR))
    return measuring(functools.partial(detsim_sides, root, python=python))


@dataclass(frozen=True)
class Measurer:
    """Another project's re-measuring, plugged in by the command that judges it in place of detsim's own
    (:func:`default_measure`, asv's machines of this host, and a step whose commits all run the last good
    commit's detsim package taken for noise unmeasured): a target's installed commits re-timed side by side
    (:mod:`detsim.track.target.retiming`). Each of its suspects is re-measured at its own first bad commit."""

    measure: Measure
    machines: set[str] | None = None  # the machines whose steps may be re-measured here (None: any)


Progress = Callable[[str], None]  # receives one line before each re-measurement (the command prints it)


def confirm(judgement: Judgement, root: Path, *, limit: int = MAX_REMEASURED, budget_s: float = BUDGET_S,
            progress: Progress | None = None, repo: Path | None = None,
            measurer: Measurer | None = None) -> Judgement:
    """The judgement with every machine's suspects re-measured (each machine within ``budget_s`` seconds)
    and the exit codes recomputed; ``progress`` gets a line as each re-measurement starts; ``repo``, the run's
    ``--repo`` as given (None: none given), goes into the command that decides a step left undecided;
    ``measurer``: another project's re-measuring (None: detsim's)."""
    return judgement_of({m: _confirm_machine(r, root, limit=limit, budget_s=budget_s, progress=progress, repo=repo,
                                             measurer=measurer)
                         for m, r in judgement.reports.items()}, judgement.failed)


def progress_line(done: int, total: int, machine: str, label: str, commit_a: str, commit_b: str,
                  share_s: float) -> str:
    """The line said as a timing suspect's re-measurement starts (it takes up to ``share_s`` seconds)."""
    return (f"re-measuring timing suspect {done} of {total} on {machine}: {label} at {commit_a[:8]} and "
            f"{commit_b[:8]} (up to {share_s:.0f} s) ...")


def _confirm_machine(report: Report, root: Path, *, limit: int, budget_s: float,
                     progress: Progress | None = None, repo: Path | None = None,
                     measurer: Measurer | None = None) -> Report:
    """One machine's ``report`` with its suspects re-measured within ``budget_s`` seconds and its exit code
    recomputed."""
    originals = [f for f in report.regressions if f.detail.get("confirmation") == Confirmation.SUSPECT]
    if not originals:
        return report
    decided: dict[int, Finding] = {}  # id of the report's finding -> what it became
    suspects: dict[int, Finding] = {}  # ... -> the step to re-measure (its first bad commit where the code changed)
    tree = functools.cache(lambda commit: package_tree(root, commit))  # suspects share their commits
    for finding in originals:
        changed = _first_changed(finding, tree) if measurer is None else finding.first_bad
        if changed is None:  # no commit of its run changed the package
            decided[id(finding)] = _with(finding, confirmation=Confirmation.NOISE, confirmation_evidence=(
                f"{finding.first_bad[:8]} and the {len(_run_at_tip(finding)) - 1} commits after it run the same "
                f"detsim package as {finding.last_good[:8]} (its detsim/ tree): the same code on both sides, so "
                "it can only be the machine"))
        else:
            suspects[id(finding)] = replace(finding, first_bad=changed)
    decided.update(_remeasured(report, root, suspects, limit, budget_s, progress, repo, measurer) if suspects else {})
    findings = tuple(decided.get(id(f), f) for f in report.regressions)
    return replace(report, regressions=findings, events=_events_decided(report, decided),
                   exit=exit_code(findings, report.unmeasured, report.built))


def _events_decided(report: Report, decided: dict[int, Finding]) -> tuple:
    """The history's events with the label each re-measured step now has (the history alone labels it a suspect):
    a step is the event of its series at the finding's first bad commit."""
    label = {(f.series.env, f.series.name, f.series.params, f.first_bad): decided[id(f)].label
             for f in report.regressions if id(f) in decided}
    return tuple(replace(e, label=label.get((e.series.env, e.series.name, e.series.params, e.commit), e.label))
                 for e in report.events)


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


def _remeasured(report: Report, root: Path, suspects: dict[int, Finding], limit: int, budget_s: float,
                progress: Progress | None = None, repo: Path | None = None,
                measurer: Measurer | None = None) -> dict[int, Finding]:
    """Each suspect (by the id of the report's finding) re-measured, kept from an earlier run, or undecided."""
    measure = default_measure(root) if measurer is None else measurer.measure
    cache_path = root / CACHE
    cache = _load_cache(cache_path)
    outcomes = cache.setdefault("outcomes", {})
    here = machines_here() if measurer is None else measurer.machines
    benchmarks = load_benchmarks(root / load_config(root).get("results_dir", "results"))
    ranked = sorted(suspects.items(), key=lambda item: -(item[1].detail.get("rise") or 0))
    deadline = time.monotonic() + budget_s
    to_measure = sum(1 for _, f in ranked[:limit] if _cache_key(report, f) not in outcomes and f.last_good is not None)
    total, started = to_measure, 0
    decided: dict[int, Finding] = {}
    for rank, (key_id, finding) in enumerate(ranked):
        key = _cache_key(report, finding)
        if key in outcomes:
            kept = outcomes[key]
            decided[key_id] = _with(finding, **Decision(
                Confirmation(kept["status"]), f"{kept['evidence']} (re-measured on {kept['at']})", kept.get("ratio"),
                kept.get("p_value"), kept.get("rounds", 0)).to_dict())
            continue
        why = _why_not_measured(report.machine, here, finding, rank, limit, budget_s, deadline)
        if why:
            decided[key_id] = _undecided(report.machine, finding, why, repo)
            continue
        share_s = (deadline - time.monotonic()) / max(to_measure, 1)  # an equal share of what is left
        to_measure -= 1
        started += 1
        if progress is not None:
            progress(progress_line(started, total, report.machine, finding.series.label, finding.last_good,
                                   finding.first_bad, share_s))
        try:
            confirmation = measure(target_of(finding, benchmarks), finding.last_good, finding.first_bad,
                                   finding.series.threshold, time.monotonic() + share_s)
        except RemeasureError as exc:
            share = f"{share_s:.0f} s: its share of the {budget_s:.0f} s re-measuring budget"
            decided[key_id] = _undecided(report.machine, finding, f"{exc} ({share})", repo)
            continue
        decided[key_id] = _with(finding, **confirmation.to_dict())
        outcomes[key] = {**asdict(confirmation), "status": confirmation.status.value, "at": report.generated_at}
    if outcomes:
        cache["report"] = "detsim-track confirmations"
        write_json(cache_path, cache)
    return decided

