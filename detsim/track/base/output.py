"""Writing results: atomically, never over what is not ours, with one output-option convention.

Files are written beside their destination and renamed over it once complete; report folders are built in a
temporary folder and renamed into place, and an unfinished one takes the parent folders made for it along.
A command writing one machine-readable file takes ``--json PATH``, one writing a report folder ``--out DIR``
(new) or ``--out-root DIR`` (``<DIR>/<UTC stamp>/<area>``). Outputs are checked before the work: a bad one is
the core's :class:`~detsim.fileio.safe_write.OutputError` (an output that cannot be written), one line naming the option
and the path. An existing ``--json`` file is replaced only when it is a previous report of the same command
(its ``"report"`` field).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from detsim.fileio.safe_write import OutputError, atomic_write
from detsim.track.base.files import NOT_A_FOLDER, why_unwritable


def utc_stamp(now: _dt.datetime | None = None) -> str:
    """A UTC timestamp usable as a folder name, e.g. ``20261122T020911Z``."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (parent folders are created; the file is 0644 under umask 022)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def json_text(data) -> str:
    """Strict JSON (NaN and infinities refused), indented, sorted keys, one trailing newline."""
    return json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"


def json_number(x: float):
    """``x`` as strict JSON (:func:`json_text`) can hold it: itself when finite, else its text (``nan``, ``inf``)."""
    return x if x == x and abs(x) != float("inf") else str(x)


def write_json(path: Path, data) -> None:
    """:func:`json_text` of ``data``, written atomically."""
    atomic_write_text(path, json_text(data))


@contextlib.contextmanager
def atomic_directory(final: Path) -> Iterator[Path]:
    """Yield a temporary folder beside ``final`` (which must not exist), renamed to ``final`` when the block
    succeeds; on an exception (Ctrl-C and SIGTERM included) it goes, with the parent folders made for it."""
    final = Path(final)
    if final.exists():
        raise FileExistsError(f"{final} already exists; refusing to overwrite it")
    made = _missing_folders(final.parent)
    tmp = None
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=final.parent))
        os.chmod(tmp, 0o755)
        yield tmp
        os.rename(tmp, final)
    except BaseException:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        _remove_empty(made)
        raise


def _missing_folders(folder: Path) -> list[Path]:
    """``folder`` and those of its ancestors that do not exist yet, innermost first."""
    missing = []
    for path in (folder, *folder.parents):
        if os.path.lexists(path):
            break
        missing.append(path)
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (innermost first) as long as they are empty: what another process wrote stays."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            return


def check_place(folder: Path, option: str, shown: Path | str | None = None) -> None:
    """Files can be created inside ``folder`` (made when missing): its nearest existing ancestor is a
    folder we can write in (:func:`~detsim.track.base.files.why_unwritable`). Raises
    :class:`OutputError` naming ``option`` and ``shown`` (default ``folder``)."""
    shown = folder if shown is None else shown
    if not str(shown):
        raise OutputError(f"{option} '': an empty path")
    ancestor, why = why_unwritable(Path(os.path.abspath(folder)))
    if why == NOT_A_FOLDER:
        raise OutputError(f"{option} {shown}: {ancestor} is not a folder")
    if why is not None:
        raise OutputError(f"{option} {shown}: cannot write in {ancestor} ({why})")


def _check_place(path: Path, option: str) -> None:
    """``path`` could be created."""
    check_place(Path(os.path.abspath(path)).parent if str(path) else Path(), option, shown=path)


def check_new_folder(path: Path, option: str) -> None:
    """Raise :class:`OutputError` unless the report folder ``path`` is new and can be created."""
    if os.path.lexists(path):
        raise OutputError(f"{option}: {path} already exists; refusing to overwrite it")
    _check_place(Path(path), option)


def folder_option(args: argparse.Namespace) -> str:
    """The option that placed a :func:`report_folder` (for messages): ``--out``, ``--out-root`` or neither."""
    if getattr(args, "out", None) not in (None, _DEFAULT_FOLDER):
        return "--out"
    return "--out-root" if getattr(args, "out_root", None) is not None else "report folder"


def is_report_of(path: Path, command: str) -> bool:
    """Whether ``path`` holds a JSON report written by ``command`` (its top-level ``"report"`` field)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and data.get("report") == command


def check_output_file(path: Path, option: str, command: str) -> None:
    """Raise :class:`OutputError` unless ``path`` can be written: new, or a previous report of ``command``."""
    if str(path) and os.path.isdir(path):
        raise OutputError(f"{option} {path}: is a folder")
    if str(path) and os.path.lexists(path):
        if os.path.islink(path) or not os.path.isfile(path):
            raise OutputError(f"{option} {path}: not a regular file; refusing to replace it")
        if not is_report_of(path, command):
            raise OutputError(f"{option} {path}: exists and is not a previous `{command}` report; "
                              "refusing to replace it (remove it or choose another path)")
    _check_place(path, option)


def add_json_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--json PATH``: also write ``what`` as JSON to PATH (the one spelling every command uses)."""
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help=f"also write {what} as JSON to PATH")


REPORTS = Path("reports")  # the default root of report folders, relative to the project
_DEFAULT_FOLDER = "<default>"


def add_report_options(parser: argparse.ArgumentParser, area: str, *, optional: bool = False) -> None:
    """``--out DIR`` and ``--out-root DIR``. With ``optional`` the report is written only when asked for (a bare
    ``--out`` means the default place). ``{stamp}`` or ``<STAMP>`` in ``--out`` become the UTC stamp."""
    where = f"{REPORTS}/<STAMP>/{area}"
    if optional:
        parser.add_argument("--out", nargs="?", const=_DEFAULT_FOLDER, default=None, metavar="DIR",
                            help=f"write the report folder DIR (a bare --out: {where})")
    else:
        parser.add_argument("--out", type=str, default=None, metavar="DIR",
                            help=f"report folder, which must not exist yet (default: {where})")
    parser.add_argument("--out-root", type=Path, default=None, metavar="DIR",
                        help=f"write the report to DIR/<STAMP>/{area} (default DIR: {REPORTS})")
    parser.set_defaults(report_optional=optional)


def report_folder(args: argparse.Namespace, area: str, base: Path | None = None) -> Path | None:
    """Where the report of ``area`` goes (None: no report); ``base`` anchors the default root (default: here)."""
    stamp = utc_stamp()
    out, root = args.out, args.out_root
    if out is None and root is None and args.report_optional:
        return None
    if out not in (None, _DEFAULT_FOLDER):
        return Path(str(out).replace("{stamp}", stamp).replace("<STAMP>", stamp))
    root = root if root is not None else (base or Path.cwd()) / REPORTS
    return Path(root) / stamp / area


def written_line(folder: Path, option: str) -> str:
    """One line saying where a report folder was written and how much it holds, by its absolute path; where that
    is not inside a git work tree (a report written from some other folder), also that ``option`` puts it elsewhere."""
    from detsim.track.base.provenance import repo_root

    folder = Path(folder).resolve()
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    text = f"wrote {size / 1e6:.1f} MB to {folder}/" if size >= 100_000 else f"wrote {size / 1e3:.1f} kB to {folder}/"
    if repo_root(folder) is None:
        text += f" (not inside a repository; {option} DIR writes elsewhere)"
    return text
