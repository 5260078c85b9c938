"""detsim.host.signals: SIGTERM raised as an interrupt inside the block, the previous handler back after it."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from detsim.host.signals import Terminated, terminate_as_interrupt


def test_sigterm_inside_the_block_unwinds_like_ctrl_c_and_the_handler_is_restored():
    before = signal.getsignal(signal.SIGTERM)
    cleaned = []
    with pytest.raises(Terminated) as raised:
        with terminate_as_interrupt():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)  # never slept through: the handler raises first
            finally:
                cleaned.append(True)
    assert isinstance(raised.value, KeyboardInterrupt) and str(raised.value) == "signal SIGTERM"
    assert cleaned == [True] and signal.getsignal(signal.SIGTERM) is before


def test_outside_the_main_thread_signals_stay_as_they_are():
    seen = []

    def elsewhere():
        with terminate_as_interrupt():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert seen == [before]
