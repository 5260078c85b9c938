"""What the asv suite shares: pinned threads, workloads, golden renders, and the suite's base.

asv imports this file from the working tree while the *installed* detsim is the commit being measured,
so everything here must work with every detsim since the package's first commit. APIs newer than that
are feature-detected; where one is missing the benchmark raises ``NotImplementedError``, which asv
records as a skip rather than a failure. The installed detsim is reached through its public facade
(``detsim.config_from_argv``, ``detsim.simulate``, ``detsim.MODES``, ``detsim.available_modes``, the
configuration types) and its ``detsim`` command through its console-script entry point; a commit from before
the facade lacks those names, and only then are its flat modules of that time looked up, by names built at
run time (``OLD_PACKAGE`` + a leaf: ``argconfig``, ``engine``, ``cli``, ``argv``) so that the tools that
rewrite module names after a move leave them as those commits had them (:func:`installed`,
:func:`command_main`, :func:`config_from_args`).

The suite's own facts (Pearson r, the image hash and its fingerprint, the machine class and its golden
baselines, the workloads, the golden cases, how an instruction count is made) and its one timed render and one
parity loop (``timing``, ``parity``: the GPU check and ``detsim-track speed`` and ``parity`` run them too) are
those of the working
tree's ``detsim/track/base``, loaded by :func:`load_base` as a package of its own name: never the
installed commit's ``detsim`` (which may predate the tracking suite, or hold an older base). The base
imports only the standard library, numpy and itself, so loading it imports no ``detsim`` at all. What is
left here is the benchmarks' own: feature detection of older commits' APIs, allocator settings, and the
golden renders the tracks read.

Units: times in seconds, images in photons per pixel, shapes (slow, fast). A golden render is the
case's argument list turned into a configuration the way the commit's own ``detsim`` command reads it
(:func:`config_from_args`), simulated in float64 on the CPU with one torch thread; its hash is the
base's image hash (the definition ``detsim-track baselines`` uses too).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import gc
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import torch

try:  # raised inside a benchmark function (not its setup), asv records a skip only for this subclass
    from asv_runner.benchmarks.mark import SkipNotImplemented as Skip
except ImportError:
    Skip = NotImplementedError

THREADS = 1  # torch intra-op threads in every benchmark: timings on a shared 2-core runner scatter far less
torch.set_num_threads(THREADS)

REPO_ROOT = Path(os.environ.get("ASV_CONF_DIR") or Path(__file__).resolve().parent.parent)
BENCHMARKS_DIR = Path(__file__).resolve().parent
BASE_PACKAGE = "_detsim_track_base"  # the working tree's detsim/track/base, under a name no detsim has


def load_base(root: Path) -> ModuleType:
    """The package ``detsim/track/base`` of the checkout at ``root``, imported as :data:`BASE_PACKAGE`
    (once per process: later calls return the package already loaded).

    Its modules import each other relatively, so they are found in that folder whatever ``detsim`` is
    installed, and import nothing beyond the standard library and numpy.
    """
    loaded = sys.modules.get(BASE_PACKAGE)
    if loaded is not None:
        return loaded
    folder = Path(root) / "detsim" / "track" / "base"
    spec = importlib.util.spec_from_file_location(BASE_PACKAGE, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[BASE_PACKAGE] = package
    try:
        spec.loader.exec_module(package)
    except BaseException:
        del sys.modules[BASE_PACKAGE]
        raise
    return package


def base_module(name: str) -> ModuleType:
    """A module of the working tree's base (``base_module("metrics")``), loaded by :func:`load_base`."""
    return importlib.import_module(f"{load_base(REPO_ROOT).__name__}.{name}")


callgrind, device_costs, fresh, golden, hashing, metrics, parity, provenance, timing, workloads = map(base_module, (
    "callgrind", "device_costs", "fresh", "golden", "hashing", "metrics", "parity", "provenance", "timing",
    "workloads"))

GOLDEN_DIR = golden.golden_dir(REPO_ROOT)
CASES = golden.load_cases(GOLDEN_DIR)  # every golden case, in the manifest's order

PARITY_DECIMALS = metrics.PARITY_DECIMALS  # the base's one definition (a target's suite reads it too)
GOLDEN_DTYPE = "float64"
GOLDEN_DEVICE = "cpu"

DTYPES = {"float64": torch.float64, "float32": torch.float32}
DEVICES = ("cpu", "cuda")


@contextlib.contextmanager
def collections_skip_what_lives_now():
    """Within the block, garbage collections leave out every object alive at its start (torch's, detsim's, the
    suite's: they live as long as the process), as if permanent. A compile or a series of renders allocates
    millions of objects, and each full collection would walk all of torch's again: the compiled images and
    their second run take ~1.8 s less a commit. The images' bits do not depend on it. Objects frozen before
    the block stay frozen after it."""
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if not frozen_before:
            gc.unfreeze()


def pin_threads() -> None:
    """Pin torch to :data:`THREADS` threads (again: forked benchmark processes may have reset it)."""
    if torch.get_num_threads() != THREADS:
        torch.set_num_threads(THREADS)


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
STEADY_MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest: blocks below it come from the reused heap
STEADY_TRIM_THRESHOLD = 2**31 - 1  # freed heap memory is kept, not handed back (mallopt takes an int)


def steady_allocator() -> None:
    """Make glibc's malloc treat every timing process alike: fixed thresholds, freed memory kept.

    By default glibc raises its mmap threshold whenever a process frees a large block, so whether a
    render's temporaries come from reused heap or from fresh pages depends on what that process did
    before. Fresh pages cost page faults: a P2 render here took 6,000 to 10,000 faults and 6 to 18 ms of
    system time per call (of ~65 ms), varying from process to process and constant within one. Fixed,
    it takes 2 faults per call. Called in the setup of every timing benchmark (not the peak-memory ones);
    a no-op where the C library has no ``mallopt``.
    """
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(M_MMAP_THRESHOLD, STEADY_MMAP_THRESHOLD)
        mallopt(M_TRIM_THRESHOLD, STEADY_TRIM_THRESHOLD)


def require_device(device: str) -> torch.device:
    """The torch device, or a skip where this machine has none."""
    if device == "cuda" and not torch.cuda.is_available():
        raise NotImplementedError("no CUDA device on this machine")
    return torch.device(device)


def case_attr(case_id: str) -> str:
    """A Python identifier for a golden case id (``o01_polar_0.9`` -> ``o01_polar_0_9``)."""
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in case_id)


# -- workloads -----------------------------------------------------------------------------------

P4096 = workloads.WORKLOADS["P4096"]  # the large-detector run: 16.8 M pixels, one step each
# the workloads of the per-path throughput tracks, by name: nanoBragg's P1 (its default detector, one step
# per pixel), P2 at 256² (same per-pixel work, 16x fewer pixels, so a call takes ~0.1 s instead of ~2 s)
PATH_WORKLOADS = {"P1": workloads.WORKLOADS["P1"], "P2": workloads.WORKLOADS["P2"].resized(256), "P4096": P4096}


def workload_config(workload: workloads.Workload):
    """The configuration ``detsim`` reads from ``workload``'s command line, built from the dataclasses
    every commit has: the engine is timed at commits that could not read argument lists yet."""
    import detsim

    crystal = dict(cell=(100.0, 100.0, 100.0, 90.0, 90.0, 90.0), default_F=100.0, Na=5, Nb=5, Nc=5,
                   misset_deg=(10.0, 20.0, 30.0))
    if workload.mosaic_domains > 1:
        crystal.update(mosaic_spread_deg=0.5, mosaic_domains=workload.mosaic_domains, mosaic_seed=42)
    sampling = dict(oversample=workload.oversample)
    if workload.phi_steps > 1:
        sampling.update(phi0_deg=0.0, osc_deg=0.5, phisteps=workload.phi_steps)
    pixel_mm = workloads.DETECTOR_MM / workload.pixels  # the same detector at every size: fewer pixels are coarser
    return detsim.SimulationConfig(
        crystal=detsim.CrystalConfig(**crystal),
        beam=detsim.BeamConfig(lambda_A=1.0),
        # no detector size: every commit derives it from the pixels, as nanoBragg does from -detpixels and -pixel
        detector=detsim.DetectorConfig(fpixels=workload.pixels, spixels=workload.pixels, pixel_mm=pixel_mm,
                                       distance_mm=100.0),
        sampling=detsim.SamplingConfig(**sampling),
    )


# -- the installed detsim ------------------------------------------------------------------------
#
# Today's detsim is reached through its public facade: ``detsim.config_from_argv``, ``detsim.MODES``,
# ``detsim.available_modes``, ``detsim.simulate`` and the configuration types, and its ``detsim`` command
# through the console-script entry point the installed commit declares. Commits from before the facade kept
# these in flat modules, which is where the fallbacks below look, only when the facade lacks a name. Their
# names are built at run time from ``OLD_PACKAGE`` and a leaf (``_old_module("argconfig")``), never written
# as dotted names: the tools that rewrite references after a module move must leave them alone, as they are
# the names those commits had.

OLD_PACKAGE = "detsim."
# facade name -> the flat module of older commits that defined it
OLD_HOMES = {"config_from_argv": "argconfig", "MODES": "engine", "available_modes": "engine"}
NO_ARGUMENT_READER = "this commit reads no nanoBragg argument lists"  # the package's first commit


def _old_module(leaf: str) -> ModuleType | None:
    """An older commit's flat module ``detsim.<leaf>``, imported, or None where the installed detsim has none."""
    name = OLD_PACKAGE + leaf
    return importlib.import_module(name) if importlib.util.find_spec(name) is not None else None


def _in_facade(name: str) -> bool:
    """Whether the installed detsim's facade offers ``name``, without importing what defines it."""
    import detsim

    return name in dir(detsim)


def installed(name: str):
    """``detsim.<name>`` of the installed commit: the facade's, else its older flat module's (None if neither)."""
    import detsim

    if _in_facade(name):
        return getattr(detsim, name)
    module = _old_module(OLD_HOMES[name])
    return getattr(module, name, None) if module is not None else None


def command_main():
    """The installed commit's ``detsim`` command as a function (``main(argv) -> exit code``), or None.

    The console-script entry point the commit declares names it; where that module is not importable here
    (a tree on ``sys.path`` beside another installed version) an older commit's flat ``cli`` module is used.
    """
    declared = [entry for dist in importlib.metadata.distributions() for entry in dist.entry_points
                if entry.group == "console_scripts" and entry.name == "detsim"]  # a stale build's too: tried in turn
    for entry in declared:
        try:
            found = importlib.util.find_spec(entry.module) is not None
        except ModuleNotFoundError:  # its parent package is not in this tree
            found = False
        if found:
            return entry.load()
    old = _old_module("cli")
    return getattr(old, "main", None) if old is not None else None


def simulate(config, *, device: torch.device, dtype: torch.dtype, mode: str | None = None):
    """``detsim.simulate``; ``mode`` is passed only to commits that have execution modes."""
    import detsim

    if mode is None or (mode == "eager" and installed("MODES") is None):
        image = detsim.simulate(config, device=device, dtype=dtype)
    else:
        image = detsim.simulate(config, device=device, dtype=dtype, mode=mode)
    timing.synchronize(torch, device)
    return image


def available_modes(device: str = "cpu") -> tuple[str, ...]:
    """The execution modes the installed detsim can run on ``device`` here ("eager" before modes existed)."""
    available = installed("available_modes")
    if available is not None:
        return tuple(available(device))
    return tuple(installed("MODES") or ("eager",))


# -- golden cases --------------------------------------------------------------------------------

def reads_arguments() -> bool:
    """Whether the installed detsim reads nanoBragg argument lists (its first commit did not); imports nothing
    of it beyond the package."""
    return _in_facade("config_from_argv") or any(importlib.util.find_spec(OLD_PACKAGE + leaf) is not None
                                                 for leaf in ("argconfig", "cli"))


def config_from_args(argv: list[str]):
    """A configuration from a nanoBragg argument list, read the way the commit's ``detsim`` reads it:
    ``detsim.config_from_argv`` where the commit has it (the facade, or the flat ``argconfig`` module of
    older commits), else the functions of the oldest commits' flat ``cli`` and ``argv`` modules.

    Raises NotImplementedError for commits with none of them (the first one); a module that exists but
    fails to import is an error of that commit.
    """
    reader = installed("config_from_argv")
    if reader is not None:
        return reader(argv)
    cli = _old_module("cli")
    if cli is None:
        raise NotImplementedError(NO_ARGUMENT_READER)
    parse_argv = _old_module("argv").parse_argv
    args = parse_argv(argv)
    if getattr(args, "img_file", None) is not None or getattr(args, "mask_file", None) is not None:
        initial, mask = cli.header_arguments(args.img_file, args.mask_file)
        return cli.build_config(parse_argv(argv, initial), mask)
    return cli.build_config(args)


class CaseError(RuntimeError):
    """A golden case that could not be read or rendered (its one line: ``ErrorType: message``)."""


def golden_render(mode: str | None = None):
    """The suite's timed render (:mod:`timing`) of a golden configuration: float64 on the CPU by ``mode`` (None:
    the default path, eager, which every commit can run); an image with a non-finite value is an error."""
    device = torch.device(GOLDEN_DEVICE)

    def render(config):
        done = timing.timed(torch, lambda: simulate(config, device=device, dtype=DTYPES[GOLDEN_DTYPE], mode=mode),
                            device)
        if not bool(done.result.isfinite().all()):
            raise ValueError("the image has non-finite values")
        return done

    return render


def case_record(outcome) -> dict:
    """A case through the parity loop (:mod:`parity`): ``{"sha256", "r", "one_minus_r", "seconds"}`` (r and
    1 - r None where r is undefined), or ``{"error": one line}`` where it could not be read or rendered."""
    if outcome.image is None:
        return {"error": outcome.error}
    r = outcome.metrics["r"]
    return {"sha256": hashing.image_sha256(outcome.image), "r": r, "one_minus_r": None if r is None else 1.0 - r,
            "seconds": round(outcome.seconds, 4)}


def render_case(case, mode: str | None = None) -> dict:
    """One golden case (a base ``GoldenCase``) through the parity loop: :func:`case_record`."""
    return case_record(parity.case_parity(case, config_from_args, golden_render(mode)))


def holds_for() -> dict:
    """The conditions under which a golden hash is reproducible (stored with every hash): the machine
    class of a golden render here, as a record."""
    return provenance.MachineClass.here(torch, threads=THREADS, dtype=GOLDEN_DTYPE, device=GOLDEN_DEVICE).as_record()


def golden_renders() -> dict:
    """Render every golden case once per commit; parity and determinism tracks read the result.

    asv runs this once per commit and environment (it is the shared ``setup_cache`` of
    ``bench_parity`` and ``bench_determinism``). It never raises: a case that fails is recorded with
    its error, and each track then fails on its own. It writes nothing: every number the history needs
    (the image fingerprints among them) is a track, stored in asv's own results.
    """
    with collections_skip_what_lives_now():
        pin_threads()
        out = {"holds_for": holds_for(), "cases": {}, "skip": None}
        if not reads_arguments():
            out["skip"] = NO_ARGUMENT_READER  # every track of every case skips
            return out
        for outcome in parity.golden_parity(CASES, config_from_args, golden_render()):
            out["cases"][outcome.case.id] = case_record(outcome)  # a broken case: its tracks fail with its error
        return out


golden_renders.timeout = 900  # 53 cases, ~13 s in all on one thread today


def compiled_golden_runs() -> dict:
    """Every golden case by the compiled path, once per commit: the shared ``setup_cache`` of
    ``bench_determinism.CompiledHashes`` and ``bench_reproducibility.CompiledReproducibility`` (asv runs it
    once for both, so the path is compiled in two processes a commit, not three).

    ``{"holds_for", "cases": case -> sha256, "reproducibility": {"runs", "errors"}}``: the sha256 of every
    case's image (compiled and eager images may differ in the last bits, so they have separate baselines:
    ``cases_compiled`` in the class's baseline file), and the compiled axis of :func:`reproducibility_runs`:
    the checked cases rendered here (run A) against a fresh interpreter's (run B, each compiles), which runs
    beside this process's renders. Raises NotImplementedError for commits without a compiled path; a case
    that fails is recorded with its error.
    """
    with collections_skip_what_lives_now():
        pin_threads()
        if not reads_arguments() or "compiled" not in available_modes(GOLDEN_DEVICE):
            raise NotImplementedError("this commit has no compiled path")
        checked = golden.CHECKED_COMPILED_CASES
        [threads] = {n for axis in golden.AXES.values() if axis.mode == "compiled" for n in axis.threads}
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # run B waits on its own process meanwhile
            there = pool.submit(second_run, checked, "compiled", (threads,), other_hash_seed())
            out = {"holds_for": holds_for(), "cases": {}}
            errors = {}
            for outcome in parity.golden_parity(CASES, config_from_args, golden_render("compiled")):
                rendered = case_record(outcome)
                if "error" in rendered:  # counted as changed by the track
                    errors[outcome.case.id] = rendered["error"]
                out["cases"][outcome.case.id] = rendered.get("sha256") or f"error: {rendered['error']}"
            run_b = there.result()[str(threads)]
        here = {case: out["cases"][case] for case in checked if case not in errors}
        out["reproducibility"] = {"runs": {"compiled": (here, run_b["bits"])},
                                  "errors": {**{c: errors[c] for c in checked if c in errors}, **run_b["errors"]}}
        return out


compiled_golden_runs.timeout = 1200  # the first compile, then 53 renders


def define_case_tracks(namespace: dict, prefix: str, measure, *, unit: str, version: str, label: str) -> None:
    """Define one ``track_<prefix>_<case>`` per golden case in ``namespace`` (a module's globals()).

    ``measure(renders, case_id)`` gives the tracked number. Raises ImportError when a manifest case
    ends up without its own track (two ids mapping to one attribute name), so a new golden case can
    never go untracked.
    """
    for case in CASES:
        def track(renders, case_id=case.id):
            return measure(renders, case_id)

        track.__name__ = f"track_{prefix}_{case_attr(case.id)}"
        track.unit, track.version, track.pretty_name = unit, version, f"{label}: {case.id}"
        namespace[track.__name__] = track
    names = {f"track_{prefix}_{case_attr(c.id)}" for c in CASES}
    if len(names) != len(CASES) or not names <= namespace.keys():
        raise ImportError(f"{namespace.get('__name__', 'benchmarks')}: golden cases without their own "
                          f"track_{prefix}_ benchmark (two case ids give one name)")


def case_result(renders: dict, case_id: str) -> dict:
    """One case's render from :func:`golden_renders`, or the skip/failure it stands for."""
    if renders.get("skip"):
        raise Skip(renders["skip"])
    result = renders["cases"].get(case_id)
    if result is None:
        raise RuntimeError(f"{case_id}: not rendered")
    if "error" in result:
        raise RuntimeError(f"{case_id}: {result['error']}")
    return result


# -- reproducibility -----------------------------------------------------------------------------

OUTPUT_FLAGS = ("-floatfile", "-intfile", "-noisefile", "-pgmfile")  # what a golden case's command writes


def noise_sha256(case) -> str | None:
    """sha256 of the noise image the case's own command line writes, where it writes one from a fixed
    ``-seed`` (the random stream a second run must repeat); None otherwise, or where the commit has no
    ``detsim`` command. Outputs go to a scratch folder, never the case's."""
    args = list(case.args)
    main = command_main() if "-noisefile" in args and "-seed" in args else None
    if main is None:
        return None

    with tempfile.TemporaryDirectory(prefix="detsim-noise-") as scratch:
        for i, token in enumerate(args[:-1]):
            if token in OUTPUT_FLAGS:
                args[i + 1] = str(Path(scratch) / f"{token.lstrip('-')}.out")
        with golden.working_directory(case.folder), open(os.devnull, "w") as quiet, \
                contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            code = main(args)
        if code != 0:
            raise RuntimeError(f"{case.id}: the detsim command exited {code}")
        return hashing.sha256_file(Path(scratch) / "noisefile.out")


def case_bits(case, mode: str | None = None) -> str:
    """sha256 of everything a golden case's input gives that the suite hashes: the float64 image by the
    default path (or ``mode``) and, where the case writes one from a fixed seed, its noise image."""
    rendered = render_case(case, mode)
    if "error" in rendered:
        raise CaseError(rendered["error"])
    image = rendered["sha256"]
    noise = noise_sha256(case) if mode in (None, "eager") else None
    return image if noise is None else hashing.sha256_bytes(f"{image} {noise}".encode())


def bits_of(case_ids, mode: str | None, threads: int) -> dict:
    """``{"bits": case -> :func:`case_bits`, "errors": case -> one line}`` at ``threads`` torch threads."""
    torch.set_num_threads(threads)
    out = {"bits": {}, "errors": {}}
    for case in CASES:
        if case.id in case_ids:
            try:
                out["bits"][case.id] = case_bits(case, mode)
            except CaseError as exc:
                out["errors"][case.id] = str(exc)
            except Exception as exc:  # noqa: BLE001 - recorded per case; its track fails with it
                out["errors"][case.id] = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return out


def second_run(case_ids, mode: str | None, threads: tuple[int, ...], hash_seed: str) -> dict:
    """:func:`bits_of` at each of ``threads`` in one fresh interpreter of this environment (the commit's
    ``detsim``; ``PYTHONHASHSEED=hash_seed``): thread count (text) -> its result."""
    job = json.dumps({"cases": list(case_ids), "mode": mode, "threads": list(threads)})
    code = (f"import sys; sys.path.insert(0, {str(BENCHMARKS_DIR)!r}); import common, json; "
            f"print(json.dumps(common.second_run_job(json.loads({job!r}))))")
    with tempfile.TemporaryDirectory(prefix="detsim-rerun-") as scratch:  # -P and an empty folder: no checkout
        done = fresh.run([sys.executable, "-P", "-c", code], cwd=Path(scratch), timeout=600,
                         env=fresh.pinned_env(**fresh.thread_vars(max(threads)), PYTHONHASHSEED=hash_seed),
                         what="the second run").check("the second run")
    return json.loads(done.stdout.splitlines()[-1])


def second_run_job(job: dict) -> dict:
    """Inside the fresh interpreter of :func:`second_run`."""
    with collections_skip_what_lives_now():
        return {str(n): bits_of(job["cases"], job["mode"], n) for n in job["threads"]}


def other_hash_seed() -> str:
    """A ``PYTHONHASHSEED`` other than this process's, for the second process of the process axis."""
    return "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"


def reproducibility_runs() -> dict:
    """Two runs of each checked golden case (``golden.CHECKED_CASES``) per eager axis: ``{"runs": axis ->
    (bits of run A, bits of run B), "errors": case -> one line}``.

    Run A of the process axis is this process (one thread), run B the same renders in a fresh interpreter
    with another hash seed, which runs beside this one; the threads axis is that fresh interpreter at 1 and
    at 2 threads (the compiled axis: :func:`compiled_golden_runs`). Raises NotImplementedError where the
    commit cannot read golden cases.
    """
    with collections_skip_what_lives_now():
        pin_threads()
        if not reads_arguments():
            raise NotImplementedError("this commit cannot render golden cases")
        axes = [name for name, axis in golden.AXES.items() if axis.mode == "eager"]
        cases = golden.CHECKED_CASES
        threads = sorted({n for name in axes for n in golden.AXES[name].threads})
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # run B waits on its own process meanwhile
            second = pool.submit(second_run, cases, "eager", tuple(threads), other_hash_seed())
            here = bits_of(cases, "eager", THREADS)
            there = second.result()
        pin_threads()
        errors = {**here["errors"], **{c: why for run in there.values() for c, why in run["errors"].items()}}
        runs = {}
        for name in axes:
            a, b = golden.AXES[name].threads
            first = here if name != "threads" else there[str(a)]
            runs[name] = (first["bits"], there[str(b)]["bits"])
        return {"runs": runs, "errors": errors}


def runs_differ(runs: dict, axis: str, case: str) -> int:
    """1 when the two runs of ``case`` along ``axis`` gave different bits, 0 when the same; raises where a
    run failed."""
    if case in runs["errors"]:
        raise RuntimeError(f"{case}: {runs['errors'][case]}")
    a, b = runs["runs"][axis]
    return int(a[case] != b[case])


# -- instruction counts --------------------------------------------------------------------------

def count_setup(workload: str, dtype: str = "float64") -> str:
    """The setup code of a count of ``workload`` (``P1@64``, ``P2@32`` or a golden case id) rendered eager
    on the CPU: it defines ``_render``, built through this module (so it runs against older commits)."""
    # this folder, not the project root: there ``import detsim`` would find the working tree's package
    # instead of the installed commit's (the count also runs in an empty directory for the same reason)
    lines = ["import sys", f"sys.path.insert(0, {str(BENCHMARKS_DIR)!r})", "import common",
             "torch.set_num_threads(1)"]
    if workloads.reduced(workload) is not None:
        lines += [f"_config = common.workload_config(common.workloads.reduced({workload!r}))", "_folder = None"]
    else:
        lines += [f"_case = next(c for c in common.CASES if c.id == {workload!r})",
                  "_config = _case.config(common.config_from_args)", "_folder = _case.folder"]
    lines += ["def _render():",
              "    with common.golden.working_directory(_folder or common.GOLDEN_DIR):",
              f"        return common.simulate(_config, device=torch.device('cpu'), dtype=torch.{dtype})"]
    return "\n".join(lines)


def count_instructions_many(counted: list[str], dtype: str = "float64", timeout: float = 600) -> dict[str, int]:
    """Instructions of one eager CPU render of each workload of ``counted``, counted in one valgrind
    process (the base's ``callgrind.harness_many``, a thread per workload): workload -> count."""
    reason = callgrind.not_measured_reason()
    if reason:
        raise NotImplementedError(reason)
    script = callgrind.harness_many([count_setup(workload, dtype) for workload in counted])
    with tempfile.TemporaryDirectory(prefix="detsim-cost-") as directory:
        command = callgrind.command(script, Path(directory) / "callgrind.out", separate_threads=True)
        done = subprocess.run(command, env={**os.environ, **callgrind.COUNT_ENV}, cwd=directory,
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            tail = [line for line in done.stderr.splitlines() if line and not line.startswith("==")]
            raise RuntimeError(f"the counting process exited {done.returncode}: {tail[-1] if tail else ''}")
        files = sorted(Path(directory).glob("callgrind.out-*"))
        if len(files) != len(counted) + 1:  # the main thread, then one thread per region
            raise RuntimeError(f"expected {len(counted) + 1} callgrind thread files, found {len(files)}")
        return {w: callgrind.parse_total(f.read_text()) for w, f in zip(counted, files[1:])}


# -- device operations per render, counted on the CPU ---------------------------------------------

LAUNCH_COUNTER = REPO_ROOT / "detsim" / "track" / "measure" / "launches.py"  # imports torch and triton, no detsim


def load_launch_counter() -> ModuleType:
    """The working tree's counter of device operations, loaded by path (it imports torch and triton, never
    detsim, so it counts whichever commit is installed)."""
    loaded = sys.modules.get("_detsim_launches")
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location("_detsim_launches", LAUNCH_COUNTER)
    module = importlib.util.module_from_spec(spec)
    sys.modules["_detsim_launches"] = module
    spec.loader.exec_module(module)
    return module


def count_launches(modes: tuple[str, ...], timeout: float = 600) -> dict:
    """Device operations of one render of :data:`device_costs.LAUNCH_WORKLOAD` on each of ``modes``, counted in
    one fresh interpreter of this environment (the commit's ``detsim``, ``TRITON_INTERPRET=1``, one thread):
    mode -> ``{"launches", "copies", "syncs", ...}``, or mode -> ``{"skip": why}``."""
    job = json.dumps({"modes": list(modes)})
    code = (f"import sys; sys.path.insert(0, {str(BENCHMARKS_DIR)!r}); import common, json; "
            f"print(json.dumps(common.count_launches_job(json.loads({job!r}))))")
    with tempfile.TemporaryDirectory(prefix="detsim-launches-") as scratch:  # -P and an empty folder: no checkout
        done = fresh.run([sys.executable, "-P", "-c", code], cwd=Path(scratch), timeout=timeout,
                         env=fresh.pinned_env(**fresh.thread_vars(THREADS), TRITON_INTERPRET="1"),
                         what="the launch count").check("the launch count")
    return json.loads(done.stdout.splitlines()[-1])


def count_launches_job(job: dict) -> dict:
    """Inside the fresh interpreter of :func:`count_launches`: a warm-up render, then one counted, per mode."""
    import detsim

    pin_threads()
    counter = load_launch_counter()
    prepare, render = getattr(detsim, "prepare", None), getattr(detsim, "render", None)
    if prepare is None or render is None:
        return {mode: {"skip": "this commit has no detsim.prepare and detsim.render"} for mode in job["modes"]}
    config = workload_config(workloads.reduced(device_costs.LAUNCH_WORKLOAD))
    dtype = DTYPES[device_costs.LAUNCH_DTYPE]
    out = {}
    for mode in job["modes"]:
        if mode not in available_modes("cpu"):
            out[mode] = {"skip": f"mode {mode!r} does not run on the CPU with this commit"}
            continue
        out[mode] = counter.count_render(prepare, render, config, mode, dtype, run_triton=False)  # counts only
    return out
