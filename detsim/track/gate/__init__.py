"""The CI gate over pytest-benchmark runs: result files (``results``), the rules (``checks``) and the
``detsim-track bench-gate`` command (``cmd_bench_gate``)."""
