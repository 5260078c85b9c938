"""Golden cases: nanoBragg.c's images with the command lines that made them.

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
