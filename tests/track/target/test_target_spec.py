"""detsim.track.target.spec: the target file parsed into a frozen spec, every bad field one line naming it.

Also a target's cases, from its own folder or detsim's golden ones, found from any
working directory."""

from __future__ import annotations

import json
from pathlib import Path

import dataclasses
import numpy as np
import pytest

from detsim.track.base.golden import GoldenError, load_cases
from detsim.track.target.spec import DEFAULT_TIMEOUT_S, FILE, SpecError, TargetSpec, detsim_spec, golden_folder, load_spec, target_case, target_cases


def _write(folder: Path, text: str) -> Path:
    (folder / FILE).write_text(text)
    return folder


def test_the_issue_form_parses_into_a_frozen_spec(tmp_path):
    spec = load_spec(_write(tmp_path, 'command = "nanoBragg --quiet"\nenv = { NANOBRAGG_DISABLE_COMPILE = "1" }\n'
                                      'cases = ["a01_cubic_mosflm_center", "e01_triclinic_misset"]\ntimeout_s = 120\n'
                                      'export = ["src", "pyproject.toml"]\ncount_instructions = true\n'))
    assert spec.command == ("nanoBragg", "--quiet")
    assert dict(spec.env) == {"NANOBRAGG_DISABLE_COMPILE": "1"}
    assert spec.cases == ("a01_cubic_mosflm_center", "e01_triclinic_misset") and spec.case_folder is None
    assert (spec.timeout_s, spec.install, spec.export) == (120.0, ".", ("src", "pyproject.toml"))
    assert spec.count_instructions is True
    assert spec.source == tmp_path / FILE and spec.root == tmp_path and spec.name == tmp_path.name
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.timeout_s = 1


def test_only_the_command_is_required_and_a_spec_may_live_elsewhere(tmp_path):
    other = tmp_path / "mine.toml"
    other.write_text('command = "port-render"\ncases = "my_cases"\n')
    (tmp_path / "my_cases").mkdir()
    spec = load_spec(tmp_path, other)
    assert spec.command == ("port-render",) and spec.env == {} and spec.timeout_s == DEFAULT_TIMEOUT_S
    assert spec.cases is None and spec.case_folder == tmp_path / "my_cases" and spec.export is None
    assert spec.count_instructions is False  # off unless asked for: a count takes ~50x a render


def test_a_spec_and_target_named_relative_to_the_caller_are_kept_as_absolute_paths(tmp_path, monkeypatch):
    """The suite for targets reads the spec again from the project's folder: a path relative to the caller's
    directory would name nothing there, and every case would go unmeasured."""
    (tmp_path / "port").mkdir()
    (tmp_path / "spec.toml").write_text('command = "port-render"\ncases = ["a01_cubic_mosflm_center"]\n')
    monkeypatch.chdir(tmp_path / "port")
    spec = load_spec(Path("."), Path("../spec.toml"))
    assert spec.source.is_absolute() and spec.source.resolve() == (tmp_path / "spec.toml").resolve()
    assert spec.root.is_absolute() and spec.root.resolve() == (tmp_path / "port").resolve()


def test_detsim_is_the_default_target_without_a_file(tmp_path):
    spec = detsim_spec(tmp_path)
    assert (spec.name, spec.command, spec.source, spec.cases) == ("detsim", ("detsim",), None, None)


@pytest.mark.parametrize("text, says", [
    ('command = "x"\ncommand2 = 1\n', "unknown key 'command2'"),
    ('env = {}\n', "'command' must be a non-empty string"),
    ('command = "  "\n', "'command' must be a non-empty string"),
    ('command = "a \'b"\n', "'command' cannot be split"),
    ('command = "x"\nenv = { A = 1 }\n', "'env' must be a table of strings"),
    ('command = "x"\ncases = []\n', "'cases' must be a non-empty list"),
    ('command = "x"\ncases = "nowhere"\n', "which does not exist"),
    ('command = "x"\ntimeout_s = 0\n', "'timeout_s' must be a positive number"),
    ('command = "x"\ntimeout_s = true\n', "'timeout_s' must be a positive number"),
    ('command = "x"\ntimeout_s = nan\n', "'timeout_s' must be a positive number"),
    ('command = "x"\ninstall = "/abs"\n', "'install' must be a relative path"),
    ('command = "x"\nexport = ["../up"]\n', "'export' must be a non-empty list"),
    ('command = "x"\ncount_instructions = "yes"\n', "'count_instructions' must be true or false, not 'yes'"),
    ('command = "x"\ncount_instructions = 1\n', "'count_instructions' must be true or false, not 1"),
    ('command = "x\n', "not valid TOML"),
])
def test_a_bad_file_is_one_line_naming_it(tmp_path, text, says):
    with pytest.raises(SpecError) as caught:
        load_spec(_write(tmp_path, text))
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / FILE}: ") and says in message and "\n" not in message


def test_a_missing_file_or_target_folder_is_one_line(tmp_path):
    with pytest.raises(SpecError, match="no target spec"):
        load_spec(tmp_path)
    with pytest.raises(SpecError, match="the target is not a folder"):
        load_spec(tmp_path / "absent")


ROOT = Path(__file__).resolve().parents[3]


def test_golden_cases_all_or_the_specs_subset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not from the checkout: the root given (or the installed suite's) is used
    every = target_cases(TargetSpec("port", tmp_path, ("nb",)), ROOT)
    assert [c.id for c in every] == [c.id for c in load_cases(ROOT / "tests" / "golden")]
    some = target_cases(TargetSpec("port", tmp_path, ("nb",), cases=("a01", "e01_triclinic_misset")), ROOT)
    assert [c.id for c in some] == ["a01_cubic_mosflm_center", "e01_triclinic_misset"]
    assert golden_folder(tmp_path) == ROOT / "tests" / "golden"  # no cases under tmp_path: beside the package
    assert target_case(TargetSpec("port", tmp_path, ("nb",)), "o02", ROOT).id == "o02_nopolar"


def test_a_folder_of_the_targets_own_cases(tmp_path):
    for name in ("x01_small", "x02_smaller"):
        (tmp_path / "cases" / name).mkdir(parents=True)
        (tmp_path / "cases" / name / "args.txt").write_text("-N 1 -floatfile image.bin\n")
        np.zeros(4, "<f4").tofile(tmp_path / "cases" / name / "image.bin")
    spec = TargetSpec("port", tmp_path, ("nb",), case_folder=tmp_path / "cases")
    with pytest.raises(GoldenError, match="the image shape is unknown"):  # refused before anything is built
        target_cases(spec, ROOT)
    (tmp_path / "cases" / "manifest.json").write_text(json.dumps([{"id": "x01_small", "shape": [2, 2]},
                                                                  {"id": "x02_smaller", "shape": [2, 2]}]))
    assert [c.id for c in target_cases(spec, ROOT)] == ["x01_small", "x02_smaller"]
    assert target_case(spec, "x02", ROOT).id == "x02_smaller"
    with pytest.raises(GoldenError, match="'x0' is ambiguous"):
        target_case(spec, "x0", ROOT)
    with pytest.raises(GoldenError, match="'a01' is not a case"):
        target_case(spec, "a01", ROOT)
