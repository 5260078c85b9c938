"""The ``detsim`` command as a user runs it: a whole process, from interpreter start to files written.

Measured in CPU seconds of the child process (user + system), which a busy shared machine inflates
far less than wall time.

The case is golden ``a01_cubic_mosflm_center`` (256², 4 steps per pixel), so the render is a small part
and most of the time is starting Python and importing torch: this track catches a slow import or a
slow start, not a slow engine. The command runs with one OpenMP thread, like the rest of the suite.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .common import CASES, THREADS, command_main, timing

CASE = "a01_cubic_mosflm_center"


class DetsimCommand:
    """CPU seconds of ``detsim <a01's arguments>`` in a fresh process (2 samples: each costs ~2 s)."""

    timer = staticmethod(timing.cpu_seconds)  # this process's and its finished children's CPU seconds
    rounds = 1
    repeat = (2, 2, 30.0)
    number = 1
    warmup_time = 0.0
    version = "1"

    def setup(self):
        if command_main() is None:
            raise NotImplementedError("this commit has no detsim command")
        self.command = Path(sys.executable).with_name("detsim")
        if not self.command.exists():
            raise NotImplementedError(f"no console script at {self.command}")
        case = next(c for c in CASES if c.id == CASE)
        self.args = list(case.args)
        self.workdir = tempfile.mkdtemp(prefix="detsim-cli-bench-")
        for item in case.folder.iterdir():  # input files, if the case has any
            if item.name not in ("image.bin", "stdout.txt", "args.txt"):
                shutil.copy(item, self.workdir)
        self.env = dict(os.environ, OMP_NUM_THREADS=str(THREADS), MKL_NUM_THREADS=str(THREADS))

    def teardown(self):
        shutil.rmtree(self.workdir, ignore_errors=True)

    def time_detsim_command(self):
        subprocess.run([str(self.command), *self.args], cwd=self.workdir, env=self.env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
