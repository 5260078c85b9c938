"""detsim.track.measure.cost: counting a region's instructions in a fresh valgrind process (what a count sees,
keeps and leaves), and the counted workloads (the code a count runs builds the configuration the timed
workloads use).

Each real count spends about 10 s importing torch under valgrind, so the default run counts once without
the harness (:func:`test_valgrind_counts_what_runs_between_the_hooks_and_nothing_before`: valgrind, the
hooks and the file's total, in ~2 s); the tests of what a count keeps and leaves run there against a
stand-in for valgrind (:func:`counter`), and against valgrind itself in the slow job.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import torch

import detsim
from detsim.commandline.to_config import config_from_argv
from detsim.track.base.callgrind import CountError, HOOKS_MODULE, command, not_measured_reason, parse_total
from detsim.track.base.golden import find_case
from detsim.track.base.workloads import WORKLOADS
from detsim.track.measure.cost import CostSpec, count


CAN_COUNT = not_measured_reason() is None
needs_valgrind = pytest.mark.skipif(not CAN_COUNT, reason=str(not_measured_reason()))

STAND_IN_TOTAL = 1234  # the total the stand-in's callgrind file holds
# valgrind's command line as counting.count builds it: its own --options, then the program; the stand-in
# runs the program natively (callgrind's start and stop requests do nothing outside valgrind), writes a
# callgrind file wherever it is told to, and exits as the program did, as valgrind does
STAND_IN = f"""#!{sys.executable}
import subprocess
import sys

args = sys.argv[1:]
options = []
while args and args[0].startswith("--"):
    options.append(args.pop(0))
out = next(o.split("=", 1)[1] for o in options if o.startswith("--callgrind-out-file="))
code = subprocess.run(args).returncode
with open(out, "w") as handle:
    handle.write("events: Ir\\ntotals: {STAND_IN_TOTAL}\\n")
sys.exit(code)
"""


@pytest.fixture(params=["stand-in", pytest.param("valgrind", marks=[pytest.mark.slow, needs_valgrind])])
def counter(request, tmp_path_factory, monkeypatch):
    """What counts: a stand-in for valgrind first on ``PATH`` (the default run), or valgrind (slow)."""
    if request.param == "stand-in":
        folder = tmp_path_factory.mktemp("stand-in")
        (folder / "valgrind").write_text(STAND_IN)
        (folder / "valgrind").chmod(0o755)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
        assert shutil.which("valgrind") == str(folder / "valgrind")
    return request.param


def test_a_count_without_valgrind_is_a_count_error_naming_it(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(CountError, match="valgrind"):
        count("x = 1", "x")


@needs_valgrind
def test_valgrind_counts_what_runs_between_the_hooks_and_nothing_before(tmp_path):
    """valgrind itself with the hooks a count uses (the harness, which imports torch, is the slow twin's):
    some hundred instructions per element of the region, not the interpreter's start (far more)."""
    package, module = HOOKS_MODULE.rsplit(".", 1)
    script = "\n".join(["import math", f"from {package} import {module} as _hooks",
                        "_hooks.callgrind_start_instrumentation()", "sum(math.sqrt(i) for i in range(1000))",
                        "_hooks.callgrind_stop_instrumentation()"])
    out = tmp_path / "callgrind.out"
    subprocess.run(command(script, out), check=True, capture_output=True, cwd=tmp_path)
    assert 100 * 1000 < parse_total(out.read_text()) < 10_000 * 1000


@pytest.mark.slow  # quick twin: test_valgrind_counts_what_runs_between_the_hooks_and_nothing_before
@needs_valgrind
def test_a_small_region_is_counted_without_the_start_up_and_its_file_is_kept(tmp_path):
    """The region's own work is counted (some hundred instructions per element), not the start-up nor the
    imports (far more); its file is kept."""
    elements = 1000
    small = count("import math", f"sum(math.sqrt(i) for i in range({elements}))", out_dir=tmp_path)
    assert 100 * elements < small.instructions < 10_000 * elements
    assert small.callgrind_file.is_file() and small.callgrind_file.parent == tmp_path
    assert parse_total(small.callgrind_file.read_text()) == small.instructions


@pytest.mark.slow  # quick twin: test_a_small_region_is_counted_without_the_start_up_and_its_file_is_kept
@needs_valgrind
def test_a_count_sees_the_region_and_keeps_the_callgrind_file(tmp_path):
    small = count("import math", "sum(math.sqrt(i) for i in range(1000))", out_dir=tmp_path)
    large = count("import math", "sum(math.sqrt(i) for i in range(100000))", out_dir=tmp_path)
    assert 0 < small.instructions < large.instructions
    assert 50 < large.instructions / small.instructions < 200  # the region, not the start-up
    assert large.callgrind_file.is_file() and large.callgrind_file.parent == tmp_path


@pytest.mark.slow  # quick twin: test_the_region_sees_what_setup_defined in tests/track/base/test_base_callgrind.py
@needs_valgrind
def test_the_region_sees_setup_names_the_harness_also_uses(tmp_path):
    small = count("_x = torch.ones(1 << 10)", "torch.sin(_x).sum()", out_dir=tmp_path, keep=False)
    large = count("_x = torch.ones(1 << 18)", "torch.sin(_x).sum()", out_dir=tmp_path, keep=False)
    assert large.instructions > 20 * small.instructions  # the harness's own names never shadow setup's


def test_a_failing_region_is_a_count_error_and_leaves_no_file(tmp_path, counter):
    with pytest.raises(CountError, match="exited 1"):
        count("x = 1", "1 / 0", out_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_count_that_keeps_nothing_leaves_nothing_and_runs_outside_the_checkout(tmp_path, monkeypatch, counter):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "detsim").mkdir()  # a checkout here would shadow the installed detsim from the working directory
    (tmp_path / "detsim" / "__init__.py").write_text("raise ImportError('the checkout, not the installed package')\n")
    made = count("import detsim", "detsim.__name__", keep=False)
    assert made.instructions > 0 and made.callgrind_file is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["detsim"]


# ---- the counted workloads

def _config_of(spec: CostSpec):
    namespace = {"torch": torch}
    exec(spec.setup(), namespace)  # noqa: S102 - the code a count runs, without valgrind
    return namespace


def test_a_reference_workload_is_the_resized_timed_one():
    assert _config_of(CostSpec("P2@32"))["_config"] == WORKLOADS["P2"].resized(32).config(config_from_argv)


def test_a_golden_case_is_its_own_configuration():
    ours = detsim.simulate(_config_of(CostSpec("g01_hkl_nointerp"))["_config"], dtype=torch.float64)
    timed = detsim.simulate(find_case("g01_hkl_nointerp").config(config_from_argv), dtype=torch.float64)
    assert torch.equal(ours, timed)  # configurations hold arrays: equal images say they are the same


def test_the_region_renders_in_the_spec_dtype():
    namespace = _config_of(CostSpec("P1@16", "float32"))
    namespace["detsim"] = detsim
    image = eval(CostSpec("P1@16", "float32").region(), namespace)  # noqa: S307
    assert image.dtype == torch.float32 and tuple(image.shape) == (16, 16)


def test_an_unknown_dtype_is_refused():
    with pytest.raises(ValueError, match="dtype"):
        CostSpec("P1@64", "float16").setup()
