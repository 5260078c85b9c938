"""What the asv suite shares: pinned threads, workloads, golden cases, their renders and hashes.

asv imports this file from the working tree while the *installed* detsim is the commit being measured,
so everything here must work with every detsim since the package's first commit. APIs newer than that
are feature-detected; where one is missing the benchmark raises ``NotImplementedError``, which asv
records as a skip rather than a failure.

For the same reason the few suite facts the tracks need are copied here rather than imported from
``detsim.track.base`` (which older commits lack): each copy says which definition it copies, and
``tests/track/test_benchmarks_copies.py`` proves that they agree.

Units: times in seconds, images in photons per pixel, shapes (slow, fast). A golden render is the
case's argument list turned into a configuration the way the commit's own ``detsim`` command reads it
(``detsim.argconfig.config_from_argv``, or ``detsim.cli`` in commits before it), simulated in float64
on the CPU with one torch thread; its hash is the sha256 of the image's bytes as little-endian float64
in C order (the definition ``detsim-track baselines`` uses too).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib.util
import json
import os
import platform
import re
import resource
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

import numpy as np
import torch

try:  # raised inside a benchmark function (not its setup), asv records a skip only for this subclass
    from asv_runner.benchmarks.mark import SkipNotImplemented as Skip
except ImportError:
    Skip = NotImplementedError

THREADS = 1  # torch intra-op threads in every benchmark: timings on a shared 2-core runner scatter far less
torch.set_num_threads(THREADS)

REPO_ROOT = Path(os.environ.get("ASV_CONF_DIR") or Path(__file__).resolve().parent.parent)
GOLDEN_DIR = REPO_ROOT / "tests" / "golden"
MANIFEST = json.loads((GOLDEN_DIR / "manifest.json").read_text())
BASELINE_HASHES = REPO_ROOT / "results" / "baselines" / "golden_hashes.json"  # the single file of earlier versions
BASELINE_DIR = REPO_ROOT / "results" / "baselines" / "golden_hashes"  # one <class slug>.json per machine class
FINGERPRINT_HEX = 13  # copy of detsim.track.base.provenance.FINGERPRINT_HEX: 52 bits, exact in a float64

PARITY_DECIMALS = 9  # 1 - r is recorded to 1e-9: float noise (~1e-15) never moves it, a physics change does
PARITY_MIN_R = 0.9995  # copy of detsim.track.base.metrics.PARITY_MIN_R: the line the 1 - r tracks are read against
GOLDEN_DTYPE = "float64"
GOLDEN_DEVICE = "cpu"

DTYPES = {"float64": torch.float64, "float32": torch.float32}
DEVICES = ("cpu", "cuda")


_wall_clock = False  # set per benchmark process by use_wall_clock()


def use_wall_clock(flag: bool) -> None:
    """Make :func:`clock` read wall time (for GPU work, which CPU time does not see)."""
    global _wall_clock
    _wall_clock = flag


def clock() -> float:
    """The timer of every timing benchmark: CPU seconds of this process, or wall seconds on a GPU.

    On a shared 2-core machine wall time mostly measures how long the benchmark waited for a core
    (a 26 ms render took 70-130 ms of wall time at load 8); CPU time measures detsim's own work.
    """
    return time.perf_counter() if _wall_clock else time.process_time()


def clock_with_children() -> float:
    """CPU seconds of this process and its finished children (for whole-command timings)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


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
    """The torch device, or a skip where this machine has none; selects the clock for it."""
    if device == "cuda" and not torch.cuda.is_available():
        raise NotImplementedError("no CUDA device on this machine")
    use_wall_clock(device != "cpu")
    return torch.device(device)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def case_attr(case_id: str) -> str:
    """A Python identifier for a golden case id (``o01_polar_0.9`` -> ``o01_polar_0_9``)."""
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in case_id)


# -- workloads -----------------------------------------------------------------------------------

DETECTOR_MM = 102.4  # copy of detsim.track.base.workloads.DETECTOR_MM: the detector side at every size


@dataclass(frozen=True)
class Workload:
    """A nanoBragg-like simulation: cubic 100 Å cell, default_F 100, N = 5, a 102.4 mm square detector.

    steps per pixel = oversample² × mosaic domains × phi steps (one source, one sensor layer).
    Copy of ``detsim.track.base.workloads.Workload`` (which builds the configuration from nanoBragg
    command lines): :meth:`config` is the configuration ``detsim`` reads from that command line.
    """

    pixels: int  # detector side, pixels (square)
    oversample: int = 1
    mosaic_domains: int = 1
    phi_steps: int = 1

    @property
    def steps(self) -> int:
        return self.oversample ** 2 * self.mosaic_domains * self.phi_steps

    @property
    def pixel_steps(self) -> int:
        return self.pixels * self.pixels * self.steps

    def resized(self, pixels: int) -> "Workload":
        """The same per-pixel work on a ``pixels``² detector of the same size."""
        return replace(self, pixels=pixels)

    def config(self):
        import detsim

        crystal = dict(cell=(100.0, 100.0, 100.0, 90.0, 90.0, 90.0), default_F=100.0, Na=5, Nb=5, Nc=5,
                       misset_deg=(10.0, 20.0, 30.0))
        if self.mosaic_domains > 1:
            crystal.update(mosaic_spread_deg=0.5, mosaic_domains=self.mosaic_domains, mosaic_seed=42)
        sampling = dict(oversample=self.oversample)
        if self.phi_steps > 1:
            sampling.update(phi0_deg=0.0, osc_deg=0.5, phisteps=self.phi_steps)
        pixel_mm = DETECTOR_MM / self.pixels  # the same detector at every size: fewer pixels are coarser
        side_mm = pixel_mm * self.pixels  # what nanoBragg's reader derives from -detpixels and -pixel
        return detsim.SimulationConfig(
            crystal=detsim.CrystalConfig(**crystal),
            beam=detsim.BeamConfig(lambda_A=1.0),
            detector=detsim.DetectorConfig(fpixels=self.pixels, spixels=self.pixels, pixel_mm=pixel_mm,
                                           detsize_f_mm=side_mm, detsize_s_mm=side_mm, distance_mm=100.0),
            sampling=detsim.SamplingConfig(**sampling),
        )


# steps per pixel in the engine sweep -> how they are made
SWEEP_STEPS = {1: dict(), 10: dict(mosaic_domains=10)}
SWEEP_PIXELS = (128, 256)  # reduced from nanoBragg's 1024 so that a commit's run stays short on 2 cores

# copies of detsim.track.base.workloads.WORKLOADS (P1, P2, P4096; P2 resized here)
P1 = Workload(pixels=1024)  # nanoBragg's default detector, one step per pixel
P2_FULL = Workload(pixels=1024, oversample=2, mosaic_domains=10, phi_steps=5)  # 200 steps per pixel
# nanoBragg's P2 at 128²: 64× fewer pixels, same per-pixel work, so a sample takes ~0.7 s instead of ~40 s
P2 = P2_FULL.resized(128)
P4096 = Workload(pixels=4096)  # the large-detector run: 16.8 M pixels, one step each
# the workloads of the per-path throughput tracks, by name (P2 at 256² there: compiled paths need
# enough pixels per call for their speed to show)
PATH_WORKLOADS = {"P1": P1, "P2": P2_FULL.resized(256), "P4096": P4096}


def simulate(config, *, device: torch.device, dtype: torch.dtype, mode: str | None = None):
    """``detsim.simulate``; ``mode`` is passed only to commits that have execution modes."""
    import detsim

    if mode is None or (mode == "eager" and not hasattr(detsim.engine, "MODES")):
        image = detsim.simulate(config, device=device, dtype=dtype)
    else:
        image = detsim.simulate(config, device=device, dtype=dtype, mode=mode)
    synchronize(device)
    return image


def available_modes(device: str = "cpu") -> tuple[str, ...]:
    """The execution modes the installed detsim can run on ``device`` here ("eager" before modes existed)."""
    from detsim import engine

    if hasattr(engine, "available_modes"):
        return tuple(engine.available_modes(device))
    return tuple(getattr(engine, "MODES", ("eager",)))


# -- golden cases --------------------------------------------------------------------------------

def reads_arguments() -> bool:
    """Whether the installed detsim reads nanoBragg argument lists (its first commit did not)."""
    return any(importlib.util.find_spec(name) is not None for name in ("detsim.argconfig", "detsim.cli"))


def config_from_args(argv: list[str]):
    """A configuration from a nanoBragg argument list, read the way the commit's ``detsim`` reads it:
    ``detsim.argconfig.config_from_argv`` where the commit has it, else its ``detsim.cli`` functions.

    Raises NotImplementedError for commits with neither (the first one); a module that exists but
    fails to import is an error of that commit.
    """
    if importlib.util.find_spec("detsim.argconfig") is not None:
        from detsim.argconfig import config_from_argv

        return config_from_argv(argv)
    if importlib.util.find_spec("detsim.cli") is None:
        raise NotImplementedError("this commit has no detsim.cli.build_config")
    from detsim import cli
    from detsim.argv import parse_argv

    args = parse_argv(argv)
    if getattr(args, "img_file", None) is not None or getattr(args, "mask_file", None) is not None:
        initial, mask = cli.header_arguments(args.img_file, args.mask_file)
        return cli.build_config(parse_argv(argv, initial), mask)
    return cli.build_config(args)


@contextlib.contextmanager
def working_directory(path: Path) -> Iterator[None]:
    """Copy of detsim.track.base.golden.working_directory: run a block in ``path``."""
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def case_config(case: dict):
    """Copy of detsim.track.base.golden.GoldenCase.config: a golden case's configuration (a manifest
    record), read in the case's folder (input files in its arguments are relative to it)."""
    with working_directory(GOLDEN_DIR / case["id"]):
        return config_from_args(list(case["args"]))


def image_sha256(image) -> str:
    """Copy of detsim.track.base.hashing.image_sha256: sha256 of an image's values as little-endian
    float64 bytes, C order."""
    array = image.detach().cpu().double().numpy() if isinstance(image, torch.Tensor) else np.asarray(image)
    return hashlib.sha256(np.ascontiguousarray(array, dtype="<f8").tobytes()).hexdigest()


def pearson_r(a: np.ndarray, b: np.ndarray) -> float | None:
    """Copy of detsim.track.base.metrics.pearson_r: Pearson correlation of two images in float64; None
    where undefined (no pixels, a non-finite value, a constant image that differs; identical constant
    images give 1.0)."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"images of different sizes: {x.size} and {y.size} pixels")
    if x.size == 0 or not (np.isfinite(x).all() and np.isfinite(y).all()):
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        if x.std() == 0 or y.std() == 0:
            return 1.0 if np.array_equal(x, y) else None
        r = float(np.corrcoef(x, y)[0, 1])
    return r if np.isfinite(r) else None


def render_case(case: dict, mode: str | None = None) -> dict:
    """Render one golden case: ``{"sha256", "r", "one_minus_r", "seconds"}`` (r and 1 - r None where r
    is undefined); ``mode`` None is the default path (eager), which is what every commit can run."""
    started = time.perf_counter()
    config = case_config(case)
    with working_directory(GOLDEN_DIR / case["id"]):  # older commits read some input files while rendering
        image = simulate(config, device=torch.device(GOLDEN_DEVICE), dtype=DTYPES[GOLDEN_DTYPE], mode=mode)
    seconds = time.perf_counter() - started
    shape = tuple(case["shape"])
    if tuple(image.shape) != shape:
        raise ValueError(f"image shape {tuple(image.shape)} != golden shape {shape}")
    reference = np.fromfile(GOLDEN_DIR / case["id"] / "image.bin", dtype="<f4").reshape(shape)
    ours = image.detach().cpu().numpy()
    if not np.isfinite(ours).all():
        raise ValueError("the image has non-finite values")
    r = pearson_r(ours, reference)
    return {"sha256": image_sha256(ours), "r": r, "one_minus_r": None if r is None else 1.0 - r,
            "seconds": round(seconds, 4)}


def cpu_class() -> str:
    """Copy of detsim.track.base.provenance.cpu_class: what bit-exact results depend on besides torch and
    threads: architecture, vendor, ATen ISA level."""
    vendor = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("vendor_id"):
                vendor = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    capability = torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu") else "unknown"
    return " ".join(part for part in (platform.machine(), vendor, capability) if part)


def cpu_model() -> str:
    """Copy of detsim.track.base.provenance.cpu_model: the CPU's marketing name."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def holds_for() -> dict:
    """The conditions under which a golden hash is reproducible (stored with every hash): copy of
    ``detsim.track.base.provenance.MachineClass.here(threads=1, dtype="float64", device="cpu").as_record()``."""
    return {"torch": torch.__version__, "threads": THREADS, "cpu_class": cpu_class(),
            "dtype": GOLDEN_DTYPE, "device": GOLDEN_DEVICE}


def holds_differences(stored: dict, here: dict) -> dict[str, tuple]:
    """Copy of detsim.track.base.provenance.MachineClass.differences for ``holds_for`` records: field ->
    (stored value, this run's value) for every field of ``here`` that ``stored`` lacks or differs in."""
    return {k: (stored.get(k), here[k]) for k in here if stored.get(k) != here[k]}


def class_slug(record: dict) -> str:
    """Copy of detsim.track.base.provenance.class_slug: a machine class as a file name."""
    def part(value) -> str:
        return re.sub(r"[^A-Za-z0-9.+]+", "-", str(value)).strip("-") or "unknown"

    return "_".join((part(record.get("cpu_class")), "torch" + part(record.get("torch")),
                     f"{part(record.get('threads'))}t", part(record.get("dtype")), part(record.get("device"))))


CLASS_FIELDS = ("cpu_class", "torch", "threads", "dtype", "device")  # copy of provenance.MachineClass's fields


def class_fingerprint(record: dict) -> float:
    """Copy of detsim.track.base.provenance.class_fingerprint: a machine class as one exact number."""
    text = json.dumps({k: record.get(k) for k in CLASS_FIELDS}, sort_keys=True)
    return float(int(hashlib.sha256(text.encode()).hexdigest()[:FINGERPRINT_HEX], 16))


def hash_fingerprint(sha256: str) -> float:
    """Copy of detsim.track.baselines.golden_hashes.fingerprint: an image hash as one exact number."""
    return float(int(sha256[:FINGERPRINT_HEX], 16))


def golden_renders() -> dict:
    """Render every golden case once per commit; parity and determinism tracks read the result.

    asv runs this once per commit and environment (it is the shared ``setup_cache`` of
    ``bench_parity`` and ``bench_determinism``). It never raises: a case that fails is recorded with
    its error, and each track then fails on its own. It writes nothing: every number the history needs
    (the image fingerprints among them) is a track, stored in asv's own results.
    """
    pin_threads()
    out = {"holds_for": holds_for(), "cases": {}, "skip": None}
    if not reads_arguments():
        out["skip"] = "this commit has no detsim.cli.build_config"  # every track of every case skips
        return out
    for case in MANIFEST:
        try:
            out["cases"][case["id"]] = render_case(case)
        except Exception as exc:  # noqa: BLE001 - recorded per case; the case's tracks fail with it
            out["cases"][case["id"]] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    return out


golden_renders.timeout = 900  # 53 cases, ~13 s in all on one thread today


def compiled_golden_hashes() -> dict:
    """sha256 of every golden case rendered by the compiled path: ``{"holds_for", "cases"}``.

    Compiled and eager images may differ in the last bits, so they have separate baselines
    (``cases_compiled`` in ``results/baselines/golden_hashes.json``). Raises NotImplementedError for
    commits without a compiled path; a case that fails is recorded with its error.
    """
    pin_threads()
    if not reads_arguments() or "compiled" not in available_modes(GOLDEN_DEVICE):
        raise NotImplementedError("this commit has no compiled path")
    out = {"holds_for": holds_for(), "cases": {}}
    for case in MANIFEST:
        try:
            out["cases"][case["id"]] = render_case(case, mode="compiled")["sha256"]
        except Exception as exc:  # noqa: BLE001 - counted as changed by the track
            out["cases"][case["id"]] = f"error: {type(exc).__name__}: {exc}".splitlines()[0]
    return out


def define_case_tracks(namespace: dict, prefix: str, measure, *, unit: str, version: str, label: str) -> None:
    """Define one ``track_<prefix>_<case>`` per golden case in ``namespace`` (a module's globals()).

    ``measure(renders, case_id)`` gives the tracked number. Raises ImportError when a manifest case
    ends up without its own track (two ids mapping to one attribute name), so a new golden case can
    never go untracked.
    """
    for case in MANIFEST:
        case_id = case["id"]

        def track(renders, case_id=case_id):
            return measure(renders, case_id)

        track.__name__ = f"track_{prefix}_{case_attr(case_id)}"
        track.unit, track.version, track.pretty_name = unit, version, f"{label}: {case_id}"
        namespace[track.__name__] = track
    names = {f"track_{prefix}_{case_attr(c['id'])}" for c in MANIFEST}
    if len(names) != len(MANIFEST) or not names <= namespace.keys():
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


def load_baseline(here: dict) -> dict | None:
    """The stored golden hashes of the machine class ``here`` (a ``holds_for`` record), or None: its own
    file ``results/baselines/golden_hashes/<class slug>.json``, else the single file of earlier versions
    where that holds for this class (the reading of detsim.track.base.baseline_file.for_class)."""
    for path in (BASELINE_DIR / f"{class_slug(here)}.json", BASELINE_HASHES):
        if path.exists():
            data = json.loads(path.read_text())
            if not holds_differences(data.get("holds_for", {}), here):
                return data
    return None


def stored_classes() -> list[dict]:
    """The ``holds_for`` of every stored golden baseline (to name how this run's class differs)."""
    paths = sorted(BASELINE_DIR.glob("*.json")) if BASELINE_DIR.is_dir() else []
    return [json.loads(p.read_text()).get("holds_for", {}) for p in [*paths, BASELINE_HASHES] if p.exists()]


# -- instruction counts (copies of detsim.track.cost.counting) -------------------------------------

COST_HOOKS_MODULE = "pytest_codspeed.instruments.hooks.dist_instrument_hooks"  # copy of counting.HOOKS_MODULE
COST_ENV = {"PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # copy of counting.COUNT_ENV
COST_PLANT_VAR = "DETSIM_COST_PLANT"  # copy of counting.PLANT_VAR (test-only extra work in the region)


def cost_not_measured_reason() -> str | None:
    """Copy of detsim.track.cost.counting.not_measured_reason: one line, or None where counts can be made."""
    import shutil

    if shutil.which("valgrind") is None:
        return "instruction counts not measured: valgrind is not installed (Debian package `valgrind`)"
    try:
        found = importlib.util.find_spec(COST_HOOKS_MODULE) is not None
    except ImportError:
        found = False
    if not found:
        return ("instruction counts not measured: the callgrind start/stop hooks are missing "
                "(PyPI package `pytest-codspeed==5.0.4`)")
    return None


def cost_harness(setup: str, region: str) -> str:
    """Copy of detsim.track.cost.counting.harness: the script a count runs (region warmed up, then counted)."""
    package, module = COST_HOOKS_MODULE.rsplit(".", 1)
    return "\n".join([
        "import os", "import torch", "torch.set_num_threads(1)", f"from {package} import {module} as _hooks",
        setup,
        f"_plant = int(os.environ.get({COST_PLANT_VAR!r}) or 0)",
        "_plant_x = torch.linspace(0.0, 1.0, max(_plant, 1), dtype=torch.float64)",
        "def _region():", f"    _out = {region}", "    if _plant:", "        torch.exp(_plant_x).sum()",
        "    return _out",
        "_region()", "_hooks.callgrind_start_instrumentation()", "_region()",
        "_hooks.callgrind_stop_instrumentation()",
    ]) + "\n"


def cost_command(script: str, out_file, python: str | None = None) -> list[str]:
    """Copy of detsim.track.cost.counting.command: the valgrind command line of a count."""
    import sys

    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out_file}",
            python or sys.executable, "-c", script]


def cost_parse_total(text: str) -> int:
    """Copy of detsim.track.cost.counting.parse_total: the ``totals:`` (else ``summary:``) of a callgrind file."""
    found = {}
    for line in text.splitlines():
        for key in ("totals:", "summary:"):
            if line.startswith(key):
                found[key] = int(line.split()[1])
    for key in ("totals:", "summary:"):
        if key in found:
            return found[key]
    raise RuntimeError("no totals: line in the callgrind file")


def cost_setup(workload: str, dtype: str = "float64") -> tuple[str, str]:
    """The setup and region code of a count of ``workload`` (``P1@64``, ``P2@32`` or a golden case id)
    rendered eager on the CPU, through this suite's own copies (so it runs against older commits)."""
    # this folder, not the project root: there ``import detsim`` would find the working tree's package
    # instead of the installed commit's (the count also runs in an empty directory for the same reason)
    lines = ["import sys", f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})",
             "import common", "torch.set_num_threads(1)"]
    name, _, pixels = workload.partition("@")
    if pixels:
        base = {"P1": "P1", "P2": "P2_FULL", "P4096": "P4096"}[name]
        lines.append(f"_config = common.{base}.resized({int(pixels)}).config()")
        lines.append("_folder = None")
    else:
        lines.append(f"_case = next(c for c in common.MANIFEST if c['id'] == {workload!r})")
        lines.append("_config = common.case_config(_case)")
        lines.append("_folder = common.GOLDEN_DIR / _case['id']")
    lines += ["def _render():",
              "    with common.working_directory(_folder or common.GOLDEN_DIR):",
              f"        return common.simulate(_config, device=torch.device('cpu'), dtype=torch.{dtype})"]
    return "\n".join(lines), "_render()"


def count_instructions(workload: str, dtype: str = "float64", timeout: float = 600) -> int:
    """Instructions of one eager CPU render of ``workload``, counted under valgrind in a fresh process."""
    reason = cost_not_measured_reason()
    if reason:
        raise NotImplementedError(reason)
    with tempfile.TemporaryDirectory(prefix="detsim-cost-") as directory:
        out_file = Path(directory) / "callgrind.out"
        _run_count(cost_command(cost_harness(*cost_setup(workload, dtype)), out_file), directory, timeout)
        return cost_parse_total(out_file.read_text())


def _run_count(command: list[str], directory: str, timeout: float) -> None:
    """Run a valgrind count in ``directory`` (an empty folder: see :func:`cost_setup`); raise on failure."""
    import subprocess

    done = subprocess.run(command, env={**os.environ, **COST_ENV}, cwd=directory, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        tail = [line for line in done.stderr.splitlines() if line and not line.startswith("==")]
        raise RuntimeError(f"the counting process exited {done.returncode}: {tail[-1] if tail else ''}")


def cost_harness_many(setups: list[str]) -> str:
    """The script that counts several regions in one valgrind process (one import of torch, not one per
    workload): each setup builds its ``_render`` in a namespace of its own; every region is warmed up,
    then each runs in a thread of its own while instrumentation is on, so ``--separate-threads=yes``
    writes one total per region (threads are all started before counting and kept alive to the end:
    valgrind reuses the id of a thread that ended)."""
    package, module = COST_HOOKS_MODULE.rsplit(".", 1)
    return "\n".join([
        "import os", "import threading", "import torch", "torch.set_num_threads(1)",
        f"from {package} import {module} as _hooks",
        f"_plant = int(os.environ.get({COST_PLANT_VAR!r}) or 0)",
        "_plant_x = torch.linspace(0.0, 1.0, max(_plant, 1), dtype=torch.float64)",
        "_regions = []",
        f"for _setup in {setups!r}:",
        "    _ns = {'torch': torch}",
        "    exec(_setup, _ns)",
        "    _regions.append(_ns['_render'])",
        "def _region(i):",
        "    _out = _regions[i]()",
        "    if _plant:",
        "        torch.exp(_plant_x).sum()",
        "    return _out",
        "for _i in range(len(_regions)):",
        "    _region(_i)",
        "_go = [threading.Event() for _ in _regions]",
        "_done = [threading.Event() for _ in _regions]",
        "_end = threading.Event()",
        "def _worker(i):",
        "    _go[i].wait()",
        "    _region(i)",
        "    _done[i].set()",
        "    _end.wait()",
        "_threads = [threading.Thread(target=_worker, args=(i,)) for i in range(len(_regions))]",
        "for _t in _threads:",
        "    _t.start()",
        "_hooks.callgrind_start_instrumentation()",
        "for _i in range(len(_regions)):",
        "    _go[_i].set()",
        "    _done[_i].wait()",
        "_hooks.callgrind_stop_instrumentation()",
        "_end.set()",
        "for _t in _threads:",
        "    _t.join()",
    ]) + "\n"


def count_instructions_many(workloads: list[str], dtype: str = "float64", timeout: float = 600) -> dict[str, int]:
    """Instructions of one eager CPU render of each of ``workloads``, counted in one valgrind process
    (:func:`cost_harness_many`): workload -> count."""
    reason = cost_not_measured_reason()
    if reason:
        raise NotImplementedError(reason)
    setups = [cost_setup(workload, dtype)[0] for workload in workloads]
    with tempfile.TemporaryDirectory(prefix="detsim-cost-") as directory:
        out_file = Path(directory) / "callgrind.out"
        command = cost_command(cost_harness_many(setups), out_file)
        command.insert(command.index("--instr-atstart=no") + 1, "--separate-threads=yes")
        _run_count(command, directory, timeout)
        files = sorted(Path(directory).glob("callgrind.out-*"))
        if len(files) != len(workloads) + 1:  # the main thread, then one thread per region
            raise RuntimeError(f"expected {len(workloads) + 1} callgrind thread files, found {len(files)}")
        return {w: cost_parse_total(f.read_text()) for w, f in zip(workloads, files[1:])}
