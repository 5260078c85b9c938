"""A target's spec: what the suite needs to render golden cases with another program.

Input: ``detsim-target.toml`` in the target repository's root (or a file given by path), flat TOML::

    command = "nanoBragg"                       # takes nanoBragg's argument list once installed
    env = { NANOBRAGG_DISABLE_COMPILE = "1" }   # optional: the environment it needs
    cases = ["a01_cubic_mosflm_center"]         # optional: golden case ids, or a folder of cases of its own
    timeout_s = 120                             # optional: per render
    install = "."                               # optional: what pip installs of each commit (a path in it)
    export = ["src", "pyproject.toml"]          # optional: the paths of a commit that the install needs
    count_instructions = true                   # optional (default false): count each render under callgrind

Output: a frozen :class:`TargetSpec`. A malformed file is a :class:`SpecError`, one line naming it. detsim
itself is the target when there is no file (:func:`detsim_spec`). The cases a target is rendered on
(:func:`target_cases`): its spec's folder of cases, or detsim's golden cases (its spec's subset, or all),
each with a reference image read, or a :class:`~detsim.track.base.golden.GoldenError` naming what is
missing, before anything is built.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Mapping

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from detsim.track.base.fresh import HERE
from detsim.track.base.golden import GoldenCase, GoldenError, discover, find_case, golden_dir, load_cases


FILE = "detsim-target.toml"
DEFAULT_TIMEOUT_S = 300.0  # per render: a port with its compiler off takes 7-15 s a golden case
KEYS = ("command", "env", "cases", "timeout_s", "install", "export", "count_instructions")
# off unless asked for: under valgrind a render takes about 50 times as long (a port's torch render of one
# golden case about 2 min), for every case at every measured commit (docs/target-counts.md)
COUNT_DEFAULT = False


class SpecError(ValueError):
    """A spec file that cannot be used (one line naming the file)."""


@dataclass(frozen=True)
class TargetSpec:
    """How to install and run a target; ``source`` is the file it was read from (None: detsim's default)."""

    name: str
    root: Path  # the target's git repository
    command: tuple[str, ...]  # the program and its leading arguments; a case's arguments follow
    env: Mapping[str, str] = field(default_factory=dict)
    cases: tuple[str, ...] | None = None  # golden case ids (None: every golden case)
    case_folder: Path | None = None  # a folder of cases of its own (instead of the golden ones)
    timeout_s: float = DEFAULT_TIMEOUT_S
    install: str = "."
    export: tuple[str, ...] | None = None  # None: the whole tree of a commit
    count_instructions: bool = COUNT_DEFAULT  # each case's render counted by callgrind (target.count)
    source: Path | None = None


def detsim_spec(root: Path) -> TargetSpec:
    """detsim as the target: its checkout at ``root``, its ``detsim`` command."""
    return TargetSpec(name="detsim", root=Path(root), command=("detsim",))


def load_spec(target: Path, spec_file: Path | None = None) -> TargetSpec:
    """The spec of the repository ``target``: ``spec_file``, else ``target/detsim-target.toml``."""
    # absolute here: the suite for targets reads the spec from its project folder, not the caller's directory
    target = Path(target).absolute()
    path = Path(spec_file).absolute() if spec_file is not None else target / FILE
    if not target.is_dir():
        raise SpecError(f"{target}: the target is not a folder")
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise SpecError(f"{path}: no target spec (write one: docs/targets.md)") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: not valid TOML ({exc})") from None
    return parse(data, path, target)


def parse(data: Mapping, path: Path, target: Path) -> TargetSpec:
    """A spec from the parsed TOML ``data`` of ``path``; every field checked."""
    def bad(what: str) -> SpecError:
        return SpecError(f"{path}: {what}")

    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise bad(f"unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    command = data.get("command")
    if not isinstance(command, str) or not command.strip():
        raise bad("'command' must be a non-empty string (the program that takes nanoBragg's arguments)")
    try:
        argv = tuple(shlex.split(command))
    except ValueError as exc:
        raise bad(f"'command' cannot be split into words ({exc})") from None
    env = data.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise bad("'env' must be a table of strings, e.g. env = { NAME = \"1\" }")
    cases, case_folder = _cases(data.get("cases"), target, bad)
    timeout = data.get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise bad(f"'timeout_s' must be a positive number of seconds, not {timeout!r}")
    install = data.get("install", ".")
    if not isinstance(install, str) or not _inside(install):
        raise bad(f"'install' must be a relative path inside the repository, not {install!r}")
    export = data.get("export")
    if export is not None and (not isinstance(export, list) or not export
                               or not all(isinstance(p, str) and _inside(p) for p in export)):
        raise bad("'export' must be a non-empty list of relative paths inside the repository")
    counted = data.get("count_instructions", COUNT_DEFAULT)
    if not isinstance(counted, bool):
        raise bad(f"'count_instructions' must be true or false, not {counted!r}")
    return TargetSpec(name=target.resolve().name, root=target, command=argv, env=dict(env), cases=cases,
                      case_folder=case_folder, timeout_s=float(timeout), install=install,
                      export=None if export is None else tuple(export), count_instructions=counted,
                      source=path)


def _cases(value, target: Path, bad) -> tuple[tuple[str, ...] | None, Path | None]:
    if value is None:
        return None, None
    if isinstance(value, str):
        folder = target / value
        if not folder.is_dir():
            raise bad(f"'cases' names the folder {folder}, which does not exist")
        return None, folder
    if isinstance(value, list) and value and all(isinstance(c, str) and c for c in value):
        twice = sorted({c for c in value if value.count(c) > 1})
        if twice:
            raise bad(f"'cases' names {twice[0]!r} more than once")
        return tuple(value), None
    raise bad("'cases' must be a non-empty list of golden case ids or a folder of cases")


def _inside(path: str) -> bool:
    """Whether ``path`` is relative and stays inside the repository."""
    p = PurePosixPath(path)
    return bool(path) and not p.is_absolute() and ".." not in p.parts


def golden_folder(root: Path) -> Path:
    """detsim's golden cases: of ``root``, else as :func:`~detsim.track.base.golden.golden_dir` finds them,
    else beside this package."""
    for where in (root, None, HERE):
        try:
            return golden_dir(where)
        except GoldenError:
            continue
    raise GoldenError(f"no golden cases found in {root} (run from detsim's checkout or give --root)")


def target_cases(spec: TargetSpec, root: Path) -> list[GoldenCase]:
    """Every case the target is rendered on, each with a readable reference image of a known shape (a
    :class:`GoldenError` naming the spec file where its ``cases`` are wrong)."""
    try:
        if spec.case_folder is not None:
            cases = [_shaped(case) for case in discover(spec.case_folder)]
            if not cases:
                raise GoldenError(f"{spec.case_folder} holds no case (a folder with args.txt and image.bin)")
        else:
            folder = golden_folder(root)
            cases = [find_case(c, folder) for c in spec.cases] if spec.cases else load_cases(folder)
        twice = sorted({c.id for c in cases if [d.id for d in cases].count(c.id) > 1})
        if twice:
            raise GoldenError(f"{twice[0]!r} is named more than once")
        for case in cases:
            case.reference()
    except GoldenError as exc:
        raise GoldenError(f"{spec.source}: 'cases': {exc}" if spec.source else str(exc)) from None
    return cases


def _shaped(case: GoldenCase) -> GoldenCase:
    """``case`` with its image shape: its manifest's, else the detector's pixels its arguments give (read as
    the ``detsim`` command reads them)."""
    if case.shape is not None:
        return case
    from detsim.commandline.to_config import config_from_argv  # imports torch: only for a case without a manifest

    try:
        detector = case.config(config_from_argv).detector
    except (ValueError, OSError) as exc:
        raise GoldenError(f"{case.id}: the image shape is unknown: no manifest gives it, and its arguments "
                          f"in {case.folder / 'args.txt'} do not ({exc})") from None
    return replace(case, shape=(int(detector.spixels), int(detector.fpixels)))


def target_case(spec: TargetSpec, case_id: str, root: Path) -> GoldenCase:
    """One case by id or unique prefix: of the spec's folder, else a golden case (any: a criterion may name a
    case outside the spec's subset)."""
    if spec.case_folder is None:
        case = find_case(case_id, golden_folder(root))
    else:
        matches = [_shaped(c) for c in discover(spec.case_folder) if c.id == case_id or c.id.startswith(case_id)]
        if len(matches) != 1:
            raise GoldenError(f"{case_id!r} is {'ambiguous' if matches else 'not a case'} in {spec.case_folder}")
        case = matches[0]
    case.reference()
    return case
