"""The golden baseline file: the stored image hashes the determinism tracks compare against.

``results/baselines/golden_hashes.json`` (:data:`BASELINE`, relative to the project) holds, for every
golden case, the sha256 of its float64 image (``cases``; ``cases_compiled`` for the compiled path,
whose last bits may differ), the :class:`~detsim.track.base.provenance.MachineClass` record they hold
for (``holds_for``: cpu_class, device, dtype, threads, torch) and where they were recorded
(``recorded``). :func:`load` reads and validates one; :func:`differing_fields` says which fields of a
machine class differ from a stored ``holds_for``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

from detsim.track.base.hashing import is_sha256
from detsim.track.base.provenance import MachineClass

BASELINE = Path("results") / "baselines" / "golden_hashes.json"
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
