"""The tracking run's steps (``.ci/track``, docs/tracking.md): ``python -I detsim/track/recorder/steps.py STEP``.

Run by path, ``detsim/track`` loaded as a package of its own, with the standard library alone: a commit that breaks
the package it measures cannot break the run that is to record that break. ``record`` records detsim's own
recent commits (:mod:`.own`; with ``--workers``, their exact families on a Dask cluster) or, with ``--target``, a
target's, by ``detsim-track record --target`` in .venv (a target's commits are another repository's: detsim's
package measures them). For what cannot be done, one line and exit 2.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

if not __package__:  # run by path: detsim/track loaded as a package of its own, never ``detsim`` (it may not import)
    import importlib
    import importlib.util

    _TRACK = Path(__file__).resolve().parents[1]
    _SPEC = importlib.util.spec_from_file_location("tracking_run", _TRACK / "__init__.py",
                                                   submodule_search_locations=[str(_TRACK)])
    sys.modules["tracking_run"] = importlib.util.module_from_spec(_SPEC)
    _SPEC.loader.exec_module(sys.modules["tracking_run"])
    __package__ = "tracking_run.recorder"
    importlib.import_module(__package__)

from ..base.files import TARGET_PROJECTS, RecordingError, check_writable, validate_machine_name  # noqa: E402
from .own import VENV_BIN, OwnRecording  # noqa: E402
from .processes import clean_up  # noqa: E402


def target_folder(given: str, caller: Path) -> str:
    """The target's folder, absolute (a relative one is the caller's), or "" for none; ValueError: no folder."""
    if not given:
        return ""
    folder = (caller / given).resolve()
    if not folder.is_dir():
        raise ValueError(f"TARGET={given}: not a folder")
    return str(folder)


def project(target: str) -> str:
    """The folder the judge and the page are given: a target's recording's (relative), "" for detsim's own."""
    return str(TARGET_PROJECTS / Path(target).resolve().name) if target else ""


def cluster_options(workers: str) -> list[str]:
    """``WORKERS`` as detsim-track record's options (and :mod:`.own_cluster`'s): a number of Dask workers, or a
    scheduler's address; ValueError: no worker."""
    if not workers:
        return []
    if workers.isdigit() and int(workers) < 1:
        raise ValueError(f"WORKERS={workers}: give 1 or more workers, or a scheduler's address")
    return ["--workers", workers] if workers.isdigit() else ["--scheduler", workers]


def record_target(root: Path, target: str, recent: int, machine: str, workers: str) -> int:
    """A target's commits recorded by ``detsim-track record --target`` of .venv (made or brought up to date
    first); 2 where it could not record, else 0 (the judge decides)."""
    if subprocess.run(["make", "venv"], cwd=root, stdout=sys.stderr).returncode != 0:
        raise RecordingError("could not set up .venv")
    done = subprocess.run([str(root / VENV_BIN / "detsim-track"), "record", "--target", target, "--recent",
                           str(recent), "--machine", machine, "--no-judge", *cluster_options(workers)], cwd=root)
    return 2 if done.returncode == 2 else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="steps", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("target", help="print the target's folder, absolute (nothing for detsim's own commits)")
    p.add_argument("--from", dest="caller", type=Path, required=True, help="the caller's folder")
    p.add_argument("folder", nargs="?", default="")
    sub.add_parser("project", help="print the recording's project folder for the judge (nothing for detsim's)") \
        .add_argument("--target", default="")
    sub.add_parser("machine", help="print the machine name if it can name a results folder").add_argument("name")
    p = sub.add_parser("writable", help="check that the run can write these folders (made if missing)")
    p.add_argument("folders", type=Path, nargs="+")
    p = sub.add_parser("clean-up", help="stop what the run left running and remove asv's stale folders")
    p.add_argument("--below", type=int, default=None, help="stop every process below this one first")
    p = sub.add_parser("record", help="record the recent commits of detsim, or of a target")
    p.add_argument("--target", default="")
    p.add_argument("--recent", type=int, required=True)
    p.add_argument("--machine", required=True)
    p.add_argument("--workers", default="", help="Dask workers (a number) or a scheduler's address: what no load "
                                                   "changes measured on a Dask cluster, the timings here")
    args = parser.parse_args(argv)
    root = Path(os.path.abspath(Path.cwd()))
    try:
        if args.step == "target":
            print(target_folder(args.folder, args.caller))
        elif args.step == "project":
            print(project(args.target))
        elif args.step == "machine":
            print(validate_machine_name(args.name))
        elif args.step == "writable":
            for folder in args.folders:
                check_writable(folder)
        elif args.step == "clean-up":
            for line in clean_up(root, args.below):
                print(f"tracking run: {line}", file=sys.stderr)
        elif args.target:
            return record_target(root, args.target, args.recent, validate_machine_name(args.machine), args.workers)
        else:
            cluster = tuple(cluster_options(args.workers))
            OwnRecording(root, validate_machine_name(args.machine), cluster).record(args.recent)
    except (ValueError, RecordingError) as exc:
        print(f"tracking run: {exc}", file=sys.stderr)
        return 2
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"tracking run: {args.step}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
