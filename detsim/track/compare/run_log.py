"""The one log format of a run: tensor digests, events (one aten op or Triton launch each) and the
:class:`RunLog` of one run (what ran, where, its results' digests, the events it did when traced op by op
(:mod:`.tracer`), how it ended), which round-trips through JSON so that runs traced apart compare. A run of
the determinism matrix is a log without events, its :class:`RunConfig` naming the cell it fills.

A digest is the sha256 of a tensor's native bytes; never-written memory is left out of it: like
``torch.utils.deterministic.fill_uninitialized_memory``, but run A and run B fill it with different
sentinels (large finite values of opposite signs, with a mantissa no computation is likely to produce
exactly), so an op that reads it gives different outputs while its inputs hash the same. Dtypes without a
value that rare (bool, 8-bit types, unsigned integers wider than 8 bits) are zeroed in both runs. The
determinism matrix digests its outputs here too (:func:`output_log`), adding the sha256 of their float32
bytes (what ``-floatfile`` writes)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from detsim.track.base.hashing import sha256_bytes
from detsim.track.base.output import json_number
from detsim.track.base.status import Status
from detsim.track.base.runtime import tensor_bytes, tensor_sha256

_FLOAT = (float.fromhex("-0x1.5a5a5a5a5a5a5p+99"), float.fromhex("0x1.a5a5a5a5a5a5ap+98"))
_HALF = (float.fromhex("-0x1.5a4p+14"), float.fromhex("0x1.a58p+13"))  # float16 tops out at 65504
_INT = {torch.int64: (-0x5A5A5A5A5A5A5A5B, 0x25A5A5A5A5A5A5A5), torch.int32: (-0x5A5A5A5B, 0x25A5A5A5),
        torch.int16: (-0x5A5B, 0x25A5)}
_COMPONENT = {torch.complex128: torch.float64, torch.complex64: torch.float32, torch.complex32: torch.float16}


def sentinel(dtype: torch.dtype, run: int):
    """The value never-written elements of ``dtype`` hold in run ``run`` (0: A, 1: B); None: no such value."""
    if dtype in _COMPONENT:
        value = sentinel(_COMPONENT[dtype], run)
        return complex(value, value)
    if dtype == torch.float16:
        return _HALF[run % 2]
    if dtype in (torch.float64, torch.float32, torch.bfloat16):
        return float(torch.tensor(_FLOAT[run % 2], dtype=dtype).item())  # the value as that dtype holds it
    if dtype in _INT:
        return _INT[dtype][run % 2]
    return None


def fill(t: torch.Tensor, run: int) -> None:
    """Fill a freshly allocated tensor with the run's sentinel (zeros where its dtype has none)."""
    if t.is_sparse or t.device.type == "meta" or t.numel() == 0:
        return
    value = sentinel(t.dtype, run)
    try:
        with torch.no_grad():
            t.fill_(0 if value is None else value)
    except (RuntimeError, TypeError):
        pass  # quantized and other exotic layouts keep what they hold


def mask(data: torch.Tensor, run: int) -> torch.Tensor | None:
    """Where a CPU tensor still holds the run's sentinel (None when its dtype has no sentinel)."""
    value = sentinel(data.dtype, run)
    if value is None:
        return None
    if data.is_complex():
        return (data.real == value.real) & (data.imag == value.imag)
    return data == value


def canonical(data: torch.Tensor, run: int | None) -> tuple[str, int, torch.Tensor]:
    """(sha256, never-written count, the written values) of a contiguous CPU tensor; never-written elements
    are hashed as zeros, followed by the map of where they are."""
    where = mask(data, run) if run is not None else None
    if where is None or not bool(where.any()):
        return tensor_sha256(data), 0, data.reshape(-1)
    zeroed = data.clone()
    zeroed[where] = 0
    digest = sha256_bytes(tensor_bytes(zeroed) + b"\0never-written:" + tensor_bytes(where))
    return digest, int(where.sum()), data[~where]


# torch's and the tracking suite's (detsim/track) own frames, as imported and with links resolved (a venv
# may be a link: frames name either)
_SKIPPED_DIRS = tuple({str(folder) for path in (Path(torch.__file__).parent, Path(__file__).parent.parent)
                       for folder in (path.absolute(), path.resolve())})


@dataclass
class TensorInfo:
    """A tensor as traced: its hash (None when it could not be read) and cheap statistics."""

    name: str
    hash: str | None
    shape: list[int]
    dtype: str
    device: str
    compare: bool = True  # False: content not read (overwritten, write-only, metadata), not compared
    note: str | None = None
    stats: dict | None = None  # {"sum": float, "absmax": float} of the values, as float64
    written: bool = True  # kernel arguments: whether the launch changed the content
    unwritten: int = 0  # elements never written (still holding the run's fill), left out of the hash
    float32: str | None = None  # a matrix run's output: the sha256 of its float32 bytes (what -floatfile writes)


@dataclass
class Event:
    """One traced op or kernel launch (a kernel's grid and config may be filled in after the launch)."""

    index: int
    kind: str  # "op" or "kernel"
    name: str  # "aten.add.Tensor", "planted.drift.default", or the kernel's name
    where: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    scalars: dict[str, str] = field(default_factory=dict)  # non-tensor arguments, as text
    grid: list | None = None
    config: dict | None = None  # kernel launch configuration (constexprs, num_warps, Inductor config)
    view: bool = False  # an op whose output aliases its input (slice, view, ...): it moves no data

    def describe(self) -> str:
        return f"#{self.index} {self.kind} {self.name}" + (f" at {self.where}" if self.where else "")


@dataclass(frozen=True)
class RunConfig:
    """Where a computation ran: one device, dtype, mode and thread count (a row and column of the matrix)."""

    computation: str  # its name (Computation.name)
    device: str
    dtype: str
    mode: str
    threads: int

    def label(self) -> str:
        return f"{self.device}/{self.dtype}/{self.mode}/threads={self.threads}"


@dataclass
class RunLog:
    """One run: what ran (``label``; ``config`` and ``repeat`` for a cell of the determinism matrix) and where
    (``threads``, ``settings``), its inputs' and results' digests, the events it did in order (when traced
    op by op), and how it ended: ``status`` ``ok``, ``crashed`` (``error``: the traceback) or ``skipped``
    (``reason``). ``tensors`` keeps a matrix run's outputs in memory for diffs; it is never serialised."""

    label: str
    events: list[Event] = field(default_factory=list)
    inputs: list[TensorInfo] = field(default_factory=list)
    results: list[TensorInfo] = field(default_factory=list)
    error: str | None = None
    threads: int = 0
    settings: dict = field(default_factory=dict)
    config: RunConfig | None = None
    repeat: int = 0
    status: Status = Status.OK
    seconds: float = 0.0
    reason: str | None = None
    tensors: dict = field(default_factory=dict, repr=False)  # output name -> CPU tensor

    def to_json(self) -> str:
        data = asdict(replace(self, tensors={}))
        del data["tensors"]
        return json.dumps(data, sort_keys=True, allow_nan=False, default=str)

    @classmethod
    def from_dict(cls, data: dict) -> "RunLog":
        def infos(items):
            return [TensorInfo(**t) for t in items]

        events = [Event(**{**e, "inputs": infos(e["inputs"]), "outputs": infos(e["outputs"])})
                  for e in data["events"]]
        config = RunConfig(**data["config"]) if data.get("config") else None
        return cls(**{**data, "events": events, "inputs": infos(data["inputs"]), "results": infos(data["results"]),
                      "config": config, "status": Status(data.get("status", Status.OK))})

    @classmethod
    def load(cls, path: Path) -> "RunLog":
        return cls.from_dict(json.loads(Path(path).read_text()))

    def counts(self) -> dict[str, int]:
        return {"op": sum(e.kind == "op" for e in self.events), "kernel": sum(e.kind == "kernel" for e in self.events)}

    def outputs(self) -> dict[str, TensorInfo]:
        """Its results by name: the named outputs :func:`~.outputs.compare_outputs` pairs."""
        return {t.name: t for t in self.results}

    def key(self) -> tuple:
        """What must be equal for two runs to agree: every result's digest, shape and dtype (as
        :func:`detsim.track.compare.firstdiff.compare_results` pairs them; same bytes in another shape differ)."""
        return tuple(sorted((t.name, t.hash, tuple(t.shape), t.dtype) for t in self.results))


def output_log(config: RunConfig, repeat: int, outputs: dict[str, torch.Tensor], seconds: float) -> RunLog:
    """A completed run of the matrix: per output the digest of its native bytes (the digest :func:`tensor_info`
    gives a tensor without never-written elements) and of its float32 bytes; the tensors are kept."""
    results = []
    for name, t in outputs.items():
        as32 = t.detach().to("cpu", torch.float32) if t.is_floating_point() else t
        results.append(replace(tensor_info(name, t), float32=tensor_sha256(as32)))
    return RunLog(config.computation, results=results, threads=config.threads, config=config, repeat=repeat,
                     seconds=seconds, tensors=outputs)


def ended_log(config: RunConfig, repeat: int, status: Status, **fields) -> RunLog:
    """A run of the matrix that did not complete: ``crashed`` (with its ``error``) or ``skipped`` (``reason``)."""
    return RunLog(config.computation, threads=config.threads, config=config, repeat=repeat, status=status, **fields)


def tensor_info(name: str, t: torch.Tensor, *, compare: bool = True, note: str | None = None,
                run: int | None = None) -> TensorInfo:
    """Hash a tensor's values (sha256 of its contiguous native bytes) and summarise them; elements holding
    run ``run``'s fill are left out. Run it with tracing paused: its copies are not the computation's."""
    shape, dtype, device = list(t.shape), str(t.dtype).replace("torch.", ""), str(t.device)
    if t.is_sparse or t.device.type == "meta" or type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter):
        return TensorInfo(name, None, shape, dtype, device, compare=False,
                          note=note or f"not hashed ({type(t).__name__})")
    try:
        data = t.detach().to("cpu").resolve_conj().resolve_neg().contiguous()
        digest, unwritten, written = canonical(data, run)
    except (RuntimeError, TypeError) as exc:
        return TensorInfo(name, None, shape, dtype, device, compare=False, note=f"not hashed ({exc})"[:200])
    summary = None
    if written.numel() and (data.is_floating_point() or data.is_complex()):
        values = written.abs() if data.is_complex() else written
        values = values.to(torch.float64)
        summary = {"sum": json_number(float(values.sum())), "absmax": json_number(float(values.abs().max()))}
    return TensorInfo(name, digest, shape, dtype, device, compare=compare, note=note, stats=summary,
                      unwritten=unwritten)


def scalar_text(value: Any) -> str:
    """Text for a non-tensor argument, stable between runs (no object addresses)."""
    if isinstance(value, torch.Generator):
        return f"Generator(initial_seed={value.initial_seed()})"
    text = repr(value)
    if " at 0x" in text or " object at " in text:
        return f"<{type(value).__name__}>"
    return text if len(text) <= 200 else text[:197] + "..."


def named_tensors(name: str, value) -> list[tuple[str, torch.Tensor]]:
    """Every tensor of an argument or result, inside nested dicts, lists and tuples, named by its path:
    ``x`` for a tensor, ``xs[0]``, ``xs[2]``... in a sequence, ``result.image`` in a mapping."""
    if isinstance(value, torch.Tensor):
        return [(name, value)]
    if isinstance(value, dict):
        return [item for k, v in value.items() for item in named_tensors(f"{name}.{k}", v)]
    if isinstance(value, (list, tuple)):
        return [item for i, v in enumerate(value) for item in named_tensors(f"{name}[{i}]", v)]
    return []


def storage_key(t: torch.Tensor) -> int | None:
    """The address of a tensor's storage (what tells two views of one buffer), None when it has none."""
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None


def call_site() -> str:
    """The innermost caller outside torch, triton and the tracking suite: ``path:line in function``."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        skip = (filename.startswith(_SKIPPED_DIRS) or "/triton/" in filename
                or filename.endswith(("contextlib.py", "runpy.py")) or filename.startswith("<frozen"))
        if not skip:
            return f"{os.path.relpath(filename)}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return ""
