"""A progress line on stderr for a run of many tasks: done, failed (and retried) and left, and the time left at the
pace so far. The batch's frames use it, and so do the tasks of a recording on a cluster (the suite's).

On a terminal the line is redrawn in place; elsewhere (a log file) a line is written every few seconds, and
the last state always.
"""

from __future__ import annotations

import sys
import time


class TaskProgress:
    """``what``: the line's first word(s); ``began``: when the tasks began (a ``time.monotonic()``; default now)."""

    def __init__(self, total: int, stream=None, every_s: float | None = None, what: str = "detsim batch",
                 began: float | None = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.tty = self.stream.isatty()
        self.every_s = every_s if every_s is not None else (0.2 if self.tty else 5.0)
        self.total, self.what, self.done, self.failed, self.retried = total, what, 0, 0, 0
        self.start = time.monotonic() if began is None else began
        self.shown_at = -float("inf")

    def line(self) -> str:
        from detsim.commandline.command import _clock  # the command's m:ss; imported when drawn (numpy with it)

        finished = self.done + self.failed
        left = self.total - finished
        elapsed = time.monotonic() - self.start
        eta = f"~{_clock(elapsed / finished * left)}" if finished else "?"
        retried = f", {self.retried} retried" if self.retried else ""
        return f"{self.what}: {self.done} done, {self.failed} failed{retried}, {left} left, {eta} to go"

    def finished(self, ok: bool) -> None:
        if ok:
            self.done += 1
        else:
            self.failed += 1
        self.show()

    def retrying(self) -> None:
        self.retried += 1

    def show(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.shown_at < self.every_s:
            return
        self.shown_at = now
        self.stream.write(("\r" + self.line() + "\033[K") if self.tty else self.line() + "\n")
        self.stream.flush()

    def close(self) -> None:
        self.show(force=True)
        if self.tty:
            self.stream.write("\n")


__all__ = ["TaskProgress"]
