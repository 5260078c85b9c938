"""Whether a torch device named on the command line can be used here, checked before any work (``cpu``
without importing torch)."""

from __future__ import annotations


def device_problem(name: str) -> str | None:
    """Why the torch device ``name`` cannot be used here, in a few words (``no CUDA device on this
    machine``), or None when it can."""
    if name == "cpu":
        return None
    import torch

    try:
        device = torch.device(name)
    except (RuntimeError, ValueError) as exc:
        return f"not a torch device ({_first_line(exc)})"
    if device.type == "cuda":
        if not torch.cuda.is_available():
            return "no CUDA device on this machine"
        found = torch.cuda.device_count()
        if device.index is not None and device.index >= found:
            return f"no CUDA device {device.index} on this machine ({found} found)"
        return None
    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError, ValueError) as exc:
        return f"cannot be used here ({_first_line(exc)})"
    return None


def _first_line(exc: BaseException) -> str:
    """The first sentence of ``exc``'s message (torch's can run to a page)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0].split(". ")[0]
