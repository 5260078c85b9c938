"""Recording aten ops through a ``TorchDispatchMode``: one event per op, its tensors hashed around it.

The recorder (:class:`~detsim.track.divergence.recorder.Recorder`) is passed in: it holds the record, the
run's fill of never-written memory, where empty-like ops allocated it, and the pause that keeps hashing
out of the record."""

from __future__ import annotations

import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from detsim.track.divergence.events import TensorInfo, argument_tensors, call_site, scalar_text, storage_key
from detsim.track.divergence.unwritten import fill

EMPTY_OPS = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"}
OVERWRITE_OPS = {"copy_", "fill_", "zero_", "normal_", "uniform_", "random_", "bernoulli_", "exponential_",
                 "geometric_", "cauchy_", "log_normal_", "set_", "resize_", "resize_as_"}
METADATA_OPS = {"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like",
                "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided", "sym_size", "sym_stride",
                "sym_numel", "sym_storage_offset"}  # read only the shape/dtype/device of their tensor inputs


def op_mode(recorder) -> TorchDispatchMode:
    """A dispatch mode feeding ``recorder`` (enter it to record).

    Torch wraps a mode's ``__torch_dispatch__`` so that Dynamo never traces it, which imports Dynamo
    (seconds); here the wrapper is put in place only once Dynamo is loaded, so recording eager code costs
    no import and compiled code never traces the recorder.
    """

    class _OpMode(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            _guard_against_dynamo(type(self))
            return record_op(recorder, func, args, kwargs or {})

    _guard_against_dynamo(_OpMode)
    return _OpMode()


def _guard_against_dynamo(cls) -> None:
    if "_dynamo_guarded" not in cls.__dict__ and "torch._dynamo" in sys.modules:
        cls._dynamo_guarded = True
        cls.__torch_dispatch__ = torch._disable_dynamo(cls.__dict__["__torch_dispatch__"], recursive=True)


def record_op(recorder, func, args: tuple, kwargs: dict):
    """Run one op and add its event to ``recorder`` (just run it while the recorder is paused)."""
    if recorder.is_paused:
        return func(*args, **kwargs)
    base = func._overloadpacket.__name__
    inputs, scalars = _op_inputs(recorder, func._schema, base, args, kwargs)
    where = call_site()
    node = torch._C._current_autograd_node()
    if node is not None:
        where = f"backward {node.name()}" + (f" (from {where})" if where else "")
    result = func(*args, **kwargs)
    outputs = []
    for tname, t in argument_tensors("out", result):
        if base in EMPTY_OPS:
            with recorder.paused():
                fill(t, recorder.fill)
            recorder.uninitialised[storage_key(t)] = f"#{len(recorder.record.events)} {func}" + \
                (f" at {where}" if where else "")
            outputs.append(recorder.info(tname, t, note="never written (empty)"))
        else:
            outputs.append(recorder.info(tname, t))
    if not outputs and result is not None and not isinstance(result, (torch.Tensor, list, tuple)):
        scalars["result"] = scalar_text(result)  # .item() and friends: the Python value it returned
    recorder.add(kind="op", name=str(func), where=where, inputs=inputs, outputs=outputs, scalars=scalars,
                 view=bool(func.is_view))
    return result


def _op_inputs(recorder, schema, base: str, args: tuple, kwargs: dict):
    """(tensor inputs hashed before the op, non-tensor arguments as text)."""
    inputs, scalars = [], {}
    for name, value, arg in _bind(schema, args, kwargs):
        tensors = argument_tensors(name, value)
        if not (arg is not None and arg.is_out):  # out= buffers are written, not read
            overwrite = bool(arg is not None and arg.is_write and base in OVERWRITE_OPS)
            inputs += [_input_info(recorder, base, tname, t, overwrite=overwrite) for tname, t in tensors]
        if not tensors and value is not None and not isinstance(value, torch.Tensor):
            scalars[name] = scalar_text(value)
    return inputs, scalars


def _input_info(recorder, base: str, name: str, t: torch.Tensor, *, overwrite: bool) -> TensorInfo:
    """A tensor input as read by the op: metadata only, overwritten, or hashed (never-written elements noted)."""
    if base in METADATA_OPS:
        return TensorInfo(name, None, list(t.shape), str(t.dtype).replace("torch.", ""), str(t.device),
                          compare=False, note="metadata only")
    info = recorder.info(name, t, compare=not overwrite, note="overwritten by the op" if overwrite else None)
    if info.unwritten and not overwrite:
        info.note = recorder.never_written_note(t, info.unwritten)
    return info


def _bind(schema, args: tuple, kwargs: dict):
    """(argument name, value, schema argument or None) for each positional and keyword argument."""
    arguments = list(schema.arguments)
    for i, value in enumerate(args):
        arg = arguments[i] if i < len(arguments) else None
        yield (arg.name if arg is not None else f"arg{i}"), value, arg
    by_name = {a.name: a for a in arguments}
    for name, value in kwargs.items():
        yield name, value, by_name.get(name)
