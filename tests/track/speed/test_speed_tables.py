"""detsim.track.speed.tables: the printed table and summary.md."""

from __future__ import annotations

from detsim.track.base.workloads import WORKLOADS
from detsim.track.speed.tables import HEADER, format_table, summary_markdown

MEASURED = {"workload": "P1", "program": "detsim eager", "scope": "render", "threads": 2, "dtype": "float32",
            "wall_s": 1.23456, "cpu_s": 2.4, "rate": 2.5e7, "vs_nanobragg": 3.14159, "vs_nanobragg_cpu": 1.6667,
            "peak_rss_mb": 301.6, "r": 0.999999991, "r_against": "nanoBragg.c"}
REFERENCE = {"workload": "P1", "program": "nanoBragg.c", "scope": "process", "threads": 2, "dtype": "float64",
             "wall_s": 4.0, "cpu_s": 7.9, "rate": 8e6, "peak_rss_mb": None}
FAILED = {"workload": "P2", "program": "detsim compiled", "scope": "process", "threads": 1, "dtype": "float64",
          "error": "RuntimeError: boom"}


def test_table_rows_show_measured_missing_and_failed_runs():
    lines = format_table([REFERENCE, MEASURED, FAILED]).splitlines()
    assert "\n".join(lines[:2]) == HEADER
    assert lines[2] == "| P1 | nanoBragg.c | process | 2 | float64 | 4.000 | 7.900 | – | – | 8e+06 | – | – |"
    assert lines[3] == ("| P1 | detsim eager | render | 2 | float32 | 1.235 | 2.400 | 3.14 | 1.67 | 2.5e+07 | 302 "
                        "| 0.99999999 |")
    assert lines[4] == "| P2 | detsim compiled | process | 1 | float64 | failed: RuntimeError: boom | | | | | | |"
    assert all(line.count("|") == HEADER.splitlines()[0].count("|") for line in lines[2:4])


def test_an_undefined_r_is_a_dash():
    assert format_table([{**MEASURED, "r": None}]).splitlines()[-1].endswith("| 302 | – |")


def test_summary_states_the_conditions_the_table_and_the_command_lines():
    workloads = [WORKLOADS["P1"], WORKLOADS["P2"].resized(256)]
    env = {"cpu": "Some CPU", "commit": "0123456789abcdef0123", "dirty": True}
    env = {**env, "cpu_count": 2, "cpu_capability": "AVX512", "cpu_flags": "avx2 fma avx512f"}
    text = summary_markdown([MEASURED], "TABLE", workloads, threads=[1, 2], device="cpu", env=env)
    assert text.startswith("# detsim speed\n") and text.endswith("\n") and "\nTABLE\n" in text
    assert ("CPU: Some CPU, 2 logical CPUs; torch kernels: AVX512; vector flags: avx2 fma avx512f; threads: 1, 2; "
            "device: cpu; detsim commit 0123456789ab (dirty).") in text
    assert "wall s: wall-clock seconds" in text and "CPU s: user + system seconds of all threads" in text
    assert "warm-up on a 64² detector" in text and "r: Pearson r of the image against nanoBragg.c." in text
    assert f"* P1 (1024², 1 step per pixel): `{' '.join(WORKLOADS['P1'].argv())}`" in text
    assert "* P2@256 (256², 200 steps per pixel): `" in text


def test_summary_without_a_reference_says_so():
    text = summary_markdown([REFERENCE], "T", [], threads=[1], device="cuda", env={})
    assert "against nothing (no reference run)" in text and "detsim commit unknown." in text
