"""Planted cases of the kinds the divergence finder once got wrong, for its tests.

* never-written memory: a scratch buffer padded to a power of two whose tail is never written (read by a
  masked ``where`` and a comparison, copied, but never into a result), and an accumulator started from
  ``empty`` whose garbage does reach the result;
* state leaking from run A into run B: a module-level running mean updated in place after it is read, and
  a lazily built lookup table normalised in place on every call;
* a branch that runs the same op on another source line;
* operands picked in an order that changes between runs (each operand reproducible on its own);
* a tensor made from a changing Python value.

Every function takes ``device`` and ``dtype`` keywords (the contract of ``--call`` targets) and returns
tensors. Lines the tests expect the finder to name carry a ``# marker`` comment (see ``markers.py``).
"""

from __future__ import annotations

import torch

WIDTH = 24
PADDED = 32  # WIDTH rounded up to a power of two


def _signal(device, dtype):
    return torch.linspace(-2.0, 2.0, WIDTH, device=device, dtype=dtype)


def padded_scratch(device="cpu", dtype=torch.float64):
    """A power-of-two scratch buffer; the tail is read (masked, compared, copied) but never reaches a result."""
    scratch = torch.empty(PADDED, device=device, dtype=dtype)
    scratch[:WIDTH] = _signal(device, dtype).exp()
    inside = torch.arange(PADDED, device=device) < WIDTH
    kept = torch.where(inside, scratch, torch.zeros((), device=device, dtype=dtype))
    positive = scratch > 0  # compares the tail too: garbage in, but only the head is used below
    snapshot = scratch.clone()
    return kept.sum() + positive[:WIDTH].sum() + snapshot[:WIDTH].max()


def garbage_accumulator(device="cpu", dtype=torch.float64):
    """An accumulator started from ``empty`` instead of ``zeros``: the garbage reaches the result."""
    acc = torch.empty(WIDTH, device=device, dtype=dtype)  # allocated
    for k in range(3):
        acc += _signal(device, dtype) * k  # reads garbage
    return acc.cumsum(0)


_RUNNING_MEAN = torch.zeros(WIDTH, dtype=torch.float64)


def running_mean_update(device="cpu", dtype=torch.float64):
    """Normalise by a module-level running mean, then update that mean in place: the next run sees it."""
    x = _signal(device, dtype).cos()
    centred = x - _RUNNING_MEAN  # reader
    _RUNNING_MEAN.lerp_(x.detach(), 0.25)  # writer
    return centred.square().mean()


_TABLES: dict[int, torch.Tensor] = {}


def cached_table(device="cpu", dtype=torch.float64):
    """A lookup table built on first use and kept; each call normalises it in place again."""
    if WIDTH not in _TABLES:
        _TABLES[WIDTH] = torch.arange(1, WIDTH + 1, dtype=dtype)
    table = _TABLES[WIDTH]
    total = table.sum()  # reader
    table.div_(total)  # writer
    return (_signal(device, dtype) * table).sum()


_CALLS = {"branchy": 0, "rotating": 0, "stamped": 0}


def branch_on_call_count(device="cpu", dtype=torch.float64):
    """The first call of a pair takes one branch, the second the other; both multiply, on other lines."""
    _CALLS["branchy"] += 1
    x = _signal(device, dtype)
    if _CALLS["branchy"] % 2:
        y = torch.mul(x, 1.5)  # branch-a
    else:
        y = torch.mul(x, 1.5 + 1e-12)  # branch-b
    return y.sum()


def rotating_terms(device="cpu", dtype=torch.float32):
    """Terms computed the same way in every run, summed in an order that rotates between runs."""
    _CALLS["rotating"] += 1
    x = _signal(device, dtype)
    terms = [x.exp(), x.sin() * 1e4, x.cos() * 1e-4, x * 3.3]  # made
    turn = _CALLS["rotating"] % len(terms)
    order = terms[turn:] + terms[:turn]
    total = order[0] + order[1]  # summed
    for term in order[2:]:
        total = total + term
    return total


def stamped_by_counter(device="cpu", dtype=torch.float64):
    """A tensor made from a Python counter (a step number) scales the signal."""
    _CALLS["stamped"] += 1
    step = torch.tensor([float(_CALLS["stamped"]), 1.0], device=device, dtype=dtype)  # made
    return _signal(device, dtype) * step[0] + step[1]
