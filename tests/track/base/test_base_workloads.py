"""detsim.track.base.workloads: the speed workloads as nanoBragg command lines."""

from __future__ import annotations

import pytest

from detsim.commandline.to_config import config_from_argv
from detsim.rendering.engine import prepare
from detsim.track.base.workloads import DETECTOR_MM, WORKLOADS, Workload, reduced


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_workload_command_line_gives_the_steps_it_claims(name):
    workload = WORKLOADS[name]
    setup = prepare(workload.resized(16).config(config_from_argv))
    assert setup.steps == workload.steps  # -oversample is explicit: nanoBragg would pick 2 for P1
    assert (setup.config.detector.fpixels, setup.config.detector.spixels) == (16, 16)
    assert workload.pixel_steps == workload.pixels ** 2 * workload.steps
    assert WORKLOADS["P2"].steps == 200 and WORKLOADS["P4096"].pixels == 4096


def test_the_named_workloads_are_nanobraggs_sizes():
    assert {name: (w.name, w.pixels, w.steps) for name, w in WORKLOADS.items()} == {
        "P1": ("P1", 1024, 1), "P2": ("P2", 1024, 200), "P4096": ("P4096", 4096, 1)}


def test_resized_keeps_the_work_per_pixel_and_says_its_size():
    p2 = WORKLOADS["P2"]
    small = p2.resized(256)
    assert small.name == "P2@256" and small.pixels == 256 and small.steps == p2.steps
    assert small.resized(64).name == "P2@64"  # never "P2@256@64"
    assert p2.resized(p2.pixels) is p2
    config = small.config(config_from_argv)
    assert config.detector.pixel_mm * config.detector.fpixels == pytest.approx(DETECTOR_MM)  # same detector


def test_argv_flags_follow_the_work():
    plain = Workload("X", 100).argv()
    assert plain[-3:] == ["-nonoise", "-nopgm", "-noprogress"]
    assert "-mosaic_dom" not in plain and "-phisteps" not in plain
    assert plain[plain.index("-oversample") + 1] == "1" and plain[plain.index("-pixel") + 1] == "1.024"
    full = Workload("Y", 100, oversample=3, mosaic_domains=4, phi_steps=2).argv()
    assert full[full.index("-mosaic_dom") + 1] == "4" and full[full.index("-phisteps") + 1] == "2"
    assert full[full.index("-oversample") + 1] == "3"


def test_a_reduced_name_is_the_resized_reference_workload_and_nothing_else_is():
    assert reduced("P2@32") == WORKLOADS["P2"].resized(32) and reduced("P2@32").name == "P2@32"
    assert reduced("P1@1024") is WORKLOADS["P1"]
    for name in ("P1", "P9@64", "P1@", "P1@x", "@64", "c02", "P1@64@32"):
        assert reduced(name) is None, name


def test_config_is_what_the_reader_makes_of_the_command_line():
    seen = []
    assert Workload("X", 8).config(lambda argv: seen.append(argv) or "made") == "made"
    assert seen == [Workload("X", 8).argv()]
