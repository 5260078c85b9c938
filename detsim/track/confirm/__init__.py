"""Confirming a timing step before it becomes a verdict: re-measure both commits, interleaved, and test.

A step in a noisy history (:mod:`detsim.track.verdict.detection`) is only a *suspect*. Here it is
re-measured: the last good and the first bad commit's packages (:mod:`detsim.track.base.commits`) run the
flagged benchmark in fresh processes, alternately A B A B ... (:mod:`.remeasure`, each process forked by
:mod:`.fork_server`), and the two sets of per-process figures are tested (:mod:`.decision`): **confirmed**
when the later commit is slower by more than the benchmark's threshold and a one-sided rank test says
so (p < 0.01), **noise** when the re-measurement does not show it. :mod:`.apply` turns a verdict's
suspects into confirmed regressions or noise, naming the evidence that decided.
"""
