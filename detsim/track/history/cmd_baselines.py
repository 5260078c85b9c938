"""``detsim-track baselines``: the stored golden-image hashes the determinism tracks compare against.

``results/baselines/golden_hashes.json`` holds, for every golden case, the sha256 of its float64 image
(``cases``; ``cases_compiled`` for the compiled path, whose last bits may differ) and the conditions it
holds for (torch version, thread count, CPU class, dtype, device): bit-exact
results are only reproducible under the same ones. Without options the command shows the file and
says whether it applies to this machine; ``--refresh`` re-renders every case with the checked-out code
and rewrites it, listing which hashes changed. Refreshing is how a deliberate change to the images
is accepted, so it refuses to run on uncommitted changes unless told to.

Renders and hashes come from ``benchmarks/common.py``, the same code the asv tracks run, so a
baseline and a track can never disagree on what is hashed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

from detsim.track.base.output import utc_stamp, write_json

from detsim.track.base.provenance import git_info, repo_root
HELP = "show the stored golden-image hashes, or --refresh them deliberately from the checked-out code"

BASELINE = Path("results") / "baselines" / "golden_hashes.json"
SCHEMA = 1

EXIT_OK, EXIT_DIFFERS, EXIT_UNMEASURED = 0, 1, 2


class BaselineError(ValueError):
    """A missing, unreadable or malformed baseline file (the message names it)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, default=None,
                        help="project checkout (default: the git work tree around the current directory)")
    parser.add_argument("--refresh", action="store_true",
                        help="re-render every golden case and rewrite the baseline (deliberate acceptance)")
    parser.add_argument("--allow-dirty", action="store_true",
                        help="with --refresh: accept uncommitted changes to tracked files")


def load(path: Path) -> dict:
    """The baseline at ``path``, validated; raises :class:`BaselineError` naming the file."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise BaselineError(f"{path}: no baseline file (create it with `detsim-track baselines --refresh`)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"{path}: not readable JSON ({str(exc).splitlines()[0]})") from None
    problems = []
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        problems.append(f"schema is not {SCHEMA}")
    else:
        if not isinstance(data.get("holds_for"), dict):
            problems.append("no holds_for record")
        for key in ("cases", "cases_compiled"):
            cases = data.get(key, {} if key == "cases_compiled" else None)
            if not isinstance(cases, dict) or not all(
                    isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)
                    for v in cases.values()):
                problems.append(f"{key} is not a map of case id -> sha256 hex digest")
    if problems:
        raise BaselineError(f"{path}: malformed baseline ({'; '.join(problems)})")
    return data


def bench_common(root: Path):
    """The suite's ``benchmarks/common.py`` of the checkout at ``root``, imported by path."""
    path = root / "benchmarks" / "common.py"
    if not path.is_file():
        raise BaselineError(f"{path}: missing (the asv suite defines how golden cases are rendered)")
    name = "_detsim_benchmarks_common"
    if name in sys.modules and Path(sys.modules[name].__file__) == path:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file executes
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def run(args: argparse.Namespace) -> int:
    root = (args.repo or repo_root() or Path.cwd()).resolve()
    path = root / BASELINE
    try:
        if args.refresh:
            return _refresh(root, path, allow_dirty=args.allow_dirty)
        return _show(root, path)
    except BaselineError as exc:
        print(f"detsim-track baselines: {exc}", file=sys.stderr)
        return EXIT_UNMEASURED


def _show(root: Path, path: Path) -> int:
    data = load(path)
    common = bench_common(root)
    manifest = [case["id"] for case in common.MANIFEST]
    recorded = data.get("recorded", {})
    print(f"{path.relative_to(root)}: {len(data['cases'])} golden cases")
    print("  holds for: " + ", ".join(f"{k}={v}" for k, v in sorted(data["holds_for"].items())))
    print(f"  recorded: commit {str(recorded.get('commit'))[:12]}"
          f"{' (dirty)' if recorded.get('dirty') else ''} at {recorded.get('at')} on {recorded.get('cpu')}")
    here = common.holds_for()
    differing = sorted(k for k in here if data["holds_for"].get(k) != here[k])
    if differing:
        print("  this machine: " + ", ".join(f"{k}={here[k]}" for k in differing)
              + " -> the determinism tracks skip here (refresh on this machine to compare)")
    else:
        print("  this machine: matches; the determinism tracks compare against it")
    missing = [case for case in manifest if case not in data["cases"]]
    extra = sorted(set(data["cases"]) - set(manifest))
    if extra:
        print(f"  not in the manifest any more: {', '.join(extra)}")
    if missing:
        print(f"  golden cases without a baseline hash: {', '.join(missing)} (run with --refresh)")
        return EXIT_UNMEASURED
    return EXIT_OK


def _refresh(root: Path, path: Path, *, allow_dirty: bool) -> int:
    state = git_info(root)
    if state["dirty"] and not allow_dirty:
        print("detsim-track baselines: the work tree has uncommitted changes; commit them first "
              "(or pass --allow-dirty) so the baseline names the code it holds for", file=sys.stderr)
        return EXIT_UNMEASURED
    old = None
    if path.exists():
        try:
            old = load(path)
        except BaselineError as exc:
            print(f"detsim-track baselines: replacing an unusable baseline: {exc}", file=sys.stderr)
    common = bench_common(root)
    common.pin_threads()
    hashes, failed = {}, []
    for case in common.MANIFEST:
        try:
            hashes[case["id"]] = common.render_case(case)["sha256"]
        except Exception as exc:  # noqa: BLE001 - reported per case, then nothing is written
            failed.append(f"{case['id']}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    compiled = common.compiled_golden_hashes()["cases"]
    failed += [f"{case} (compiled): {sha.removeprefix('error: ')}" for case, sha in compiled.items()
               if sha.startswith("error")]
    if failed:
        print("detsim-track baselines: not refreshed, these cases did not render:\n  " + "\n  ".join(failed),
              file=sys.stderr)
        return EXIT_UNMEASURED
    write_json(path, {
        "schema": SCHEMA,
        "hash": "sha256 of the float64 image, little-endian, C order (slow, fast), rendered by benchmarks/common.py",
        "holds_for": common.holds_for(),
        "recorded": {"commit": state["commit"], "dirty": state["dirty"], "at": utc_stamp(),
                     "cpu": common.cpu_model(), "python": sys.version.split()[0]},
        "cases": hashes,
        "cases_compiled": compiled,
    })
    _print_changes(old, hashes, compiled, common.holds_for(), path.relative_to(root))
    return EXIT_OK


def _print_changes(old: dict | None, new: dict, new_compiled: dict, holds_for: dict, where: Path) -> None:
    print(f"{where}: {len(new)} golden hashes (and {len(new_compiled)} of the compiled path) written for "
          + ", ".join(f"{k}={v}" for k, v in sorted(holds_for.items())))
    if old is None:
        return
    if old["holds_for"] != holds_for:
        print("  the previous baseline held for " + ", ".join(f"{k}={v}" for k, v in sorted(old["holds_for"].items())))
    for label, key, hashes in (("", "cases", new), (" (compiled path)", "cases_compiled", new_compiled)):
        before_all = old.get(key, {})
        changed = [(case, before_all.get(case), sha) for case, sha in hashes.items() if before_all.get(case) != sha]
        print(f"  {len(changed)}{label} changed since the previous baseline" + (":" if changed else ""))
        for case, before, after in changed:
            print(f"    {case}: {before[:16] if before else '(none)'} -> {after[:16]}")
