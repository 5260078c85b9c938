"""detsim as the recorder's first target: its own recent commits recorded with its asv suite (``benchmarks/``)
in environments asv makes and installs each commit into, with the families only detsim has (instruction
counts, the compiled and Triton paths, peak memory, device costs). What a target's recording does with a
build venv and the suite for targets (:mod:`.target`), this does with asv's own environments.

Each commit is recorded in two phases. First what no load can change (instruction counts, parity, image
hashes, reproducibility), on both cores at once: one asv process per core, each with its own environment
and benchmarks (asv.conf.json's env_dir, and the same with -second: the second runs from a generated copy of
asv.conf.json, :data:`SECOND_CONF`, and writes to :data:`SECOND_RESULTS`, whose files are then merged into
results/asv/, so no file is written by both: :mod:`.second`). Then the timings, alone on the machine, into
the same result files. Which commits: :mod:`.plan`.

Standard library only, like every module :mod:`.steps` runs: ``.ci/track`` runs it by path, so a commit that
breaks the package it measures is recorded as failed (and judged NOT MEASURED), never breaks the recording.
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
from .plan import plan
from .second import merge_results, second_config

VENV_BIN = Path(".venv") / "bin"
SECOND_RESULTS = ".asv/results-second"
SECOND_CONF = ".asv-second.conf.json"  # asv reads paths from the folder its config is in
RECORD = Path(".asv") / "record.txt"  # the commits to record, newest first (asv's HASHFILE)
RECORD_TIMED = Path(".asv") / "record-timed.txt"  # the same, oldest first
# The benchmarks of each phase (asv matches these with re.search against every benchmark's name). The two halves
# that no load changes take about as long a commit (~18 s each): the instruction counts (valgrind's ~21 s only
# where the counted code changed, else reused: benchmarks/counts.py), the eager golden renders (parity, hashes),
# the eager reproducibility runs and the device costs counted on the CPU (launches per render on each path,
# ~40-60 s a commit; the fused kernel's compile-only report); then the compiled path's images and its
# reproducibility run, and the peak memory (a high-water mark, not a time). The timings, alone, are everything else.
EXACT_1 = (r"^bench_(cost|device_cost|parity)\.|^bench_determinism\.(?!CompiledHashes\.)"
           r"|^bench_reproducibility\.(?!CompiledReproducibility\.)")
EXACT_2 = (r"^bench_determinism\.CompiledHashes\.|^bench_reproducibility\.CompiledReproducibility\."
           r"|^bench_engine\.LargeDetectorMemory\.")
TIMED = (r"^(?!bench_(cost|device_cost|parity|determinism|reproducibility)\.|bench_engine\.LargeDetectorMemory\.)")
ASV_ENV_LIST = re.compile(r"^\[<asv")  # asv 0.6.6's setup prints its list of environments (and exits 1) when done
REWRITTEN = ("asv-env-info.json", "asv-install-status.json", "asv-build-cache", "project")  # asv's, in place


def say(line: str) -> None:
    print(f"tracking run: {line}", file=sys.stderr, flush=True)


class OwnRecording:
    """Records detsim's commits in the checkout ``root`` on ``machine`` (see the module docstring)."""

    def __init__(self, root: Path, machine: str):
        self.root, self.machine = Path(root), machine
        self.bin = self.root / VENV_BIN
        self.started = time.monotonic()
        self._lock = threading.Lock()

    def phase(self, what: str) -> None:
        say(f"{what} ({time.monotonic() - self.started:.0f} s)")

    def _call(self, *argv, **kwargs) -> int:
        return subprocess.run([str(a) for a in argv], cwd=self.root, **kwargs).returncode

    # ---- .venv, asv's machine files, the tools' caches

    def venv(self) -> subprocess.Popen | None:
        """.venv made or brought up to date. On a fresh clone .venv's asv and virtualenv are installed first
        (seconds; the asv pin is pyproject.toml's), so that asv makes its environment while make installs torch
        and the rest into .venv: two installs on two cores, not one and then another (the make returned, still
        running). With asv already there, make brings .venv up to date first."""
        if os.access(self.bin / "asv", os.X_OK):
            if self._call("make", "venv", stdout=sys.stderr) != 0:
                raise RecordingError("could not set up .venv")
            return None
        pins = re.findall(r'"(asv==[^"]*)"', (self.root / "pyproject.toml").read_text())
        made = os.access(self.bin / "python", os.X_OK) or self._call("python3", "-m", "venv", ".venv") == 0
        if not made or self._call(self.bin / "python", "-m", "pip", "install", "-q", *pins, "virtualenv",
                                  stdout=sys.stderr) != 0:
            raise RecordingError("could not install asv into .venv")
        return subprocess.Popen(["make", "venv"], cwd=self.root, stdout=sys.stderr)

    def environment(self) -> None:
        """Tools' caches stay in the checkout: virtualenv's app data (the seed wheels and interpreter facts of
        asv's environments; else ~/.cache/virtualenv). Each recording's asv keeps its machine file in a home of
        its own in the checkout: every ``asv run`` rewrites ~/.asv-machine.json in place (not atomically), so
        two recordings starting together (or another asv on the host) could read it half-written. What else
        reads the home (pip's and git's settings, caches) keeps the user's. torch.compile compiles on its own
        core only, so that one recording's compiles never take the other's core."""
        home = Path.home()
        os.environ["VIRTUALENV_APP_DATA"] = str(self.root / ".asv" / "virtualenv-app-data")
        os.environ.setdefault("XDG_CONFIG_HOME", str(home / ".config"))
        os.environ.setdefault("XDG_CACHE_HOME", str(home / ".cache"))
        os.environ.setdefault("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
        if not os.environ.get("PIP_CONFIG_FILE") and (home / ".pip" / "pip.conf").is_file():
            os.environ["PIP_CONFIG_FILE"] = str(home / ".pip" / "pip.conf")
        os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
        for home_of in (None, "1", "2"):  # the host's (re-measuring reads it), then each recording's
            env = {**os.environ}
            if home_of is not None:
                env["HOME"] = str(self.root / ".asv" / f"home-{home_of}")
                Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
            if self._call(self.bin / "asv", "machine", "--yes", "--machine", self.machine, env=env,
                          stdout=subprocess.DEVNULL) != 0:
                raise RecordingError(f"asv machine --machine {self.machine} failed")

    # ---- asv, one recording per core

    def asv(self, label: str, config: str, *args: str) -> subprocess.Popen:
        """asv with ``config`` in recording ``label``'s home, its lines on stdout prefixed ``[label]``."""
        env = {**os.environ, "HOME": str(self.root / ".asv" / f"home-{label}"), "PYTHONUNBUFFERED": "1"}
        running = subprocess.Popen([str(self.bin / "asv"), "--config", config, *args], cwd=self.root, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        setup = args[:1] == ("setup",)
        running.copier = threading.Thread(target=self._copy, args=(running, label, setup), daemon=True)
        running.copier.start()
        return running

    def _copy(self, running: subprocess.Popen, label: str, setup: bool) -> None:
        for line in running.stdout:
            if not (setup and ASV_ENV_LIST.match(line)):
                with self._lock:
                    sys.stdout.write(f"[{label}] {line}")
                    sys.stdout.flush()

    @staticmethod
    def wait(running: subprocess.Popen) -> int:
        code = running.wait()
        running.copier.join()
        return code

    def run_benchmarks(self, label: str, config: str, benchmarks: str, commits: Path) -> subprocess.Popen:
        return self.asv(label, config, "run", "--machine", self.machine, "--record-samples", "--bench", benchmarks,
                        f"HASHFILE:{commits}")

    @classmethod
    def recorded(cls, running: subprocess.Popen) -> bool:
        """asv run exits 2 when a benchmark failed: recorded as failed, the judge decides."""
        return cls.wait(running) in (0, 2)

    # ---- the recording

    def environments(self, first_env: Path, venv: subprocess.Popen | None) -> None:
        """Both environments made before either records. asv 0.6.6's setup exits 1 even when it made them: its
        status is not looked at; an environment it could not make fails the asv run, which makes it. The second
        environment starts as a copy of the first (:func:`copy_environments`), so torch is installed once."""
        self.wait(self.asv("1", "asv.conf.json", "setup"))
        copy_environments(self.root / first_env)
        self.wait(self.asv("2", SECOND_CONF, "setup"))
        if venv is not None and venv.wait() != 0:
            raise RecordingError("could not set up .venv")

    def record(self, recent: int, rev_range: str | None = None) -> None:
        venv = self.venv()
        self.environment()
        commits, notes = plan(self.root, self.machine, recent, rev_range)
        for note in notes:
            say(note)
        write_aside(self.root / RECORD, "".join(f"{c}\n" for c in commits).encode())
        first_env = second_config(self.root, self.root / SECOND_CONF, SECOND_RESULTS)
        shutil.rmtree(self.root / SECOND_RESULTS, ignore_errors=True)
        self.phase(f"set up: {len(commits)} commits to record")
        self.environments(Path(first_env), venv)
        self.phase("environments ready")
        first = self.run_benchmarks("1", "asv.conf.json", EXACT_1, RECORD)
        second = self.run_benchmarks("2", SECOND_CONF, EXACT_2, RECORD)
        if not self.recorded(second):
            self.wait(first)
            raise RecordingError("the second recording failed")
        if not self.recorded(first):
            raise RecordingError("the recording failed")
        merge_results(self.root / SECOND_RESULTS, self.root / "results" / "asv")
        self.phase("recorded counts, parity, hashes, reproducibility and peak memory (both cores)")
        # the timings take the commits oldest first: the first is the one the exact phase left installed in the
        # first environment, so it is not installed again
        write_aside(self.root / RECORD_TIMED, "".join(f"{c}\n" for c in reversed(commits)).encode())
        if not self.recorded(self.run_benchmarks("1", "asv.conf.json", TIMED, RECORD_TIMED)):
            raise RecordingError("the timings could not be recorded")
        self.phase("recorded the timings (alone)")


def copy_environments(first_env: Path) -> None:
    """Each environment of ``first_env`` copied to ``<first_env>-second`` where that has none yet: the same
    requirements, and asv 0.6.6 takes an environment whose asv-env-info.json matches its configuration. Hard
    links, but for what asv rewrites in place (its JSON files: the info file is copied, the install status,
    build folder and wheel cache are left for the copy to make), under a temporary name until whole."""
    second = first_env.with_name(first_env.name + "-second")
    for made in sorted(p for p in first_env.glob("*") if p.is_dir()):
        copy = second / made.name
        if copy.exists() or not (made / "asv-env-info.json").exists():
            continue
        temporary = copy.with_name(copy.name + ".tmp")
        try:
            second.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(temporary, ignore_errors=True)
            subprocess.run(["cp", "-al", str(made), str(temporary)], check=True, stderr=subprocess.PIPE)
            for rewritten in REWRITTEN:
                path = temporary / rewritten
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink(missing_ok=True)
            shutil.copy(made / "asv-env-info.json", temporary)
            temporary.rename(copy)
        except (OSError, subprocess.CalledProcessError):
            raise RecordingError(f"could not copy {made} to {copy}") from None
