"""Planted non-determinism in eager PyTorch, for the determinism and divergence tests.

Every function takes ``device`` and ``dtype`` keywords (the contract of ``--call`` targets) and returns
tensors. The line of each planted culprit carries a ``# culprit`` marker and its first victim a
``# victim`` marker, so tests can check the finder names the exact line.
"""

from __future__ import annotations

import torch

SIZE = 64
_STATE = {"calls": 0}


def _define_drift():
    """``planted::drift(x)``: x plus a hidden call counter; the output is not a function of the input."""
    try:
        return torch.ops.planted.drift
    except (AttributeError, RuntimeError):
        pass
    library = torch.library.Library("planted", "DEF")
    library.define("drift(Tensor x) -> Tensor")

    def drift(x):
        _STATE["calls"] += 1
        return x + _STATE["calls"] * 1e-6

    library.impl("drift", drift, "CompositeExplicitAutograd")
    _STATE["library"] = library  # the definition lives as long as this object
    return torch.ops.planted.drift


drift = _define_drift()


def _ramp(device, dtype):
    return torch.linspace(0.0, 1.0, SIZE, device=device, dtype=dtype)


def hidden_counter(device="cpu", dtype=torch.float64):
    """A custom op with a hidden counter, between deterministic ops."""
    y = _ramp(device, dtype) * 2.0
    z = drift(y)  # culprit
    w = torch.sin(z)  # victim
    return w.sum()


def unseeded_noise(device="cpu", dtype=torch.float64):
    """Dithering with an unseeded random draw."""
    x = _ramp(device, dtype)
    noise = torch.rand(SIZE, device=device, dtype=dtype)  # culprit
    scaled = noise * 1e-3  # victim
    return (x + scaled).cumsum(0)


def deterministic(device="cpu", dtype=torch.float64):
    """Seeded randomness, uninitialised buffers that are written before being read, out= ops, autograd."""
    g = torch.Generator(device=device).manual_seed(1234)
    x = torch.rand(SIZE, generator=g, device=device, dtype=dtype).requires_grad_(True)
    buf = torch.empty(SIZE, device=device, dtype=dtype)
    buf.copy_(x.detach())
    out = torch.empty_like(buf)
    torch.mul(buf, 3.0, out=out)
    filled = torch.empty(4, device=device, dtype=dtype).fill_(2.0)
    loss = (x.sin() * out).sum() + filled.sum()
    (grad,) = torch.autograd.grad(loss, x)
    return {"loss": loss.detach(), "grad": grad}


def thread_dependent_sum(device="cpu", dtype=torch.float32):
    """One partial sum per torch thread, then their sum: the reduction order follows the thread count."""
    g = torch.Generator().manual_seed(7)
    x = (torch.rand(1 << 15, generator=g, dtype=torch.float64) * 2e3 - 1e3).to(device=device, dtype=dtype)
    parts = torch.stack([part.sum() for part in x.tensor_split(torch.get_num_threads())])
    return parts.sum().reshape(1)


def drifting(device="cpu", dtype=torch.float64):
    """Different at every call (the hidden counter): repeats of one configuration disagree."""
    return drift(_ramp(device, dtype))


def crashes_in_float32(device="cpu", dtype=torch.float64):
    """Raises for float32, like a path that fails to compile for one configuration."""
    if dtype == torch.float32:
        raise RuntimeError("planted failure: no float32 kernel for this configuration")
    return _ramp(device, dtype) ** 2
