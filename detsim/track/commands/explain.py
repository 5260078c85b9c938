"""``detsim-track explain``: why a flagged regression happened, across the commits that flagged it
(forms, measures and exit codes: docs/explain.md)."""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

from detsim.track.base.git import CommitError
from detsim.track.base.exitcodes import ExitCode, worst
from detsim.track.commands import refuse
from detsim.track.base.golden import GoldenError, find_case, golden_dir
from detsim.track.commands import count
from detsim.track.base.output import REPORTS, OutputError, add_report_options, atomic_directory, \
    check_new_folder, report_folder
from detsim.track.base.device_costs import INSTRUCTIONS_PER_STEP, KERNEL_UNITS, LAUNCH_MODES, LAUNCH_UNITS, \
    LAUNCH_WORKLOAD
from detsim.track.base.golden import AXES
from detsim.track.measure.cost import CountError, not_measured_reason
from detsim.track.report.explain import KINDS, ExplainKind, ExplainJob, departure_answer, explain_job, one_per_cause, \
    with_others, write_bundle
from detsim.track.report.profile import ProfileError
from detsim.track.report.sides import SideError
from detsim.track.compare.runs import TracingError
from detsim.track.judge.family import Family
from detsim.track.judge.finding import flags
from detsim.track.judge.verdict import VerdictError, latest_file, read_verdict

HELP = "explain a flagged regression across commits: the functions that grew, the first changed quantity or op"
AREA = "explain"
COUNTED = re.compile(r"^(P1|P2|P4096)@\d+$")
REDUCED = {"P1": "P1@64", "P2": "P2@32", "P4096": "P1@64"}  # a timed workload's counted stand-in
FUSED_KERNEL = "fused-kernel"  # what a kernel job measures: the fused kernel compiled for sm_90


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("commits", nargs="*", metavar="COMMIT",
                        help="LAST_GOOD FIRST_BAD (none: every finding of the latest verdict)")
    parser.add_argument("--kind", choices=KINDS, default=None,
                        help="what regressed (default: cost, or parity with --case)")
    parser.add_argument("--workload", default=None, help="the counted workload of a cost explanation (default P1@64)")
    parser.add_argument("--case", default=None, help="the golden case of a parity, hash or nondeterministic explanation")
    parser.add_argument("--mode", choices=LAUNCH_MODES, default=None,
                        help=f"with --kind launches: the path whose launches per {LAUNCH_WORKLOAD} render to count "
                             "(default triton)")
    parser.add_argument("--dtype", choices=("float32", "float64"), default=None,
                        help="with --kind kernel: the fused kernel's variant, judged on its instructions per "
                             "pixel-step (default float32)")
    parser.add_argument("--axis", choices=tuple(AXES), default=None,
                        help="with --kind nondeterministic: what the two runs vary (default process)")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the project checkout (default: here)")
    parser.add_argument("--machine", default=None, help="the asv machine whose verdict to explain")
    parser.add_argument("--verdict", type=Path, default=None, metavar="FILE",
                        help=f"the verdict whose findings to explain (default: {REPORTS}/latest/verdict.json of "
                             "the project, the last one `detsim-track regressions` wrote)")
    parser.add_argument("--target-results", type=Path, default=None, metavar="DIR",
                        help="a target's recorded results (what `detsim-track record` wrote; default: the verdict's "
                             "target_results): a parity finding is explained by where its stored image departs")
    parser.add_argument("--no-bisect", action="store_true", help="explain LAST_GOOD..FIRST_BAD as given")
    parser.add_argument("--top", type=count, default=10, help="entries of the profile and op diffs (default 10)")
    add_report_options(parser, AREA)


def jobs_from_arguments(args: argparse.Namespace, golden: Path) -> list[ExplainJob]:
    kind = ExplainKind(args.kind) if args.kind else ExplainKind.PARITY if args.case else ExplainKind.COST
    if args.axis and kind is not ExplainKind.NONDETERMINISTIC:
        raise ValueError("--axis goes with --kind nondeterministic")
    if kind is ExplainKind.NONDETERMINISTIC:
        if len(args.commits) != 1 or not args.case:
            raise ValueError("--kind nondeterministic takes one COMMIT and --case (a golden case id)")
        return [ExplainJob(kind, args.commits[0], args.commits[0], find_case(args.case, golden).id,
                    axis=args.axis or "process")]
    if args.mode and kind is not ExplainKind.LAUNCHES:
        raise ValueError("--mode goes with --kind launches")
    if args.dtype and kind is not ExplainKind.KERNEL:
        raise ValueError("--dtype goes with --kind kernel")
    if len(args.commits) != 2:
        raise ValueError(f"give LAST_GOOD FIRST_BAD (two commits) or none, got {len(args.commits)}")
    if kind is ExplainKind.LAUNCHES:
        if args.case or args.workload:
            raise ValueError(f"--kind launches counts {LAUNCH_WORKLOAD}, the suite's workload: give --mode only")
        return [ExplainJob(kind, args.commits[0], args.commits[1], LAUNCH_WORKLOAD, mode=args.mode or "triton")]
    if kind is ExplainKind.KERNEL:
        if args.case or args.workload:
            raise ValueError("--kind kernel compiles the fused kernel: give --dtype only")
        return [ExplainJob(kind, args.commits[0], args.commits[1], FUSED_KERNEL, dtype=args.dtype or "float32",
                    measure=INSTRUCTIONS_PER_STEP)]
    if kind is ExplainKind.COST:
        if args.case and args.workload:
            raise ValueError("--workload and --case name the same thing for a cost explanation: give one")
        workload = args.workload or args.case or "P1@64"
    else:
        if not args.case:
            raise ValueError(f"--kind {kind} needs --case (a golden case id)")
        workload = args.case
    if not COUNTED.match(workload):
        workload = find_case(workload, golden).id
    return [ExplainJob(kind, args.commits[0], args.commits[1], workload)]


def machine_verdict(path: Path, machine: str | None) -> dict:
    """The stored verdict of ``machine`` (default: the only machine judged) in the verdict file ``path``."""
    judged = {m: report.as_json() for m, report in read_verdict(path).reports.items()}
    if machine is None and len(judged) > 1:
        raise ValueError(f"{path} judges several machines ({', '.join(judged)}): give --machine")
    if machine is not None and machine not in judged:
        raise ValueError(f"{path}: no verdict on machine {machine} (judged: {', '.join(judged)})")
    return judged[machine or next(iter(judged))]


def jobs_from_verdict(report: dict, golden: Path, target: bool = False) -> tuple[list[ExplainJob], list[str]]:
    """One job per cause among a stored verdict's findings that have a last good commit (and images that do
    not reproduce); notes for the others (a timing step counts once re-measured and confirmed). A target's
    verdict: one job per parity finding (its stored departure), a note for each other finding."""
    jobs, notes = [], []
    for rec in report["regressions"]:
        origin = f"{rec['benchmark']}{rec['params']}"
        if not flags(rec):
            notes.append(f"{origin}: a timing step not confirmed ({rec.get('confirmation')}), nothing to explain")
        elif target:
            if Family(rec["family"]) is Family.PARITY and rec.get("case"):
                jobs.append(ExplainJob(ExplainKind.PARITY, rec["last_good"] or rec["first_bad"], rec["first_bad"],
                                rec["case"], origin))
            else:
                notes.append(f"{origin}: a target's {rec['family']} finding; explain measures detsim's own code only "
                             "(`detsim-track bisect --target` names its first bad commit)")
        elif Family(rec["family"]) is Family.RUNS_DIFFER:
            jobs.append(ExplainJob(ExplainKind.NONDETERMINISTIC, rec["last_good"] or rec["first_bad"], rec["first_bad"],
                            rec["case"], origin, axis=rec["axis"]))
        elif not rec.get("last_good"):
            notes.append(f"{origin}: never good in the recorded history, nothing to compare with")
        elif (job := _job_for(rec, origin)) is None:
            notes.append(f"{origin}: a {rec['family']} finding has no explanation here")
        else:
            jobs.append(job)
    if target:
        return jobs, notes
    jobs, grouped = one_per_cause(jobs, golden)
    return jobs, notes + grouped


def _job_for(rec: dict, origin: str) -> ExplainJob | None:
    family, good, bad = Family(rec["family"]), rec["last_good"], rec["first_bad"]
    if rec.get("unit") in LAUNCH_UNITS:  # a path's device operations: counted again at each commit
        mode = re.search(r"mode='([^']+)'", rec.get("params") or "")
        return ExplainJob(ExplainKind.LAUNCHES, good, bad, LAUNCH_WORKLOAD, origin, mode=mode[1] if mode else "eager",
                   measure=rec["unit"])
    if rec.get("unit") in KERNEL_UNITS:  # the fused kernel's code: compiled again at each commit
        dtype = re.search(r"dtype='([^']+)'", rec.get("params") or "")
        return ExplainJob(ExplainKind.KERNEL, good, bad, FUSED_KERNEL, origin, dtype=dtype[1] if dtype else "float32",
                   measure=rec["unit"])
    if family is Family.PARITY and rec.get("case"):
        return ExplainJob(ExplainKind.PARITY, good, bad, rec["case"], origin)
    if family is Family.IMAGE_CHANGED and rec.get("case"):
        return ExplainJob(ExplainKind.HASH, good, bad, rec["case"], origin)
    if family in (Family.COUNTED_COST, Family.TIMING, Family.THROUGHPUT, Family.PEAK_MEMORY):
        match = re.search(r"workload='([^']+)'", rec.get("params") or "")
        flagged = match[1] if match else None
        workload = flagged or "P1@64"
        golden = bool(re.match(r"^[a-z]\d\d_", workload))
        if not golden and (family is not Family.COUNTED_COST or not COUNTED.match(workload)):
            workload = REDUCED.get(workload.split("@")[0], "P1@64")  # a golden case is counted as it is
        countable = flagged and (golden or COUNTED.match(flagged))
        stand_in = family is not Family.COUNTED_COST
        return ExplainJob(ExplainKind.COST, good, bad, workload, origin, stand_in=stand_in,
                   own=flagged if stand_in and countable and flagged != workload else None)
    return None


def run(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    folder = report_folder(args, AREA, base=root)
    try:
        check_new_folder(folder, "--out")
        golden = golden_dir(root)
        report = None if args.commits else machine_verdict(args.verdict or latest_file(root / REPORTS), args.machine)
        target = args.target_results or ((report or {}).get("target_results") and root / report["target_results"])
        jobs, notes = ((jobs_from_arguments(args, golden), []) if args.commits else
                       jobs_from_verdict(report, golden, target=bool(target)))
        if target and any(job.kind is not ExplainKind.PARITY for job in jobs):
            raise ValueError("--target-results goes with parity explanations (--case)")
    except (OutputError, ValueError, GoldenError, VerdictError) as exc:
        return refuse(f"explain: {exc}")
    for note in notes:
        print(f"explain: {note}", file=sys.stderr)
    if not jobs:
        print("explain: nothing to explain" + (" (see the notes above)" if notes else ": the verdict has no finding"))
        return ExitCode.OK
    if any(job.kind is ExplainKind.COST for job in jobs) and not_measured_reason():
        return refuse(f"explain: {not_measured_reason()}")
    codes, records = [], []
    options = ("kind", "workload", "case", "mode", "dtype", "axis")
    argv = ["explain", *args.commits, *(x for option in options if getattr(args, option)
                                       for x in (f"--{option}", getattr(args, option))),
            *(["--target-results", str(args.target_results)] if args.target_results else [])]
    try:
        with atomic_directory(folder) as tmp:
            for job in jobs:
                try:
                    record = (_departure(job, target) if target else
                              _explained(job, root, golden, tmp, bisecting=not args.no_bisect, top=args.top))
                except (CommitError, SideError, CountError, ProfileError, TracingError, GoldenError, LookupError) as exc:
                    print(f"explain: {job.kind} of {job.workload}: {exc}", file=sys.stderr)
                    codes.append(ExitCode.UNMEASURED)
                    continue
                record = with_others(record, job)
                records.append(record)
                codes.append(ExitCode.REGRESSED if record["changed"] else ExitCode.OK)
                details = record.get("details", {})
                for line in details.get("profile", []) + details.get("ops", []) + details.get("lines", []):
                    print(line)
                print(record["answer"])
            if not records:
                raise _NothingExplained
            write_bundle(tmp, records, argv, root)
    except _NothingExplained:
        return ExitCode.UNMEASURED
    print(f"evidence: {folder}")
    return worst(*codes)


def _explained(job: ExplainJob, root: Path, golden: Path, folder: Path, **kw) -> dict:
    """The explanation of ``job`` in ``folder / job.name``; a stand-in that does not show the change gives way
    to the flagged workload itself (its record keeps what the stand-in said)."""
    record = explain_job(job, root, golden, folder / job.name, **kw)
    if record["changed"] or not job.stand_in or not job.own:
        return record
    print(f"explain: {job.workload}, counted for {job.origin}, does not change between {job.last_good[:8]} and "
          f"{job.first_bad[:8]}: counting the flagged workload, {job.own}, itself", file=sys.stderr)
    flagged = replace(job, workload=job.own, stand_in=False, own=None)
    return {**explain_job(flagged, root, golden, folder / flagged.name, **kw),
            "stand_in": {"workload": job.workload, "answer": record["answer"]}}


def _departure(job: ExplainJob, results: Path) -> dict:
    """The explanation of a target's parity finding: where its image departs at the first bad commit, as
    ``detsim-track record`` stored it in ``results`` (:class:`LookupError`: none stored)."""
    from detsim.track.target.departure import map_lines, sentence, stored

    record = stored(results, job.first_bad, job.workload)
    if record is None:
        raise LookupError(f"no departure of its image stored in {results} at {job.first_bad[:10]}")
    return departure_answer(job, record, sentence(record), map_lines(record))


class _NothingExplained(Exception):
    """No explanation could be made: no bundle is left behind."""
