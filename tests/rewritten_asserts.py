"""Writes pytest's cache of rewritten test modules (their asserts made to explain themselves) ahead of
`make test`, one process per core: `python tests/rewritten_asserts.py`.

pytest rewrites the asserts of every test module and conftest.py it imports and caches the result beside the
module (``__pycache__/*-pytest-<version>.pyc``, keyed by the source's hash), but writes no cache where
PYTHONDONTWRITEBYTECODE is set, and on a fresh clone both xdist workers rewrite every module at once: ~5 s
of CPU each. Written here first, the workers read it. The cache is pytest's own, written by its own
functions: what it holds is what pytest would have written. Where this pytest no longer has them, nothing is
written and pytest rewrites as before.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TESTS = Path(__file__).resolve().parent


class _Quiet:
    """The trace a cache write reports to (pytest's own is its assertion state's; nothing reads it here)."""

    @staticmethod
    def trace(message: str) -> None:
        pass


def _cache(module: Path) -> None:
    from _pytest.assertion import rewrite

    pyc = rewrite.get_cache_dir(module) / (module.name[:-3] + rewrite.PYC_TAIL)
    if rewrite._read_pyc(module, pyc) is None and rewrite.try_makedirs(pyc.parent):
        try:
            source_hash, code = rewrite._rewrite_test(module, None)  # no config: pytest's defaults, as pyproject's
        except (OSError, SyntaxError, ValueError):
            return  # left to pytest, which reports it
        rewrite._write_pyc(_Quiet(), code, source_hash, pyc)


def main() -> int:
    try:
        from _pytest.assertion import rewrite

        for name in ("get_cache_dir", "PYC_TAIL", "_read_pyc", "try_makedirs", "_rewrite_test", "_write_pyc"):
            getattr(rewrite, name)
    except (ImportError, AttributeError):
        return 0
    modules = sorted({*TESTS.rglob("test_*.py"), *TESTS.rglob("*_test.py"), *TESTS.rglob("conftest.py")})
    with ProcessPoolExecutor(os.cpu_count()) as pool:
        list(pool.map(_cache, modules, chunksize=8))
    return 0


if __name__ == "__main__":
    sys.exit(main())
