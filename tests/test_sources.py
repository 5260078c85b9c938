"""The source file reader (detsim.sources.read_source_file): numbers as nanoBragg's atof reads them."""

from __future__ import annotations

import pytest

from detsim.sources import SourceFileError, read_source_file

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
