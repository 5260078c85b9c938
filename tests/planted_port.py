"""A throwaway target repository for the target proofs: a tiny package whose nanoBragg-compatible command
renders a golden case (with detsim's CLI, or by copying the case's reference image: no torch) and then
perturbs the image, with one fault planted per commit and docs-only commits between them."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from detsim.track.base.fresh import HERE
from planted_history import commit, git

CASE = "c02_xds_xbeam_quirk"  # 128x128, one step per pixel: the cheapest golden case to render

PYPROJECT = '''[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "fakeport"
version = "0.1.0"

[project.scripts]
fake-nanobragg = "fakeport.cli:main"

[tool.setuptools]
packages = ["fakeport"]
'''

CLI = '''"""nanoBragg's command line: render, then apply the planted faults."""
import os, sys, time
import numpy as np
from fakeport.faults import CRASH, EDGE, SHRINK, SLOW, VARIES


def main():
    args = sys.argv[1:]
    if CRASH:
        print("fakeport: reading the matrix", file=sys.stderr)
        sys.exit("fakeport: RuntimeError: planted crash")
    out = args[args.index("-floatfile") + 1]
    golden = os.environ.get("FAKEPORT_GOLDEN")
    if golden:  # the golden case whose arguments these are: its reference image stands for a render
        case = next(d for d in os.scandir(golden) if d.is_dir()
                    and open(os.path.join(d.path, "args.txt")).read().split() == args)
        image = np.fromfile(os.path.join(case.path, "image.bin"), "<f4")
    else:
        from detsim.commandline.command import main as detsim
        code = detsim(args)
        if code:
            return code
        image = np.fromfile(out, "<f4")
    side = int(round(image.size ** 0.5))
    image = image.reshape(side, side).copy()
    if EDGE:
        image[:3, :] *= 1 + EDGE
        image[-3:, :] *= 1 + EDGE
        image[:, :3] *= 1 + EDGE
        image[:, -3:] *= 1 + EDGE
    if SHRINK:
        image = image[:-1, :-1]
    if VARIES:  # the centre pixel moved up by a number of float32 steps that differs between two processes
        centre = image[side // 2, side // 2]
        image[side // 2, side // 2] = centre + np.spacing(centre) * (1 + os.getpid() % 65521)
    np.ascontiguousarray(image).tofile(out)
    if SLOW:  # busy for SLOW of the CPU time it has taken
        spent = time.process_time()
        while time.process_time() < spent * (1 + SLOW):
            pass
    return 0
'''

FAULTS = dict(CRASH=False, EDGE=0.0, SHRINK=False, SLOW=0.0, VARIES=False)


@dataclass(frozen=True)
class Port:
    root: Path
    commits: dict  # name -> sha, in history order


def _faults(root: Path, **changes) -> None:
    FAULTS.update(changes)
    lines = [f"{name} = {value!r}\n" for name, value in sorted(FAULTS.items())]
    (root / "fakeport" / "faults.py").write_text("".join(lines))


def make_port(work: Path, golden: Path, *, render: str = "detsim", export: bool = True, count: bool = True) -> Port:
    """The history (name: what the commit does): base (no fault), docs1, edge (a 2 % change of the outer 3
    pixels, kept from here on), docs2, docs3, shrink (a 127x127 image), unshrink, docs4, crash, uncrash,
    varies (one pixel moved by a number of float32 steps that differs run to run), steady, docs5, slow (15 %
    more CPU time, kept), docs6. With ``export`` the spec names the package's paths (docs commits are reused
    unbuilt), else every commit is built and compared by its installed files. With ``count`` its spec turns
    instruction counts on (each rendered case counted under callgrind by a recording).

    Built once per process and arguments (46 git commands), then copied to ``work/port``: each caller has a
    repository of its own, with the same commits."""
    key = (str(golden), render, export, count)
    if key not in _BUILT:
        scratch = Path(tempfile.mkdtemp(prefix="planted-port-"))
        atexit.register(shutil.rmtree, scratch, True)
        port = _build(scratch, golden, render, export, count)
        _BUILT[key] = (port, dict(FAULTS))
    built, faults = _BUILT[key]
    root = work / "port"
    shutil.copytree(built.root, root, symlinks=True)
    FAULTS.update(faults)  # as the last commit left them
    return Port(root, dict(built.commits))


_BUILT: dict[tuple, tuple[Port, dict]] = {}  # make_port's arguments -> (the port built, FAULTS after its last commit)


def _build(work: Path, golden: Path, render: str, export: bool, count: bool) -> Port:
    FAULTS.update(CRASH=False, EDGE=0.0, SHRINK=False, SLOW=0.0, VARIES=False)
    root = work / "port"
    (root / "fakeport").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    reference = "" if render == "detsim" else str(golden)
    (root / "detsim-target.toml").write_text(
        f'command = "fake-nanobragg"\ncases = ["{CASE}"]\ntimeout_s = 120\n'
        + ('export = ["fakeport", "pyproject.toml"]\n' if export else "")
        + f"count_instructions = {str(count).lower()}\n" +
        f'env = {{ PYTHONPATH = "{HERE}", FAKEPORT_GOLDEN = "{reference}" }}\n')
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "fakeport" / "__init__.py").write_text("")
    (root / "fakeport" / "cli.py").write_text(CLI)
    (root / "README.md").write_text("# fakeport\n")
    _faults(root)
    commits = {"base": commit(root, "the package")}
    plan = [("docs1", None), ("edge", dict(EDGE=0.02)), ("docs2", None), ("docs3", None),
            ("shrink", dict(SHRINK=True)), ("unshrink", dict(SHRINK=False)), ("docs4", None),
            ("crash", dict(CRASH=True)), ("uncrash", dict(CRASH=False)), ("varies", dict(VARIES=True)),
            ("steady", dict(VARIES=False)), ("docs5", None), ("slow", dict(SLOW=0.15)), ("docs6", None)]
    for name, change in plan:
        if change is None:
            (root / "docs").mkdir(exist_ok=True)
            (root / "docs" / f"{name}.md").write_text(f"# notes {name}\n")
        else:
            _faults(root, **change)
        commits[name] = commit(root, name)
    return Port(root, commits)


def plant(port: Port, name: str, **faults) -> str:
    """One more commit of ``port`` named ``name``, with ``faults`` changed (e.g. SLOW=3.0: four times the CPU
    time); its sha, also added to ``port.commits``."""
    _faults(port.root, **faults)
    port.commits[name] = commit(port.root, name)
    return port.commits[name]


# -- a target's recording as stored, written by hand (what `detsim-track record` writes through asv) --------

RECORDED_ENV = "existing-py_x_bin_python"  # asv's name of the one interpreter a target's recording uses
CASE_PARAMS = [[f"'{CASE}'"]]  # asv's parameters of a benchmark recorded for CASE alone


def start_results(results: Path, machine: str, benchmarks: Mapping[str, tuple[str, str]]) -> None:
    """``results`` (a recording's folder for ``machine``) with asv's machine file, and asv's list of the
    ``benchmarks`` (name -> (asv type, unit)) beside it, each with the one parameter case = CASE."""
    results.mkdir(parents=True)
    (results / "machine.json").write_text(json.dumps({"machine": machine, "version": 1}))
    (results.parent / "benchmarks.json").write_text(json.dumps({"version": 2, **{
        name: {"name": name, "param_names": ["case"], "params": CASE_PARAMS, "type": kind, "unit": unit,
               "version": "1"} for name, (kind, unit) in benchmarks.items()}}))


def write_results(results: Path, machine: str, commit: str, date: int, values: Mapping[str, float]) -> None:
    """One commit's asv results file in ``results``: each benchmark's value for CASE (``date`` in ms)."""
    data = {"version": 2, "commit_hash": commit, "env_name": RECORDED_ENV, "date": date,
            "params": {"machine": machine}, "python": "3.11", "requirements": {}, "env_vars": {}, "durations": {},
            "result_columns": ["result", "params", "version", "started_at", "duration"],
            "results": {name: [[value], CASE_PARAMS, "1", date, 1.0] for name, value in values.items()}}
    (results / f"{commit[:8]}-{RECORDED_ENV}.json").write_text(json.dumps(data))


def fake_builder(builds: list[str] | None = None) -> type:
    """A stand-in for :class:`detsim.track.target.build.Builder` that installs nothing: commit X is installed at
    ``/installed/X`` (appended to ``builds``), and a commit named ``broken`` does not install."""
    from detsim.track.target.build import BuildError

    class Installed:
        def __init__(self, commit):
            self.bin_dir = Path("/installed") / commit

    class FakeBuilder:
        def __init__(self, spec, scratch):
            self.spec = spec

        def install(self, commit):
            if commit == "broken":
                raise BuildError("broken: does not install: planted")
            if builds is not None:
                builds.append(commit)
            return Installed(commit)

    return FakeBuilder
