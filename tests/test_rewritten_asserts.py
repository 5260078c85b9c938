"""tests/rewritten_asserts.py, which `make test` runs first: the cache it writes is the one pytest writes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from _pytest.assertion import rewrite

import rewritten_asserts

MODULE = "def test_it():\n    x = 1\n    assert x == 2\n"


def _pyc(module: Path) -> Path:
    return rewrite.get_cache_dir(module) / (module.name[:-3] + rewrite.PYC_TAIL)


def test_the_cache_holds_what_pytest_writes_and_pytest_reads_it(tmp_path):
    ours, theirs = tmp_path / "ours" / "test_it.py", tmp_path / "theirs" / "test_it.py"
    for module in (ours, theirs):
        module.parent.mkdir()
        module.write_text(MODULE)
    rewritten_asserts._cache(ours)
    written = _pyc(ours).stat().st_mtime_ns
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for folder in (theirs.parent, ours.parent):
        ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                              "-p", "no:randomly", "-p", "no:codspeed", "-p", "no:benchmark", "--rootdir", str(folder),
                              "-c", os.devnull, str(folder)], cwd=folder, env=env, capture_output=True, text=True)
        assert ran.returncode == 1 and "assert 1 == 2" in ran.stdout, ran.stdout + ran.stderr  # asserts explained
    assert _pyc(ours).stat().st_mtime_ns == written  # read, not written again
    assert _pyc(ours).read_bytes()[:16] == _pyc(theirs).read_bytes()[:16]  # magic number, flags, the source's hash
    assert rewrite._read_pyc(ours, _pyc(ours)) == rewrite._read_pyc(theirs, _pyc(theirs))  # the same code


def test_an_up_to_date_cache_is_kept_and_a_stale_one_rewritten(tmp_path):
    module = tmp_path / "test_it.py"
    module.write_text(MODULE)
    rewritten_asserts._cache(module)
    written = _pyc(module).stat().st_mtime_ns
    rewritten_asserts._cache(module)
    assert _pyc(module).stat().st_mtime_ns == written
    module.write_text(MODULE.replace("2", "3"))
    rewritten_asserts._cache(module)
    namespace = {}
    exec(rewrite._read_pyc(module, _pyc(module)), namespace)  # noqa: S102 - the cached module, as pytest runs it
    try:
        namespace["test_it"]()
    except AssertionError as error:
        assert "assert 1 == 3" in str(error)
    else:
        raise AssertionError("the rewritten test passed")
