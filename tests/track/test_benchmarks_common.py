"""The asv suite's shared module (``benchmarks/common.py``): the working tree's base whatever detsim is
installed, the feature detection of older commits, and what the golden and counting tracks do with them.

asv imports ``benchmarks/`` from the working tree while the installed ``detsim`` is the commit being
measured, which may predate ``detsim.track``; the first test plants such a ``detsim`` and imports the
suite beside it, as asv does at an old commit.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

import detsim
from detsim import config_from_argv
from detsim.entry import main as detsim_main  # the console script the package declares
from detsim.track.base.callgrind import not_measured_reason
from detsim.track.base.golden import find_case, golden_dir, load_cases
from detsim.track.base.hashing import image_sha256
from detsim.track.base.metrics import passes_parity, pearson_r
from detsim.track.base.provenance import MachineClass, class_fingerprint
from detsim.track.measure.cost import count
from detsim.track.measure.cost import CostSpec

ROOT = Path(__file__).resolve().parents[2]
PLAIN_CASE = "a01_cubic_mosflm_center"  # no input files
RENDERED_CASE = "c02_xds_xbeam_quirk"  # 128x128, one step per pixel

# asv installs each commit as a wheel; this checkout's editable install maps every detsim.* name to the
# checkout whatever detsim.__path__ says, so its finder goes, as it is absent from asv's environments
BESIDE_AN_OLD_DETSIM = """
import json, sys
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
sys.path[:0] = [sys.argv[1], sys.argv[2]]  # the planted detsim first, then the checkout (for benchmarks/)
from benchmarks import bench_determinism, bench_parity, common
imported_detsim = "detsim" in sys.modules
reads = common.reads_arguments()  # looks for the facade and older commits' modules: imports the planted detsim
print(json.dumps({
    "imported_detsim": imported_detsim, "reads": reads, "skip": common.golden_renders()["skip"],
    "detsim": sys.modules["detsim"].__file__, "track": sorted(m for m in sys.modules if m.startswith("detsim.")),
    "base": {m.__name__: m.__file__ for m in (common.golden, common.metrics, common.provenance, common.callgrind)},
    "cases": [c.id for c in common.CASES], "r": common.metrics.pearson_r([1.0, 2.0, 3.0], [1.0, 2.0, 4.0]),
    "parity_tracks": sum(name.startswith("track_parity_") for name in vars(bench_parity)),
    "holds_for": common.holds_for(),
}))
"""


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
    monkeypatch.setattr("detsim.commandline.to_config.time_seed", lambda: 0)


def test_the_suite_loads_the_working_trees_base_beside_a_detsim_without_the_tracking_suite(tmp_path):
    planted = tmp_path / "site"
    (planted / "detsim").mkdir(parents=True)
    (planted / "detsim" / "__init__.py").write_text('"""An old commit\'s detsim: no track, no argument reader."""\n')
    done = subprocess.run([sys.executable, "-P", "-c", BESIDE_AN_OLD_DETSIM, str(planted), str(ROOT)],
                          cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "ASV_CONF_DIR": str(ROOT)}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert not found["imported_detsim"]  # loading the base imported no detsim at all
    assert found["detsim"] == str(planted / "detsim" / "__init__.py") and found["track"] == []
    assert not found["reads"] and found["skip"] == _import("benchmarks.common").NO_ARGUMENT_READER
    base = ROOT / "detsim" / "track" / "base"
    assert found["base"] == {f"_detsim_track_base.{m}": str(base / f"{m}.py")
                             for m in ("golden", "metrics", "provenance", "callgrind")}
    assert found["cases"] == [c.id for c in load_cases(golden_dir(ROOT))]
    assert found["r"] == pearson_r([1.0, 2.0, 3.0], [1.0, 2.0, 4.0]) and found["parity_tracks"] == len(found["cases"])
    assert found["holds_for"] == MachineClass.here(torch, threads=1).as_record()


def test_a_fresh_interpreter_renders_through_the_suite_with_only_import_detsim_done(tmp_path):
    """``import detsim`` imports no submodule (the package loads its names on first use): the suite's own
    render must import what it reads, as a benchmark's fresh process has nothing else imported."""
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import torch\n"
              "from benchmarks import common\n"
              "config = common.workload_config(common.workloads.WORKLOADS['P1'].resized(8))\n"
              "image = common.simulate(config, device=torch.device('cpu'), dtype=torch.float64, mode='eager')\n"
              "print(tuple(image.shape))")
    done = subprocess.run([sys.executable, "-c", script, str(ROOT)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(8, 8)"


def _plant_old_detsim(monkeypatch, modules: dict[str, dict]) -> types.ModuleType:
    """An older commit's ``detsim`` in ``sys.modules``: no facade, the flat modules ``modules`` (leaf -> names)."""
    package = types.ModuleType("detsim")
    package.__path__ = []  # a package with no folder: any other submodule is absent
    package.__spec__ = importlib.machinery.ModuleSpec("detsim", None, is_package=True)
    monkeypatch.setitem(sys.modules, "detsim", package)
    for leaf, names in modules.items():
        name = "detsim." + leaf  # built, as common.py builds it: an older commit's module name
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        vars(module).update(names)
        monkeypatch.setitem(sys.modules, name, module)
    return package


def test_config_from_args_prefers_the_facade_and_falls_back_to_older_commits_modules(common, fixed_seed,
                                                                                      monkeypatch):
    args = list(find_case(PLAIN_CASE, golden_dir(ROOT)).args)
    expected = config_from_argv(args)
    calls = []
    monkeypatch.setattr(detsim, "config_from_argv", lambda argv: calls.append(argv) or expected, raising=False)
    assert common.reads_arguments()
    assert common.config_from_args(args) is expected and calls == [args]
    monkeypatch.undo()
    # a commit with the flat argument reader
    _plant_old_detsim(monkeypatch, {"argconfig": {"config_from_argv": lambda argv: ("argconfig", argv)}})
    assert common.reads_arguments() and common.config_from_args(args) == ("argconfig", args)
    monkeypatch.undo()
    # the oldest commits that read argument lists: the command's own functions
    parsed = []
    cli = {"build_config": lambda a, mask=None: ("cli", a, mask), "header_arguments": None}
    _plant_old_detsim(monkeypatch, {"cli": cli, "argv": {"parse_argv": lambda argv, initial=None: parsed.append(argv)
                                                        or types.SimpleNamespace(img_file=None, mask_file=None)}})
    assert common.reads_arguments() and common.config_from_args(args)[0] == "cli" and parsed == [args]
    monkeypatch.undo()
    _plant_old_detsim(monkeypatch, {})  # the first commit
    assert not common.reads_arguments()
    with pytest.raises(NotImplementedError):
        common.config_from_args(args)


def test_modes_and_the_command_come_from_the_facade_or_an_older_commits_modules(common, monkeypatch):
    assert common.available_modes("cpu") == tuple(detsim.available_modes("cpu"))
    assert common.command_main() is detsim_main
    _plant_old_detsim(monkeypatch, {"engine": {"MODES": ("eager", "compiled")}, "cli": {"main": "old main"}})
    monkeypatch.setattr(common.importlib.metadata, "distributions", lambda: [])  # a tree beside no wheel
    assert common.available_modes("cpu") == ("eager", "compiled") and common.command_main() == "old main"
    _plant_old_detsim(monkeypatch, {"engine": {}})  # before modes existed
    assert common.available_modes("cpu") == ("eager",) and common.installed("MODES") is None


def test_the_engine_workloads_built_from_dataclasses_are_their_command_lines(common, fixed_seed):
    built = [*common.PATH_WORKLOADS.values(), *(w.resized(64) for w in common.PATH_WORKLOADS.values())]
    for workload in built:
        assert common.workload_config(workload) == workload.config(config_from_argv), workload.name


def test_render_case_hashes_and_correlates_as_the_package_does(common):
    result = common.render_case(next(c for c in common.CASES if c.id == RENDERED_CASE))
    case = find_case(RENDERED_CASE, golden_dir(ROOT))
    image = detsim.simulate(case.config(config_from_argv), device=torch.device("cpu"), dtype=torch.float64)
    r = pearson_r(image.numpy(), case.reference())
    assert result["sha256"] == image_sha256(image)
    assert result["r"] == r and result["one_minus_r"] == 1.0 - r and passes_parity(r)


def test_an_undefined_r_fails_its_parity_track():
    parity = _import("benchmarks.bench_parity")
    renders = {"skip": None, "cases": {"x": {"sha256": "0" * 64, "r": None, "one_minus_r": None},
                                       "y": {"sha256": "0" * 64, "r": 0.9, "one_minus_r": 0.1}}}
    with pytest.raises(RuntimeError, match="x: Pearson r undefined"):
        parity._one_minus_r(renders, "x")
    assert parity._one_minus_r(renders, "y") == 0.1


def test_the_suite_reads_this_classes_baseline_and_skips_naming_the_others(common, tmp_path, monkeypatch):
    determinism = _import("benchmarks.bench_determinism")
    monkeypatch.setattr(determinism, "REPO_ROOT", tmp_path)
    here = common.holds_for()
    intel = {**here, "cpu_class": "x86_64 GenuineIntel AVX512"}
    legacy = tmp_path / "results" / "baselines" / "golden_hashes.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(json.dumps({"schema": 1, "holds_for": intel, "cases": {"x": "1" * 64}}))
    with pytest.raises(common.Skip, match=r"^the golden baseline holds for threads=4 but this run has threads=1$"):
        determinism._check_holds({"holds_for": {**here, "threads": 4}}, here)
    with pytest.raises(common.Skip, match=r"^no golden baseline for this machine class \(.*\): its images are "
                       r"compared commit to commit \(track_fingerprint_\*\); the golden baseline holds for "
                       r"cpu_class=x86_64 GenuineIntel AVX512 but this run has cpu_class="):
        determinism._class_baseline(here)
    mine = tmp_path / "results" / "baselines" / "golden_hashes" / f"{MachineClass(**here).slug()}.json"
    mine.parent.mkdir()
    mine.write_text(json.dumps({"schema": 1, "holds_for": here, "cases": {"x": "2" * 64}}))
    assert determinism._class_baseline(here)["cases"] == {"x": "2" * 64}
    renders = {"holds_for": here, "skip": None, "cases": {"x": {"sha256": "2" * 64}}}
    assert determinism._hash_changed(renders, "x") == 0
    assert determinism._hash_changed({**renders, "cases": {"x": {"sha256": "3" * 64}}}, "x") == 1
    assert determinism._fingerprint(renders, "x") == float(int("2" * 13, 16))
    assert determinism.track_machine_class(renders) == class_fingerprint(MachineClass(**here).as_record())


def test_rendering_the_golden_cases_writes_no_file(common, monkeypatch):
    """asv runs golden_renders as a setup_cache with ASV_COMMIT set: no stored file may change."""
    def snapshot():
        return {p: (p.stat().st_mtime_ns, p.stat().st_mode) for p in (ROOT / "results").rglob("*")
                if "asv" not in p.relative_to(ROOT / "results").parts}

    monkeypatch.setenv("ASV_COMMIT", "f" * 40)
    monkeypatch.setattr(common, "CASES", [c for c in common.CASES if c.id == RENDERED_CASE])
    before = snapshot()
    threads = torch.get_num_threads()
    try:
        renders = common.golden_renders()
    finally:
        torch.set_num_threads(threads)
    assert list(renders["cases"]) == [RENDERED_CASE] and "sha256" in renders["cases"][RENDERED_CASE]
    assert snapshot() == before


@pytest.mark.parametrize("workload", ["P1@64", "P2@32", "g01_hkl_nointerp"])
def test_a_count_renders_what_the_cost_area_counts_with_the_installed_detsim(common, workload):
    setup = common.count_setup(workload)
    assert repr(str(ROOT / "benchmarks")) in setup and f"insert(0, {str(ROOT)!r})" not in setup
    ours, theirs = {"torch": torch}, {"torch": torch}
    spec = CostSpec(workload)
    threads = torch.get_num_threads()
    try:
        exec(setup, ours)  # noqa: S102 - the code a count runs, without valgrind
        exec(spec.setup(), theirs)  # noqa: S102
        assert torch.equal(ours["_render"](), eval(spec.region(), theirs))  # noqa: S307
    finally:
        torch.set_num_threads(threads)


# Three processes under valgrind (about 10 s of imports each): slow. Quick twins in the default run: the
# count's script run without valgrind, each region in a thread of its own between start and stop
# (tests/track/base/test_base_callgrind.py), the count's setup rendering what the cost area counts (above)
# and a real count of a small region (tests/track/cost/test_cost_counting.py).
@pytest.mark.slow
@pytest.mark.skipif(not_measured_reason() is not None, reason=str(not_measured_reason()))
def test_one_valgrind_process_counts_each_workload_as_a_process_of_its_own_would(common, monkeypatch):
    """The asv suite counts all its workloads in one process, a thread each: each total is that workload's
    (within 1 % of a count in a process of its own), and a planted extra computation shows in each."""
    many = common.count_instructions_many(["P1@64", "P2@32"])
    alone = count(common.count_setup("P1@64"), "_render()", keep=False).instructions
    assert many["P1@64"] == pytest.approx(alone, rel=0.01) and many["P2@32"] > 2 * many["P1@64"]
    monkeypatch.setenv("DETSIM_COST_PLANT", "200000")
    planted = common.count_instructions_many(["P1@64", "P2@32"])
    assert all(planted[w] > many[w] * 1.02 for w in many)


def test_a_seeded_noise_image_is_part_of_a_cases_bits_and_written_only_to_a_scratch_folder():
    common = _import("benchmarks.common")
    cases = {case.id: case for case in common.CASES}
    noisy = cases["s01_noise_intfile_scale"]
    before = sorted(p.name for p in noisy.folder.iterdir())
    first, again = common.noise_sha256(noisy), common.noise_sha256(noisy)
    assert first is not None and first == again  # -seed 31415: the same Poisson stream each run
    assert sorted(p.name for p in noisy.folder.iterdir()) == before  # outputs went to a scratch folder
    assert common.noise_sha256(cases[PLAIN_CASE]) is None  # no noise image
    assert common.case_bits(noisy) != common.render_case(noisy)["sha256"]  # the noise file is hashed with it
    assert common.case_bits(cases[PLAIN_CASE]) == common.render_case(cases[PLAIN_CASE])["sha256"]


def test_runs_differ_reads_the_two_runs_of_an_axis_and_a_failed_run_is_a_failure():
    common = _import("benchmarks.common")
    runs = {"runs": {"process": ({"a": "x", "b": "y"}, {"a": "x", "b": "z"})}, "errors": {"c": "ValueError: no"}}
    assert [common.runs_differ(runs, "process", case) for case in "ab"] == [0, 1]
    with pytest.raises(RuntimeError, match="c: ValueError: no"):
        common.runs_differ(runs, "process", "c")


def test_every_checked_case_and_axis_has_a_reproducibility_track():
    module = _import("benchmarks.bench_reproducibility")
    common = _import("benchmarks.common")
    eager, compiled = module.Reproducibility, module.CompiledReproducibility
    assert set(eager.params[0]) | set(compiled.params[0]) == set(common.golden.AXES)
    assert eager.params[1] == list(common.golden.CHECKED_CASES)
    assert compiled.params[1] == list(common.golden.CHECKED_COMPILED_CASES)
    assert eager.param_names == compiled.param_names == ["axis", "case"]


def test_collections_skip_what_lived_before_the_block_and_only_within_it(common):
    import gc

    class Cycle:
        pass

    def garbage_cycle():
        first, second = Cycle(), Cycle()
        first.other, second.other = second, first

    assert gc.get_freeze_count() == 0
    with common.collections_skip_what_lives_now():
        assert gc.get_freeze_count() > 1000  # torch's and the suite's objects among them
        garbage_cycle()
        assert gc.collect() >= 2  # what the block makes is still collected
    assert gc.get_freeze_count() == 0  # left as it was found
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with common.collections_skip_what_lives_now():
            pass
        assert gc.get_freeze_count() >= frozen  # a caller's own freeze is kept
    finally:
        gc.unfreeze()
