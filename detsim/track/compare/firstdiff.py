"""The one way to find where two run logs first differ, and why: two runs of one call
(:func:`find_divergence`), two logs (:func:`compare_logs`, e.g. traced on two machines) or two
commits' logs (:func:`compare_commits`: call sites without folders and line numbers, since code moves
up and down a file between commits without the computation changing).

Each event whose inputs or outputs differ becomes a divergence (docs/determinism.md): identical inputs and
different outputs make a culprit (or a read of never-written memory: run A and run B fill it
differently), differing inputs a victim of the event that wrote them in run B, unless run B read what run
A wrote (a leak), each run passed a tensor the other made too (operands), or the op made a tensor from
Python values (a culprit); a different op or source line is a path divergence."""

from __future__ import annotations

import copy
import re
from typing import Callable

import torch
from torch.utils._pytree import tree_map_only

from detsim.track.compare.divergences import (PYTHON_VALUE, PYTHON_VALUE_OPS, RANDOM_OPS, ROOT_ROLES, Divergence,
                                              RunComparison, base_name, explain, leak_text, operands_text,
                                              ref_text, uninitialized_text)
from detsim.track.compare.outputs import OutputDiff, compare_outputs
from detsim.track.compare.run_log import Event, RunLog, TensorInfo
from detsim.track.compare.tracer import trace
from detsim.track.base.runtime import thread_count

_LINE = re.compile(r":\d+(?= in )")
SAME = "identical in both runs"  # the role of an event whose inputs and outputs matched
PARTIAL_WRITE_OPS = {"index_put_", "_index_put_impl_", "masked_fill_", "scatter_", "index_fill_", "index_copy_",
                     "masked_scatter_", "put_", "fill_diagonal_"}  # in place, writing some elements, reading none


def _differs(x: TensorInfo, y: TensorInfo) -> bool:
    return x.hash != y.hash or x.shape != y.shape or x.dtype != y.dtype


def _pair(x: TensorInfo | None, y: TensorInfo) -> dict:
    """The fields of a :class:`Divergence` that show a tensor as run A (``x``; None: not read there) and run B
    (``y``) hold it."""
    return dict(tensor=y.name, hash_a=x and x.hash, hash_b=y.hash, stats_a=x and x.stats, stats_b=y.stats)


def _ref(event: Event, role: str) -> dict:
    return {"index": event.index, "kind": event.kind, "name": event.name, "where": event.where, "role": role}


def site(where: str) -> str:
    """A call site without directories: logs made in different folders still compare."""
    return re.sub(r"[^\s:()]*[/\\]", "", where or "")


def find_divergence(fn: Callable, *args, threads: tuple[int, int] | None = None, ops: bool = True,
                    kernels: bool = True, max_items: int = 3, label: str | None = None, **kwargs) -> RunComparison:
    """Run ``fn(*args, **kwargs)`` twice, each run on fresh clones of the tensor arguments, at its own thread
    count (default: the current one) and fill of never-written memory, and compare the two logs."""
    logs = []
    for fill, n in enumerate(threads or (torch.get_num_threads(),) * 2):
        run_args, run_kwargs = tree_map_only(
            torch.Tensor, lambda t: t.detach().clone().requires_grad_(t.requires_grad), (args, kwargs))
        with thread_count(n):
            logs.append(trace(fn, *run_args, label=label or getattr(fn, "__qualname__", str(fn)), ops=ops,
                                  kernels=kernels, fill=fill, **run_kwargs))
    return compare_logs(*logs, max_items=max_items)


def without_lines(rec: RunLog) -> RunLog:
    """A copy of ``rec`` whose call sites name file and function only, without the view ops (they move no
    data), renumbered from 0, so that a divergence lands on the op that computes."""
    stripped = copy.deepcopy(rec)
    stripped.events = [e for e in stripped.events if not e.view]
    for index, event in enumerate(stripped.events):
        event.index, event.where = index, _LINE.sub("", site(event.where))
    return stripped


def compare_commits(old: RunLog, new: RunLog) -> RunComparison:
    """The first op or kernel where the new commit's run departs from the old one's."""
    return compare_logs(without_lines(old), without_lines(new))


def compare_logs(a: RunLog, b: RunLog, *, max_items: int = 3, device: str | None = None) -> RunComparison:
    """Walk both logs in order; the first divergence is the answer, the rest is context."""
    report = RunComparison(label=a.label if a.label == b.label else f"{a.label} / {b.label}", events_a=len(a.events),
                    events_b=len(b.events), counts=a.counts(), threads=(a.threads, b.threads))
    report.errors = {label: r.error for label, r in (("A", a), ("B", b)) if r.error}
    divergences = []
    input_diffs = [(x, y) for x, y in zip(a.inputs, b.inputs) if _differs(x, y)]
    if input_diffs:
        x, y = input_diffs[0]
        divergences.append(Divergence("inputs", None, "input", x.name, "", **{**_pair(x, y), "tensor": x.name},
                                reason="the runs were given different inputs",
                                fix="give both runs the same inputs"))
    walk = _Walk(a, b, device or next((t.device.split(":")[0] for e in a.events for t in e.outputs), "cpu"))
    divergences += walk.run()
    report.notes += walk.notes
    if not a.events and not b.events and (a.results or b.results or input_diffs):
        report.notes.append("no op or kernel was recorded (were both layers off, or did the work run as "
                            "compiled C++ kernels, which are not recorded?); only the results were compared")
    _compare_results(report, a, b)
    if report.results_compared:
        divergences = walk.drop_unreached_reads(divergences, report.notes)
    for divergence in divergences:
        report.add(divergence, max_items)
    return report


def compare_results(a: RunLog, b: RunLog) -> OutputDiff[str, TensorInfo]:
    """Two runs' results paired by name: those whose digest, shape or dtype differ, that hold never-written
    elements, or that one run alone returned."""
    return compare_outputs(a.outputs(), b.outputs(), lambda x, y: _differs(x, y) or x.unwritten or y.unwritten)


def _compare_results(report: RunComparison, a: RunLog, b: RunLog) -> None:
    """:func:`compare_results` as the report lists them."""
    found = compare_results(a, b)
    report.results_compared = found.compared
    for d in found.differences:
        x, y = d.a, d.b
        if d.only:
            report.result_differences.append({"name": d.name, "hash_a": x and x.hash, "hash_b": y and y.hash,
                                              "note": f"returned by run {d.only} only"})
            continue
        extra = {"unwritten": max(x.unwritten, y.unwritten), "note": y.note or x.note} \
            if x.unwritten or y.unwritten else {}
        report.result_differences.append({"name": x.name, "hash_a": x.hash, "hash_b": y.hash, **extra})


class _Walk:
    """One pass over both logs, keeping who produced which content in each run."""

    def __init__(self, a: RunLog, b: RunLog, device: str) -> None:
        self.a, self.b, self.device = a, b, device
        self.threads_differ = a.threads != b.threads
        self.fills_differ = a.settings.get("fill") != b.settings.get("fill")
        self.produced_a = _inputs_as_producers(a)
        self.produced_b = _inputs_as_producers(b)
        self.roles: dict[int, str] = {}
        self.roots: dict[int, dict | None] = {}
        self.in_place_a, self.made_a = _writers(a)
        self.leaks: dict[int, dict] = {}  # run A's writer -> the first read of what it left
        self.notes: list[str] = []

    def run(self) -> list[Divergence]:
        divergences = []
        for i, (ea, eb) in enumerate(zip(self.a.events, self.b.events)):
            if _step(ea) != _step(eb):
                return divergences + self._path(i, ea, eb)
            divergence = self._classify(ea, eb)
            if divergence is not None:
                self.roles[i] = divergence.role
                self.roots[i] = _ref(eb, divergence.role) if divergence.role in ROOT_ROLES else divergence.root
                divergences.append(divergence)
            elif ea.grid != eb.grid or ea.config != eb.config:
                self.notes.append(f"{eb.describe()}: launch configuration differs (grid {ea.grid} vs {eb.grid}, "
                                  f"config {ea.config} vs {eb.config}) but its outputs are identical")
            self._produced(ea, eb, i)
        n = min(len(self.a.events), len(self.b.events))
        if len(self.a.events) != len(self.b.events):
            longer, which = (self.a, "A") if len(self.a.events) > len(self.b.events) else (self.b, "B")
            extra = longer.events[n]
            path = Divergence("path", n, extra.kind, extra.name, extra.where,
                           reason=f"run {which} goes on with {len(longer.events) - n} more event(s) from "
                                  f"{extra.describe()}; every earlier event matched")
            return divergences + self._after_path(n, path)
        return divergences

    def _produced(self, ea: Event, eb: Event, i: int) -> None:
        for produced, event in ((self.produced_a, ea), (self.produced_b, eb)):
            for t in event.outputs:
                if t.hash and t.written and t.compare:
                    produced[t.hash] = _ref(event, self.roles.get(i, SAME))

    def _path(self, i: int, ea: Event, eb: Event) -> list[Divergence]:
        if (ea.kind, ea.name) == (eb.kind, eb.name):
            reason = (f"both runs executed {eb.kind} {eb.name}, but run A at {ea.where or '?'} and run B at "
                      f"{eb.where or '?'}: a Python branch went another way; every earlier event matched, so "
                      "the branch depends on state the recorded tensors do not show (Python-side state, a "
                      "counter, time, a value read with .item())")
        else:
            reason = (f"run A executed {ea.describe()} where run B executed {eb.describe()}; every earlier "
                      "event matched, so the branch depends on state the recorded tensors do not show "
                      "(Python-side state, caches, time, a value read with .item() from an unrecorded source)")
        path = Divergence("path", i, eb.kind, eb.name, eb.where, reason=reason, where_a=ea.where)
        return self._after_path(i, path)

    def _after_path(self, i: int, path: Divergence) -> list[Divergence]:
        """The path divergence, or a leak that explains it: run B reading state run A wrote in place."""
        seen = set(self.produced_b)
        reuse = None
        for eb in self.b.events[i:]:
            for t in eb.inputs:
                if not (t.compare and t.hash) or t.hash in seen:
                    continue
                if t.hash in self.in_place_a:
                    self.notes.append(f"the runs also took different paths from #{i}: {path.reason}")
                    return [self._leak(eb, None, t, self.in_place_a[t.hash], in_place=True)]
                if reuse is None and t.hash in self.made_a:
                    reuse = (eb, t, self.made_a[t.hash])
            seen.update(t.hash for t in eb.outputs if t.hash)
        if reuse is not None:
            eb, t, writer = reuse
            path.reason += (f"; run B's #{eb.index} {eb.name} at {eb.where or '?'} reads `{t.name}` as run A's "
                            f"{ref_text(writer)} made it: state kept between runs (a cache built in run A) "
                            "is why the paths differ")
        return [path]

    def _leak(self, eb: Event, x: TensorInfo | None, y: TensorInfo, writer: dict, *, in_place: bool) -> Divergence:
        """Run B read ``y`` as run A's ``writer`` left it; a later read of the same state is its victim."""
        data = dict(_pair(x, y), producer_a=writer, where_a=writer.get("where"))
        first = self.leaks.get(writer["index"])
        if first is not None:
            return Divergence("victim", eb.index, eb.kind, eb.name, eb.where, root=first, fix=f"fix {ref_text(first)}",
                           reason=f"not the cause: it reads the state run A left, which {ref_text(first)} read first",
                           **data)
        self.leaks[writer["index"]] = _ref(eb, "leak")
        reason, fix = leak_text(y.name, writer, in_place)
        return Divergence("leak", eb.index, eb.kind, eb.name, eb.where, reason=reason, fix=fix, **data)

    def _classify(self, ea: Event, eb: Event) -> Divergence | None:
        inputs = [(x, y) for x, y in zip(ea.inputs, eb.inputs) if x.compare and y.compare and _differs(x, y)]
        scalars = {k: [ea.scalars.get(k), eb.scalars.get(k)] for k in sorted(set(ea.scalars) | set(eb.scalars))
                   if ea.scalars.get(k) != eb.scalars.get(k)}
        returned = scalars.pop("result", None)
        outputs = [(x, y) for x, y in zip(ea.outputs, eb.outputs) if x.compare and y.compare and _differs(x, y)]
        common = dict(kind=eb.kind, name=eb.name, where=eb.where, grid_a=ea.grid, grid_b=eb.grid,
                      config_a=ea.config, config_b=eb.config, scalars=scalars)
        if inputs:
            return self._differing_input(ea, eb, *inputs[0], common)
        read = self._never_written_read(ea, eb, scalars, differs=bool(outputs) or returned is not None)
        if not outputs and returned is None and read is None:
            return None
        if outputs or read is not None:
            x, y = outputs[0] if outputs else next((x, y) for x, y in zip(ea.outputs, eb.outputs) if y.unwritten)
            common.update(_pair(x, y))
        else:
            common.update(tensor="result", hash_a=returned[0], hash_b=returned[1])
        if read is not None:
            return self._uninitialized(eb, read, common)
        reason, fix = explain(ea, eb, scalars, self.threads_differ, self.device)
        return Divergence("culprit", eb.index, reason=reason, fix=fix, **common)

    def _never_written_read(self, ea: Event, eb: Event, scalars: dict, *, differs: bool) -> TensorInfo | None:
        """The input whose never-written elements the op read, if any (and nothing else explains it): its
        outputs differ, or it moves data and an output it wrote holds never-written elements."""
        if not self.fills_differ or scalars or ea.grid != eb.grid or ea.config != eb.config \
                or base_name(eb.name) in RANDOM_OPS:
            return None
        read = next((t for t in eb.inputs if t.unwritten and t.compare), None)  # not overwritten, not write-only
        if read is None or differs:
            return read
        copies = not eb.view and base_name(eb.name) not in PARTIAL_WRITE_OPS
        return read if copies and any(t.unwritten and t.compare and t.written for t in eb.outputs) else None

    def _uninitialized(self, eb: Event, read: TensorInfo, common: dict) -> Divergence:
        """A read of never-written memory: the first of its chain, or one after it (a victim)."""
        reads = {"name": read.name, "count": read.unwritten, "note": read.note or ""}
        producer = self.produced_b.get(read.hash)
        root = self._root_of(producer)
        if root is not None and root.get("role") == "uninitialized":
            common.update(_pair(read, read))
            return Divergence("victim", eb.index, producer=producer, root=root, reads=reads,
                              fix=f"fix {ref_text(root)}",
                              reason=f"not the cause: it reads never-written memory {ref_text(root)} read first",
                              **common)
        reason, fix = uninitialized_text(read.name)
        return Divergence("uninitialized", eb.index, reason=reason, fix=fix, reads=reads, **common)

    def _root_of(self, producer: dict | None) -> dict | None:
        if producer is None or producer.get("index") is None:
            return None
        j = producer["index"]
        return producer if self.roles.get(j) in ROOT_ROLES else self.roots.get(j)

    def drop_unreached_reads(self, divergences: list[Divergence], notes: list[str]) -> list[Divergence]:
        """Reads of never-written memory that reach no differing result, and what they fed, become notes."""
        reached = set()
        for x, y in zip(self.a.results, self.b.results):
            if _differs(x, y) or y.unwritten:
                root = self._root_of(self.produced_b.get(y.hash))
                reached.add(root and root.get("index"))
        unreached = [f for f in divergences if f.role == "uninitialized" and f.index not in reached]
        fed = [f for f in divergences if f.role == "victim" and f.root and f.root.get("index") in
               {u.index for u in unreached}]
        for f in unreached:
            later = sum(v.root["index"] == f.index for v in fed)
            notes.append(f"{f.headline()} read never-written memory (`{f.reads['name']}`: {f.reads['note']}); "
                         f"it changed its output{f' and {later} later event(s)' if later else ''} but no "
                         "result: not a divergence")
        dropped = {id(f) for f in unreached + fed}
        return [f for f in divergences if id(f) not in dropped]

    def _differing_input(self, ea: Event, eb: Event, x: TensorInfo, y: TensorInfo, common: dict) -> Divergence:
        """A victim, or what its differing input tells: a Python value, a leak, or other operands."""
        data = dict(_pair(x, y), **common)
        producer = self.produced_b.get(y.hash)
        if producer is None and base_name(eb.name) in PYTHON_VALUE_OPS and ea.outputs and eb.outputs:
            return Divergence("culprit", eb.index, **_pair(ea.outputs[0], eb.outputs[0]), reason=PYTHON_VALUE[0],
                              fix=PYTHON_VALUE[1], **common)
        if producer is None and (y.hash in self.in_place_a or y.hash in self.made_a):
            in_place = y.hash in self.in_place_a
            return self._leak(eb, x, y, (self.in_place_a if in_place else self.made_a)[y.hash], in_place=in_place)
        producer_a = self.produced_a.get(x.hash)
        if producer is not None and producer.get("role", SAME) == SAME and producer_a is not None \
                and producer_a.get("role", SAME) == SAME:
            reason, fix = operands_text(y.name)
            return Divergence("operands", eb.index, producer=producer, producer_a=producer_a, reason=reason, fix=fix,
                           **data)
        root = self._root_of(producer)
        if producer is None or producer.get("role") == SAME:
            after = f" after {ref_text(producer)} wrote it" if producer is not None else ""
            reason = (f"its input changed outside the recorded events{after} (an unrecorded kernel, a write "
                      "through .numpy() or data_ptr, or state shared between runs)")
            producer = producer and {**producer, "role": "last recorded writer"}
        else:
            reason = "not the cause: its input already differed"
        fix = f"fix {ref_text(root)}" if root else \
            "trace the layer that wrote it (ops and kernels), or look for writes outside PyTorch"
        return Divergence("victim", eb.index, producer=producer, root=root, reason=reason, fix=fix, **data)


def _step(event: Event) -> tuple:
    """What must match for two events to be the same step of the computation."""
    return event.kind, event.name, len(event.inputs), len(event.outputs), site(event.where)


def _inputs_as_producers(rec: RunLog) -> dict[str, dict]:
    return {t.hash: {"index": None, "name": f"the computation's input `{t.name}`"} for t in rec.inputs if t.hash}


def _writers(rec: RunLog) -> tuple[dict[str, dict], dict[str, dict]]:
    """(content -> the last event that wrote it in place, content -> the last event that made it) of a run."""
    in_place, made = {}, {}
    for event in rec.events:
        parts = event.name.split(".")
        writes = event.kind == "kernel" or len(parts) > 1 and parts[1].endswith("_") \
            or parts[-1] == "out" or parts[-1].endswith("_out")
        for t in event.outputs:
            if t.hash and t.compare and t.written:
                made[t.hash] = _ref(event, "run A")
                if writes:
                    in_place[t.hash] = _ref(event, "run A, in place")
    return in_place, made
