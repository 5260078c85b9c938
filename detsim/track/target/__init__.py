"""Tracking a target: any repository with a nanoBragg-compatible command, detsim itself by default.

Inputs: the target's ``detsim-target.toml`` and its cases (:mod:`.spec`), its git history, the golden cases.
Outputs: per commit and case a typed outcome (:mod:`.render`: an image judged against nanoBragg.c's, or a
failure of its own kind); a window of commits recorded with asv into an asv project of its own, which
``detsim-track regressions`` and ``publish`` judge and draw as detsim's own history (:mod:`.recording`, asv's
suite :mod:`.asvsuite.bench_target`); the first commit where a criterion turns (:mod:`.hunting`,
:mod:`.criteria`); and where an image departs from its reference (:mod:`.departure`, stored per commit and
case). How to point the suite at a port: docs/targets.md.
"""
