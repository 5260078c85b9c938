"""The determinism matrix: its runs (run logs without events, one per cell and repeat), their
bit-for-bit comparisons (results paired by :func:`~detsim.track.compare.firstdiff.compare_results`, through
the one comparer of :mod:`~detsim.track.compare.outputs`), and how they are shown.

Agreement is judged on the native bytes of every output (a float64 image that differs only below float32
precision still differs); the float32 hash is what ``-floatfile`` would write. Repeats of one
configuration must agree; another thread count is compared with the smallest, another mode with
``eager`` and another device with ``cpu`` (or the first one)."""

from __future__ import annotations

import dataclasses
import re
import string
from dataclasses import dataclass

import torch

from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.fresh import last_line
from detsim.track.compare.firstdiff import compare_results
from detsim.track.compare.run_log import RunConfig, RunLog
from detsim.track.base.status import Status
from detsim.track.base.output import json_number
from detsim.track.base.runtime import device_problem

OK, CRASHED, SKIPPED = Status.OK, Status.CRASHED, Status.SKIPPED


def _ref(run: RunLog) -> dict:
    """Which run: its configuration and repeat."""
    return {**dataclasses.asdict(run.config), "repeat": run.repeat}


def _row(run: RunLog) -> dict:
    """A run as matrix.json lists it."""
    return {**_ref(run), "status": run.status, "seconds": round(run.seconds, 4), "hashes": _hashes(run),
            "error": run.error, "reason": run.reason}


def _hashes(run: RunLog) -> dict:
    """Output -> its float32 and native digests, shape and dtype."""
    return {t.name: {"sha256": t.float32, "sha256_native": t.hash, "shape": t.shape, "dtype": t.dtype}
            for t in run.results}


def tensor_difference(a: torch.Tensor, b: torch.Tensor) -> dict:
    """Differing elements and the largest absolute and relative difference (NaN == NaN here)."""
    if a.shape != b.shape:
        return {"comparable": False, "note": f"shape {list(a.shape)} vs {list(b.shape)}"}
    a64, b64 = a.detach().to(torch.float64), b.detach().to(torch.float64)
    differ = ~((a64 == b64) | (torch.isnan(a64) & torch.isnan(b64)))
    count = int(differ.sum())
    result = {"comparable": True, "differing": count, "total": a.numel(), "max_abs": 0.0, "max_rel": 0.0}
    if count:
        x, y = a64[differ], b64[differ]
        delta = (x - y).abs()
        scale = torch.maximum(x.abs(), y.abs())
        rel = torch.where(scale > 0, delta / scale, torch.full_like(delta, float("inf")))
        result["max_abs"] = json_number(float(torch.nan_to_num(delta, nan=float("inf")).max()))
        result["max_rel"] = json_number(float(torch.nan_to_num(rel, nan=float("inf")).max()))
    else:
        result["note"] = "values compare equal; bit patterns differ (signed zeros or NaN payloads)"
    return result


@dataclass(frozen=True)
class OutputComparison:
    """Two runs compared output by output."""

    kind: str  # "repeat", or the axis that varies: "threads", "mode", "device"
    a: RunLog
    b: RunLog
    identical: bool
    outputs: dict  # output -> tensor_difference(...) (only for outputs whose hashes differ)

    def describe(self) -> str:
        parts = []
        for name, d in self.outputs.items():
            if not d.get("comparable", False):
                parts.append(f"{name}: {d.get('note', 'not comparable')}")
            elif d["differing"]:
                parts.append(f"{name}: {d['differing']}/{d['total']} elements differ, "
                             f"max abs {_num(d['max_abs'])}, max rel {_num(d['max_rel'])}")
            else:
                parts.append(f"{name}: {d['note']}")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "identical": self.identical, "a": _ref(self.a), "b": _ref(self.b),
                "outputs": self.outputs}


def _num(x) -> str:
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def compare_runs(kind: str, a: RunLog, b: RunLog) -> OutputComparison:
    """Two runs of the matrix compared by the one comparer; differing outputs sized when both runs kept them."""
    if a.key() == b.key():
        return OutputComparison(kind, a, b, True, {})
    outputs = {}
    for name in (d.name for d in compare_results(a, b).differences):
        outputs[name] = tensor_difference(a.tensors[name], b.tensors[name]) if name in a.tensors and name in b.tensors \
            else {"comparable": False, "note": "output present in one run only"}
    return OutputComparison(kind, a, b, False, outputs)


class Matrix:
    """All runs of one invocation, and their comparisons."""

    def __init__(self, threads: list[int], repeats: int, deterministic: bool = False) -> None:
        self.threads = threads
        self.repeats = repeats
        self.deterministic = deterministic
        self.computations: dict = {}  # name -> Computation
        self.runs: list[RunLog] = []
        self.notes: list[str] = []
        self._comparisons: list[OutputComparison] | None = None

    def add(self, run: RunLog) -> None:
        first = next((r for r in self.runs if r.config == run.config and r.status == OK), None)
        if run.status == OK and first is not None and first.key() == run.key():
            run = dataclasses.replace(run, tensors={})  # an identical repeat: no diff needs its tensors
        self.runs.append(run)
        self._comparisons = None

    def configs(self) -> list[RunConfig]:
        return list(dict.fromkeys(r.config for r in self.runs))

    def comparisons(self) -> list[OutputComparison]:
        if self._comparisons is None:
            self._comparisons = list(self._compare_all())
        return self._comparisons

    def _compare_all(self):
        firsts, unstable = {}, set()
        for run in self.runs:
            if run.status != OK:
                continue
            if run.config in firsts:
                comparison = compare_runs("repeat", firsts[run.config], run)
                if not comparison.identical:
                    unstable.add(run.config)
                yield comparison
            else:
                firsts[run.config] = run
        # a configuration whose repeats already disagree says nothing about threads, modes or devices
        firsts = {c: r for c, r in firsts.items() if c not in unstable}
        for axis, preferred in (("threads", None), ("mode", "eager"), ("device", "cpu")):
            groups: dict[tuple, list[RunLog]] = {}
            for config, run in firsts.items():
                groups.setdefault(dataclasses.replace(config, **{axis: None}), []).append(run)
            for runs in groups.values():
                values = [getattr(r.config, axis) for r in runs]
                base = values.index(min(values) if axis == "threads" else preferred if preferred in values
                                    else values[0])
                yield from (compare_runs(axis, runs[base], run) for i, run in enumerate(runs) if i != base)

    def failures(self, strict: bool = False) -> list[OutputComparison]:
        return [c for c in self.comparisons() if not c.identical and _must_agree(c, strict)]

    def findings(self, strict: bool = False) -> list[OutputComparison]:
        return [c for c in self.comparisons() if not c.identical and not _must_agree(c, strict)]

    def crashed(self) -> list[RunLog]:
        return [r for r in self.runs if r.status == CRASHED]

    def exit_code(self, strict: bool = False) -> ExitCode:
        if self.failures(strict):
            return ExitCode.REGRESSED
        if self.crashed() or not any(r.status == OK for r in self.runs):
            return ExitCode.UNMEASURED
        return ExitCode.OK

    def verdict(self, strict: bool = False) -> str:
        ok = sum(r.status == OK for r in self.runs)
        failures = self.failures(strict)
        if failures:
            configs = {c.b.config for c in failures}
            return (f"NOT DETERMINISTIC: runs that should agree differ in {len(configs)} configuration(s)"
                    f" ({len(failures)} comparison(s))")
        if not ok:
            return "UNMEASURED: no run completed"
        findings = self.findings(strict)
        tail = f"; {len(_grouped(findings))} finding(s) across threads/modes/devices" if findings else \
            "; threads, modes and devices agree where compared"
        if self.crashed():
            return (f"INCOMPLETE: {len(self.crashed())} run(s) crashed; the {ok} completed run(s) repeat bit for "
                    f"bit{tail}")
        return f"DETERMINISTIC: every configuration repeats bit for bit ({ok} runs){tail}"

    def letters(self, computation: str) -> dict[tuple, str]:
        """A letter per distinct set of output hashes of a computation, in order of first appearance."""
        names: dict[tuple, str] = {}
        for run in self.runs:
            if run.config.computation == computation and run.status == OK and run.key() not in names:
                names[run.key()] = _letter(len(names))
        return names

    def render(self, strict: bool = False) -> str:
        lines = []
        for computation in self.computations:
            lines += self._render_computation(computation)
        lines.append("")
        lines += [f"FAIL     {kind} {where}: {text}" for kind, where, text in _grouped(self.failures(strict))]
        lines += [f"FINDING  {kind} {where}: {text}" for kind, where, text in _grouped(self.findings(strict))]
        crashes: dict[tuple, list[str]] = {}
        for r in self.crashed():
            key = (r.config.computation, f"{r.config.device}/{r.config.dtype}/{r.config.mode}", _last_line(r.error))
            crashes.setdefault(key, []).append(f"threads={r.config.threads} repeat {r.repeat}")
        lines += [f"CRASH    {t} {where} ({', '.join(runs)}): {error}" for (t, where, error), runs in crashes.items()]
        skips: dict[tuple, set[str]] = {}
        for r in (r for r in self.runs if r.status == SKIPPED):
            where = r.config.device if r.reason and r.reason == device_problem(r.config.device) else \
                f"{r.config.device}/{r.config.mode}"
            skips.setdefault((where, r.reason or "not run"), set()).add(r.config.computation)
        lines += [f"SKIPPED  {where} for {len(t)} computation(s): {reason}" for (where, reason), t in skips.items()]
        if any(c.kind == "repeat" and not c.identical for c in self.comparisons()):
            lines.append("NOTE     configurations whose repeats differ are not compared across threads/modes/devices")
        lines += [f"NOTE     {note}" for note in self.notes]
        lines.append(f"VERDICT  {self.verdict(strict)}")
        return "\n".join(lines)

    def _render_computation(self, computation: str) -> list[str]:
        runs = [r for r in self.runs if r.config.computation == computation]
        letters = self.letters(computation)
        ok = next((r for r in runs if r.status == OK), None)
        shapes = ", ".join(f"{n} {'x'.join(map(str, h['shape'])) or 'scalar'}" for n, h in _hashes(ok).items()) \
            if ok else "no completed run"
        lines = [f"{computation}  ({shapes}; {self.repeats} repeat(s) per cell, one letter per run, "
                 "equal letters = identical bits)"]
        rows: dict[tuple, dict[int, list[str]]] = {}
        for r in runs:
            row = rows.setdefault((r.config.device, r.config.dtype, r.config.mode), {})
            mark = "!" if r.status == CRASHED else "-" if r.status == SKIPPED else letters[r.key()]
            row.setdefault(r.config.threads, []).append(mark)
        w_dev = max([6] + [len(k[0]) for k in rows])
        w_mode = max([4] + [len(k[2]) for k in rows])
        cell_w = max(10, max((len(" ".join(v)) for row in rows.values() for v in row.values()), default=0))
        header = f"  {'device':<{w_dev}}  {'dtype':<8} {'mode':<{w_mode}}  " + \
            "  ".join(f"{'threads=' + str(t):<{cell_w}}" for t in self.threads)
        lines.append(header.rstrip())
        for (device, dtype, mode), row in rows.items():
            cells = "  ".join(f"{' '.join(row.get(t, ['-'])):<{cell_w}}" for t in self.threads)
            lines.append(f"  {device:<{w_dev}}  {dtype:<8} {mode:<{w_mode}}  {cells}".rstrip())
        for key, letter in letters.items():
            run = next(r for r in runs if r.status == OK and r.key() == key)
            hashes = "  ".join(f"{n} {h['sha256'][:12]} (native {h['sha256_native'][:12]})"
                               for n, h in _hashes(run).items())
            lines.append(f"  {letter} = {hashes}")
        legend = [text for status, text in ((CRASHED, "! = crashed"), (SKIPPED, "- = not run"))
                  if any(r.status == status for r in runs)]
        if legend:
            lines.append("  " + ", ".join(legend))
        return lines

    def to_dict(self, strict: bool = False) -> dict:
        return {
            "verdict": self.verdict(strict), "exit_code": self.exit_code(strict),
            "strict": strict, "deterministic_algorithms": self.deterministic,
            "threads": self.threads, "repeats": self.repeats, "notes": self.notes,
            "computations": {name: {"kind": c.kind, "spec": c.spec, "modes": list(c.modes),
                                    "letters": {letter: {output: digest for output, digest, *_ in key}
                                                for key, letter in self.letters(name).items()}}
                             for name, c in self.computations.items()},
            "runs": [_row(r) for r in self.runs],
            "comparisons": [c.to_dict() for c in self.comparisons()],
            "failures": [c.to_dict() for c in self.failures(strict)],
            "findings": [c.to_dict() for c in self.findings(strict)],
        }

    def runs_tsv(self) -> str:
        lines = ["computation\tdevice\tdtype\tmode\tthreads\trepeat\tstatus\tseconds\toutput\tshape\tsha256_float32\t"
                 "sha256_native"]
        for r in self.runs:
            c = r.config
            head = f"{c.computation}\t{c.device}\t{c.dtype}\t{c.mode}\t{c.threads}\t{r.repeat}\t{r.status}\t{r.seconds:.4f}"
            if not r.results:
                lines.append(f"{head}\t-\t-\t-\t-")
            for name, h in _hashes(r).items():
                shape = "x".join(map(str, h["shape"]))
                lines.append(f"{head}\t{name}\t{shape}\t{h['sha256']}\t{h['sha256_native']}")
        return "\n".join(lines) + "\n"

    def crash_reports(self) -> dict[str, str]:
        """File name -> configuration and verbatim traceback, one per crashed run."""
        reports = {}
        for i, r in enumerate(self.crashed(), 1):
            c = r.config
            name = re.sub(r"[^\w.=-]+", "_",
                          f"{i:02d}-{c.computation}-{c.device}-{c.dtype}-{c.mode}-t{c.threads}-r{r.repeat}")
            head = "\n".join(f"{k}: {v}" for k, v in _ref(r).items())
            reports[name[:120] + ".txt"] = f"{head}\n\n{r.error}"
        return reports

    def summary_markdown(self, *, command: str, env: dict, strict: bool) -> str:
        cuda = env.get("cuda", {})
        gpu = cuda.get("device") if cuda.get("available") else f"none ({cuda.get('reason', 'unknown')})"
        lines = [
            "# Determinism evidence", "",
            f"**Verdict:** {self.verdict(strict)} (exit code {self.exit_code(strict)}).", "",
            f"* commit `{env.get('commit')}`{' (dirty work tree)' if env.get('dirty') else ''}",
            f"* torch {env.get('torch')}, triton {env.get('triton')}, Python {env.get('python')}",
            f"* CPU {env.get('cpu')} ({env.get('cpu_capability')}), GPU: {gpu}",
            f"* deterministic algorithms requested: {self.deterministic}", "",
            "Re-run with:", "", "```", command, "```", "",
            "## Matrix", "", "```", self.render(strict), "```", "",
        ]
        for title, comparisons in (("Runs that should agree and do not", self.failures(strict)),
                                   ("Findings (cross-thread, cross-mode, cross-device)", self.findings(strict))):
            lines += [f"## {title}", "", *([f"* {kind}: {where}: {text}" for kind, where, text
                                           in _grouped(comparisons)] or ["None."]), ""]
        lines += ["## Crashes", ""]
        crash_files = list(self.crash_reports())
        lines += [f"* {r.config.computation} {r.config.label()} repeat {r.repeat}: `{_last_line(r.error)}` "
                  f"(traceback: `crashes/{f}`)" for r, f in zip(self.crashed(), crash_files)] or ["None."]
        lines += ["", "Files: `matrix.txt`, `matrix.json` (every run and comparison), `runs.tsv` (per-run hashes), "
                  "`env.json`, `commands.txt`, `crashes/`.", ""]
        return "\n".join(lines)


def _must_agree(c: OutputComparison, strict: bool) -> bool:
    return c.kind == "repeat" or (strict and c.kind == "threads")


def _letter(i: int) -> str:
    letters = string.ascii_uppercase
    return letters[i] if i < 26 else _letter(i // 26 - 1) + letters[i % 26]


def _where(c: OutputComparison) -> str:
    a, b = c.a.config, c.b.config
    if c.kind == "repeat":
        return f"{b.computation} {b.label()}: repeat {c.b.repeat} vs {c.a.repeat}"
    attr = c.kind  # "threads", "mode" or "device": the RunConfig field that varies
    fixed = RunConfig(**{**dataclasses.asdict(b), attr: "*"}).label().replace("threads=*", "threads *")
    return f"{b.computation} {fixed}: {attr} {getattr(b, attr)} vs {getattr(a, attr)}"


def _grouped(comparisons: list[OutputComparison]) -> list[tuple[str, str, str]]:
    """(kind, where, description), merging mode/device findings that are the same at every thread count."""
    merged: dict[tuple, list[int]] = {}
    for c in comparisons:
        if c.kind in ("mode", "device"):
            where = _where(c).replace(f"/threads={c.b.config.threads}:", "/threads={}:", 1)
        else:
            where = _where(c)
        merged.setdefault((c.kind, where, c.describe()), []).append(c.b.config.threads)
    return [(kind, where.replace("{}", ",".join(map(str, threads))) if "{}" in where else where, text)
            for (kind, where, text), threads in merged.items()]


def _last_line(error: str | None) -> str:
    return last_line(error or "") or "unknown error"
