"""The CI gate over pytest-benchmark runs: result files (:mod:`.results`) and the rules (:mod:`.checks`)."""
