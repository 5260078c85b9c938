"""detsim.track.speed.process_job: the timer of a whole program."""

from __future__ import annotations

import sys

from detsim.track.speed.process_job import process_job


def _program(tmp_path, body: str) -> list[str]:
    script = tmp_path / "program.py"
    script.write_text(body)
    return [sys.executable, str(script)]


def test_each_run_is_timed_in_wall_and_cpu_seconds_with_the_variables_given(tmp_path):
    out = tmp_path / "out.txt"
    argv = _program(tmp_path, "import os, sys\n"
                              "open(sys.argv[1], 'a').write(os.environ['OMP_NUM_THREADS'])\n"
                              "sum(i * i for i in range(200000))\n")
    answer = process_job({"argv": [*argv, str(out)], "env": {"OMP_NUM_THREADS": "7"}, "cwd": str(tmp_path),
                          "repeats": 3, "output": str(out)})
    runs = answer["runs"]
    assert len(runs) == 3 and all(r["returncode"] == 0 for r in runs)
    assert all(r["wall_s"] > 0 and r["cpu_s"] > 0 for r in runs)
    assert out.read_text() == "7"  # removed before each run: what is left is the last run's


def test_a_failing_run_ends_the_repeats_with_its_last_line(tmp_path):
    argv = _program(tmp_path, "import sys\nprint('noise\\nthe reason', file=sys.stderr)\nsys.exit(5)\n")
    runs = process_job({"argv": argv, "repeats": 3})["runs"]
    assert len(runs) == 1 and runs[0]["returncode"] == 5 and runs[0]["stderr_tail"] == "the reason"
