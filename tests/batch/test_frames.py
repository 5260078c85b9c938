"""Reading a batch: command lines a line (comments, blanks, a program name), a sweep's CSV, and the one-line
refusal of a malformed file."""

from __future__ import annotations

import pytest

from detsim.batch.frames import BatchInputError, read_lines, read_sweep


def test_lines_skip_comments_and_blanks_and_are_named_by_their_line(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("# a comment\n\n-detpixels 16 -distance 90  # trailing\ndetsim -floatfile 'a b.bin'\n")
    frames = read_lines(str(path))
    assert [f.name for f in frames] == ["line0003", "line0004"]
    assert frames[0].argv == ("-detpixels", "16", "-distance", "90")
    assert frames[1].argv == ("-floatfile", "a b.bin") and frames[1].source == f"{path}:4"
    assert frames[1].command == "-floatfile 'a b.bin'"


def test_sweep_appends_each_columns_flag_and_values_to_the_base(tmp_path):
    path = tmp_path / "values.csv"
    path.write_text("-distance,-cell,-nopgm\n90,100 100 100 90 90 90,\n\n110,,\n")
    frames = read_sweep("-detpixels 16 -distance 50", str(path))
    assert [f.name for f in frames] == ["row0001", "row0003"]
    assert frames[0].argv == ("-detpixels", "16", "-distance", "50", "-distance", "90",
                              "-cell", "100", "100", "100", "90", "90", "90")
    assert frames[1].argv == ("-detpixels", "16", "-distance", "50", "-distance", "110")
    assert frames[1].source == f"{path}:4"


@pytest.mark.parametrize("text, named", [
    ("distance,-phi\n1,2\n", ":1: column 1 is 'distance'"),
    ("-distance,-phi\n1,2\n3\n", ":3: 1 values for 2 columns"),
    ("-distance,-distance\n1,2\n", ":1: a flag is named by two columns"),
    ("-distance\n", "holds no row of values"),
    ("", ":1: no header"),
])
def test_a_malformed_sweep_is_one_line_naming_file_and_line(text, named, tmp_path):
    path = tmp_path / "values.csv"
    path.write_text(text)
    with pytest.raises(BatchInputError, match=None) as caught:
        read_sweep("-detpixels 16", str(path))
    assert str(caught.value).startswith(str(path)) and named in str(caught.value) and "\n" not in str(caught.value)


def test_an_unclosed_quote_or_an_empty_file_is_refused(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("-detpixels 16\n-floatfile 'open\n")
    with pytest.raises(BatchInputError, match=f"{path}:2: cannot split"):
        read_lines(str(path))
    path.write_text("# nothing\n")
    with pytest.raises(BatchInputError, match="holds no command line"):
        read_lines(str(path))
    with pytest.raises(BatchInputError, match="cannot be read"):
        read_lines(str(tmp_path / "missing.txt"))
