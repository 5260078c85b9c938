"""The asv suite's copies of suite facts (``benchmarks/common.py``) agree with the package's definitions.

asv imports ``benchmarks/`` with older commits of detsim installed, which lack ``detsim.track.base``, so
``common.py`` keeps its own minimal copies; these tests are what keeps each copy equal to its original.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import MANIFEST
from detsim.argconfig import config_from_argv
from detsim.track.base import golden, hashing, metrics, provenance, workloads
from detsim.track.base.callgrind import not_measured_reason

ROOT = Path(__file__).resolve().parents[2]
PLAIN_CASE = "a01_cubic_mosflm_center"  # no input files
RENDERED_CASE = "c02_xds_xbeam_quirk"  # 128x128, one step per pixel


def _import(name: str):
    """A module of the asv suite, imported as asv imports it (which pins torch to one thread: undone)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    threads = torch.get_num_threads()
    try:
        return importlib.import_module(name)
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def common():
    return _import("benchmarks.common")


@pytest.fixture
def fixed_seed(monkeypatch):
    """nanoBragg's default misset seed is the clock (unused with an explicit -misset): pin it to the
    dataclass default, so that two readings of one command line compare equal."""
    monkeypatch.setattr("detsim.argconfig.time_seed", lambda: 0)


def _same(a, b) -> bool:
    """Equality of configurations, whose fields may hold arrays or tensors (masks, structure factors)."""
    if type(a) is not type(b):
        return False
    if dataclasses.is_dataclass(a):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, torch.Tensor):
        return a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def test_constants_agree(common):
    assert common.PARITY_MIN_R == metrics.PARITY_MIN_R
    assert common.DETECTOR_MM == workloads.DETECTOR_MM


@pytest.mark.parametrize("seed", range(4))
def test_pearson_r_agrees_on_random_images(common, seed):
    rng = np.random.default_rng(seed)
    a = rng.random((16, 9)) * 10 ** seed
    b = a + rng.normal(0.0, 0.5, a.shape)
    assert common.pearson_r(a, b) == metrics.pearson_r(a, b)
    assert common.pearson_r(a.astype(np.float32), b) == metrics.pearson_r(a.astype(np.float32), b)


@pytest.mark.parametrize(("a", "b"), [
    (np.zeros((2, 2)), np.zeros((2, 2))),
    (np.full((2, 2), 3.0), np.full((2, 2), 3.0)),
    (np.zeros((2, 2)), np.eye(2)),
    (np.eye(2), np.ones((2, 2))),
    (np.array([[np.nan, 1.0]]), np.array([[0.0, 1.0]])),
    (np.array([[0.0, 1.0]]), np.array([[np.inf, 1.0]])),
    (np.zeros((0, 3)), np.zeros((0, 3))),
], ids=["zeros", "constants", "constant-vs-not", "not-vs-constant", "nan", "inf", "empty"])
def test_pearson_r_agrees_where_it_is_undefined_or_degenerate(common, a, b):
    assert common.pearson_r(a, b) == metrics.pearson_r(a, b)


def test_pearson_r_refuses_images_of_different_sizes_alike(common):
    for pearson_r in (common.pearson_r, metrics.pearson_r):
        with pytest.raises(ValueError, match="different sizes"):
            pearson_r(np.zeros((2, 3)), np.zeros(5))


def test_image_sha256_agrees_on_tensors_and_arrays(common, device, dtype):
    image = torch.linspace(-3.0, 7.0, 35, dtype=torch.float64, device=device).reshape(5, 7).to(dtype)
    assert common.image_sha256(image) == hashing.image_sha256(image)
    array = image.cpu().numpy()
    assert common.image_sha256(array) == hashing.image_sha256(array) == hashing.image_sha256(image)
    half = image.to(torch.bfloat16)  # no numpy dtype: both go through float64
    assert common.image_sha256(half) == hashing.image_sha256(half)


def test_machine_class_agrees(common):
    here = provenance.MachineClass.here(torch, threads=1, dtype="float64", device="cpu")
    assert common.holds_for() == here.as_record()
    assert common.cpu_class() == provenance.cpu_class(torch.backends.cpu.get_cpu_capability()) and common.cpu_model() == provenance.cpu_model()
    other = dataclasses.replace(here, threads=2, torch="0.0")
    assert common.holds_differences(other.as_record(), here.as_record()) == other.differences(here)
    assert common.holds_differences(here.as_record(), here.as_record()) == {}


def _named_workloads(common) -> dict:
    """Each copy, and the package's workload it stands for."""
    named = {"P1": (common.P1, workloads.WORKLOADS["P1"]),
             "P2@128": (common.P2, workloads.WORKLOADS["P2"].resized(128)),
             "P4096": (common.P4096, workloads.WORKLOADS["P4096"])}
    for name, copy in common.PATH_WORKLOADS.items():
        named[f"path {name}"] = (copy, workloads.WORKLOADS[name].resized(copy.pixels))
    return named


def test_named_workloads_agree(common, fixed_seed):
    pairs = _named_workloads(common)
    assert common.PATH_WORKLOADS["P2"].pixels == 256 and common.P2.pixels == 128
    for name, (copy, original) in pairs.items():
        assert (copy.pixels, copy.steps, copy.pixel_steps) == (original.pixels, original.steps,
                                                               original.pixel_steps), name
        assert copy.config() == original.config(config_from_argv), name


@pytest.mark.parametrize("steps", [1, 10])
def test_sweep_workloads_read_as_their_command_lines(common, fixed_seed, steps):
    for pixels in (*common.SWEEP_PIXELS, 64, 1024):
        copy = common.Workload(pixels=pixels, **common.SWEEP_STEPS[steps])
        original = workloads.Workload("sweep", pixels, **common.SWEEP_STEPS[steps])
        assert copy.steps == steps == original.steps
        assert copy.config() == original.config(config_from_argv), pixels
        assert copy.resized(64) == common.Workload(pixels=64, **common.SWEEP_STEPS[steps])


@pytest.mark.parametrize("case_id", [r["id"] for r in MANIFEST])
def test_golden_case_configs_agree(common, fixed_seed, case_id, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # both read input files in the case's folder, wherever the run is
    record = next(r for r in common.MANIFEST if r["id"] == case_id)
    assert _same(common.case_config(record), golden.find_case(case_id, golden.golden_dir(ROOT)).config(config_from_argv))
    assert Path.cwd() == tmp_path


def test_the_suite_reads_the_same_golden_cases(common):
    assert common.MANIFEST == MANIFEST
    assert common.GOLDEN_DIR.resolve() == golden.golden_dir(ROOT).resolve()


def test_config_from_args_prefers_argconfig_and_falls_back_to_the_cli(common, fixed_seed, monkeypatch):
    record = next(r for r in common.MANIFEST if r["id"] == PLAIN_CASE)
    expected = config_from_argv(record["args"])
    calls = []
    monkeypatch.setattr("detsim.argconfig.config_from_argv", lambda argv: calls.append(argv) or expected)
    assert common.config_from_args(record["args"]) is expected and calls == [record["args"]]
    monkeypatch.undo()
    monkeypatch.setattr("detsim.argconfig.time_seed", lambda: 0)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(common.importlib.util, "find_spec",
                        lambda name, *a: None if name == "detsim.argconfig" else find_spec(name, *a))
    assert common.reads_arguments()
    assert common.config_from_args(record["args"]) == expected  # the older commits' route
    monkeypatch.setattr(common.importlib.util, "find_spec", lambda name, *a: None)
    assert not common.reads_arguments()
    with pytest.raises(NotImplementedError):
        common.config_from_args(record["args"])


def test_render_case_hashes_and_correlates_as_the_package_does(common):
    import detsim

    record = next(r for r in common.MANIFEST if r["id"] == RENDERED_CASE)
    result = common.render_case(record)
    case = golden.find_case(RENDERED_CASE, golden.golden_dir(ROOT))
    image = detsim.simulate(case.config(config_from_argv), device=torch.device("cpu"), dtype=torch.float64)
    r = metrics.pearson_r(image.numpy(), case.reference())
    assert result["sha256"] == hashing.image_sha256(image)
    assert result["r"] == r and result["one_minus_r"] == 1.0 - r and metrics.passes_parity(r)


def test_an_undefined_r_fails_its_parity_track(common):
    parity = _import("benchmarks.bench_parity")
    renders = {"skip": None, "cases": {"x": {"sha256": "0" * 64, "r": None, "one_minus_r": None},
                                       "y": {"sha256": "0" * 64, "r": 0.9, "one_minus_r": 0.1}}}
    with pytest.raises(RuntimeError, match="x: Pearson r undefined"):
        parity._one_minus_r(renders, "x")
    assert parity._one_minus_r(renders, "y") == 0.1


def test_a_baseline_of_another_machine_class_skips_naming_the_difference(common):
    determinism = _import("benchmarks.bench_determinism")
    here = common.holds_for()
    baseline = {"holds_for": {**here, "threads": 4}}
    with pytest.raises(common.Skip, match=r"^the golden baseline holds for threads=4 but this run has threads=1$"):
        determinism._check_holds(baseline, here)
    determinism._check_holds({"holds_for": here}, here)


def test_the_instruction_count_copies_equal_the_cost_package(common, monkeypatch, tmp_path):
    from detsim.track.base import callgrind as counting

    assert common.COST_HOOKS_MODULE == counting.HOOKS_MODULE
    assert common.COST_ENV == counting.COUNT_ENV and common.COST_PLANT_VAR == counting.PLANT_VAR
    assert common.cost_harness("x = 1", "x + 1") == counting.harness("x = 1", "x + 1")
    assert common.cost_command("pass", tmp_path / "f") == counting.command("pass", tmp_path / "f")
    text = "events: Ir\nsummary: 7\ntotals: 12345\n"
    assert common.cost_parse_total(text) == counting.parse_total(text) == 12345
    assert common.cost_parse_total("summary: 7\n") == counting.parse_total("summary: 7\n") == 7
    assert common.cost_not_measured_reason() == counting.not_measured_reason()
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert common.cost_not_measured_reason() == counting.not_measured_reason() is not None
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/valgrind")
    monkeypatch.setattr(common, "COST_HOOKS_MODULE", "no_such_package.hooks")
    monkeypatch.setattr(counting, "HOOKS_MODULE", "no_such_package.hooks")
    assert common.cost_not_measured_reason() == counting.not_measured_reason() is not None


@pytest.mark.parametrize("workload", ["P1@64", "P2@32", "g01_hkl_nointerp"])
def test_the_counted_renders_equal_the_cost_package(common, workload):
    from detsim.track.cost.specs import CostSpec

    spec = CostSpec(workload)
    ours = {"torch": torch}
    exec(common.cost_setup(workload)[0], ours)  # noqa: S102 - the code a count runs, without valgrind
    theirs = {"torch": torch}
    exec(spec.setup(), theirs)  # noqa: S102
    threads = torch.get_num_threads()
    try:
        image = eval(common.cost_setup(workload)[1], ours)  # noqa: S307
        expected = eval(spec.region(), theirs)  # noqa: S307
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(image, expected)


def test_a_count_imports_the_installed_detsim_not_the_working_tree(common):
    setup = common.cost_setup("P1@64")[0]
    assert repr(str(ROOT / "benchmarks")) in setup and f"insert(0, {str(ROOT)!r})" not in setup


def test_the_machine_class_and_fingerprint_copies_agree(common):
    here = provenance.MachineClass.here(torch, threads=1)
    others = [here, dataclasses.replace(here, cpu_class="x86_64 GenuineIntel AVX512", threads=2),
              dataclasses.replace(here, torch="2.14.0.dev20261101+cu128", cpu_class="aarch64  SVE/256")]
    for machine in others:
        assert common.class_slug(machine.as_record()) == machine.slug()
        assert common.class_fingerprint(machine.as_record()) == machine.fingerprint()
    assert len({m.fingerprint() for m in others}) == len({m.slug() for m in others}) == 3
    assert common.CLASS_FIELDS == tuple(f.name for f in dataclasses.fields(provenance.MachineClass))
    assert common.FINGERPRINT_HEX == hashing.FINGERPRINT_HEX
    sha = hashing.sha256_bytes(b"image")
    assert common.hash_fingerprint(sha) == hashing.fingerprint(sha) == float(int(sha[:13], 16))
    assert hashing.fingerprint_hex(common.hash_fingerprint(sha)) == sha[:13]  # exact in a float64


def test_the_suite_reads_this_classes_baseline_and_skips_without_one(common, tmp_path, monkeypatch):
    from detsim.track.base import baseline_file

    determinism = _import("benchmarks.bench_determinism")
    here = common.holds_for()
    intel = {**here, "cpu_class": "x86_64 GenuineIntel AVX512"}
    legacy, folder = tmp_path / "golden_hashes.json", tmp_path / "golden_hashes"
    monkeypatch.setattr(common, "BASELINE_HASHES", legacy)
    monkeypatch.setattr(common, "BASELINE_DIR", folder)
    legacy.write_text(json.dumps({"schema": 1, "holds_for": intel, "cases": {"x": "1" * 64}}))
    assert common.load_baseline(here) is None and common.load_baseline(intel)["cases"] == {"x": "1" * 64}
    with pytest.raises(common.Skip, match=r"^no golden baseline for this machine class \(.*\): its images are "
                       r"compared commit to commit \(track_fingerprint_\*\); the golden baseline holds for "
                       r"cpu_class=x86_64 GenuineIntel AVX512 but this run has cpu_class="):
        determinism._class_baseline(here)
    mine = folder / f"{common.class_slug(here)}.json"
    assert Path(baseline_file.class_path(provenance.MachineClass(**here))).name == mine.name
    folder.mkdir()
    mine.write_text(json.dumps({"schema": 1, "holds_for": here, "cases": {"x": "2" * 64}}))
    assert determinism._class_baseline(here)["cases"] == {"x": "2" * 64}
    renders = {"holds_for": here, "skip": None, "cases": {"x": {"sha256": "2" * 64}}}
    assert determinism._hash_changed(renders, "x") == 0
    assert determinism._fingerprint(renders, "x") == float(int("2" * 13, 16))
    assert determinism.track_machine_class(renders) == provenance.MachineClass(**here).fingerprint()


def test_rendering_the_golden_cases_writes_no_file(common, monkeypatch):
    """asv runs golden_renders as a setup_cache with ASV_COMMIT set: no stored file may change."""
    def snapshot():
        return {p: (p.stat().st_mtime_ns, p.stat().st_mode) for p in (ROOT / "results").rglob("*")
                if "asv" not in p.relative_to(ROOT / "results").parts}

    monkeypatch.setenv("ASV_COMMIT", "f" * 40)
    monkeypatch.setattr(common, "MANIFEST", [r for r in common.MANIFEST if r["id"] == RENDERED_CASE])
    before = snapshot()
    threads = torch.get_num_threads()
    try:
        renders = common.golden_renders()
    finally:
        torch.set_num_threads(threads)
    assert list(renders["cases"]) == [RENDERED_CASE] and "sha256" in renders["cases"][RENDERED_CASE]
    assert snapshot() == before


@pytest.mark.skipif(not_measured_reason() is not None, reason=str(not_measured_reason()))
def test_one_valgrind_process_counts_each_workload_as_a_process_of_its_own_would(common, monkeypatch):
    """The asv suite counts all its workloads in one process, a thread each: each total is that workload's
    (within 1 % of a count in a process of its own), and a planted extra computation shows in each."""
    many = common.count_instructions_many(["P1@64", "P2@32"])
    alone = common.count_instructions("P1@64")
    assert many["P1@64"] == pytest.approx(alone, rel=0.01) and many["P2@32"] > 2 * many["P1@64"]
    monkeypatch.setenv("DETSIM_COST_PLANT", "200000")
    planted = common.count_instructions_many(["P1@64", "P2@32"])
    assert all(planted[w] > many[w] * 1.02 for w in many)
