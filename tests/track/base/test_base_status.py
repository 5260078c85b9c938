from detsim.track.base.exitcodes import ExitCode, worst
from detsim.track.base.status import Status


def test_an_ending_reads_back_from_its_recorded_value_including_the_words_older_records_used():
    assert all(Status(s.value) is s for s in Status)
    assert Status("image") is Status.OK and Status("error") is Status.CRASHED


def test_only_a_problem_found_is_a_regression_and_an_unfinished_run_is_unmeasured():
    assert Status.FAILED.exit_code is ExitCode.REGRESSED
    assert {Status.OK.exit_code, Status.SKIPPED.exit_code} == {ExitCode.OK}
    unfinished = (Status.CRASHED, Status.TIMED_OUT, Status.NOT_RUN, Status.NOTHING_COLLECTED, Status.NO_IMAGE,
                  Status.WRONG_SIZE)
    assert {s.exit_code for s in unfinished} == {ExitCode.UNMEASURED}
    assert worst(*(s.exit_code for s in Status)) is ExitCode.UNMEASURED


def test_a_skip_is_not_a_failure_and_prints_as_its_word():
    assert not Status.SKIPPED.is_failure and Status.NO_IMAGE.is_failure
    assert str(Status.TIMED_OUT) == f"{Status.TIMED_OUT}" == "timed out"
