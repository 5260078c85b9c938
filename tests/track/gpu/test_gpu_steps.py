"""Steps: the budget, time boxes that kill a hung child, and the exit code of each outcome."""

import sys
import time
from dataclasses import dataclass

from detsim.track.base.exitcodes import ExitCode
from detsim.track.gpu.steps import MIN_STEP_S, Budget, StepJob, run_command, run_job_step, tail
from detsim.track.base.status import Status


@dataclass(frozen=True)
class XJob(StepJob):
    x: int


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_step_gets_the_smaller_of_its_box_and_the_budget_left_and_none_when_little_is_left():
    clock = Clock()
    budget = Budget(100, clock)
    assert budget.box(30) == 30
    clock.now = 80
    assert budget.box(30) == 20
    clock.now = 100 - MIN_STEP_S + 0.1
    assert budget.box(30) is None


def test_a_hung_command_is_killed_at_its_box_and_recorded_as_timed_out(tmp_path):
    started = time.monotonic()
    done, outcome, seconds = run_command("hang", [sys.executable, "-c", "import time; time.sleep(60)"],
                                         budget=Budget(100), box_s=0.3, root=tmp_path)
    assert done is None and outcome.status is Status.TIMED_OUT and 0.3 <= seconds < 10
    assert time.monotonic() - started < 10


def test_a_step_is_not_started_once_the_budget_is_spent(tmp_path):
    clock = Clock()
    budget = Budget(10, clock)
    clock.now = 9
    done, outcome, _ = run_command("late", [sys.executable, "-c", "pass"], budget=budget, box_s=5, root=tmp_path)
    assert done is None and outcome.status is Status.NOT_RUN


def test_a_job_that_raises_is_an_error_and_one_that_answers_is_judged(tmp_path):
    failed = run_job_step("bad", "json:loads", StepJob(), lambda d: (Status.OK, ""), budget=Budget(60), box_s=30,
                          root=tmp_path)
    assert failed.status is Status.CRASHED and "TypeError" in failed.reason
    answered = run_job_step("good", "copy:deepcopy", XJob(1), lambda d: (Status.FAILED, f"x={d['x']}"),
                            budget=Budget(60), box_s=30, root=tmp_path)
    assert answered.status is Status.FAILED and answered.reason == "x=1"
    assert answered.data["deadline_s"] < 30  # the job's own soft deadline comes before its box


def test_each_outcome_calls_for_its_exit_code():
    assert Status.OK.exit_code == Status.SKIPPED.exit_code == ExitCode.OK
    assert Status.FAILED.exit_code == ExitCode.REGRESSED
    assert {Status.CRASHED.exit_code, Status.TIMED_OUT.exit_code, Status.NOT_RUN.exit_code} == \
        {ExitCode.UNMEASURED}


def test_tail_keeps_the_last_non_blank_lines():
    assert tail("a\n\nb\nc\n", 2) == ["b", "c"]


def test_what_a_killed_job_kept_is_its_steps_data(tmp_path):
    (tmp_path / "hangs.py").write_text("import time\nfrom detsim.track.gpu.steps import StepJob, keep_partial\n"
                                       "def job(spec: StepJob):\n    keep_partial(spec, {'measured': 1})\n"
                                       "    time.sleep(60)\n")
    result = run_job_step("hangs", "hangs:job", StepJob(), lambda d: (Status.OK, ""), budget=Budget(60), box_s=3,
                          root=tmp_path)
    assert result.status is Status.TIMED_OUT and result.data == {"measured": 1}
