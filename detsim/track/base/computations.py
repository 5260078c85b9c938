"""What the determinism and divergence commands run: a computation named on their command line, resolved into
a :class:`Computation` that turns (device, dtype, mode) into named output tensors.

Inputs: a computation's name. Outputs: a :class:`Computation` (or :class:`ComputationError`, one line); a
computation's outputs, ``{name: tensor}``. A computation is named by a golden case id (input files relative to
the case folder), a nanoBragg command line (relative to the working directory) or a callable
``module:function`` / ``path/to/file.py:function`` called as ``function(device=..., dtype=...)``. A simulation can also return gradients of ``image.sum()`` with respect to
configuration scalars (``--grad detector.distance_mm``, ``--grad crystal.cell[0]``): outputs ``grad:<param>``.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import torch

from detsim.track.base.golden import GoldenError, find_case, working_directory

DTYPES = {"float64": torch.float64, "float32": torch.float32}


class ComputationError(ValueError):
    """A computation that cannot be resolved (unknown case id, bad command line, missing callable)."""


@dataclass(frozen=True)
class Computation:
    """A named computation, run as ``outputs = computation.run(device, dtype, mode)``; ``spec`` is what named it
    on the command line."""

    name: str
    kind: str  # "golden", "nanobragg" or "callable"
    spec: str
    modes: tuple[str, ...]  # detsim's MODES for simulations, ("eager",) for callables
    run: Callable[[str, torch.dtype, str], dict[str, torch.Tensor]] = dataclasses.field(repr=False, compare=False)

    def unavailable(self, device: str, mode: str) -> str | None:
        """Why ``mode`` cannot run on ``device`` here (None when it can)."""
        if mode not in self.modes:
            return f"{self.kind} computations have no {mode!r} mode"
        if self.kind == "callable":
            return None
        import detsim.rendering.engine as engine

        available = getattr(engine, "available_modes", None)
        if available is not None and mode not in available(device):
            hint = " (Triton's interpreter needs TRITON_INTERPRET=1 set before detsim is imported)" \
                if mode == "triton" and not device.startswith("cuda") else ""
            return f"detsim.rendering.engine.available_modes({device!r}) does not list {mode!r}{hint}"
        return None


def resolve_case(case_id: str, grads: tuple[str, ...] = (), chunk_pixels: int | None = None,
                 directory: Path | None = None) -> Computation:
    """A golden case by id or unique prefix (``c02``), in ``directory`` (default: the project's golden folder)."""
    try:
        case = find_case(case_id, directory)
    except GoldenError as exc:
        raise ComputationError(str(exc)) from None
    return _simulation(case.id, "golden", case_id, list(case.args), case.folder, grads, chunk_pixels)


def resolve_command_line(command_line: str, grads: tuple[str, ...] = (), chunk_pixels: int | None = None
                         ) -> Computation:
    """A nanoBragg command line (with or without a leading program name); files relative to the cwd."""
    args = shlex.split(command_line)
    if args and not args[0].startswith("-"):
        args = args[1:]
    return _simulation("cmdline:" + " ".join(args), "nanobragg", command_line, args, None, grads, chunk_pixels)


def _simulation(name: str, kind: str, spec: str, args: list[str], case_dir: Path | None,
                       grads: tuple[str, ...], chunk_pixels: int | None) -> Computation:
    from detsim import config_from_argv, MODES

    try:
        with working_directory(case_dir):
            config = config_from_argv(args)
    except (ValueError, OSError) as exc:
        raise ComputationError(f"{name}: {exc}") from None
    for path in grads:
        _read_param(config, path)  # fail early on a bad parameter name

    def run(device: str, dtype: torch.dtype, mode: str) -> dict[str, torch.Tensor]:
        from detsim import prepare, render

        cfg, params = config, {}
        for path in grads:
            cfg, params[path] = _with_param_tensor(cfg, path)
        with working_directory(case_dir):
            # each run prepares its setup anew, as a new process does (reuse=False: none taken from the core's
            # setup cache, none left in it), so that two runs of one computation in one process take one path
            setup = prepare(cfg, device=device, dtype=dtype, reuse=False)
            image, _ = render(setup, chunk_pixels=chunk_pixels, mode=mode)
        outputs = {"image": image.detach()}
        if params:
            values = torch.autograd.grad(image.sum(), list(params.values()))
            outputs.update({f"grad:{p}": g.detach() for p, g in zip(params, values)})
        return outputs

    return Computation(name=name, kind=kind, spec=spec, modes=tuple(MODES), run=run)


_PARAM = re.compile(r"^(crystal|detector|beam|sampling)\.(\w+)(?:\[(\d)\])?$")


def _read_param(config, path: str):
    match = _PARAM.match(path)
    if not match:
        raise ComputationError(f"gradient parameter {path!r}: expected section.field or section.field[i], "
                          "e.g. detector.distance_mm or crystal.cell[0]")
    section, field_name, index = match.groups()
    sub = getattr(config, section)
    if not hasattr(sub, field_name):
        raise ComputationError(f"gradient parameter {path!r}: {section} has no field {field_name!r}")
    value = getattr(sub, field_name)
    if index is not None:
        if not isinstance(value, tuple) or int(index) >= len(value):
            raise ComputationError(f"gradient parameter {path!r}: {field_name} is not a tuple of that length")
        value = value[int(index)]
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ComputationError(f"gradient parameter {path!r}: {value!r} is not a number")
    return match.groups(), float(value)


def _with_param_tensor(config, path: str):
    """The configuration with one scalar replaced by a float64 leaf tensor that requires grad."""
    (section, field_name, index), value = _read_param(config, path)
    leaf = torch.tensor(value, dtype=torch.float64, requires_grad=True)
    sub = getattr(config, section)
    new_value = leaf
    if index is not None:
        items = list(getattr(sub, field_name))
        items[int(index)] = leaf
        new_value = tuple(items)
    sub = dataclasses.replace(sub, **{field_name: new_value})
    return dataclasses.replace(config, **{section: sub}), leaf


def load_callable(spec: str) -> Callable:
    """``package.module:function`` or ``path/to/file.py:function`` (attribute paths allowed)."""
    module_part, sep, attr = spec.rpartition(":")
    if not sep or not module_part or not attr:
        raise ComputationError(f"{spec!r}: expected module:function or file.py:function")
    if module_part.endswith(".py") or os.sep in module_part:
        path = Path(module_part).resolve()
        if not path.exists():
            raise ComputationError(f"{spec!r}: no file {path}")
        name = "_detsim_computation_" + re.sub(r"\W", "_", str(path))
        module = sys.modules.get(name)
        if module is None:
            file_spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(file_spec)
            sys.modules[name] = module
            try:
                file_spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
    else:
        try:
            module = importlib.import_module(module_part)
        except ModuleNotFoundError as exc:
            raise ComputationError(f"{spec!r}: cannot import {module_part} ({exc})") from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ComputationError(f"{spec!r}: {module_part} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ComputationError(f"{spec!r}: {attr} is not callable")
    return obj


def resolve_callable(spec: str) -> Computation:
    """A user function ``f(device=..., dtype=...)`` returning tensors, as a computation."""
    fn = load_callable(spec)

    def run(device: str, dtype: torch.dtype, mode: str) -> dict[str, torch.Tensor]:
        return output_tensors(fn(device=device, dtype=dtype))

    return Computation(name=spec, kind="callable", spec=spec, modes=("eager",), run=run)


def output_tensors(result) -> dict[str, torch.Tensor]:
    """Outputs of a callable as ``{name: tensor}``: a tensor is ``out``, a sequence ``out0, out1...``."""
    if isinstance(result, torch.Tensor):
        return {"out": result.detach()}
    if isinstance(result, Mapping):
        items = list(result.items())
    elif isinstance(result, (tuple, list)):
        items = [(f"out{i}", v) for i, v in enumerate(result)]
    else:
        raise TypeError(f"expected a tensor, a sequence or a mapping of tensors, got {type(result).__name__}")
    outputs = {}
    for key, value in items:
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"output {key!r} is {type(value).__name__}, not a tensor")
        outputs[str(key)] = value.detach()
    return outputs
