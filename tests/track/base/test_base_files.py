"""The tracking run's files: what it writes is checked before it records, and a machine name from outside names
one folder of results/asv or is refused in one line."""

from __future__ import annotations

import os
import stat

import pytest

from detsim.track.base import files
from detsim.track.base.files import validate_machine_name, write_aside


def test_a_folder_that_cannot_be_written_is_named_in_one_line(tmp_path):
    (tmp_path / "results").write_text("a file where a folder belongs")
    with pytest.raises(files.RecordingError) as raised:
        files.check_writable(tmp_path / "results" / "asv" / "m")
    assert str(raised.value) == f"{tmp_path}/results/asv/m: cannot be written ({tmp_path}/results is not a folder)"
    files.check_writable(tmp_path / "not" / "made")
    assert sorted(tmp_path.iterdir()) == [tmp_path / "results"]  # nothing made, nothing left


def test_the_writability_probe_names_the_nearest_existing_path_and_why(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    assert files.why_unwritable(tmp_path / "file" / "x") == (tmp_path / "file", files.NOT_A_FOLDER)
    assert files.why_unwritable(tmp_path / "new" / "deeper") == (tmp_path, None)
    assert sorted(tmp_path.iterdir()) == [tmp_path / "file"]  # the probe file is gone




@pytest.mark.parametrize("name", ["vm", "ci-cpu", "runner_7.example", "A1"])
def test_host_names_and_ci_names_pass_unchanged(name):
    assert validate_machine_name(name) == name


@pytest.mark.parametrize("name", ["../evil", "..", ".", "", "a/b", ".hidden", "-x", "x y", "tab\tname",
                                  "esc\x1b[31m", "a" * 65])
def test_names_that_would_leave_results_asv_or_garble_a_terminal_are_refused_in_one_line(name):
    with pytest.raises(ValueError) as raised:
        validate_machine_name(name)
    assert "\n" not in str(raised.value) and "\x1b" not in str(raised.value)


def test_write_aside_gives_a_new_file_a_plain_opens_bits_and_keeps_a_replaced_files(tmp_path):
    old_mask = os.umask(0o022)
    try:
        new = tmp_path / "new.json"
        write_aside(new, b"{}")
        kept = tmp_path / "kept.json"
        kept.write_bytes(b"[]")
        kept.chmod(0o640)
        write_aside(kept, b"{}")
    finally:
        os.umask(old_mask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o644 and new.read_bytes() == b"{}"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_bytes() == b"{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.json", "new.json"]  # no temporary file left
