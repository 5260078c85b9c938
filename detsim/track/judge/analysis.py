"""The verdict on a project's stored history, by docs/tracking.md's rules: :func:`analyse` reads what each
machine recorded (``results/asv/<machine>/``, ``results/hashes/``, ``results/baselines/``) and returns one
:class:`~.verdict.Judgement`: a :class:`~.verdict.Report` per machine (what regressed at its latest recorded commit,
what was measured there, why the rest was skipped, and the history the status page draws) and, for several
machines, where they agree. A single machine is a fleet of one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from detsim.track.base.golden import EAGER_AXES
from detsim.track.base.hashing import fingerprint_hex
from detsim.track.base.output import json_number, utc_stamp
from detsim.track.base.provenance import MachineClass, class_fingerprint
from detsim.track.judge.detection import class_cut, detect
from detsim.track.judge.events import history_events
from detsim.track.judge.finding import HASH_FAMILIES, Finding
from detsim.track.judge.fingerprints import determinism_states
from detsim.track.judge.history import recorded_frame
from detsim.track.judge.series import Series, series_of
from detsim.track.judge.family import FAMILY_ORDER, Family
from detsim.track.judge.results_files import ResultsError, checkout_head, load_recorded, project_repo, \
    recorded_machines, target_results
from detsim.track.judge.commits import first_commit_cut, resolve_first_commits, subjects
from detsim.track.judge.benchmarks import param_values
from detsim.track.judge.skips import group_skips
from detsim.track.judge.verdict import Judgement, Report, exit_code, judgement_of


def machine_classes(series: list[Series]) -> dict[str, float]:
    """Commit -> the machine-class fingerprint of its golden renders (``track_machine_class``)."""
    return {p.commit: p.value for s in series if s.family == Family.MACHINE_CLASS for p in s.points if p.measured}


def state_at(s: Series, latest: str) -> str | None:
    """How ``s`` stands at ``latest``: "failed", "skipped" or "measured" (None: no point there)."""
    at = [p for p in s.points if p.commit == latest]
    return None if not at else "failed" if at[-1].value is None else "measured" if at[-1].measured else "skipped"


def with_fingerprints(series: list[Series], hashes: Mapping[str, dict]) -> dict[str, dict]:
    """The per-commit hash records, completed from the image fingerprints (the start of each sha256)
    where no record of earlier versions of the suite holds the case."""
    merged = {commit: {**record, "cases": dict(record.get("cases") or {})} for commit, record in hashes.items()}
    for s in (s for s in series if s.family == Family.IMAGE_FINGERPRINT and s.case):
        for p in (p for p in s.points if p.measured):
            merged.setdefault(p.commit, {"cases": {}})["cases"].setdefault(s.case, {"sha256": fingerprint_hex(p.value)})
    return merged


@dataclass(frozen=True)
class AtLatest:
    """What :func:`judge` found at the latest commit."""

    findings: list[Finding]  # sorted by family, benchmark, parameters
    unmeasured: list[str]  # labels of the series that failed there
    skipped: list[Series]  # the series skipped there
    measured: int  # how many series were measured there


@dataclass(frozen=True)
class Rule:
    """How :func:`judge` judges one series (docs/tracking.md's rules, :func:`.detection.detect`), at its latest
    point or, for its events (:mod:`.events`), at each point of its history. Image fingerprints are judged
    commit to commit (within the judged commit's machine class), from the first commit asv would judge them,
    though asv's page never does (null in ``regressions_first_commits``)."""

    conf: Mapping  # asv.conf.json, its first commits resolved
    classes: Mapping[str, float]  # commit -> machine class (:func:`machine_classes`)
    baseline_cases: Mapping  # case -> the stored sha256 of this machine class
    hashes: Mapping[str, dict]  # commit -> its per-commit hash record, completed from the fingerprints

    def start(self, s: Series) -> int | None:
        """Index of the first point of ``s`` to judge (None: ``s`` is not judged)."""
        conf = self.conf
        if s.family == Family.IMAGE_FINGERPRINT:
            conf = {**conf, "regressions_first_commits": {
                k: v for k, v in (conf.get("regressions_first_commits") or {}).items() if v is not None}}
        return first_commit_cut(conf, s.name, s.family, [p.commit for p in s.points])

    def finding(self, s: Series, start: int) -> Finding | None:
        """The finding at the latest point of ``s``, looking from ``start`` on (:meth:`start`)."""
        if s.family == Family.IMAGE_FINGERPRINT:
            start = max(start, class_cut(s.points, self.classes))
        return detect(s, start, self.baseline_cases, self.hashes)


def rule_of(series: list[Series], conf: Mapping, baseline: Mapping, hashes: Mapping[str, dict]) -> Rule:
    """The :class:`Rule` of ``series`` against the stored ``baseline`` of their machine class."""
    return Rule(conf, machine_classes(series), baseline.get("cases", {}), with_fingerprints(series, hashes))


def judged_by_baseline(series: list[Series], latest: str) -> Callable[[Series], bool]:
    """Whether a series is an image fingerprint whose images the stored baseline of this class judged at
    ``latest`` (a case's determinism track, or the compiled path's count, measured there): it is not judged."""
    by_baseline = {s.case for s in series if s.family == Family.IMAGE_CHANGED and state_at(s, latest) == "measured"}
    count_judged = any(s.family == Family.CASES_CHANGED and state_at(s, latest) == "measured" for s in series)
    return lambda s: s.family == Family.IMAGE_FINGERPRINT and ((s.case in by_baseline) if s.case else count_judged)


def judge(series: list[Series], latest: str, conf: Mapping, baseline: Mapping,
          hashes: Mapping[str, dict]) -> AtLatest:
    """The findings at ``latest`` (by each series' :class:`Rule`) and what was measured, failed or skipped there.
    Image fingerprints are judged only where no stored baseline of this class judged the same images."""
    rule = rule_of(series, conf, baseline, hashes)
    skip = judged_by_baseline(series, latest)
    regressions, unmeasured, skipped, measured = [], [], [], 0
    for s in series:
        if skip(s):
            continue  # the stored baseline of this class judged these images
        state = state_at(s, latest)
        if state == "failed":
            unmeasured.append(s.label)
            continue
        if state == "skipped":
            skipped.append(s)
            continue
        measured += state == "measured"
        start = rule.start(s)
        if start is None or state is None:
            continue
        finding = rule.finding(s, start)
        if finding is not None:
            regressions.append(finding)
    regressions.sort(key=lambda f: (FAMILY_ORDER.index(f.series.family), f.series.name, f.series.params))
    return AtLatest(regressions, unmeasured, skipped, measured)


def without_irreproducible(findings: list[Finding], series: list[Series]) -> tuple[list[Finding], str | None]:
    """The findings less the image-bit changes first seen at a commit where images of their kind did not
    reproduce (the compiled path's along the compiled axis, per-case eager ones along the eager axes): their
    hashes differ by chance, not by a change. And one note saying how many were withheld and why."""
    irreproducible: dict[str, set[str]] = {}  # commit -> the axes along which some golden image did not reproduce
    for s in series:
        for p in s.points if s.family == Family.RUNS_DIFFER else ():
            if p.measured and p.value > 0:
                irreproducible.setdefault(p.commit, set()).add(param_values(s.params).get("axis", "?"))
    kept, withheld = [], []
    for f in findings:
        axes = irreproducible.get(f.first_bad, set())
        compiled = not f.series.case  # the compiled path's count and fingerprint; per-case ones are eager
        by_chance = "compiled" in axes if compiled else bool(axes & set(EAGER_AXES))
        (withheld if f.series.family in HASH_FAMILIES and by_chance else kept).append(f)
    if not withheld:
        return kept, None
    commits = sorted({f.first_bad[:8] for f in withheld})
    return kept, (f"{len(withheld)} image-hash change{'s' * (len(withheld) > 1)} not reported (at "
                  f"{', '.join(commits)}): the images there do not reproduce (NONDETERMINISTIC above), so their "
                  "hashes differ by chance; fix the reproducibility first, never store them as a baseline")


def class_baseline(baselines: Mapping[str, dict], machine_class: float | None,
                   holds_for: Mapping | None) -> tuple[str, dict] | None:
    """The stored baseline (path, content) of the recorded machine's class: the one whose class has the
    recorded class fingerprint, or (results of earlier versions) equals the per-commit record's
    ``holds_for``; without either, the only stored baseline, as earlier versions read it."""
    for path, data in baselines.items():
        if machine_class is not None and class_fingerprint(data["holds_for"]) == machine_class:
            return path, data
        if machine_class is None and holds_for and MachineClass.from_record(data["holds_for"]) == \
                MachineClass.from_record(holds_for):
            return path, data
    if machine_class is None and not holds_for and len(baselines) == 1:
        return next(iter(baselines.items()))
    return None


def determinism_note(series: list[Series], latest: str, hashes: Mapping[str, dict], baselines: Mapping[str, dict],
                     chosen: tuple[str, dict] | None, target: bool = False) -> str | None:
    """How the image hashes were judged at ``latest`` where no stored baseline of this machine's class
    applied: commit to commit from the class's first recorded commit, and how the stored classes
    differ (facts, never failures); a ``target``'s images have no stored baseline to store."""
    if chosen is not None or not baselines and not any(s.family == Family.IMAGE_FINGERPRINT for s in series):
        return None
    here = (hashes.get(latest) or {}).get("holds_for")
    others = []
    for path, data in baselines.items():
        stored = data.get("holds_for", {})
        differing = sorted(k for k in (here or {}) if stored.get(k) != here[k])
        machine_class = MachineClass.from_record(stored)
        others.append(f"{path} holds for " + (", ".join(f"{k}={stored.get(k)}" for k in differing) + " where this "
                                               "machine has " + ", ".join(f"{k}={here[k]}" for k in differing)
                                               if differing else machine_class.slug() if machine_class
                                               else "another class"))
    facts = ("; ".join(others) + " (another machine class: a fact, not a failure)") if others else "none is stored"
    fingerprints = [s for s in series if s.family == Family.IMAGE_FINGERPRINT and state_at(s, latest) == "measured"]
    if fingerprints:
        points = fingerprints[0].points
        cut = class_cut(points, machine_classes(series))
        first = next((p.commit for p in points[cut:] if p.measured), latest)
        if target:
            return (f"image hashes: compared commit to commit from the first recorded commit, {first[:8]} (a "
                    "target's images have no stored baseline)")
        return (f"image hashes: no stored baseline of this machine's class, so its images are compared commit to "
                f"commit from its first recorded commit of that class, {first[:8]}; {facts}; store one with "
                "`detsim-track baselines --refresh` on this machine class")
    if not any(s.family == Family.IMAGE_CHANGED and state_at(s, latest) == "skipped" for s in series):
        return None  # no hash skipped at the latest
    return (f"image hashes not compared at {latest[:8]}: no stored baseline of this machine's class ({facts}); "
            "store one with `detsim-track baselines --refresh` on this machine class")


def families_at(series: list[Series], latest: str) -> dict[str, dict]:
    """Family -> how its series stand at ``latest``: ``measured`` and ``skipped`` counts, the ``failed`` labels
    (a series without a point there is not counted)."""
    out: dict[str, dict] = {}
    for s in series:
        state = state_at(s, latest)
        if state:
            counts = out.setdefault(s.family, {"measured": 0, "failed": [], "skipped": 0})
            if state == "failed":
                counts["failed"].append(s.label)
            else:
                counts[state] += 1
    return out


# (a target's project folder, machine) -> commit -> the commit whose results it took, for every commit the
# recording holds on that machine (None: it holds none there)
Twins = Callable[[Path, str], Mapping[str, str | None] | None]


def page_history(series: list[Series], commits: list[str], hashes: Mapping[str, dict]) -> dict:
    """What the status page draws besides the verdict: each golden case's parity series (``[case, benchmark,
    [[commit, value], ...]]``, the longest of its environments; a skip's NaN as ``"nan"``, a failure's null
    as null), its image's state at each commit (``[[commit, state, why], ...]``, :mod:`.fingerprints`) and the
    0/1 hash track of each case."""
    parity: dict[str, list] = {}
    for s in series:
        if s.family == Family.PARITY and s.case and len(s.points) >= len(parity.get(s.case, ("", "", []))[2]):
            parity[s.case] = [s.case, s.name, [[p.commit, p.value if p.value is None else json_number(p.value)]
                                               for p in s.points]]
    states = determinism_states(hashes, series, commits)
    return {"parity": [parity[c] for c in sorted(parity)],
            "determinism": {case: [[st.commit, st.state, st.why] for st in sts] for case, sts in states.items()},
            "determinism_benchmarks": {s.case: s.name for s in series if s.family == Family.IMAGE_CHANGED and s.case}}


def _analyse_machine(root: Path, machine: str | None, twins: Twins | None) -> Report:
    """One machine's verdict (raises :class:`~.results_files.ResultsError` on unusable stored files); a target's
    recording (:func:`~.results_files.target_results`) names its folder, and with ``twins`` how many of its commits
    took a twin's results."""
    recorded = load_recorded(root, machine)
    files = recorded.files
    series = series_of(recorded_frame(recorded))
    order = list(dict.fromkeys(f["commit_hash"] for f in files))
    latest = order[-1]
    repo = project_repo(root, recorded.config)
    required = checkout_head(repo)
    if required and required != latest:
        raise ResultsError(f"HEAD {required[:8]} was not measured: {repo} has no results for it on machine "
                           f"{recorded.machine} (the latest recorded commit is {latest[:8]}); record it first "
                           "(`bash .ci/track`, or `asv run --record-samples HEAD^!`)")
    conf = {**recorded.config,
            "regressions_first_commits": resolve_first_commits(repo, recorded.config, order)}
    machine_class = machine_classes(series).get(latest)
    chosen = class_baseline(recorded.baselines, machine_class, (recorded.hashes.get(latest) or {}).get("holds_for"))
    judged = judge(series, latest, conf, chosen[1] if chosen else {}, recorded.hashes)
    rule, by_baseline = rule_of(series, conf, chosen[1] if chosen else {}, recorded.hashes), \
        judged_by_baseline(series, latest)
    events = history_events([s for s in series if not by_baseline(s)], order, rule.start, rule.finding)
    regressions, withheld = without_irreproducible(judged.findings, series)
    target = target_results(root, recorded.config)
    note = determinism_note(series, latest, recorded.hashes, recorded.baselines, chosen, target=target is not None)
    notes = [*recorded.notes, *filter(None, (withheld, note))]
    measured_at = {p.commit for s in series for p in s.points if p.value is not None}
    built = latest in measured_at
    unbuilt = tuple(c for c in order[:-1] if c not in measured_at)  # wherever they sit in the range
    notes += [f"commit {c[:8]} did not build or its suite did not import: nothing was measured"
              for c in (*unbuilt, *[latest] * (not built))]
    if required is None:
        notes.append(f"{repo.name} is not a git checkout of its own: judged the latest recorded commit, not a HEAD")
    rows = twins(target, recorded.machine) if target and twins else None
    reused = None if rows is None else tuple(c for c in order if rows.get(c))
    if reused is not None:
        notes.append(f"{len(reused)} of the {len(order)} commits judged took the results of a commit with the same "
                     "exported sources or installed files (not built or measured again; `detsim-track record` "
                     "reuses them)")
    code = exit_code(regressions, judged.unmeasured, built)
    return Report(
        generated_at=utc_stamp(), machine=recorded.machine, envs=tuple(sorted({f["env_name"] for f in files})),
        commits=tuple(order), latest=latest, subjects=subjects(repo, order), regressions=tuple(regressions),
        unmeasured=tuple(judged.unmeasured), skipped=len(judged.skipped), built=built, notes=tuple(notes), exit=code,
        unbuilt=unbuilt,
        machine_class=machine_class, measured=judged.measured,
        skips=group_skips(judged.skipped, class_baseline=chosen is not None,
                          failed_cases={s.case for s in series if s.case and s.label in judged.unmeasured}),
        fingerprints={s.case: p.value for s in series if s.family == Family.IMAGE_FINGERPRINT and s.case
                      for p in s.points if p.commit == latest and p.measured},
        families=families_at(series, latest), history=page_history(series, order, recorded.hashes),
        target_results=str(target) if target else None, reused=reused, events=tuple(events),
    )


def analyse(root: Path, machines: list[str] | None = None, twins: Twins | None = None) -> Judgement:
    """Every machine's verdict (``machines``, default every recorded one, or the only one asv could choose)
    and where they agree; a machine that cannot be judged (HEAD not measured there, an unusable file) is
    named, and makes the exit 2. Raises :class:`~.results_files.ResultsError` when none can be judged.
    ``twins``: a target's commits that took another's results (:data:`Twins`, given by the caller as the target
    area sits above this one)."""
    machines = machines or recorded_machines(root) or [None]
    reports, failed = {}, {}
    for machine in machines:
        try:
            report = _analyse_machine(root, machine, twins)
        except ResultsError as exc:
            if len(machines) == 1:
                raise
            failed[machine] = str(exc)
        else:
            reports[report.machine] = report
    if not reports:
        raise ResultsError("; ".join(f"{m}: {why}" for m, why in failed.items()))
    return judgement_of(reports, failed)


