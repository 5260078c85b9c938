"""``detsim-track baselines``: show the stored golden-image hashes and whether the bench gate's baseline agrees
with them, or refresh this machine class's golden hashes (showing, refreshing, and why a refresh refuses images
that do not reproduce: docs/determinism.md; every baseline of a class at once: ``make baselines``,
docs/bench-gate.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from detsim.track.base.exitcodes import ExitCode, worst
from detsim.track.commands import refuse
from detsim.track.base.hashing import IMAGE_HASH
from detsim.track.base.output import utc_stamp, write_json
from detsim.track.base.provenance import MachineClass, cpu_model, git_info, repo_root
from detsim.track.base.files import RecordingError, check_writable
from detsim.track.base import golden_hashes
from detsim.track.judge.stored_baselines import GATE_BASELINE, StoreError, disagreements, stale_message
from detsim.track.base.golden import AXES, BASELINE_DIR, SCHEMA, BaselineError, GoldenError, class_path, \
    differing_fields, for_class, golden_dir, load_cases, stored

HELP = "show the stored golden-image hashes, or --refresh them deliberately from the checked-out code"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, default=None,
                        help="project checkout (default: the git work tree around the current directory)")
    parser.add_argument("--refresh", action="store_true",
                        help="re-render every golden case and rewrite the baseline (deliberate acceptance)")
    parser.add_argument("--allow-dirty", action="store_true",
                        help="with --refresh: accept uncommitted changes to tracked files")


def run(args: argparse.Namespace) -> int:
    root = (args.repo or repo_root() or Path.cwd()).resolve()
    try:
        if args.refresh:
            return _refresh(root, allow_dirty=args.allow_dirty)
        return _show(root)
    except (BaselineError, GoldenError) as exc:
        return refuse(f"detsim-track baselines: {exc}")


def _show(root: Path) -> int:
    baselines = stored(root)
    if not baselines:
        raise BaselineError(f"{root / BASELINE_DIR}: no baseline file of any machine class "
                            "(create this machine's with `detsim-track baselines --refresh`)")
    manifest = [case.id for case in load_cases(golden_dir(root))]
    machine = golden_hashes.machine_class()
    here = machine.as_record()
    incomplete = False
    for path, data in baselines.items():
        recorded = data.get("recorded", {})
        mine = MachineClass.from_record(data["holds_for"]) == machine
        print(f"{path}: {len(data['cases'])} golden cases{'  <- this machine' if mine else ''}")
        print("  holds for: " + ", ".join(f"{k}={v}" for k, v in sorted(data["holds_for"].items())))
        print(f"  recorded: commit {str(recorded.get('commit'))[:12]}"
              f"{' (dirty)' if recorded.get('dirty') else ''} at {recorded.get('at')} on {recorded.get('cpu')}")
        if not mine:
            differing = differing_fields(machine, data["holds_for"])
            print("  another machine class (a fact, not a failure): this machine has "
                  + ", ".join(f"{k}={here[k]}" for k in differing))
        missing = [case for case in manifest if case not in data["cases"]]
        extra = sorted(set(data["cases"]) - set(manifest))
        if extra:
            print(f"  not in the manifest any more: {', '.join(extra)}")
        if missing:
            print(f"  golden cases without a baseline hash: {', '.join(missing)} (run with --refresh on that class)")
            incomplete = incomplete or mine  # another class's gap is that class's to fill
    if for_class(root, machine):
        print("this machine: matches; the determinism tracks compare against it")
    else:
        print(f"this machine ({machine.slug()}): no baseline of its class; the determinism tracks compare its "
              f"images commit to commit from its first recorded commit (store one with --refresh: "
              f"{class_path(machine)})")
    return worst(ExitCode.UNMEASURED if incomplete else ExitCode.OK, _gate_agrees(root))


def _gate_agrees(root: Path) -> ExitCode:
    """Whether the bench gate's baseline holds the golden hashes' hash wherever both hold one render (one line),
    REGRESSED (and what differs, with the command that refreshes both) where not."""
    if not (root / GATE_BASELINE).exists():
        print(f"{GATE_BASELINE}: none, nothing to compare with the golden hashes")
        return ExitCode.OK
    try:
        shared, stale = disagreements(root)
    except StoreError as exc:
        print(f"{GATE_BASELINE}: not compared with the golden hashes ({exc})")
        return ExitCode.UNMEASURED
    if stale:
        print(stale_message(stale))
        return ExitCode.REGRESSED
    print(f"{GATE_BASELINE}: holds the golden hashes' image hash in all {shared} render(s) both record")
    return ExitCode.OK


def _refresh(root: Path, *, allow_dirty: bool) -> int:
    state = git_info(root)
    if state["dirty"] and not allow_dirty:
        print("detsim-track baselines: the work tree has uncommitted changes; commit them first "
              "(or pass --allow-dirty) so the baseline names the code it holds for", file=sys.stderr)
        return ExitCode.UNMEASURED
    machine = golden_hashes.machine_class()
    path = root / class_path(machine)
    try:  # where it will write, before the renders (~40 s)
        check_writable(path.parent)
    except RecordingError as exc:
        return refuse(f"detsim-track baselines: not refreshed: {exc}")
    old = None
    try:
        found = for_class(root, machine)
        old = found[1] if found else None
    except BaselineError as exc:
        print(f"detsim-track baselines: the previous baselines are unusable, not compared: {exc}", file=sys.stderr)
    cases = load_cases(golden_dir(root))
    eager = golden_hashes.render_hashes(cases, golden_hashes.EAGER)
    compiled = golden_hashes.render_hashes(cases, golden_hashes.COMPILED)
    again = golden_hashes.in_a_fresh_process(cases, golden_dir(root), SECOND_RUNS)
    failed = [f"{case}: {why}" for case, why in eager.failures.items()]
    failed += [f"{case} (compiled): {why}" for case, why in compiled.failures.items()]
    failed += [f"{case} ({mode}, {threads} threads, second process): {why}"
               for (mode, threads), run in again.items() for case, why in run.failures.items()]
    if failed:
        print("detsim-track baselines: not refreshed, these cases did not render:\n  " + "\n  ".join(failed),
              file=sys.stderr)
        return ExitCode.UNMEASURED
    irreproducible = _irreproducible(eager, compiled, again)
    if irreproducible:
        print("detsim-track baselines: not refreshed: the images of these cases do not reproduce, so no hash of "
              "them can be a baseline (`detsim-track explain COMMIT --kind nondeterministic --case C --axis A` "
              "names the op):\n  " + "\n  ".join(irreproducible), file=sys.stderr)
        return ExitCode.REGRESSED
    holds_for = machine.as_record()
    try:
        write_json(path, {
            "schema": SCHEMA,
            "hash": f"{IMAGE_HASH}, rendered as the asv determinism tracks render it",
            "holds_for": holds_for,
            "recorded": {"commit": state["commit"], "dirty": state["dirty"], "at": utc_stamp(),
                         "cpu": cpu_model(), "python": sys.version.split()[0]},
            "cases": dict(eager.hashes),
            "cases_compiled": dict(compiled.hashes),
        })
    except OSError as exc:
        return refuse(f"detsim-track baselines: not refreshed: {path} could not be written "
                      f"({exc.strerror or exc}); the stored baseline is unchanged")
    _print_changes(old, dict(eager.hashes), dict(compiled.hashes), holds_for, path.relative_to(root))
    return ExitCode.OK


# the second runs of a refresh: (mode, torch threads) in one fresh interpreter, against the first runs here
SECOND_RUNS = ((golden_hashes.EAGER, 1), (golden_hashes.EAGER, 2), (golden_hashes.COMPILED, 1))


def _irreproducible(eager, compiled, again) -> list[str]:
    """One line per axis whose second runs differ from the first: the axis and the cases."""
    pairs = {"process": (eager, again[golden_hashes.EAGER, 1]),
             "threads": (again[golden_hashes.EAGER, 1], again[golden_hashes.EAGER, 2]),
             "compiled": (compiled, again[golden_hashes.COMPILED, 1])}
    lines = []
    for axis, (first, second) in pairs.items():
        differ = [case for case, sha in first.hashes.items() if second.hashes.get(case) != sha]
        if differ:
            lines.append(f"{axis} ({AXES[axis].runs}): {len(differ)} case{'s' * (len(differ) > 1)}: "
                         + ", ".join(differ))
    return lines


def _print_changes(old: dict | None, new: dict, new_compiled: dict, holds_for: dict, where: Path) -> None:
    print(f"{where}: {len(new)} golden hashes (and {len(new_compiled)} of the compiled path) written for "
          + ", ".join(f"{k}={v}" for k, v in sorted(holds_for.items()))
          + " (only this machine class's file; other classes' baselines are left as they are)")
    if old is None:
        print("  no previous baseline of this machine class")
        return
    for label, key, hashes in (("", "cases", new), (" (compiled path)", "cases_compiled", new_compiled)):
        before_all = old.get(key, {})
        changed = [(case, before_all.get(case), sha) for case, sha in hashes.items() if before_all.get(case) != sha]
        print(f"  {len(changed)}{label} changed since the previous baseline" + (":" if changed else ""))
        for case, before, after in changed:
            print(f"    {case}: {before[:16] if before else '(none)'} -> {after[:16]}")
