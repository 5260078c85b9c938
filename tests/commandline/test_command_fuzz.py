"""Random command lines from the flag table never end in a traceback: success or a one-line input error."""

from __future__ import annotations

import io
import random

import pytest

from detsim.commandline.arguments import ArgumentError
from detsim.commandline.flag_table import HANDLERS
from detsim.commandline.to_config import InputError
from detsim.fileio.safe_write import OutputError
from detsim.model.config import ConfigError
from detsim.model.sources import SourceFileError
from detsim.model.structure_factors import HKLError

CASES = 2000
NARGS = {name: h.takes for h in HANDLERS for name in (h.pattern, *h.also)}
FLAGS = sorted(NARGS)
NUMBERS = ["0", "1", "-1", "2", "3", "7", "90", "100", "0.5", "-0.5", "1e-300", "1e300", "2147483648",
           "-2147483649", "99999999999999999999", "1.5", "-0", "+3"]
JUNK_VALUES = ["1e400", "-1e400", "nan", "inf", "-inf", "0x10", "1e", "", " ", "abc", "random", "sample", "beam",
               "float32", "float64", "eager", "compiled", "cpu", "nofile.hkl", "-", "--", "1,2", "é"]
JUNK = ["-", "--", "---x", "-bogus", "stray", "-N5", "-cellx", "--help=1", "-mosflmish", "-1e3x"]
INPUT_ERRORS = (ArgumentError, ConfigError, InputError, HKLError, SourceFileError, OutputError)


def _value(rng: random.Random) -> str:
    return rng.choice(NUMBERS) if rng.random() < 0.8 else rng.choice(JUNK_VALUES)


def _argv(rng: random.Random) -> list[str]:
    """Flags of the table with mostly the right number of mostly numeric values, and some junk."""
    argv: list[str] = []
    for _ in range(rng.randint(0, 6)):
        roll = rng.random()
        if roll < 0.85:
            flag = rng.choice(FLAGS)
            count = NARGS[flag] if rng.random() < 0.85 else rng.randint(0, 6)
            argv += [flag] + [_value(rng) for _ in range(count)]
        elif roll < 0.93:
            argv.append(rng.choice(JUNK))
        else:
            argv.append(_value(rng))
    if rng.random() < 0.5:  # often a complete crystal first, so that later checks are reached too
        argv = ["-cell", "70", "70", "70", "90", "90", "90", "-default_F", "10"] + argv
    return argv


class _Rendering(Exception):
    """Raised in place of the render: everything before it (reading, checking, preparing) has passed."""


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # norms of 1e300 vectors, then refused
def test_random_command_lines_end_in_a_setup_or_a_one_line_error(tmp_path, monkeypatch):
    """Through the whole command up to the render: argv, files, configuration, output paths, prepare."""
    from detsim.commandline import command as cli

    def reached(*args, **kwargs):
        raise _Rendering()

    monkeypatch.setattr("detsim.rendering.engine.render", reached)  # the command imports both when it runs
    monkeypatch.setattr("detsim.diagnostics.pixel_trace.trace_pixels", reached)
    monkeypatch.chdir(tmp_path)  # empty: every file a flag names is missing
    rng = random.Random(20261123)
    outcomes = {"rendering": 0, "error": 0}
    for _ in range(CASES):
        argv = _argv(rng)
        try:
            cli.run(argv, out=io.StringIO())
        except _Rendering:
            outcomes["rendering"] += 1
        except INPUT_ERRORS as exc:
            message = str(exc)
            assert message and "\n" not in message, (argv, message)
            outcomes["error"] += 1
        except Exception as exc:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{type(exc).__name__}: {exc} for argv {argv!r}")
    assert list(tmp_path.iterdir()) == []
    assert outcomes["rendering"] > CASES // 50 and outcomes["error"] > CASES // 2, outcomes
