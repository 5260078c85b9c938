"""The one timed render: a call without autograd, waited for on its device, in wall and CPU seconds; the warm-up
untimed; repeats stop at their count or their box; a list of times read off its median."""

from __future__ import annotations

import os
import time

import torch

from detsim.track.base.timing import cpu_seconds, summary, timed, timed_calls


def test_a_timed_call_returns_its_answer_with_wall_and_cpu_seconds_and_no_autograd():
    x = torch.ones(3, requires_grad=True)
    done = timed(torch, lambda: (x * 2, sum(i * i for i in range(200000))), "cpu")
    assert not done.result[0].requires_grad  # no graph was built
    assert done.wall_s > 0 and done.cpu_s > 0


def test_cpu_seconds_count_the_children_this_process_reaped():
    before, own = cpu_seconds(), time.process_time()
    pid = os.fork()
    if pid == 0:  # a worker: half a second of CPU, then gone
        end = time.process_time() + 0.5
        while time.process_time() < end:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
    assert cpu_seconds() - before >= 0.45 + (time.process_time() - own) - 0.01


def test_the_warm_up_is_untimed_and_repeats_stop_at_their_count_or_when_the_next_would_pass_the_box():
    now, calls = [0.0], []

    def call():
        now[0] += 1.0
        calls.append(now[0])
        return now[0]

    answers = timed_calls(torch, call, "cpu", 4, warm_up=lambda: calls.append("warm"), clock=lambda: now[0])
    assert calls[0] == "warm" and [t.result for t in answers] == [1.0, 2.0, 3.0, 4.0]
    now[0] = 0.0
    assert [t.result for t in timed_calls(torch, call, "cpu", 10, within_s=3.5, clock=lambda: now[0])] == [1.0, 2.0,
                                                                                                          3.0]
    assert len(timed_calls(torch, call, "cpu", 10, within_s=0, clock=lambda: now[0])) == 1  # one call at least


def test_a_timing_is_read_off_its_median():
    assert summary([3.0, 1.0, 2.0], 100) == {"calls": 3, "best_s": 1.0, "median_s": 2.0, "pixel_steps_per_s": 50.0}
