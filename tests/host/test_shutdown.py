"""detsim.host.shutdown: a program that asks for it exits with the collector's objects frozen, and only then;
not where a nanobind extension (Triton's) would print what is left as leaks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from detsim.host.shutdown import NANOBIND_MODULES

# an exit handler registered first runs last: it sees what the handlers after it did
CHILD = ("import atexit, gc, sys\n"
         "atexit.register(lambda: print('at exit', gc.get_freeze_count() > 0))\n"
         "if sys.argv[1] != 'not asked':\n"
         "    from detsim.host.shutdown import skip_final_collection\n"
         "    skip_final_collection()\n"
         "    skip_final_collection()  # as a command run twice in one process calls it\n"
         "if sys.argv[1] == 'nanobind':\n"
         "    sys.modules[sys.argv[2]] = sys  # loaded, as far as the exit handler can tell\n"
         "print('before', gc.get_freeze_count() > 0)\n")


@pytest.mark.parametrize("asked, frozen", [("asked", "True"), ("not asked", "False"), ("nanobind", "False")])
def test_the_collectors_objects_are_frozen_at_exit_only_where_asked(asked, frozen):
    done = subprocess.run([sys.executable, "-c", CHILD, asked, NANOBIND_MODULES[0]], capture_output=True, text=True,
                          check=True)
    assert done.stdout.splitlines() == ["before False", f"at exit {frozen}"] and done.stderr == ""
