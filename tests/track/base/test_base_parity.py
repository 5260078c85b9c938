"""The one parity loop: each case read, rendered in its folder and held against its reference, ending in a Status;
a broken case recorded, not raised; cases past ``keep_going`` not run; a case the caller leaves skipped. The render
is faked (any commit's detsim renders through the same loop)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from detsim.track.base.golden import GoldenCase
from detsim.track.base.parity import case_parity, golden_parity
from detsim.track.base.status import Status
from detsim.track.base.timing import Timed

REFERENCE = np.arange(12, dtype=np.float32).reshape(3, 4)


def _case(tmp_path: Path, name: str, args: str = "-detpixels 4", reference=REFERENCE) -> GoldenCase:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "args.txt").write_text(args)
    reference.astype("<f4").tofile(folder / "image.bin")
    return GoldenCase.from_folder(folder, {"id": name, "shape": list(reference.shape)})


def _read(argv: list[str]):
    """A reader of argument lists: ``-bad`` is refused, the detector is 3x4 unless ``-slow N`` says otherwise."""
    if "-bad" in argv:
        raise ValueError("unknown flag -bad\nsecond line")
    slow = int(argv[argv.index("-slow") + 1]) if "-slow" in argv else 3
    return SimpleNamespace(detector=SimpleNamespace(spixels=slow, fpixels=4), argv=argv, folder=os.getcwd())


def _render(image_of):
    seen = []

    def render(config) -> Timed:
        seen.append((config.argv, os.getcwd()))
        return Timed((image_of(config), "info"), wall_s=0.5, cpu_s=0.25)

    return render, seen


def test_an_image_within_the_line_is_ok_and_one_off_it_failed(tmp_path):
    case = _case(tmp_path, "a")
    render, seen = _render(lambda config: REFERENCE.astype(np.float64))
    ok = case_parity(case, _read, render)
    assert ok.status is Status.OK and ok.metrics["r"] == 1.0 and ok.seconds == 0.5 and ok.error == ""
    assert ok.image.dtype == np.float64 and ok.reference.dtype == np.float32
    assert seen == [(["-detpixels", "4"], str(case.folder))]  # rendered in the case's folder
    assert ok.config.folder == str(case.folder)  # and read there
    flipped, _ = _render(lambda config: REFERENCE[::-1].astype(np.float64))
    assert case_parity(case, _read, flipped).status is Status.FAILED
    assert case_parity(case, _read, render, min_r=1.5).status is Status.FAILED


def test_a_case_that_cannot_be_read_rendered_or_matched_is_crashed_with_one_line(tmp_path):
    render, seen = _render(lambda config: np.zeros((3, 4)))
    bad = case_parity(_case(tmp_path, "bad", "-bad"), _read, render)
    assert bad.status is Status.CRASHED and bad.error == "ValueError: unknown flag -bad" and bad.config is None
    other = case_parity(_case(tmp_path, "other", "-slow 2"), _read, render)
    assert other.status is Status.CRASHED and "image.bin: a 3x4 image, but the arguments give a 2x4 detector" \
        in other.error and other.config is not None
    wrong, _ = _render(lambda config: np.zeros((4, 3)))
    assert case_parity(_case(tmp_path, "wrong"), _read, wrong).error == "ValueError: image shape (4, 3) != golden " \
                                                                         "shape (3, 4)"
    assert seen == []  # neither broken case was rendered


def test_the_loop_keeps_order_stops_at_its_deadline_and_leaves_what_the_caller_leaves(tmp_path):
    cases = [_case(tmp_path, name) for name in ("a", "b", "c", "d")]
    render, seen = _render(lambda config: REFERENCE.astype(np.float64))
    budget = iter([True, True, True, False])
    leave = lambda config: "left to the eager code" if config.folder.endswith("b") else None  # noqa: E731
    outcomes = list(golden_parity(cases, _read, render, keep_going=lambda: next(budget), leave=leave))
    assert [(o.case.id, o.status) for o in outcomes] == [("a", Status.OK), ("b", Status.SKIPPED), ("c", Status.OK),
                                                         ("d", Status.NOT_RUN)]
    assert outcomes[1].error == "left to the eager code" and outcomes[3].metrics is None
    assert len(seen) == 2


def test_a_torch_image_is_read_as_float64(tmp_path):
    torch = pytest.importorskip("torch")
    render, _ = _render(lambda config: torch.tensor(REFERENCE, dtype=torch.float32))
    done = case_parity(_case(tmp_path, "t"), _read, render)
    assert done.status is Status.OK and done.image.dtype == np.float64
