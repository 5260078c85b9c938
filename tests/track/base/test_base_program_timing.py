"""detsim.track.base.program_timing: a whole program timed run by run (wall and CPU seconds, its variables, its
output removed before each run), stopped at a failure, past its time limit or after a run long enough; and the
timer in a fresh process, its outcome in one line."""

from __future__ import annotations

import sys

from detsim.track.base.program_timing import ProcessJob, process_job, timed_runs


def _program(tmp_path, body: str) -> list[str]:
    script = tmp_path / "program.py"
    script.write_text(body)
    return [sys.executable, str(script)]


def test_each_run_is_timed_in_wall_and_cpu_seconds_with_the_variables_given(tmp_path):
    out = tmp_path / "out.txt"
    argv = _program(tmp_path, "import os, sys\n"
                              "open(sys.argv[1], 'a').write(os.environ['OMP_NUM_THREADS'])\n"
                              "sum(i * i for i in range(200000))\n")
    answer = process_job(ProcessJob((*argv, str(out)), 3, {"OMP_NUM_THREADS": "7"}, str(tmp_path), str(out)))
    runs = answer["runs"]
    assert len(runs) == 3 and all(r["returncode"] == 0 and not r["timed_out"] for r in runs)
    assert all(r["wall_s"] > 0 and r["cpu_s"] > 0 for r in runs)
    assert out.read_text() == "7"  # removed before each run: what is left is the last run's


def test_a_failing_run_ends_the_repeats_with_its_last_line(tmp_path):
    argv = _program(tmp_path, "import sys\nprint('noise\\nthe reason', file=sys.stderr)\nsys.exit(5)\n")
    runs = process_job(ProcessJob(tuple(argv), 3))["runs"]
    assert len(runs) == 1 and runs[0]["returncode"] == 5 and runs[0]["stderr_tail"] == "the reason"


def test_a_run_past_its_limit_is_killed_and_ends_the_repeats(tmp_path):
    argv = _program(tmp_path, "import time\ntime.sleep(30)\n")
    [run] = process_job(ProcessJob(tuple(argv), 3, limit_s=0.5))["runs"]
    assert run["timed_out"] and run["returncode"] != 0 and run["wall_s"] < 10


def test_a_run_long_enough_is_the_last(tmp_path):
    argv = _program(tmp_path, "import time\ntime.sleep(0.3)\n")
    assert len(process_job(ProcessJob(tuple(argv), 3, enough_s=0.2))["runs"]) == 1
    assert len(process_job(ProcessJob(tuple(argv), 2, enough_s=5.0))["runs"]) == 2


def test_the_timer_in_its_own_process_says_what_failed_in_one_line(tmp_path):
    ok = timed_runs(ProcessJob((sys.executable, "-c", "pass"), 2, cwd=str(tmp_path)))
    assert ok.error == "" and len(ok.runs) == 2 and not ok.timed_out
    failed = timed_runs(ProcessJob((sys.executable, "-c", "import sys; sys.exit('the reason')"), 2))
    assert failed.error == "exited 1: the reason" and len(failed.runs) == 1
    slow = timed_runs(ProcessJob((sys.executable, "-c", "import time; time.sleep(30)"), 2, limit_s=0.5))
    assert slow.timed_out and slow.error == "ran past 0.5 s"
    boxed = timed_runs(ProcessJob((sys.executable, "-c", "import time; time.sleep(30)"), 1), box_s=1)
    assert boxed.timed_out and boxed.error == "the timer ran past 1 s"
