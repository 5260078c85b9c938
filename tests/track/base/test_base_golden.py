"""detsim.track.base.golden: finding golden cases, building their configurations in their folders,
loading nanoBragg's images; the baseline files (validation, lookup by machine class, fields that differ from
holds_for); the reproducibility axes and the golden cases checked along them.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import GOLDEN_DIR, MANIFEST
from detsim.commandline.to_config import config_from_argv, read_matrix_file
from detsim.track.base import golden
from detsim.track.base.golden import (
    AXES, BASELINE, CHECKED_CASES, CHECKED_COMPILED_CASES, EAGER_AXES, ENV_VAR, GoldenCase, GoldenError, case_ids,
    class_path, differing_fields, discover, find_case, for_class, golden_dir, load_cases, problems,
    working_directory,
)
from detsim.track.base.provenance import MachineClass


ROOT = GOLDEN_DIR.parent.parent
MATRIX_CASE = "f01_matrix_own"  # reads A.mat, relative to its folder


def _case_folder(parent: Path, name: str, args: str = "-detpixels 2", image: np.ndarray | None = None) -> Path:
    folder = parent / name
    folder.mkdir(parents=True)
    (folder / "args.txt").write_text(args + "\n")
    if image is not None:
        image.astype("<f4").tofile(folder / "image.bin")
    return folder


def _manifest(folder: Path, records: list[dict]) -> None:
    (folder / "manifest.json").write_text(json.dumps(records))


def test_golden_dir_from_a_root_the_environment_or_the_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert golden_dir(ROOT) == GOLDEN_DIR
    monkeypatch.chdir(GOLDEN_DIR / MATRIX_CASE)  # found from below, too
    assert golden_dir().resolve() == GOLDEN_DIR.resolve()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(GoldenError, match=ENV_VAR):
        golden_dir()
    other = tmp_path / "elsewhere"
    other.mkdir()
    _manifest(other, [])
    monkeypatch.setenv(ENV_VAR, str(other))
    assert golden_dir() == other
    assert golden_dir(ROOT) == GOLDEN_DIR  # an explicit root wins over the environment


def test_load_cases_follows_the_manifest():
    cases = load_cases(GOLDEN_DIR)
    assert [c.id for c in cases] == [r["id"] for r in MANIFEST] == case_ids(GOLDEN_DIR)
    first = cases[0]
    assert first.folder == GOLDEN_DIR / first.id and first.shape == tuple(MANIFEST[0]["shape"])
    assert list(first.args) == MANIFEST[0]["args"]  # args.txt and the manifest agree
    assert first.record["id"] == first.id


def test_the_cost_of_a_case_is_its_pixels_times_its_sampling_steps():
    cases = {c.id: c for c in load_cases(GOLDEN_DIR)}
    assert cases["a01_cubic_mosflm_center"].pixel_steps == 256 * 256 * 4  # auto oversample 2: 4 steps a pixel
    assert cases["k01_mosaic_10dom"].pixel_steps > 5 * cases["a01_cubic_mosflm_center"].pixel_steps  # 10 domains
    thick = next(c for c in cases.values() if c.record.get("thicksteps", 1) > 1)
    assert thick.pixel_steps == thick.shape[0] * thick.shape[1] * thick.record["steps"] * thick.record["thicksteps"]
    assert GoldenCase("x", Path("."), (), None).pixel_steps is None  # a folder of the user's: unknown


@pytest.mark.parametrize("manifest", ['{"id": "x"}', '[{"shape": [2, 2]}]', "not json"])
def test_a_malformed_manifest_is_a_golden_error(tmp_path, manifest):
    (tmp_path / "manifest.json").write_text(manifest)
    with pytest.raises(GoldenError, match="manifest.json"):
        load_cases(tmp_path)


def test_find_case_by_id_or_unique_prefix(tmp_path):
    assert find_case("c02", GOLDEN_DIR).id == "c02_xds_xbeam_quirk"
    assert find_case(MATRIX_CASE, GOLDEN_DIR).id == MATRIX_CASE
    with pytest.raises(GoldenError, match="'c0' is ambiguous"):
        find_case("c0", GOLDEN_DIR)
    with pytest.raises(GoldenError, match="'zz' is not a golden case"):
        find_case("zz", GOLDEN_DIR)
    for name in ("a1", "a10"):
        _case_folder(tmp_path, name)
    _manifest(tmp_path, [{"id": "a1"}, {"id": "a10"}])
    assert find_case("a1", tmp_path).id == "a1"  # an exact id is never ambiguous with a longer one


def test_config_is_built_in_the_case_folder_wherever_we_are(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    case = find_case(MATRIX_CASE, GOLDEN_DIR)
    seen = []
    assert case.config(lambda argv: seen.append((argv, Path.cwd())) or "made") == "made"
    assert seen == [(list(case.args), case.folder.resolve())] and Path.cwd() == tmp_path
    config = case.config(config_from_argv)
    assert Path.cwd() == tmp_path
    with working_directory(case.folder):
        expected = read_matrix_file("A.mat")
    assert config.crystal.a_matrix == expected
    assert (config.detector.spixels, config.detector.fpixels) == case.shape


def test_reference_is_float32_slow_fast(tmp_path):
    case = find_case(MATRIX_CASE, GOLDEN_DIR)
    image = case.reference()
    assert image.dtype == np.float32 and image.shape == case.shape
    assert np.array_equal(image.ravel(), np.fromfile(case.folder / "image.bin", dtype="<f4"))
    planted = np.arange(6, dtype=np.float32).reshape(2, 3)
    own = GoldenCase.from_folder(_case_folder(tmp_path, "own", image=planted))
    assert own.shape is None and np.array_equal(own.reference((2, 3)), planted)


def test_reference_errors_name_the_problem(tmp_path):
    folder = _case_folder(tmp_path, "own", image=np.zeros(6))
    own = GoldenCase.from_folder(folder)
    with pytest.raises(GoldenError, match="shape is unknown"):
        own.reference()
    with pytest.raises(GoldenError, match="6 float32 values, expected a 2x2 image"):
        own.reference((2, 2))
    with pytest.raises(GoldenError, match="6 float32 values, expected a 3x3 image"):
        GoldenCase.from_folder(folder, {"id": "own", "shape": [3, 3]}).reference((2, 3))  # the manifest's wins
    (folder / "image.bin").unlink()
    with pytest.raises(GoldenError, match="no reference image .*image.bin"):
        own.reference((2, 3))
    (folder / "image.bin").mkdir()
    with pytest.raises(GoldenError, match="cannot read it"):
        own.reference((2, 3))


def test_a_case_without_readable_arguments_is_a_golden_error(tmp_path):
    with pytest.raises(GoldenError, match="args.txt"):
        GoldenCase.from_folder(tmp_path)


def test_working_directory_restores_the_directory_even_on_errors(tmp_path):
    before = Path.cwd()
    with pytest.raises(RuntimeError):
        with working_directory(tmp_path):
            assert Path.cwd() == tmp_path.resolve()
            raise RuntimeError
    assert Path.cwd() == before
    with working_directory(None):
        assert Path.cwd() == before


def test_discover_one_case_a_manifest_folder_or_any_folder(tmp_path):
    single = _case_folder(tmp_path / "single", "only")
    assert [(c.id, c.folder) for c in discover(single)] == [("only", single)]
    assert [c.id for c in discover(GOLDEN_DIR)] == [r["id"] for r in MANIFEST]
    loose = tmp_path / "loose"
    for name in ("b", "a"):
        _case_folder(loose, name)
    (loose / "not_a_case").mkdir()
    os.symlink(loose / "a", loose / "c_link")
    found = discover(loose)
    assert [c.id for c in found] == ["a", "b", "c_link"]  # by name; a linked folder keeps its own name
    assert all(c.shape is None and c.args == ("-detpixels", "2") for c in found)


# ---- baseline files

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"
HERE = MachineClass(cpu_class="x86_64 AuthenticAMD AVX512", torch="2.13.0+cpu", threads=1, dtype="float64", device="cpu")


def test_baseline_files_are_validated(tmp_path):
    with pytest.raises(golden.BaselineError, match="no baseline file"):
        golden.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": 1, "holds_for": {}, "cases": {"a": "not-a-hash"}}')
    with pytest.raises(golden.BaselineError, match="malformed baseline"):
        golden.load(bad)
    assert golden.load(DATA / "good" / "results" / "baselines" / "golden_hashes.json")["schema"] == 1


def test_every_problem_is_named(tmp_path):
    sha = "a" * 64
    assert problems({"schema": 1, "holds_for": {}, "cases": {"a": sha}}) == []  # cases_compiled is optional
    assert problems({"schema": 2}) == ["schema is not 1"]
    assert problems({"schema": 1, "cases": {"a": sha.upper()}, "cases_compiled": []}) == [
        "no holds_for record", "cases is not a map of case id -> sha256 hex digest",
        "cases_compiled is not a map of case id -> sha256 hex digest"]
    cut = tmp_path / "cut.json"
    cut.write_text('{"schema": ')
    with pytest.raises(golden.BaselineError, match="not readable JSON"):
        golden.load(cut)


def test_differing_fields_compare_machine_classes():
    record = HERE.as_record()
    assert differing_fields(HERE, record) == []
    assert differing_fields(HERE, {**record, "cpu_class": "x86_64 GenuineIntel AVX2", "threads": 2}) == [
        "cpu_class", "threads"]
    assert differing_fields(HERE, {"torch": "2.13.0+cpu"}) == ["cpu_class", "device", "dtype", "threads"]


def _write(root: Path, path: Path, machine: MachineClass, digit: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(json.dumps({"schema": 1, "holds_for": machine.as_record(), "cases": {"a": digit * 64}}))


def test_for_class_finds_a_class_own_file_before_the_single_file_of_earlier_versions(tmp_path):
    intel = replace(HERE, cpu_class="x86_64 GenuineIntel AVX512")
    assert for_class(tmp_path, HERE) is None
    _write(tmp_path, BASELINE, HERE, "1")
    assert for_class(tmp_path, HERE) == (BASELINE, json.loads((tmp_path / BASELINE).read_text()))
    assert for_class(tmp_path, intel) is None
    _write(tmp_path, class_path(intel), intel, "2")
    _write(tmp_path, class_path(HERE), HERE, "3")
    assert for_class(tmp_path, HERE)[1]["cases"] == {"a": "3" * 64}
    assert for_class(tmp_path, intel) == (class_path(intel), json.loads((tmp_path / class_path(intel)).read_text()))
    _write(tmp_path, class_path(intel), HERE, "2")  # a file named for one class holding another's hashes
    with pytest.raises(golden.BaselineError, match="holds_for does not describe"):
        for_class(tmp_path, HERE)


# ---- reproducibility axes

def test_every_axis_varies_one_thing_between_its_two_runs():
    for axis in AXES.values():
        varied = [axis.threads[0] != axis.threads[1], axis.hash_seeds[0] != axis.hash_seeds[1]]
        assert sum(varied) == 1, axis.name
    assert EAGER_AXES == ("process", "threads") and AXES["compiled"].mode == "compiled"


def test_the_checked_cases_are_golden_cases_and_one_has_a_seeded_noise_image():
    cases = {case.id: case for case in load_cases(golden_dir(ROOT))}
    assert set(CHECKED_CASES) <= set(cases) and set(CHECKED_COMPILED_CASES) <= set(CHECKED_CASES)
    assert any("-seed" in cases[c].args and "-noisefile" in cases[c].args for c in CHECKED_CASES)
