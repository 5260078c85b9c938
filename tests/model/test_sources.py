"""The source file reader (detsim.model.sources.read_source_file): numbers as nanoBragg's atof reads them."""

from __future__ import annotations

import os

import pytest

from detsim.fileio.bounded_read import MAX_LINE_BYTES
from detsim.model import sources
from detsim.model.sources import SourceFileError, read_source_file

BEAM = (1.0, 0.0, 0.0)


@pytest.mark.parametrize("field", ["1_0", "１０", "\u00a0-10", "-10abc"])
def test_a_column_that_is_not_wholly_a_c_number_is_refused(field, tmp_path):
    # nanoBragg's atof reads 1, 0, 0 and -10 where Python's float() reads 10, 10, -10 and nothing
    path = tmp_path / "src.txt"
    path.write_text(f"-10 0 0\n{field} 0.5 0\n", encoding="utf-8")
    with pytest.raises(SourceFileError, match="line 2: non-numeric value") as err:
        read_source_file(path, BEAM, lambda_A=1.0)
    assert "src.txt" in str(err.value) and "\n" not in str(err.value)


def test_columns_are_read_with_cs_grammar(tmp_path):
    path = tmp_path / "src.txt"
    path.write_text("-0x1.4p3 0 0 1 1e-10\r\n\v-10\t0,0\n")
    points = read_source_file(path, BEAM, lambda_A=1.0)
    assert [p.position_m for p in points] == [(-10.0, 0.0, 0.0), (-10.0, 0.0, 0.0)]


@pytest.mark.parametrize("name,kind", [("/dev/zero", "a character device"), ("adir", "a directory"),
                                       ("fifo", "a FIFO (named pipe)")])
def test_a_source_file_that_is_not_a_regular_file_is_refused_before_it_is_read(tmp_path, monkeypatch, name, kind):
    if name.startswith("/dev/") and not os.path.exists(name):
        pytest.skip(f"needs {name}")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(SourceFileError) as err:
        read_source_file(name, BEAM, lambda_A=1.0)
    assert str(err.value) == f"{name}: is {kind}; the source file must be a regular file"


def test_a_source_line_nanobragg_would_split_is_refused(tmp_path):
    # nanoBragg reads a line with fgets into 10240 bytes: a longer one becomes two sources
    path = tmp_path / "src.txt"
    path.write_text("-10" + " " * MAX_LINE_BYTES + "0 0\n")
    with pytest.raises(SourceFileError, match=f"src.txt line 1: longer than {MAX_LINE_BYTES} bytes"):
        read_source_file(path, BEAM, lambda_A=1.0)
    path.write_text("-10" + " " * (MAX_LINE_BYTES - 7) + "0 0\n")  # exactly the cap
    assert len(read_source_file(path, BEAM, lambda_A=1.0)) == 1


def test_more_sources_than_memory_holds_are_refused_while_reading(tmp_path, monkeypatch):
    monkeypatch.setattr(sources.memory, "available_bytes", lambda device: 3 * sources.SOURCE_BYTES)
    path = tmp_path / "src.txt"
    path.write_text("-10 0 0\n" * 10)
    with pytest.raises(SourceFileError, match="src.txt: 4 sources by line 4 already need .* more than the"):
        read_source_file(path, BEAM, lambda_A=1.0)
