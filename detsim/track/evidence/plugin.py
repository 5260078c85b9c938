"""The pytest plugin ``detsim-track evidence`` loads into every pytest it runs: it adds ``--device`` where no
conftest of the command line defines it (docs/evidence.md, "What runs")."""

from __future__ import annotations

import pytest

OPTION = "--device"


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """After the command line's conftests: add ``--device`` unless one of them already did."""
    try:
        return (yield)
    finally:
        add_device_option(parser)


def add_device_option(parser) -> bool:
    """Add ``--device`` (repeatable) to ``parser``; False where an option of that name or destination exists."""
    try:
        parser.addoption(OPTION, action="append", default=None, metavar="DEVICE",
                         help="device the run is meant for (added by detsim-track evidence where no conftest "
                              "defines it; recorded, not acted upon)")
    except ValueError:
        return False
    return True
