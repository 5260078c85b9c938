"""Why a culprit or another divergence happened, and the knob that usually fixes it (the tables of
docs/determinism.md)."""

from __future__ import annotations

from detsim.track.compare.record import Event

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
