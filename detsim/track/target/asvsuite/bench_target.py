"""asv's benchmarks of a target: each golden case rendered by the target's command (docs/targets.md).

asv runs this suite in the target's built environment (``environment_type: existing``, the venv
:mod:`detsim.track.recorder.target` installed the commit into), its results saved under the commit with
``--set-commit-hash``. The suite's facts come from ``suite.json`` in the folder ``DETSIM_TARGET_SUITE_DIR`` names
(the recording sets it: asv passes its environment on): the target, its spec, detsim's checkout and the folder
of per-commit outcomes.

``setup_cache`` renders every case twice, each in a fresh process (:func:`~detsim.track.target.outcomes.measure_cases`),
and writes each case's outcome (and, for an image that departs from its reference, where it departs) to
``outcomes/<commit>.json``. The tracks read it, named as detsim's own so that the verdict judges them alike:
parity 1 - r, the image's fingerprint (its hash, judged commit to commit), whether a second process
reproduces it, max relative error and sum ratio (drawn, not judged: 1 - r judges parity), peak memory; and
``time_render`` times one more whole process. A case that fails (crashed, timed out, no image, wrong size)
fails its parity track with its ending and its last stderr line, and skips the others.

Where the spec turns ``count_instructions`` on, ``setup_cache`` also counts one more process of each case that
rendered an image under callgrind (:mod:`detsim.track.target.count`), and ``Cost.track_instructions`` records it
in detsim's unit of instruction counts, so the verdict judges it by the cost rule (its row: TARGET_COST). Where
it is off there is no ``Cost`` benchmark at all (nothing skipped: nothing was asked for); where valgrind is
missing every count is skipped, with the reason.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from detsim.track.base.hashing import fingerprint
from detsim.track.base.metrics import PARITY_DECIMALS
from detsim.track.judge.benchmarks import COST_UNIT
from detsim.track.target.count import not_counted_reason
from detsim.track.target.outcomes import measure_cases
from detsim.track.target.build import SUITE_VAR
from detsim.track.target.project import ASV_TIMEOUT_S, COMMIT_VAR, MEASURED_VAR, SUITE, Project
from detsim.track.target.render import render_case
from detsim.track.base.status import Status
from detsim.track.target.spec import load_spec, target_cases

try:
    from asv_runner.benchmarks.mark import SkipNotImplemented as Skip
except ImportError:  # pragma: no cover - asv's runner is in every environment asv runs
    Skip = NotImplementedError

VERSION = "1"


def _setup():
    """The suite's facts, the target's spec and its cases (KeyError: not in a recording)."""
    if not os.environ.get(SUITE_VAR):
        raise KeyError(f"{SUITE_VAR} is not set: not a recording")
    suite = json.loads((Path(os.environ[SUITE_VAR]) / SUITE).read_text())
    spec = load_spec(Path(suite["target"]), Path(suite["spec"]) if suite["spec"] else None)
    return suite, spec, target_cases(spec, Path(suite["root"]))


try:
    _, _SPEC, _CASES = _setup()
    CASE_IDS, COUNTED = [case.id for case in _CASES], _SPEC.count_instructions
except (OSError, ValueError, KeyError):  # imported outside a recording (asv check, a test): no cases
    CASE_IDS, COUNTED = [], False


def bin_dir() -> Path:
    """The commands of the environment asv runs this suite in: the target's built commit."""
    return Path(sys.executable).parent


def renders() -> dict:
    """Every case's outcome at this commit (:func:`~detsim.track.target.outcomes.measure_cases`: rendered
    twice, counted where the spec asks), or, in a recording whose cases a Dask task measured, that
    task's records (the file :data:`~detsim.track.target.project.MEASURED_VAR` names); written to the
    outcomes file either way."""
    suite, spec, cases = _setup()
    measured = os.environ.get(MEASURED_VAR)
    if measured:
        out = json.loads(Path(measured).read_text())["cases"]
    else:
        out = measure_cases(spec, cases, bin_dir(), Project(Path(os.environ[SUITE_VAR])).count_work)
    commit = os.environ.get(COMMIT_VAR)
    if commit:
        folder = Path(suite["outcomes"])
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{commit}.json.tmp"
        tmp.write_text(json.dumps({"commit": commit, "cases": out}, indent=1))
        tmp.replace(folder / f"{commit}.json")
    return out


# asv's limit on setup_cache (else the classes' 3600 s): counted renders of a port's cases may take longer; the
# recording's limit on one commit's asv run bounds it
renders.timeout = ASV_TIMEOUT_S


def _image(cache: dict, case: str) -> dict:
    record = cache.get(case)
    if record is None:
        raise RuntimeError(f"{case}: not rendered")
    if Status(record["status"]) is not Status.OK:
        raise Skip(f"{case}: {record['status']}")
    return record


class _PerCase:
    """What every benchmark class of the suite shares (asv skips a class whose name starts with ``_``)."""

    params = (CASE_IDS,)
    param_names = ["case"]
    version = VERSION
    timeout = 3600
    setup_cache = staticmethod(renders)  # one setup_cache for the suite: asv runs it once per commit


class Case(_PerCase):
    """Per golden case: what its image came to."""

    def track_parity_one_minus_r(self, cache, case):
        record = cache.get(case) or {}
        if Status(record.get("status", Status.NOT_RUN)) is not Status.OK:  # the case failed, and says how
            tail = record.get("stderr_tail") or [""]
            raise RuntimeError(f"{case}: {record.get('status', 'not rendered')}: {record.get('detail', '')} {tail[-1]}")
        r = record["parity"]["r"]
        if r is None:
            raise RuntimeError(f"{case}: Pearson r undefined")
        return round(1.0 - r, PARITY_DECIMALS)

    track_parity_one_minus_r.unit = "1 - r"
    track_parity_one_minus_r.pretty_name = "parity 1 - r"

    def track_fingerprint(self, cache, case):
        return fingerprint(_image(cache, case)["sha256"])

    track_fingerprint.unit = "image fingerprint"

    def track_max_relative_error(self, cache, case):
        value = _image(cache, case)["parity"].get("max_rel")
        if value is None:
            raise Skip(f"{case}: max relative error undefined (non-finite pixels)")
        return value

    track_max_relative_error.unit = "|a - b| / max(|a|, |b|)"

    def track_sum_ratio(self, cache, case):
        value = _image(cache, case)["parity"].get("sum_ratio")
        if value is None:
            raise Skip(f"{case}: sum ratio undefined")
        return value

    track_sum_ratio.unit = "sum / reference sum"

    def track_peak_memory(self, cache, case):
        value = _image(cache, case).get("peak_mb")
        if value is None:
            raise Skip(f"{case}: no peak memory reported")
        return value

    track_peak_memory.unit = "MB"


def instructions(cache: dict, case: str) -> int:
    """The case's counted instructions: skipped where valgrind is missing, failed where the count failed."""
    record = _image(cache, case)
    if record.get("instructions") is None:
        reason = not_counted_reason()
        if reason:
            raise Skip(f"{case}: not counted: {reason}")
        raise RuntimeError(f"{case}: {record.get('not_counted') or 'not counted'}")
    return record["instructions"]


class Cost(_PerCase):
    """Per case: the instructions of one whole process of the target's command, counted by callgrind."""

    def track_instructions(self, cache, case):
        return instructions(cache, case)

    track_instructions.unit = COST_UNIT
    track_instructions.pretty_name = "instructions of one render (callgrind, whole process)"


if not COUNTED:  # the spec leaves counts off: no benchmark, rather than one skipped at every commit
    del Cost


class Reproducibility(_PerCase):
    """Whether a second process reproduces the first's image, bit for bit (as detsim's process axis)."""

    params = (["process"], CASE_IDS)
    param_names = ["axis", "case"]
    pretty_name = "runs of one input differ (a second process)"

    def track_runs_differ(self, cache, axis, case):
        return float(len(set(_image(cache, case)["hashes"])) > 1)

    track_runs_differ.unit = "runs that differ"


class Timing(_PerCase):
    """One more whole process of the target's command per case, timed by asv (wall seconds)."""

    number, repeat, rounds, min_run_count, warmup_time = 1, 1, 1, 1, 0.0

    def setup(self, cache, case):
        _image(cache, case)  # a case that failed is not timed
        _, self.spec, cases = _setup()
        self.case = next(c for c in cases if c.id == case)

    def time_render(self, cache, case):
        render_case(self.spec, self.case, bin_dir(), runs=1)
