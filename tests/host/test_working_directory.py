"""detsim.host.working_directory: a block run in another directory, and back even on errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from detsim.host.working_directory import working_directory


def test_working_directory_restores_the_directory_even_on_errors(tmp_path):
    before = Path.cwd()
    with pytest.raises(RuntimeError):
        with working_directory(tmp_path):
            assert Path.cwd() == tmp_path.resolve()
            raise RuntimeError
    assert Path.cwd() == before
    with working_directory(None):
        assert Path.cwd() == before
