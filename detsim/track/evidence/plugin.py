"""A pytest plugin ``detsim-track evidence`` loads into every pytest it runs (``-p detsim.track.evidence.plugin``).

evidence runs each device as its own pytest process and tells it which with ``--device DEVICE``
(repeatable). This project's ``tests/conftest.py`` defines that option (and parametrizes its
``device`` fixture with it); a test folder elsewhere does not know it, and pytest would refuse the
command line ("unrecognized arguments: --device"). This plugin adds ``--device`` once the conftests
of the command line are loaded, and only where none of them defined it: there the option is accepted
and recorded (``config.getoption("device")``), and tests that do not ask for a device run as they are.
"""

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
