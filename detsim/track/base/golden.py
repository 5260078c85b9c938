"""Golden cases: nanoBragg.c's images with the command lines that made them, the image hashes stored for
them per machine class, and the axes along which their reproducibility is checked.

Inputs: a folder of cases and the baseline files under ``results/baselines/``. Outputs: :class:`GoldenCase`
records (arguments, shape, reference image), validated baselines, :data:`AXES`. Imports only the standard
library, numpy and the base itself: the asv suite loads it beside any commit's ``detsim``.

A case is a folder holding ``args.txt`` (one nanoBragg command line; the input files it names are relative to
the folder) and ``image.bin`` (raw float32 little-endian, (slow, fast)); ``tests/golden/manifest.json`` lists
the project's cases in order, with their shapes. A configuration is built by a reader of argument lists the
caller passes (``detsim.commandline.to_config.config_from_argv``, or an older commit's): this module imports no detsim.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from .hashing import is_sha256
from .provenance import MachineClass

GOLDEN = Path("tests") / "golden"  # relative to the project's root
MANIFEST = "manifest.json"
ENV_VAR = "DETSIM_GOLDEN_DIR"  # another folder of cases (same layout)


class GoldenError(ValueError):
    """No golden folder, an unknown or ambiguous case id, or a malformed case (the message names it)."""


def golden_dir(root: Path | None = None) -> Path:
    """The folder of golden cases: ``tests/golden`` of ``root``, else ``$DETSIM_GOLDEN_DIR``, else of the nearest
    folder at or above the working directory that has one (:class:`GoldenError`: none)."""
    if root is not None:
        candidates = [Path(root) / GOLDEN]
    elif os.environ.get(ENV_VAR):
        candidates = [Path(os.environ[ENV_VAR])]
    else:
        here = Path.cwd().resolve()
        candidates = [folder / GOLDEN for folder in (here, *here.parents)]
    for candidate in candidates:
        if (candidate / MANIFEST).is_file():
            return candidate
    raise GoldenError(f"no golden cases: {candidates[0] / MANIFEST} does not exist "
                      f"(run from the project's folder, or set {ENV_VAR})")


@contextlib.contextmanager
def working_directory(path: Path | None) -> Iterator[None]:
    """Run a block in ``path`` (no-op for None): input files of a case are relative to its folder."""
    if path is None:
        yield
        return
    before = os.getcwd()  # not Path.cwd(): the asv suite counts the instructions of a render inside this block
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


@dataclass(frozen=True)
class GoldenCase:
    """One case: its id, folder, nanoBragg arguments and image shape (slow, fast)."""

    id: str
    folder: Path
    args: tuple[str, ...]
    shape: tuple[int, int] | None  # None when no manifest gives it (a case folder of the user's)
    record: Mapping = field(default_factory=dict, compare=False, repr=False)  # its manifest entry

    @classmethod
    def from_folder(cls, folder: Path, record: Mapping | None = None) -> "GoldenCase":
        folder = Path(folder)
        try:
            args = tuple((folder / "args.txt").read_text().split())
        except (OSError, UnicodeDecodeError) as exc:
            raise GoldenError(f"{folder / 'args.txt'}: cannot read it ({exc})") from None
        record = dict(record or {})
        shape = tuple(record["shape"]) if "shape" in record else None
        return cls(id=str(record.get("id", folder.resolve().name)), folder=folder, args=args, shape=shape,
                   record=record)

    @property
    def pixel_steps(self) -> int | None:
        """Pixels times the sampling steps per pixel nanoBragg reported (sensor layers included): what one render
        of the case costs, relative to another's (None where the manifest gives no shape or steps)."""
        if self.shape is None or "steps" not in self.record:
            return None
        return self.shape[0] * self.shape[1] * int(self.record["steps"]) * int(self.record.get("thicksteps", 1))

    def config(self, read: Callable[[list[str]], Any]):
        """The case's configuration as ``read`` builds it from the case's arguments, in the case's folder
        (``read(argv)``: ``detsim.commandline.to_config.config_from_argv`` builds what the ``detsim`` command does)."""
        with working_directory(self.folder):
            return read(list(self.args))

    def reference(self, shape: tuple[int, int] | None = None) -> np.ndarray:
        """nanoBragg's image, (slow, fast) float32; ``shape`` is needed only where the manifest has none."""
        shape = self.shape or shape
        path = self.folder / "image.bin"
        try:
            flat = np.fromfile(path, dtype="<f4")
        except FileNotFoundError:
            raise GoldenError(f"no reference image {path}") from None
        except OSError as exc:
            raise GoldenError(f"{path}: cannot read it ({exc.strerror or exc})") from None
        if shape is None:
            raise GoldenError(f"{self.id}: the image shape is unknown (no manifest entry)")
        if flat.size != shape[0] * shape[1]:
            raise GoldenError(f"{path}: {flat.size} float32 values, expected a {shape[0]}x{shape[1]} image")
        return flat.reshape(shape)


def load_cases(directory: Path | None = None) -> list[GoldenCase]:
    """Every case of the manifest, in its order."""
    directory = directory or golden_dir()
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise GoldenError(f"{directory / MANIFEST}: not readable JSON ({exc})") from None
    if not isinstance(manifest, list) or not all(isinstance(r, dict) and isinstance(r.get("id"), str)
                                                 for r in manifest):
        raise GoldenError(f"{directory / MANIFEST}: not a list of case records with an 'id'")
    return [GoldenCase.from_folder(directory / record["id"], record) for record in manifest]


def case_ids(directory: Path | None = None) -> list[str]:
    return [case.id for case in load_cases(directory)]


def find_case(case_id: str, directory: Path | None = None) -> GoldenCase:
    """A case by id, or by a unique prefix of its id (``c02``)."""
    directory = directory or golden_dir()
    cases = load_cases(directory)
    matches = [c for c in cases if c.id == case_id] or [c for c in cases if c.id.startswith(case_id)]
    if len(matches) != 1:
        what = "is ambiguous" if matches else "is not a golden case"
        raise GoldenError(f"{case_id!r} {what} (one of {len(cases)} ids in {directory / MANIFEST})")
    return matches[0]


def discover(folder: Path) -> list[GoldenCase]:
    """The cases of any folder of cases: ``folder`` itself if it holds args.txt, else its subfolders
    that do (in manifest order where a manifest exists, else by name)."""
    folder = Path(folder)
    if (folder / "args.txt").is_file():
        return [GoldenCase.from_folder(folder)]
    if (folder / MANIFEST).is_file():
        return load_cases(folder)
    subfolders = [d for d in sorted(folder.iterdir()) if d.is_dir() and (d / "args.txt").is_file()]
    return [replace(GoldenCase.from_folder(d), id=d.name) for d in subfolders]  # a linked folder keeps its name


# ---- the baseline files: the stored image hashes the determinism tracks compare against
#
# One file per machine class (:func:`class_path`), so every runner of a mixed fleet gates against its own
# class and a refresh on one class never touches another's. The single file of earlier versions
# (:data:`BASELINE`) is still read as the baseline of the class its ``holds_for`` names (a per-class file of
# that class wins). ``cases`` hold the eager path's hashes, ``cases_compiled`` the compiled path's (whose last
# bits may differ).

BASELINE = Path("results") / "baselines" / "golden_hashes.json"  # the single file of earlier versions
BASELINE_DIR = Path("results") / "baselines" / "golden_hashes"  # one <class slug>.json per machine class
# how the stored hashes were rendered (eager): the class fields every baseline file's ``holds_for`` has
RENDER_THREADS, RENDER_DTYPE, RENDER_DEVICE = 1, "float64", "cpu"  # torch intra-op threads as in the asv suite
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


# ---- reproducibility: the same input gives the same bits, run after run, along the axes two runs are varied
# (what each axis can and cannot see: docs/determinism.md)

@dataclass(frozen=True)
class Axis:
    name: str
    runs: str  # the two runs, in words
    mode: str  # the execution path rendered: "eager" or "compiled"
    threads: tuple[int, int]  # torch threads of run A and run B
    hash_seeds: tuple[str, str]  # PYTHONHASHSEED of run A and run B (each run is a fresh process)


AXES = {axis.name: axis for axis in (
    Axis("process", "a render in a second fresh process against the first", "eager", (1, 1), ("0", "1")),
    Axis("threads", "a render with 2 torch threads against 1", "eager", (1, 2), ("0", "0")),
    Axis("compiled", "the compiled path's render in a second fresh process against the first", "compiled",
         (1, 1), ("0", "1")),
)}
EAGER_AXES = tuple(name for name, axis in AXES.items() if axis.mode == "eager")

# the golden cases checked per commit: a plain crystal, random mosaic domains (-mosaic_seed streams), a
# noise image (-seed: the Poisson stream), a combination of absorption, mosaic and phi steps
CHECKED_CASES = (
    "a01_cubic_mosflm_center", "k01_mosaic_10dom", "s01_noise_intfile_scale", "z02_combo_xds_abs_mosaic_phi")
CHECKED_COMPILED_CASES = ("a01_cubic_mosflm_center",)  # the compiled path compiles per process: one case only
