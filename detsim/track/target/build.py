"""Installing one commit of a target into a throwaway virtual environment, cheaply, and the reuse rule.

Input: a :class:`~.spec.TargetSpec` and a commit. Its tree (or the spec's ``export`` paths) is unpacked with
``git archive`` (the repository is only read; an archive is judged by the files it holds, so a partial copy
missing blobs outside those paths still exports) and pip installs the spec's ``install`` path ``--no-deps
--no-build-isolation --no-index`` into a fresh venv layered over this interpreter's site-packages: torch, numpy
and the build backend are found there, never installed again (a backend that is not there, hatchling say, is
fetched by pip for an isolated build; a folder with neither pyproject.toml nor setup.py is not installed at
all: its command is a script of the exported tree, :func:`tree_of`). Output: an :class:`Installation`, or a
:class:`BuildError` naming the commit.

The reuse rule (:meth:`Reuse.measure`; bisection and the tracking run both use it): a commit whose installed
files (:func:`installed_fingerprint`) or, before any build, whose ``export`` paths' git trees
(:func:`source_key`) equal a measured commit's takes that commit's results.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Generic, Sequence, TypeVar

from detsim.track.base.git import resolve
from detsim.track.base.fresh import HERE, ChildError, pinned_env, run
from detsim.track.base.git import GitError, git, query
from detsim.track.base.hashing import sha256_bytes, sha256_file
from detsim.track.target.spec import FILE, TargetSpec

LAYER = "_detsim_heavy_layer.pth"  # the venv's line to this interpreter's site-packages
SUITE_VAR = "DETSIM_TARGET_SUITE_DIR"  # set in the processes of a recording's asv suite (names its project folder)
INSTALL_TIMEOUT_S = 900
TREE, VENV = "src", "venv"  # an installation's folders: the commit's exported tree, its venv
PROJECT_FILES = ("pyproject.toml", "setup.py")  # what makes a folder something pip installs
# pip's word for a build backend that cannot be imported from detsim's venv (hatchling, flit_core, ...)
BACKEND_MISSING = "BackendUnavailable"


class BuildError(RuntimeError):
    """A commit that cannot be exported, installed or measured (one line naming it)."""


@dataclass(frozen=True)
class Installation:
    commit: str  # full sha
    bin_dir: Path  # its commands
    site_packages: Path  # where its files went (only its own: the layer is a .pth line)
    fingerprint: str  # of its installed files (installed_fingerprint)
    seconds: float  # export + venv + install, wall


def layer_lines() -> str:
    """The venv's ``.pth`` file: the layer every throwaway venv sees (this interpreter's site-packages folders and
    detsim's own package folder: asv's suite for a target imports detsim), and in the processes of a recording's
    asv suite (only there) detsim's own package first: a commit that installs a package named ``detsim`` must not
    replace the suite's (the target's command never has the variable: :data:`~.render.DROPPED_VARS`)."""
    paths = sysconfig.get_paths()
    first = f"import os, sys; os.environ.get({SUITE_VAR!r}) and sys.path.insert(0, {str(HERE)!r})\n"
    return "".join(f"{p}\n" for p in dict.fromkeys([paths["purelib"], paths["platlib"], str(HERE)])) + first


class Builder:
    """Installs commits of ``spec.root`` under ``scratch`` (each in a folder of its own, removed by
    :meth:`discard`)."""

    def __init__(self, spec: TargetSpec, scratch: Path):
        self.spec, self.scratch = spec, Path(scratch)

    def install(self, commit: str, folder: Path | None = None) -> Installation:
        """Install ``commit`` into ``folder`` (default: a folder of its own under ``scratch``), replacing
        whatever is there: the tracking run keeps one folder, so that asv sees one interpreter path."""
        began = time.perf_counter()
        try:
            sha = resolve(self.spec.root, commit)
        except Exception as exc:  # noqa: BLE001 - CommitError or GitError: one line either way
            raise BuildError(str(exc)) from None
        folder = Path(folder) if folder is not None else self.scratch / sha[:12]
        if folder.exists():
            shutil.rmtree(folder)
        try:
            return self._install(sha, folder, began)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise

    def _install(self, sha: str, folder: Path, began: float) -> Installation:
        source, venv = folder / TREE, folder / VENV
        self._export(sha, source)
        try:
            run([sys.executable, "-m", "venv", "--without-pip", str(venv)], timeout=120).check("venv")
        except ChildError as exc:
            raise BuildError(f"{sha[:8]}: could not make a virtual environment: {exc}") from None
        python = venv / "bin" / "python"
        try:
            site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            timeout=60).check("the venv's python").stdout.strip())
        except ChildError as exc:
            raise BuildError(f"{sha[:8]}: the virtual environment does not run: {exc}") from None
        site.mkdir(parents=True, exist_ok=True)
        (site / LAYER).write_text(layer_lines())
        target = source / self.spec.install
        if not any((target / name).is_file() for name in PROJECT_FILES):
            # nothing to install (a command that is a script in the repository): the commit is its tree
            return Installation(sha, venv / "bin", site, installed_fingerprint(source, ignore=(FILE,)),
                                round(time.perf_counter() - began, 3))
        argv = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                "--no-deps", "--no-build-isolation", "--no-index", "--disable-pip-version-check", str(target)]
        done = self._pip(sha, argv)
        if done.returncode != 0 and BACKEND_MISSING in done.stdout + done.stderr:
            # a backend detsim's venv lacks: pip fetches the build's own requirements into an isolated build
            # (the package's dependencies are still never installed: --no-deps)
            done = self._pip(sha, [a for a in argv if a not in ("--no-build-isolation", "--no-index")])
            if done.returncode != 0:
                raise BuildError(f"{sha[:8]}: does not install (its build backend is not in detsim's venv and an "
                                 f"isolated build failed): {pip_reason(done.stderr + done.stdout)}")
        if done.returncode != 0:
            raise BuildError(f"{sha[:8]}: does not install: {pip_reason(done.stderr + done.stdout)}")
        return Installation(sha, venv / "bin", site, installed_fingerprint(site, ignore=(LAYER,)),
                            round(time.perf_counter() - began, 3))

    def _pip(self, sha: str, argv: list[str]):
        try:
            return run(argv, timeout=INSTALL_TIMEOUT_S, what="pip install")
        except ChildError as exc:
            raise BuildError(f"{sha[:8]}: {exc}") from None

    def _export(self, sha: str, dest: Path) -> None:
        dest.mkdir(parents=True)
        what = " ".join(self.spec.export or ["its tree"])
        with tempfile.TemporaryDirectory(prefix="detsim-archive-") as tmp:
            archive = Path(tmp) / "tree.tar"
            paths = ["--", *self.spec.export] if self.spec.export else []
            try:
                archived = run(["git", "--no-optional-locks", "archive", "--format=tar", f"--output={archive}", sha,
                                *paths], cwd=self.spec.root, env=pinned_env(GIT_OPTIONAL_LOCKS="0"), timeout=600)
                # a copy of a repository missing blobs outside the paths asked for (a partial mirror) makes git
                # archive complain after writing every file asked for: the export is judged by its files
                listed = run(["tar", "-t", "-f", str(archive)], timeout=600) if archive.is_file() else None
                wanted = git(self.spec.root, "ls-tree", "-r", "--name-only", sha, *paths, timeout=600).splitlines()
                missing = set(wanted) - set(listed.stdout.splitlines() if listed and listed.returncode == 0 else [])
                if missing:
                    why = archived.last_line() or f"{len(missing)} file(s) missing, e.g. {sorted(missing)[0]}"
                    raise BuildError(f"{sha[:8]}: cannot export {what}: {why}")
                run(["tar", "-x", "-C", str(dest), "-f", str(archive)], timeout=600).check("tar")
            except (GitError, ChildError) as exc:
                raise BuildError(f"{sha[:8]}: cannot export {what}: {exc}") from None
        if not (dest / self.spec.install).exists():
            raise BuildError(f"{sha[:8]}: has no {self.spec.install} to install")
        self._drop_cases(dest)

    def _drop_cases(self, dest: Path) -> None:
        """Remove the spec's own folder of cases from the exported tree ``dest``: they are read from the working
        tree, never built, and a folder of them beside a flat-layout package would be one more top-level package
        to setuptools' discovery."""
        cases, root = self.spec.case_folder, Path(self.spec.root).resolve()
        if cases is None or not Path(cases).resolve().is_relative_to(root):
            return
        inside = dest / Path(cases).resolve().relative_to(root)
        if inside == dest or (dest / self.spec.install).resolve().is_relative_to(inside.resolve()):
            return
        shutil.rmtree(inside, ignore_errors=True)
        for parent in inside.parents:  # and the folders it leaves empty
            if parent == dest or not parent.is_dir() or any(parent.iterdir()):
                break
            parent.rmdir()

    def discard(self, installation: Installation) -> None:
        """Remove an installation's folders (its results are kept by whoever measured it)."""
        shutil.rmtree(self.scratch / installation.commit[:12], ignore_errors=True)


def tree_of(bin_dir: Path | None) -> Path | None:
    """The exported tree of the commit whose venv's commands are in ``bin_dir`` (None: not a venv that
    :class:`Builder` made): where a command that is a script of the repository is found."""
    if bin_dir is None:
        return None
    tree = Path(bin_dir).parent.parent / TREE
    return tree if Path(bin_dir).parent.name == VENV and tree.is_dir() else None


PIP_NOISE = ("note:", "hint:", "×", "╰─>", "│", "[end of output]", "error: subprocess-exited-with-error",
             "error: metadata-generation-failed", "ERROR: Exception:", "Traceback (most recent call last)")


def pip_reason(output: str) -> str:
    """The line of a failed pip install that says why: the build's own ``error:`` line, else the last
    exception raised, else the last line that is not pip's framing."""
    lines = [line.strip() for line in output.splitlines()]
    lines = [line for line in lines if line and not line.startswith(PIP_NOISE) and not line.startswith("File ")]
    for line in lines:
        if line.startswith("error:"):
            return line
    for line in reversed(lines):
        if re.match(r"^[\w.]+(Error|Exception|Unavailable)\b.*:", line):
            return line
    return lines[-1] if lines else "pip gave no reason"


def scratch_folder() -> tempfile.TemporaryDirectory:
    """A temporary folder for the builds of one run (removed with it)."""
    return tempfile.TemporaryDirectory(prefix="detsim-builds-", dir=os.environ.get("DETSIM_BUILD_DIR"))


# files of a dist-info folder that differ between two installs of the same files
BOOKKEEPING = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})

T = TypeVar("T")


def installed_fingerprint(site_packages: Path, ignore: Sequence[str] = ()) -> str:
    """sha256 over every installed file's path, contents and executable bit under ``site_packages`` (byte
    code, pip's bookkeeping and the names in ``ignore`` left out): equal for two commits exactly when they
    installed the same bytes."""
    site_packages = Path(site_packages)
    lines = []
    for path in sorted(p for p in site_packages.rglob("*") if p.is_file()):
        rel = path.relative_to(site_packages)
        if rel.as_posix() in ignore or "__pycache__" in rel.parts or path.suffix == ".pyc":
            continue
        if rel.parent.name.endswith(".dist-info") and rel.name in BOOKKEEPING:
            continue
        executable = " (executable)" if os.access(path, os.X_OK) else ""  # a script's mode decides if it runs
        lines.append(f"{sha256_file(path)}  {rel.as_posix()}{executable}\n")
    return sha256_bytes("".join(lines).encode())


def source_key(root: Path, commit: str, export: Sequence[str] | None) -> str | None:
    """The git trees of ``commit``'s ``export`` paths, joined: two commits with the same key install the same
    files without building either (None: no ``export`` paths, or one missing at that commit)."""
    if not export:
        return None
    # ``./``: the path is the spec's, relative to the target's folder (which may be a subfolder of its repository)
    trees = [query(root, "rev-parse", "--verify", "--quiet", f"{commit}:./{path}") for path in export]
    return None if None in trees else " ".join(trees)


@dataclass(frozen=True)
class Measured(Generic[T]):
    """One commit's results: measured, taken from a twin, or not built (``results`` None: ``build_error`` says
    why)."""

    commit: str
    results: T | None = None
    reused_from: str | None = None  # the commit whose installed files (or exported sources) were the same
    reused_by: str | None = None  # "sources" (the export paths' git trees) or "installed files"
    build_error: str | None = None
    build_s: float | None = None
    keys: tuple[str, ...] = ()  # its reuse keys: the sources' (when the spec exports paths), the installed files'


@dataclass
class Reuse(Generic[T]):
    """Results by key (a fingerprint or a source key), with the commit each was measured at."""

    measured: dict[str, tuple[str, T]] = field(default_factory=dict)
    reused: int = 0  # lookups answered from the table
    builds: int = 0  # commits installed by :meth:`measure`

    def get(self, *keys: str | None) -> tuple[str, T] | None:
        """The (commit, results) stored under the first of ``keys`` that has some, counted as a reuse."""
        for key in keys:
            if key is not None and key in self.measured:
                self.reused += 1
                return self.measured[key]
        return None

    def put(self, commit: str, results: T, *keys: str | None) -> None:
        for key in keys:
            if key is not None:
                self.measured.setdefault(key, (commit, results))

    def measure(self, builder: Builder, commit: str, measure: Callable[[Installation], T], folder: Path | None = None,
                done: Callable[[Installation], None] = lambda installed: None) -> Measured[T]:
        """``commit``'s results by the reuse rule (module docstring): a twin's, found by its sources before any
        build or by its installed files after one, else ``measure`` of its installation (into ``folder``),
        stored under both keys. ``done`` gets the installation at the end; a :class:`BuildError` of the build or
        of ``measure`` is the commit's ``build_error``."""
        source = source_key(builder.spec.root, commit, builder.spec.export)
        hit = self.get(source)
        if hit is not None:
            return Measured(commit, hit[1], hit[0], "sources", keys=(source,))
        self.builds += 1
        try:
            installed = builder.install(commit, folder)
        except BuildError as exc:
            return Measured(commit, build_error=str(exc))
        keys = tuple(k for k in (source, installed.fingerprint) if k is not None)
        try:
            hit = self.get(installed.fingerprint)
            if hit is not None:
                self.put(hit[0], hit[1], source)
                return Measured(installed.commit, hit[1], hit[0], "installed files", build_s=installed.seconds,
                                keys=keys)
            results = measure(installed)
            self.put(installed.commit, results, *keys)
            return Measured(installed.commit, results, build_s=installed.seconds, keys=keys)
        except BuildError as exc:
            return Measured(commit, build_error=str(exc))
        finally:
            done(installed)
