"""detsim as the recorder's first target: its recent commits recorded with its own asv suite (``benchmarks/``) in
environments asv makes, with the families only detsim has (instruction counts, the compiled and Triton paths, peak
memory, device costs), where a target's are built into one venv and measured by the suite for targets (:mod:`.target`).

Each commit is recorded in two phases (docs/tracking.md). First what no load can change, on both cores at once:
one asv process per core, each with its own environment, home and half of those benchmarks (the second from a
generated copy of asv.conf.json, its results merged into results/asv/ after: :mod:`.second`). Then the timings,
alone on the machine, into the same results files. Which commits: :mod:`.plan`. Standard library only, as all
:mod:`.steps` runs: a commit that breaks the package it measures is recorded as failed, never breaks the recording.

With a Dask cluster (``cluster``: ``--workers N`` or ``--scheduler ADDRESS``, docs/cluster.md) the first phase is
one task per commit on any worker instead, driven by a child process of .venv's (:mod:`.own_cluster`: dask is
imported there only); the timings stay here, alone, after the cluster is let go, and where each commit's exact
families were measured goes into the sidecar of :mod:`~detsim.track.base.where` (dropped for a commit recorded
again here).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..base.files import RecordingError, write_aside
from ..base.where import write_where
from .plan import plan
from .second import merge_results, second_config

VENV_BIN = Path(".venv") / "bin"
SECOND_RESULTS = ".asv/results-second"
SECOND_CONF = ".asv-second.conf.json"  # asv reads paths from the folder its config is in
RECORD, RECORD_TIMED = Path(".asv/record.txt"), Path(".asv/record-timed.txt")  # the commits, newest / oldest first
# The benchmarks of each phase (asv's re.search on every name). The two exact halves take about as long a commit
# (~18 s each): the counts (valgrind only where the counted code changed: benchmarks/counts.py), the eager golden
# renders (parity, hashes), the eager reproducibility runs and the device costs; then the compiled path's images
# and its reproducibility run, and the peak memory (a high-water mark, not a time). The timings are the rest.
EXACT_1 = (r"^bench_(cost|device_cost|parity)\.|^bench_determinism\.(?!CompiledHashes\.)"
           r"|^bench_reproducibility\.(?!CompiledReproducibility\.)")
EXACT_2 = (r"^bench_determinism\.CompiledHashes\.|^bench_reproducibility\.CompiledReproducibility\."
           r"|^bench_engine\.LargeDetectorMemory\.")
TIMED = r"^(?!bench_(cost|device_cost|parity|determinism|reproducibility)\.|bench_engine\.LargeDetectorMemory\.)"
CLUSTER_DRIVER = "detsim.track.recorder.own_cluster"  # the first phase's Dask client, run by .venv's python
# what :meth:`OwnRecording.machine_files` sets for asv, passed on to a cluster's tasks (a worker elsewhere lacks it)
SETTINGS = ("VIRTUALENV_APP_DATA", "TORCHINDUCTOR_COMPILE_THREADS", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
            "GIT_CONFIG_GLOBAL", "PIP_CONFIG_FILE")
ENV_LIST = re.compile(r"^\[<asv")  # asv 0.6.6's setup prints its environments and exits 1 even when it made them
REWRITTEN = ("asv-env-info.json", "asv-install-status.json", "asv-build-cache", "project")  # asv's, in place


class OwnRecording:
    """Records detsim's commits in the checkout ``root`` on ``machine``; with ``cluster`` (``--workers N`` or
    ``--scheduler ADDRESS``, as :mod:`.own_cluster` takes them) the exact families on a Dask cluster."""

    def __init__(self, root: Path, machine: str, cluster: tuple[str, ...] = ()):
        self.root, self.machine, self.bin = Path(root), machine, Path(root) / VENV_BIN
        self.cluster = tuple(cluster)
        self.started, self._lock = time.monotonic(), threading.Lock()

    def phase(self, what: str) -> None:
        print(f"tracking run: {what} ({time.monotonic() - self.started:.0f} s)", file=sys.stderr, flush=True)

    def _call(self, *argv, **kwargs) -> int:
        return subprocess.run([str(a) for a in argv], cwd=self.root, **kwargs).returncode

    def venv(self) -> subprocess.Popen | None:
        """.venv brought up to date; on a fresh clone asv (pyproject.toml's pin) and virtualenv go in first and
        make goes on in the background (returned), so that asv makes its environment meanwhile."""
        if os.access(self.bin / "asv", os.X_OK):
            if self._call("make", "venv", stdout=sys.stderr) != 0:
                raise RecordingError("could not set up .venv")
            return None
        pins = re.findall(r'"(asv==[^"]*)"', (self.root / "pyproject.toml").read_text())
        if not (os.access(self.bin / "python", os.X_OK) or self._call("python3", "-m", "venv", ".venv") == 0) or \
                self._call(self.bin / "python", "-m", "pip", "install", "-q", *pins, "virtualenv", stdout=sys.stderr):
            raise RecordingError("could not install asv into .venv")
        return subprocess.Popen(["make", "venv"], cwd=self.root, stdout=sys.stderr)

    def machine_files(self) -> None:
        """The tools' caches in the checkout (virtualenv's app data), torch.compile on one core, and asv's machine
        file in the host's home (re-measuring reads it) and in a home of each recording's own (every ``asv run``
        rewrites it in place: two starting together could read it half-written); the rest of the home stays the
        user's (pip's and git's settings, caches)."""
        home = Path.home()
        os.environ.update(VIRTUALENV_APP_DATA=str(self.root / ".asv" / "virtualenv-app-data"),
                          TORCHINDUCTOR_COMPILE_THREADS="1")
        for name, default in (("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache"), ("GIT_CONFIG_GLOBAL", ".gitconfig")):
            os.environ.setdefault(name, str(home / default))
        if not os.environ.get("PIP_CONFIG_FILE") and (home / ".pip" / "pip.conf").is_file():
            os.environ["PIP_CONFIG_FILE"] = str(home / ".pip" / "pip.conf")
        for label in (None, "1", "2"):
            env = {**os.environ, **({"HOME": str(self.home(label))} if label else {})}
            if label:
                self.home(label).mkdir(parents=True, exist_ok=True)
            if self._call(self.bin / "asv", "machine", "--yes", "--machine", self.machine, env=env,
                          stdout=subprocess.DEVNULL) != 0:
                raise RecordingError(f"asv machine --machine {self.machine} failed")

    def home(self, label: str) -> Path:
        return self.root / ".asv" / f"home-{label}"

    def asv(self, label: str, config: str, *args: str) -> subprocess.Popen:
        """asv with ``config`` in recording ``label``'s home, its lines on stdout prefixed ``[label]``."""
        running = subprocess.Popen([str(self.bin / "asv"), "--config", config, *args], cwd=self.root,
                                   env={**os.environ, "HOME": str(self.home(label)), "PYTHONUNBUFFERED": "1"},
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        running.copier = threading.Thread(target=self._copy, args=(running, label, args[0] == "setup"), daemon=True)
        running.copier.start()
        return running

    def _copy(self, running: subprocess.Popen, label: str, setup: bool) -> None:
        for line in running.stdout:
            if not (setup and ENV_LIST.match(line)):
                with self._lock:
                    sys.stdout.write(f"[{label}] {line}")
                    sys.stdout.flush()

    @staticmethod
    def wait(running: subprocess.Popen) -> int:
        code = running.wait()
        running.copier.join()
        return code

    def benchmarks(self, label: str, config: str, which: str, commits: Path) -> subprocess.Popen:
        return self.asv(label, config, "run", "--machine", self.machine, "--record-samples", "--bench", which,
                        f"HASHFILE:{commits}")

    def recorded(self, running: subprocess.Popen) -> bool:
        """asv run exits 2 when a benchmark failed: recorded as failed, the judge decides."""
        return self.wait(running) in (0, 2)

    def on_cluster(self, *args: str) -> int:
        """:mod:`.own_cluster` in .venv's interpreter with this recording's cluster and ``args``."""
        return self._call(self.bin / "python", "-m", CLUSTER_DRIVER, "--root", self.root, "--machine", self.machine,
                          *self.cluster, *args)

    def record(self, recent: int, rev_range: str | None = None) -> None:
        venv = self.venv()
        self.machine_files()
        if self.cluster:  # the cluster's driver runs in .venv: made first, and the cluster checked before the work
            if venv is not None and venv.wait() != 0:
                raise RecordingError("could not set up .venv")
            venv = None
            if self.on_cluster("--check") != 0:
                raise RecordingError("the Dask cluster could not be had, or its client (.venv's detsim-track) did not "
                                     "start: said above")
        commits, notes = plan(self.root, self.machine, recent, rev_range)
        for note in notes:
            print(f"tracking run: {note}", file=sys.stderr)
        write_aside(self.root / RECORD, "".join(f"{c}\n" for c in commits).encode())
        if self.cluster:
            self._exact_on_cluster(commits)
        else:
            self._exact_here(commits, venv)
        # oldest first: the first is the one the exact phase left installed, so it is not installed again
        write_aside(self.root / RECORD_TIMED, "".join(f"{c}\n" for c in reversed(commits)).encode())
        if not self.recorded(self.benchmarks("1", "asv.conf.json", TIMED, RECORD_TIMED)):
            raise RecordingError("the timings could not be recorded")
        self.phase("recorded the timings (alone)")

    def _exact_on_cluster(self, commits: list[str]) -> None:
        """The first phase as Dask tasks (:mod:`.own_cluster`), from the environment made here."""
        self.phase(f"set up: {len(commits)} commits to record, the exact families on a Dask cluster")
        self.wait(self.asv("1", "asv.conf.json", "setup"))
        self.phase("environment ready")
        if self.on_cluster("--commits", self.root / RECORD) != 0:
            raise RecordingError("the exact families could not all be recorded on the cluster (said above)")
        self.phase("recorded counts, parity, hashes, reproducibility and peak memory (Dask tasks)")

    def _exact_here(self, commits: list[str], venv: subprocess.Popen | None) -> None:
        """The first phase on both cores: two asv processes (module docstring)."""
        first_env = second_config(self.root, self.root / SECOND_CONF, SECOND_RESULTS)
        shutil.rmtree(self.root / SECOND_RESULTS, ignore_errors=True)
        self.phase(f"set up: {len(commits)} commits to record")
        # both environments made before either records; the second a copy of the first: torch installs once
        self.wait(self.asv("1", "asv.conf.json", "setup"))
        copy_environments(self.root / first_env)
        self.wait(self.asv("2", SECOND_CONF, "setup"))
        if venv is not None and venv.wait() != 0:
            raise RecordingError("could not set up .venv")
        self.phase("environments ready")
        first = self.benchmarks("1", "asv.conf.json", EXACT_1, RECORD)
        if not self.recorded(self.benchmarks("2", SECOND_CONF, EXACT_2, RECORD)):
            self.wait(first)
            raise RecordingError("the second recording failed")
        if not self.recorded(first):
            raise RecordingError("the recording failed")
        merge_results(self.root / SECOND_RESULTS, self.root / "results" / "asv")
        write_where(self.root / "results" / "asv" / self.machine, commits, ())  # measured here now
        self.phase("recorded counts, parity, hashes, reproducibility and peak memory (both cores)")


def copy_environments(first_env: Path, suffix: str = "-second") -> None:
    """Each environment of ``first_env`` that asv finished, hard-linked to ``<first_env><suffix>`` where that has
    none yet (asv 0.6.6 takes an environment whose asv-env-info.json matches its configuration), but for what asv
    rewrites in place (the info file is copied; the install status, build folder and wheel cache are left for the
    copy to make), under a temporary name until whole."""
    for made in sorted(p for p in first_env.glob("*") if p.is_dir() and (p / "asv-env-info.json").exists()):
        copy = first_env.with_name(first_env.name + suffix) / made.name
        temporary = copy.with_name(copy.name + ".tmp")
        if copy.exists():
            continue
        try:
            shutil.rmtree(temporary, ignore_errors=True)
            copy.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["cp", "-al", str(made), str(temporary)], check=True, stderr=subprocess.PIPE)
            for path in (temporary / name for name in REWRITTEN):
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink(missing_ok=True)
            shutil.copy(made / "asv-env-info.json", temporary)
            temporary.rename(copy)
        except (OSError, subprocess.CalledProcessError):
            raise RecordingError(f"could not copy {made} to {copy}") from None
