"""Files as the tracking run's steps need them: JSON read with a one-line error (asv.conf.json's ``//`` comments
allowed), a file written whole or not at all, whether a folder can be written (the one probe), and the machine
name that names a results folder. Standard library only: the recorder's steps (``recorder/steps.py``, run by
path) import it without the package they measure."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
import tempfile
from pathlib import Path

_STRING_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"?|//[^\n]*', re.DOTALL)  # a string (to its end) or a comment


# a host name's letters (and asv's own default, the host name, fits): one path component, never "." or ".."
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def validate_machine_name(name: str) -> str:
    """``name`` when it can name a machine's folder, else ValueError saying what is allowed."""
    if not _NAME.fullmatch(name):
        shown = name.encode("unicode_escape").decode("ascii")
        raise ValueError(f"machine name '{shown}' refused: use 1-64 letters, digits, '.', '_' or '-', "
                         "starting with a letter or digit (it names a folder of results/asv)")
    return name


TARGET_PROJECTS = Path("results") / "targets"  # under detsim's checkout: a recorded target's project folders


class RecordingError(Exception):
    """What a step cannot do; the message is one line naming the file."""


def strip_comments(text: str) -> str:
    """JSON with ``//`` comments (as asv.conf.json allows) -> JSON; ``//`` inside strings is kept."""
    return _STRING_OR_COMMENT.sub(lambda m: "" if m.group().startswith("//") else m.group(), text)


def read_json(path: Path, *, comments: bool = False, error: type[Exception] = RecordingError):
    """The parsed file (NaN allowed: asv writes it for skips); raises ``error`` naming it, in one line."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise error(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: unreadable ({exc})") from None
    try:
        return json.loads(strip_comments(text) if comments else text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}: corrupt JSON ({exc})") from None


def write_aside(path: Path, data: bytes) -> None:
    """``data`` into ``path``, whole or not at all: written beside it, then renamed over it (the suite
    keeps its own few lines for this rather than the measured package's). A replaced file keeps its permission
    bits; a new one gets a plain ``open``'s (0666 less the umask), not a temporary file's 0600."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "wb") as out:
            with contextlib.suppress(FileNotFoundError):
                os.chmod(out.fileno(), stat.S_IMODE(os.stat(path).st_mode))
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise



NOT_A_FOLDER = "not a folder"  # why_unwritable: the nearest existing path is a file (or other non-folder)


def why_unwritable(folder: Path) -> tuple[Path, str | None]:
    """The nearest existing path of ``folder`` (itself, else the folder it would be made in) and why no file
    can be made there: :data:`NOT_A_FOLDER`, the operating system's reason, or None (it can). A file is made
    there and removed, since a permission test cannot tell root from a read-only disk; nothing is left behind.
    The one probe of writability (``base/output.py`` asks it too)."""
    existing = folder
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return existing, NOT_A_FOLDER
    try:
        handle, probe = tempfile.mkstemp(dir=existing, prefix=".write-test.")
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        return existing, exc.strerror or str(exc)
    return existing, None


def check_writable(folder: Path) -> None:
    """:class:`RecordingError` unless files can be made in ``folder`` (or, where it does not exist yet, in the
    folder it would be made in): :func:`why_unwritable`."""
    existing, why = why_unwritable(folder)
    if why is not None:
        reason = f"{existing} is not a folder" if why == NOT_A_FOLDER else why
        raise RecordingError(f"{folder}: cannot be written ({reason})")


