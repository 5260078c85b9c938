"""detsim.track.target.spec: the target file parsed into a frozen spec, every bad field one line naming it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from detsim.track.target.spec import DEFAULT_TIMEOUT_S, FILE, SpecError, detsim_spec, load_spec


def _write(folder: Path, text: str) -> Path:
    (folder / FILE).write_text(text)
    return folder


def test_the_issue_form_parses_into_a_frozen_spec(tmp_path):
    spec = load_spec(_write(tmp_path, 'command = "nanoBragg --quiet"\nenv = { NANOBRAGG_DISABLE_COMPILE = "1" }\n'
                                      'cases = ["a01_cubic_mosflm_center", "e01_triclinic_misset"]\ntimeout_s = 120\n'
                                      'export = ["src", "pyproject.toml"]\n'))
    assert spec.command == ("nanoBragg", "--quiet")
    assert dict(spec.env) == {"NANOBRAGG_DISABLE_COMPILE": "1"}
    assert spec.cases == ("a01_cubic_mosflm_center", "e01_triclinic_misset") and spec.case_folder is None
    assert (spec.timeout_s, spec.install, spec.export) == (120.0, ".", ("src", "pyproject.toml"))
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
