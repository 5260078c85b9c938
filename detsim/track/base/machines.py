"""The name of a machine (``ASV_MACHINE``, ``--machine``): asv makes it a folder of ``results/asv/`` and
``.asv/`` and a key of ``~/.asv-machine.json``, so a name from outside is checked before anything is written.

Input: a name as given. Output: the same name, or :class:`ValueError` with a one-line message.
"""

from __future__ import annotations

import re

# a host name's letters (and asv's own default, the host name, fits): one path component, never "." or ".."
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def validate_machine_name(name: str) -> str:
    """``name`` when it can name a machine's folder, else ValueError saying what is allowed."""
    if not _NAME.fullmatch(name):
        shown = name.encode("unicode_escape").decode("ascii")
        raise ValueError(f"machine name '{shown}' refused: use 1-64 letters, digits, '.', '_' or '-', "
                         "starting with a letter or digit (it names a folder of results/asv)")
    return name
