"""detsim.track.cli: the top-level help is one screen that names every subcommand."""

from __future__ import annotations

import pytest

from detsim.track import cli

SCREEN_LINES = 40


def test_the_top_level_help_fits_one_screen_and_names_every_command(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--help"])
    text = capsys.readouterr().out
    assert stop.value.code == 0
    assert len(text.splitlines()) <= SCREEN_LINES, text
    listed = {line.split()[0] for line in text.splitlines() if line.startswith("    ") and line.split()}
    assert listed >= set(cli.SUBCOMMANDS), sorted(set(cli.SUBCOMMANDS) - listed)
    assert "COMMAND -h" in text and "Exit status" in text
