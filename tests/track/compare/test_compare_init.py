"""compare.spelled: the words of the re-runnable command lines of determinism, diverge and evidence."""

from __future__ import annotations

from pathlib import Path

from detsim.track.compare import spelled


def test_options_are_spelled_in_the_order_given_and_absent_ones_are_left_out():
    words = spelled(("--case", "a01"), ("--chunk-pixels", None), ("--threads", [1, 2]), ("--layers", []),
                    ("--processes", True), ("--isolate", False), ("--max-items", 0), ("--out", Path("r/x")),
                    *(("--grad", g) for g in ("a", "b")))
    assert words == ["--case", "a01", "--threads", "1", "2", "--processes", "--max-items", "0", "--out", "r/x",
                     "--grad", "a", "--grad", "b"]


def test_an_empty_text_is_still_a_value():
    assert spelled(("--nanobragg", "")) == ["--nanobragg", ""]
