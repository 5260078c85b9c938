"""SIGTERM handled as Ctrl-C: the one definition for ``detsim`` and ``detsim-track``.

Inside :func:`terminate_as_interrupt`, SIGTERM raises :class:`Terminated`, a KeyboardInterrupt, wherever
the program is: whatever cleans up after Ctrl-C (temporary files removed, child processes killed) runs
for SIGTERM too, and the caller tells the two apart by the exception (exit 143 rather than 130).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so that it unwinds like an interrupt."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated(f"signal {signal.Signals(signum).name}")


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` while the block runs; the previous handler is restored afterwards.
    Only in the main thread: elsewhere signals cannot be handled, and they stay as they are."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
