"""The golden baseline files: the stored image hashes the determinism tracks compare against.

One file per machine class (:func:`class_path`), so every runner of a mixed fleet gates against its own
class and a refresh on one class never touches another's. The single file of earlier versions
(:data:`BASELINE`) is still read as the baseline of the class its ``holds_for`` names (a per-class file of
that class wins). ``cases`` hold the eager path's hashes, ``cases_compiled`` the compiled path's (whose last
bits may differ).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

from .hashing import is_sha256
from .provenance import MachineClass

BASELINE = Path("results") / "baselines" / "golden_hashes.json"  # the single file of earlier versions
BASELINE_DIR = Path("results") / "baselines" / "golden_hashes"  # one <class slug>.json per machine class
SCHEMA = 1
HASH_KEYS = ("cases", "cases_compiled")  # eager and compiled path; the compiled map may be absent


class BaselineError(ValueError):
    """A missing, unreadable or malformed baseline file (the message names it)."""


def problems(data) -> list[str]:
    """What is wrong with a parsed baseline (empty when it is usable)."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return [f"schema is not {SCHEMA}"]
    found = []
    if not isinstance(data.get("holds_for"), dict):
        found.append("no holds_for record")
    for key in HASH_KEYS:
        cases = data.get(key, {} if key == "cases_compiled" else None)
        if not isinstance(cases, dict) or not all(is_sha256(v) for v in cases.values()):
            found.append(f"{key} is not a map of case id -> sha256 hex digest")
    return found


def load(path: Path) -> dict:
    """The baseline at ``path``, validated; raises :class:`BaselineError` naming the file."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise BaselineError(f"{path}: no baseline file (create it with `detsim-track baselines --refresh`)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"{path}: not readable JSON ({str(exc).splitlines()[0]})") from None
    found = problems(data)
    if found:
        raise BaselineError(f"{path}: malformed baseline ({'; '.join(found)})")
    return data


def differing_fields(here: MachineClass, holds_for: Mapping) -> list[str]:
    """The fields of ``here`` whose value the stored ``holds_for`` record does not have, sorted."""
    stored = MachineClass.from_record(holds_for)
    if stored is not None:
        return sorted(here.differences(stored))
    return sorted(k for k, v in here.as_record().items() if holds_for.get(k) != v)


def class_path(machine: MachineClass) -> Path:
    """Where the baseline of ``machine``'s class lives, relative to the project."""
    return BASELINE_DIR / f"{machine.slug()}.json"


def stored(root: Path) -> dict[Path, dict]:
    """Every stored baseline under ``root`` (path relative to it -> validated content): the per-class
    files, then the single file of earlier versions where its class has no file of its own. Raises
    :class:`BaselineError` for an unusable file, or for a per-class file whose ``holds_for`` is not the
    class its name says."""
    found: dict[Path, dict] = {}
    slugs = set()
    folder = root / BASELINE_DIR
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        data = load(path)
        slug = MachineClass.from_record(data["holds_for"])
        if slug is None or slug.slug() != path.stem:
            raise BaselineError(f"{path}: holds_for does not describe the machine class {path.stem}")
        found[path.relative_to(root)], slugs = data, slugs | {path.stem}
    if (root / BASELINE).exists():
        data = load(root / BASELINE)
        machine = MachineClass.from_record(data["holds_for"])
        if machine is None or machine.slug() not in slugs:
            found[BASELINE] = data
    return found


def for_class(root: Path, machine: MachineClass) -> tuple[Path, dict] | None:
    """The stored baseline of ``machine``'s class (path relative to ``root``, content), or None."""
    for path, data in stored(root).items():
        if MachineClass.from_record(data["holds_for"]) == machine:
            return path, data
    return None
