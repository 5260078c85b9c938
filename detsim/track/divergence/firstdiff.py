"""Compare two records event by event and name the first place they differ, and why.

Walking the two runs' events (:mod:`detsim.track.divergence.records`, recorded by
:mod:`detsim.track.divergence.recorder`) in order:

* a **culprit** is an op or kernel whose compared inputs are identical in both runs but whose outputs
  differ: the non-determinism is inside it (or in a Python value passed to it, or in the launch
  configuration autotuning chose, or in memory it read that was never written);
* a **victim** is one whose inputs already differ: it points at the producer of the differing input
  (the latest earlier event that wrote that content) and at the root culprit of that chain;
* a **path** divergence is where the runs stop executing the same sequence of ops/kernels.

Each finding carries the tensor or argument name, both hashes, both grids and the knob that usually
fixes that kind of culprit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from detsim.track.base.exitcodes import ExitCode
from detsim.track.divergence.records import Event, Record, TensorInfo

RANDOM_OPS = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal",
              "normal_", "uniform_", "bernoulli", "bernoulli_", "multinomial", "exponential_", "geometric_",
              "cauchy_", "log_normal_", "random_", "poisson", "dropout", "native_dropout", "rrelu_with_noise"}


@dataclass
class Finding:
    """One divergent event (or the inputs, or a change of path)."""

    role: str  # "culprit", "victim", "path" or "inputs"
    index: int | None
    kind: str
    name: str
    where: str
    tensor: str | None = None
    hash_a: str | None = None
    hash_b: str | None = None
    stats_a: dict | None = None
    stats_b: dict | None = None
    reason: str = ""
    fix: str = ""
    producer: dict | None = None  # {"index", "name", "role", "where"} of the input's producer
    root: dict | None = None  # the culprit at the start of the producer chain
    grid_a: list | None = None
    grid_b: list | None = None
    config_a: dict | None = None
    config_b: dict | None = None
    scalars: dict = field(default_factory=dict)  # differing non-tensor arguments: name -> [a, b]

    def headline(self) -> str:
        at = f" at {self.where}" if self.where else ""
        index = f"#{self.index} " if self.index is not None else ""
        return f"{index}{self.kind} {self.name}{at}"

    def lines(self) -> list[str]:
        out = [f"{self.role.upper()}: {self.headline()}"]
        if self.role == "path":
            out.append(f"  {self.reason}")
            return out
        if self.tensor is not None:
            what = "input" if self.role in ("victim", "inputs") else "output"
            out.append(f"  {what} `{self.tensor}`: A {_short(self.hash_a)} vs B {_short(self.hash_b)}"
                       + _stats_text(self.stats_a, self.stats_b))
        for name, (a, b) in self.scalars.items():
            out.append(f"  argument `{name}`: A {a} vs B {b}")
        if self.grid_a is not None or self.grid_b is not None:
            changed = " (changed: autotuning?)" if self.grid_a != self.grid_b else ""
            out.append(f"  grid: A {self.grid_a} vs B {self.grid_b}{changed}")
        if self.config_a != self.config_b:
            out.append(f"  launch config: A {self.config_a} vs B {self.config_b}")
        if self.producer is not None:
            out.append(f"  produced by {_ref_text(self.producer)}")
            if self.root is not None and self.root.get("index") != self.producer.get("index"):
                out.append(f"  root culprit: {_ref_text(self.root)}")
        if self.reason:
            out.append(f"  why: {self.reason}")
        if self.fix:
            out.append(f"  fix: {self.fix}")
        return out


def _short(h: str | None) -> str:
    return (h or "unhashed")[:12]


def _stats_text(a: dict | None, b: dict | None) -> str:
    if not a or not b:
        return ""
    return (f" (sum {_num(a.get('sum'))} vs {_num(b.get('sum'))}, "
            f"absmax {_num(a.get('absmax'))} vs {_num(b.get('absmax'))})")


def _num(x) -> str:
    return f"{x:.9g}" if isinstance(x, float) else str(x)


def _ref_text(ref: dict) -> str:
    if ref.get("index") is None:
        return ref.get("name", "?")
    where = f" at {ref['where']}" if ref.get("where") else ""
    return f"#{ref['index']} {ref['kind']} {ref['name']}{where} ({ref['role']})"


@dataclass
class Report:
    """The outcome of comparing run A with run B."""

    label: str
    events_a: int
    events_b: int
    counts: dict
    threads: tuple[int, int]
    first: Finding | None = None
    culprits: list[Finding] = field(default_factory=list)
    victims: list[Finding] = field(default_factory=list)
    victim_count: int = 0
    culprit_count: int = 0
    notes: list[str] = field(default_factory=list)
    result_differences: list[dict] = field(default_factory=list)
    results_compared: int = 0
    errors: dict = field(default_factory=dict)

    @property
    def diverged(self) -> bool:
        return self.first is not None or bool(self.result_differences)

    def verdict(self) -> str:
        if self.first is not None:
            f = self.first
            tensor = f" (`{f.tensor}`)" if f.tensor else ""
            if f.role == "culprit":
                return f"DIVERGED at #{f.index}: culprit {f.kind} {f.name}{tensor}"
            if f.role == "victim":
                origin = "an unrecorded producer" if f.producer is None or f.producer.get("index") is None \
                    else _ref_text(f.producer)
                return f"DIVERGED at #{f.index}: {f.kind} {f.name} is a victim{tensor} of {origin}"
            if f.role == "inputs":
                return f"DIVERGED before the first event: the computation's inputs differ{tensor}"
            return f"DIVERGED at #{f.index}: the runs took different paths"
        if self.result_differences:
            return "DIVERGED: every recorded event matches but the results differ (computed outside recorded ops)"
        if self.errors:
            return "NO DIVERGENCE in the recorded events, but a run raised (see errors)"
        results = f"{self.results_compared} result tensor(s) identical" if self.results_compared else \
            "no result tensors returned"
        return (f"NO DIVERGENCE: {self.events_a} events ({self.counts['op']} ops, {self.counts['kernel']} kernels) "
                f"with identical inputs and outputs; {results}")

    def exit_code(self) -> ExitCode:
        if self.diverged:
            return ExitCode.REGRESSED
        return ExitCode.UNMEASURED if self.errors else ExitCode.OK

    def render(self) -> str:
        threads = "" if self.threads[0] == self.threads[1] else f" (threads {self.threads[0]} vs {self.threads[1]})"
        lines = [f"diverge: {self.label}: run A vs run B{threads}: {self.events_a} vs {self.events_b} events "
                 f"({self.counts['op']} ops, {self.counts['kernel']} kernels in A)"]
        if self.first is not None:
            lines += ["", "FIRST DIVERGENCE", *("  " + line for line in self.first.lines())]
        more = [c for c in self.culprits if c is not self.first]
        if self.victims:
            shown = f"first {len(self.victims)} of {self.victim_count}" if self.victim_count > len(self.victims) \
                else str(self.victim_count)
            lines += ["", f"VICTIMS ({shown}; their inputs already differed)"]
            for v in self.victims:
                lines += ["  " + line for line in v.lines()]
        if more:
            lines += ["", f"OTHER CULPRITS ({self.culprit_count - 1} independent of the first)"]
            for c in more:
                lines += ["  " + line for line in c.lines()]
        for note in self.notes:
            lines.append(f"NOTE     {note}")
        for label, error in self.errors.items():
            lines.append(f"ERROR    run {label} raised: {error.strip().splitlines()[-1]}")
        if self.result_differences:
            diffs = ", ".join(f"{d['name']} A {_short(d['hash_a'])} vs B {_short(d['hash_b'])}"
                              for d in self.result_differences)
            lines.append(f"RESULTS  differ: {diffs}")
        elif self.results_compared:
            lines.append(f"RESULTS  identical ({self.results_compared} tensor(s))")
        lines.append(f"VERDICT  {self.verdict()}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["verdict"] = self.verdict()
        data["diverged"] = self.diverged
        return data


def _differs(x: TensorInfo, y: TensorInfo) -> bool:
    return x.hash != y.hash or x.shape != y.shape or x.dtype != y.dtype


def _ref(event: Event, role: str) -> dict:
    return {"index": event.index, "kind": event.kind, "name": event.name, "where": event.where, "role": role}


def compare_records(a: Record, b: Record, *, max_items: int = 3, device: str | None = None) -> Report:
    """Walk both records in order; the first finding is the answer, the rest is context."""
    report = Report(label=a.label if a.label == b.label else f"{a.label} / {b.label}", events_a=len(a.events),
                    events_b=len(b.events), counts=a.counts(), threads=(a.threads, b.threads))
    report.errors = {label: r.error for label, r in (("A", a), ("B", b)) if r.error}
    device = device or _device_of(a)
    input_diffs = [(x, y) for x, y in zip(a.inputs, b.inputs) if _differs(x, y)]
    if input_diffs:
        x, y = input_diffs[0]
        report.first = Finding("inputs", None, "input", x.name, "", tensor=x.name, hash_a=x.hash, hash_b=y.hash,
                               stats_a=x.stats, stats_b=y.stats,
                               reason="the runs were given different inputs", fix="give both runs the same inputs")
    produced_b: dict[str, dict] = {t.hash: {"index": None, "name": f"the computation's input `{t.name}`"}
                                   for t in b.inputs if t.hash}
    roles: dict[int, str] = {}
    roots: dict[int, dict | None] = {}
    for i, (ea, eb) in enumerate(zip(a.events, b.events)):
        if (ea.kind, ea.name, len(ea.inputs), len(ea.outputs)) != (eb.kind, eb.name, len(eb.inputs), len(eb.outputs)):
            _add(report, _path_finding(i, ea, eb), max_items)
            break
        finding = _classify(ea, eb, produced_b, roles, roots, a.threads != b.threads, device)
        if finding is not None:
            roles[i] = finding.role
            roots[i] = _ref(eb, "culprit") if finding.role == "culprit" else finding.root
            _add(report, finding, max_items)
        elif ea.grid != eb.grid or ea.config != eb.config:
            report.notes.append(f"{eb.describe()}: launch configuration differs (grid {ea.grid} vs {eb.grid}, "
                                f"config {ea.config} vs {eb.config}) but its outputs are identical")
        for t in eb.outputs:
            if t.hash and t.written and t.compare:
                produced_b[t.hash] = _ref(eb, roles.get(i, "identical in both runs"))
    else:
        if len(a.events) != len(b.events):
            n = min(len(a.events), len(b.events))
            longer, which = (a, "A") if len(a.events) > len(b.events) else (b, "B")
            extra = longer.events[n]
            _add(report, Finding("path", n, extra.kind, extra.name, extra.where,
                                 reason=f"run {which} goes on with {len(longer.events) - n} more event(s) from "
                                        f"{extra.describe()}; every earlier event matched"), max_items)
    if not a.events and not b.events:
        report.notes.append("no op or kernel was recorded (were both layers off, or did the work run as "
                            "compiled C++ kernels, which are not recorded?); only the results were compared")
    for x, y in zip(a.results, b.results):
        report.results_compared += 1
        if _differs(x, y):
            report.result_differences.append({"name": x.name, "hash_a": x.hash, "hash_b": y.hash})
    if len(a.results) != len(b.results):
        report.result_differences.append({"name": f"number of result tensors ({len(a.results)} vs "
                                                  f"{len(b.results)})", "hash_a": None, "hash_b": None})
    return report


def _device_of(record: Record) -> str:
    for event in record.events:
        for t in event.outputs:
            return t.device.split(":")[0]
    return "cpu"


def _add(report: Report, finding: Finding, max_items: int) -> None:
    if report.first is None:
        report.first = finding
    if finding.role == "victim":
        report.victim_count += 1
        if len(report.victims) < max_items:
            report.victims.append(finding)
    elif finding.role == "culprit":
        report.culprit_count += 1
        if len(report.culprits) < max_items + 1:
            report.culprits.append(finding)


def _path_finding(i: int, ea: Event, eb: Event) -> Finding:
    return Finding("path", i, eb.kind, eb.name, eb.where,
                   reason=f"run A executed {ea.describe()} where run B executed {eb.describe()}; every earlier "
                          "event matched, so the branch depends on state the recorded tensors do not show "
                          "(Python-side state, caches, time, a value read with .item() from an unrecorded source)")


def _classify(ea: Event, eb: Event, produced_b: dict, roles: dict, roots: dict, threads_differ: bool,
              device: str) -> Finding | None:
    inputs = [(x, y) for x, y in zip(ea.inputs, eb.inputs) if x.compare and y.compare and _differs(x, y)]
    scalars = {k: [ea.scalars.get(k), eb.scalars.get(k)] for k in sorted(set(ea.scalars) | set(eb.scalars))
               if ea.scalars.get(k) != eb.scalars.get(k)}
    returned = scalars.pop("result", None)
    outputs = [(x, y) for x, y in zip(ea.outputs, eb.outputs) if x.compare and y.compare and _differs(x, y)]
    common = dict(kind=eb.kind, name=eb.name, where=eb.where, grid_a=ea.grid, grid_b=eb.grid,
                  config_a=ea.config, config_b=eb.config, scalars=scalars)
    if inputs:
        x, y = inputs[0]
        producer = produced_b.get(y.hash)
        root = None
        if producer is not None and producer.get("index") is not None:
            j = producer["index"]
            root = producer if roles.get(j) == "culprit" else roots.get(j)
        if producer is None or producer.get("role") == "identical in both runs":
            after = f" after {_ref_text(producer)} wrote it" if producer is not None else ""
            reason = (f"its input changed outside the recorded events{after} (an unrecorded kernel, a write "
                      "through .numpy() or data_ptr, or state shared between runs)")
            producer = producer and {**producer, "role": "last recorded writer"}
        else:
            reason = "not the cause: its input already differed"
        fix = f"fix {_ref_text(root)}" if root else \
            "record the layer that wrote it (ops and kernels), or look for writes outside PyTorch"
        return Finding("victim", eb.index, tensor=y.name, hash_a=x.hash, hash_b=y.hash, stats_a=x.stats,
                       stats_b=y.stats, producer=producer, root=root, reason=reason, fix=fix, **common)
    if not outputs and returned is None:
        return None
    if outputs:
        x, y = outputs[0]
        tensor, ha, hb, sa, sb = y.name, x.hash, y.hash, x.stats, y.stats
    else:
        tensor, ha, hb, sa, sb = "result", returned[0], returned[1], None, None
    reason, fix = explain(ea, eb, scalars, threads_differ, device)
    return Finding("culprit", eb.index, tensor=tensor, hash_a=ha, hash_b=hb, stats_a=sa, stats_b=sb,
                   reason=reason, fix=fix, **common)


def explain(ea: Event, eb: Event, scalars: dict, threads_differ: bool, device: str) -> tuple[str, str]:
    """Why a culprit's outputs differ, and the knob that usually fixes it."""
    base = eb.name.split(".")[1] if eb.name.count(".") >= 1 else eb.name
    unread = [t.name for t in eb.inputs if not t.compare and t.note and t.note.startswith("uninitialised")]
    launch_changed = ea.grid != eb.grid or ea.config != eb.config
    if eb.kind == "kernel":
        inductor = eb.name.startswith("triton_")
        if launch_changed:
            return ("the same inputs were launched with a different grid/configuration: autotuning chose another "
                    "configuration, and the reduction order follows it",
                    "torch._inductor.config.deterministic = True (TORCHINDUCTOR_DETERMINISTIC=1) skips on-device "
                    "benchmarking; or disable autotuning (max_autotune=False, coordinate_descent_tuning=False)"
                    if inductor else
                    "pin the configuration (a single triton.Config, or a fixed BLOCK) instead of autotuning it "
                    "per run, or cache the autotuning result (triton.knobs.autotuning.cache)")
        if scalars:
            name, (a, b) = next(iter(scalars.items()))
            return (f"a scalar argument differs (`{name}`: {a} vs {b})",
                    "find where that value is computed in Python (time, counters, unseeded random)")
        if inductor:
            reduction = any(tag in eb.name for tag in ("_red_", "_per_", "_spl_"))
            return ("an Inductor kernel gave different outputs for identical inputs"
                    + (" (a reduction: split or atomic accumulation order)" if reduction else " (atomics)"),
                    "torch._inductor.config.deterministic = True (TORCHINDUCTOR_DETERMINISTIC=1)"
                    + ("; filter reduction configs: torch._inductor.config.test_configs."
                       "force_filter_reduction_configs = True (TORCHINDUCTOR_FORCE_FILTER_REDUCTION_CONFIGS=1)"
                       if reduction else "")
                    + "; torch.use_deterministic_algorithms(True) also filters reduction configs")
        maybe_unread = (f", or a read of never-written contents of `{unread[0]}` (an element the kernel does "
                        "not store before loading)") if unread else ""
        return ("the kernel's outputs are not a function of its tensor arguments: float atomics "
                "(tl.atomic_add order), a read outside its tensors' extent (a mask or offset that reaches "
                f"memory the arguments do not cover){maybe_unread}",
                "accumulate in a fixed order (per-program partials, then a second pass) instead of atomics; "
                "check every tl.load's offsets and mask against the tensor's size")
    if scalars:
        name, (a, b) = next(iter(scalars.items()))
        return (f"a Python value passed to the op differs (`{name}`: {a} vs {b})",
                "find where that value is computed (time, counters, dict/set order, unseeded Python random)")
    if base in RANDOM_OPS:
        return ("a random-number op: its output depends on the generator state, which differs between the runs",
                "seed before the computation (torch.manual_seed(n)) or pass generator=torch.Generator()"
                ".manual_seed(n); on CUDA also torch.cuda.manual_seed_all(n)")
    if unread:
        return (f"it reads memory that was never written (`{unread[0]}`, allocated by an empty-like op)",
                "initialise the buffer; torch.use_deterministic_algorithms(True) fills uninitialised memory "
                "with NaN, which makes such reads visible")
    if not eb.name.startswith(("aten.", "prims.")):
        namespace = eb.name.split(".")[0]
        return (f"a custom op ({namespace}) gave different outputs for identical inputs: its implementation "
                "keeps hidden state (a counter, a cache) or is itself non-deterministic",
                "make the state an explicit input of the op, or fix its implementation")
    if threads_differ:
        return ("the op's result depends on the number of threads (a parallel reduction splits its sum by thread)",
                "pin the thread count (torch.set_num_threads / OMP_NUM_THREADS) or reduce in a fixed order "
                "(fixed-size partial sums, then a sum of partials)")
    if device == "cuda":
        return ("a CUDA op with a non-deterministic implementation (atomics, or a library choosing an algorithm)",
                "torch.use_deterministic_algorithms(True) (with CUBLAS_WORKSPACE_CONFIG=:4096:8; it raises on ops "
                "that have no deterministic implementation) and torch.backends.cudnn.benchmark = False")
    return ("the op gave different outputs for identical inputs",
            "torch.use_deterministic_algorithms(True); on CPU most ops are deterministic at a fixed thread count, "
            "so also look for hidden state in the code around it")
