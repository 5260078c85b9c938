"""What comparing two run logs finds: :class:`Divergence` (one divergent event; its ``role`` is one of
the findings of docs/determinism.md) and :class:`RunComparison` (the whole comparison: the first
divergence, victims, other culprits, the results; its verdict and exit code); and why a culprit or another
divergence happened, with the knob that usually fixes it (the tables of docs/determinism.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from detsim.track.base.exitcodes import ExitCode
from detsim.track.compare.run_log import Event

ROOT_ROLES = ("culprit", "uninitialized", "leak", "operands")
ROLE_LABELS = {"uninitialized": "READS UNINITIALIZED MEMORY", "leak": "STATE LEAK", "operands": "DIFFERENT OPERANDS"}


@dataclass
class Divergence:
    """One divergent event (or the inputs, or a change of path)."""

    role: str  # culprit, uninitialized, leak, operands (ROOT_ROLES), victim, path or inputs
    index: int | None
    kind: str
    name: str
    where: str  # run B's call site
    tensor: str | None = None
    hash_a: str | None = None
    hash_b: str | None = None
    stats_a: dict | None = None
    stats_b: dict | None = None
    reason: str = ""
    fix: str = ""
    producer: dict | None = None  # {"index", "name", "role", "where"} of the input's producer in run B
    root: dict | None = None  # the culprit at the start of the producer chain
    grid_a: list | None = None
    grid_b: list | None = None
    config_a: dict | None = None
    config_b: dict | None = None
    scalars: dict = field(default_factory=dict)  # differing non-tensor arguments: name -> [a, b]
    where_a: str | None = None  # run A's call site, where it differs from run B's (paths, leaks)
    producer_a: dict | None = None  # leak: run A's event that wrote the state; operands: A's operand's producer
    reads: dict | None = None  # uninitialized: {"name", "count", "note"} of the input with never-written elements

    def headline(self) -> str:
        at = f" at {self.where}" if self.where else ""
        index = f"#{self.index} " if self.index is not None else ""
        return f"{index}{self.kind} {self.name}{at}"

    def lines(self) -> list[str]:
        out = [f"{ROLE_LABELS.get(self.role, self.role.upper())}: {self.headline()}"]
        if self.role == "path":
            return out + [f"  {self.reason}"]
        if self.tensor is not None:
            out.append(self._tensor_line())
        if self.reads is not None:
            out.append(f"  reads `{self.reads['name']}`: {self.reads['note']}")
        out += [f"  argument `{name}`: A {a} vs B {b}" for name, (a, b) in self.scalars.items()]
        if self.grid_a is not None or self.grid_b is not None:
            changed = " (changed: autotuning?)" if self.grid_a != self.grid_b else ""
            out.append(f"  grid: A {self.grid_a} vs B {self.grid_b}{changed}")
        if self.config_a != self.config_b:
            out.append(f"  launch config: A {self.config_a} vs B {self.config_b}")
        out += self._sources()
        return out + [f"  {label}: {text}" for label, text in (("why", self.reason), ("fix", self.fix)) if text]

    def _tensor_line(self) -> str:
        what = "output" if self.role in ("culprit", "uninitialized") else "input"
        if self.hash_a is None and self.role in ("leak", "victim"):
            return f"  {what} `{self.tensor}` in run B: {short(self.hash_b)} (run A did not read it here)"
        if self.hash_a == self.hash_b and self.reads is not None:
            return (f"  {what} `{self.tensor}`: {short(self.hash_b)} in both runs where written; it holds "
                    "never-written elements")
        return f"  {what} `{self.tensor}`: A {short(self.hash_a)} vs B {short(self.hash_b)}" \
            + _stats_text(self.stats_a, self.stats_b)

    def _sources(self) -> list[str]:
        """Where the differing input came from, in each run."""
        if self.role == "leak" and self.producer_a is not None:
            return [f"  written by run A: {ref_text(self.producer_a)}"]
        if self.role == "operands":
            return [f"  run A passed {ref_text(self.producer_a)}", f"  run B passed {ref_text(self.producer)}"]
        out = []
        if self.producer is not None:
            out.append(f"  produced by {ref_text(self.producer)}")
            if self.root is not None and self.root.get("index") != self.producer.get("index"):
                out.append(f"  root culprit: {ref_text(self.root)}")
        return out


def short(h: str | None) -> str:
    return (h or "unhashed")[:12]


def _stats_text(a: dict | None, b: dict | None) -> str:
    if not a or not b:
        return ""
    return (f" (sum {_num(a.get('sum'))} vs {_num(b.get('sum'))}, "
            f"absmax {_num(a.get('absmax'))} vs {_num(b.get('absmax'))})")


def _num(x) -> str:
    return f"{x:.9g}" if isinstance(x, float) else str(x)


def ref_text(ref: dict | None) -> str:
    """``#3 op aten.mul.Tensor at f.py:9 in g (culprit)``, or the name of a tensor no event made."""
    if ref is None:
        return "?"
    if ref.get("index") is None:
        return ref.get("name", "?")
    where = f" at {ref['where']}" if ref.get("where") else ""
    return f"#{ref['index']} {ref['kind']} {ref['name']}{where} ({ref['role']})"


@dataclass
class RunComparison:
    """The outcome of comparing run A with run B."""

    label: str
    events_a: int
    events_b: int
    counts: dict
    threads: tuple[int, int]
    first: Divergence | None = None
    culprits: list[Divergence] = field(default_factory=list)  # every root role (culprit, leak, ...)
    victims: list[Divergence] = field(default_factory=list)
    victim_count: int = 0
    culprit_count: int = 0
    notes: list[str] = field(default_factory=list)
    result_differences: list[dict] = field(default_factory=list)
    results_compared: int = 0
    errors: dict = field(default_factory=dict)

    @property
    def diverged(self) -> bool:
        return self.first is not None or bool(self.result_differences)

    @property
    def nothing_traced(self) -> bool:
        """Neither run recorded an event or returned a tensor: there was nothing to compare."""
        return not (self.diverged or self.events_a or self.events_b or self.results_compared or self.errors)

    def verdict(self) -> str:
        if self.first is not None:
            return _first_verdict(self.first)
        if self.result_differences:
            if any(d.get("unwritten") for d in self.result_differences):
                return "DIVERGED: a result holds memory that was never written (uninitialized memory reaches a result)"
            return "DIVERGED: every recorded event matches but the results differ (computed outside recorded ops)"
        if self.errors:
            return "NO DIVERGENCE in the recorded events, but a run raised (see errors)"
        if self.nothing_traced:
            return ("NOTHING TO COMPARE: the computation produced no tensor output and recorded no events "
                    "(return a tensor, a sequence or a mapping of tensors, or trace the layer that does the work)")
        results = f"{self.results_compared} result tensor(s) identical" if self.results_compared else \
            "no result tensors returned"
        return (f"NO DIVERGENCE: {self.events_a} events ({self.counts['op']} ops, {self.counts['kernel']} kernels) "
                f"with identical inputs and outputs; {results}")

    def exit_code(self) -> ExitCode:
        if self.diverged:
            return ExitCode.REGRESSED
        return ExitCode.UNMEASURED if self.errors or self.nothing_traced else ExitCode.OK

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
            lines += ["  " + line for v in self.victims for line in v.lines()]
        if more:
            lines += ["", f"OTHER CULPRITS ({self.culprit_count - 1} independent of the first)"]
            lines += ["  " + line for c in more for line in c.lines()]
        lines += [f"NOTE     {note}" for note in self.notes]
        lines += [f"ERROR    run {run} raised: {error.strip().splitlines()[-1]}" for run, error in self.errors.items()]
        if self.result_differences:
            diffs = ", ".join(f"{d['name']} holds {d.get('note') or str(d['unwritten']) + ' never-written element(s)'}"
                              if d.get("unwritten") else f"{d['name']} {d['note']}" if d.get("note")
                              else f"{d['name']} A {short(d['hash_a'])} vs B {short(d['hash_b'])}"
                              for d in self.result_differences)
            lines.append(f"RESULTS  differ: {diffs}")
        elif self.results_compared:
            lines.append(f"RESULTS  identical ({self.results_compared} tensor(s))")
        lines.append(f"VERDICT  {self.verdict()}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {**asdict(self), "verdict": self.verdict(), "diverged": self.diverged}

    def add(self, divergence: Divergence, max_items: int) -> None:
        """Count a divergence in; the first one added is the answer, the rest (up to ``max_items``) context."""
        if self.first is None:
            self.first = divergence
        if divergence.role == "victim":
            self.victim_count += 1
            if len(self.victims) < max_items:
                self.victims.append(divergence)
        elif divergence.role in ROOT_ROLES:
            self.culprit_count += 1
            if len(self.culprits) < max_items + 1:
                self.culprits.append(divergence)


def _first_verdict(f: Divergence) -> str:
    tensor = f" (`{f.tensor}`)" if f.tensor else ""
    if f.role == "culprit":
        return f"DIVERGED at #{f.index}: culprit {f.kind} {f.name}{tensor}"
    if f.role == "uninitialized":
        read = f" (`{f.reads['name']}`)" if f.reads else ""
        return f"DIVERGED at #{f.index}: {f.kind} {f.name} reads uninitialized memory{read}"
    if f.role == "leak":
        where_a = (f.producer_a or {}).get("where") or "?"
        return f"DIVERGED at #{f.index}: state written by run A at {where_a} is read by run B at {f.where or '?'}"
    if f.role == "operands":
        return f"DIVERGED at #{f.index}: the runs passed different tensors to {f.kind} {f.name}{tensor}"
    if f.role == "victim":
        origin = "an unrecorded producer" if f.producer is None or f.producer.get("index") is None \
            else ref_text(f.producer)
        return f"DIVERGED at #{f.index}: {f.kind} {f.name} is a victim{tensor} of {origin}"
    if f.role == "inputs":
        return f"DIVERGED before the first event: the computation's inputs differ{tensor}"
    if f.where_a is not None and f.where_a != f.where:
        return f"DIVERGED at #{f.index}: the runs took different paths (A at {f.where_a}, B at {f.where})"
    return f"DIVERGED at #{f.index}: the runs took different paths"


# -- why, and the fix ----------------------------------------------------------------------------------

RANDOM_OPS = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal",
              "normal_", "uniform_", "bernoulli", "bernoulli_", "multinomial", "exponential_", "geometric_",
              "cauchy_", "log_normal_", "random_", "poisson", "dropout", "native_dropout", "rrelu_with_noise"}
PYTHON_VALUE_OPS = {"lift_fresh", "lift_fresh_copy", "lift"}  # torch.tensor / as_tensor of Python data

_FIND_THE_VALUE = "find where that value is computed in Python (a counter, time, dict/set order, unseeded random)"
PYTHON_VALUE = ("a tensor made from Python values (torch.tensor / torch.as_tensor) differs: the Python value "
                "itself differs between the runs", _FIND_THE_VALUE)


def base_name(event_name: str) -> str:
    """``aten.add_.Tensor`` -> ``add_`` (a kernel's name as it is)."""
    return event_name.split(".")[1] if event_name.count(".") >= 1 else event_name


def uninitialized_text(read_name: str) -> tuple[str, str]:
    return (f"it reads memory that was never written (`{read_name}`): its inputs agree wherever they were "
            "written, and its output follows what the allocator left in the rest (here: the different fill of "
            "each run), which reaches a result",
            "initialise the buffer (torch.zeros, or write every element before reading it); under "
            "torch.use_deterministic_algorithms(True), torch.utils.deterministic.fill_uninitialized_memory "
            "(on by default) fills such memory with NaN or the largest integer, which makes the read visible")


def leak_text(read: str, writer: dict, in_place: bool) -> tuple[str, str]:
    how = "in place" if in_place else "and kept"
    return (f"run B read `{read}` as run A's #{writer['index']} {writer['name']} left it ({how}): state that "
            "outlives a run (a module-level tensor, a cache, a buffer of a module) is updated by the computation",
            "do not mutate shared state in place: clone it before updating, make it an input and output of the "
            "computation, or reset it before every run")


def operands_text(name: str) -> tuple[str, str]:
    return (f"both tensors are made identically in both runs, but the runs passed different ones as `{name}`: "
            "which operand goes where depends on Python-side order (set or dict iteration, a counter, sorting "
            "by an unstable key)",
            "iterate in a fixed order (sorted(...) instead of a set, a list instead of a dict built in varying "
            "order), or make the order an explicit, seeded choice")


def explain(ea: Event, eb: Event, scalars: dict, threads_differ: bool, device: str) -> tuple[str, str]:
    """Why a culprit's outputs differ, and the knob that usually fixes it."""
    base = base_name(eb.name)
    if eb.kind == "kernel":
        return _explain_kernel(ea, eb, scalars)
    if scalars:
        name, (a, b) = next(iter(scalars.items()))
        return f"a Python value passed to the op differs (`{name}`: {a} vs {b})", _FIND_THE_VALUE
    if base in RANDOM_OPS:
        return ("a random-number op: its output depends on the generator state, which differs between the runs",
                "seed before the computation (torch.manual_seed(n)) or pass generator=torch.Generator()"
                ".manual_seed(n); on CUDA also torch.cuda.manual_seed_all(n)")
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


def _explain_kernel(ea: Event, eb: Event, scalars: dict) -> tuple[str, str]:
    inductor = eb.name.startswith("triton_")
    if ea.grid != eb.grid or ea.config != eb.config:
        return ("the same inputs were launched with a different grid/configuration: autotuning chose another "
                "configuration, and the reduction order follows it",
                "torch._inductor.config.deterministic = True (TORCHINDUCTOR_DETERMINISTIC=1) skips on-device "
                "benchmarking; or disable autotuning (max_autotune=False, coordinate_descent_tuning=False)"
                if inductor else
                "pin the configuration (a single triton.Config, or a fixed BLOCK) instead of autotuning it "
                "per run, or cache the autotuning result (triton.knobs.autotuning.cache)")
    if scalars:
        name, (a, b) = next(iter(scalars.items()))
        return f"a scalar argument differs (`{name}`: {a} vs {b})", _FIND_THE_VALUE
    if inductor:
        reduction = any(tag in eb.name for tag in ("_red_", "_per_", "_spl_"))
        return ("an Inductor kernel gave different outputs for identical inputs"
                + (" (a reduction: split or atomic accumulation order)" if reduction else " (atomics)"),
                "torch._inductor.config.deterministic = True (TORCHINDUCTOR_DETERMINISTIC=1)"
                + ("; filter reduction configs: torch._inductor.config.test_configs."
                   "force_filter_reduction_configs = True (TORCHINDUCTOR_FORCE_FILTER_REDUCTION_CONFIGS=1)"
                   if reduction else "")
                + "; torch.use_deterministic_algorithms(True) also filters reduction configs")
    unread = [t.name for t in eb.inputs if t.unwritten and not t.compare]
    maybe_unread = (f", or a read of never-written contents of `{unread[0]}` (an element the kernel does "
                    "not store before loading)") if unread else ""
    return ("the kernel's outputs are not a function of its tensor arguments: float atomics "
            "(tl.atomic_add order), or a read outside its tensors' extent (a mask or offset that reaches "
            f"memory the arguments do not cover){maybe_unread}",
            "accumulate in a fixed order (per-program partials, then a second pass) instead of atomics; "
            "check every tl.load's offsets and mask against the tensor's size")
