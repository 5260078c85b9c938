"""What a recording measures at one installed commit of a target, apart from its timings: every golden case
rendered :data:`RUNS` times, each in a fresh process (parity, the image's hash, whether a second process
reproduces it, peak memory, where a departing image departs) and, where the spec asks, counted once under
callgrind.

Input: a :class:`~.spec.TargetSpec`, its cases, the installed commit's command folder and a count work folder.
Output: case id -> its outcome's record. None of it depends on the machine's load: asv's suite for targets runs
it in its ``setup_cache`` (:mod:`.asvsuite.bench_target`), and a recording on a Dask cluster runs it as one
task per commit on any worker (:mod:`detsim.track.recorder.cluster`), the suite then reading the task's records
(:data:`~.recording.MEASURED_VAR`) and timing only.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Sequence

from detsim.track.base.callgrind import CountError
from detsim.track.base.golden import GoldenCase
from detsim.track.base.status import Status
from detsim.track.target.count import count_render
from detsim.track.target.departure import departure
from detsim.track.target.render import render_case
from detsim.track.target.spec import TargetSpec

RUNS = 2  # processes per render: the second must reproduce the first's hash


def measure_cases(spec: TargetSpec, cases: Sequence[GoldenCase], bin_dir: Path, count_work: Path) -> dict:
    """Case id -> the record of its outcome at the commit installed in ``bin_dir`` (with its departure where
    it has an image that differs from the reference; counted in ``count_work`` where the spec asks)."""
    out = {}
    for case in cases:
        rendered = render_case(spec, case, bin_dir, runs=RUNS)
        outcome = rendered.outcome
        if spec.count_instructions and outcome.status is Status.OK:
            try:
                outcome = replace(outcome, instructions=count_render(spec, case, bin_dir, count_work))
            except CountError as exc:
                outcome = replace(outcome, not_counted=str(exc))
        record = outcome.to_dict()
        if rendered.image is not None and record["parity"].get("max_abs") != 0:
            record["departure"] = departure(rendered.image, rendered.reference)
        out[case.id] = record
    return out

