"""A program's exit without the garbage collector's last passes: the one definition for the programs detsim owns.

As it exits, CPython runs its cycle collector again over every object it tracks; with torch loaded that is
~0.5 s of CPU, a quarter of a small ``detsim`` command's, and more after ``torch.compile``. A program that
calls :func:`skip_final_collection` freezes those objects (``gc.freeze``) once the exit handlers registered
after the call have run: its modules are still torn down and their objects released, and the standard streams
flushed, but no cycle is collected any more (Python never promised a finalizer at exit). Called by the
programs' own entry points (the ``detsim`` and ``detsim-track`` commands, a job's child process), never on
import: a program that imports detsim keeps its own exit.
"""

from __future__ import annotations

import atexit
import gc
import sys

# Extensions built with nanobind count the instances left at exit and print each as a leak: a process that
# loaded one (Triton's) exits with its final collection
NANOBIND_MODULES = ("triton._C.libtriton",)


def _freeze_at_exit() -> None:
    if not any(name in sys.modules for name in NANOBIND_MODULES):
        gc.freeze()


def skip_final_collection() -> None:
    """Freeze what the garbage collector tracks when this process exits (once, however often it is called)."""
    atexit.unregister(_freeze_at_exit)
    atexit.register(_freeze_at_exit)
