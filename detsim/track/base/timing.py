"""The one timed render of the suite: the GPU check, ``detsim-track speed``, ``detsim-track parity`` and the asv
suite time a render this way.

A timed call runs without autograd, then waits for the device's last kernel (CUDA; nothing to wait for on a CPU),
and reads two clocks around both: wall seconds (``time.perf_counter``) and CPU seconds of this process and of the
children it reaped meanwhile (a render's forked workers, :mod:`detsim.host.processes`). :func:`timed_calls` adds
the untimed warm-up (what compiles, for a compiled path, and what loads lazily) and repeats a call, no more often
than fits a time box. Imports the standard library only: the asv suite loads it beside any commit's ``detsim``,
so the caller passes its ``torch`` in.
"""

from __future__ import annotations

import resource
import statistics
import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Timed:
    """What a timed call returned (an image, or the engine's ``(image, info)``), and its seconds."""

    result: object
    wall_s: float
    cpu_s: float  # user + system, of this process and the children it reaped during the call


def cpu_seconds() -> float:
    """CPU seconds so far of this process and of the children it has reaped."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def synchronize(torch, device) -> None:
    """Wait for ``device``'s last kernel (a torch device or its name; a CPU has nothing to wait for)."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(torch, call: Callable[[], object], device) -> Timed:
    """``call()`` without autograd, timed to ``device``'s last kernel."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    with torch.no_grad():
        result = call()
    synchronize(torch, device)
    return Timed(result, time.perf_counter() - wall, cpu_seconds() - cpu)


def timed_calls(torch, call: Callable[[], object], device, calls: int, *, warm_up: Callable[[], object] | None = None,
                within_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> list[Timed]:
    """``warm_up()`` once untimed (where given), then ``call()`` timed ``calls`` times, but with ``within_s`` no
    more than fit that many seconds by the mean call so far (at least once): a slow call is timed fewer times, not
    past its box."""
    if warm_up is not None:
        timed(torch, warm_up, device)
    answers, started = [], clock()
    while len(answers) < calls:
        answers.append(timed(torch, call, device))
        spent = clock() - started
        if within_s is not None and spent + spent / len(answers) > within_s:
            break
    return answers


def summary(seconds: list[float], pixel_steps: int) -> dict:
    """A list of one workload's timed calls: ``calls``, ``best_s``, ``median_s`` and ``pixel_steps_per_s`` (of the
    median)."""
    median = statistics.median(seconds)
    return {"calls": len(seconds), "best_s": round(min(seconds), 7), "median_s": round(median, 7),
            "pixel_steps_per_s": pixel_steps / median}
