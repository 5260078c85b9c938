"""Judging: what regressed, where, since which commit (docs/tracking.md, "The verdict"; docs/bench-gate.md).

Inputs: the history a project recorded (``asv.conf.json``, ``results/asv/<machine>/``, ``results/hashes/``,
``results/baselines/``, read by :mod:`.results_files` into the one frame of :mod:`.history`, and from it the judge's
series, :mod:`.series`; what each benchmark says about itself: :mod:`.benchmarks`, its family a
:class:`~.family.Family`; the commits' subjects and first commits to judge: :mod:`.commits`), or a pytest-benchmark run and its stored baseline file (:mod:`.bench`;
where that file and the golden hashes hold the same render, they must agree: :mod:`.stored_baselines`).
Output: one typed judgement (:class:`~.verdict.Judgement` of :class:`~.verdict.Report`\\ s of
:class:`~.finding.Finding`\\ s; ``verdict.json`` is its serialised form, which every view reads), made by
:mod:`.analysis` (the skipped series' reasons: :mod:`.skips`), judged by one thresholds table (:mod:`.thresholds`)
and the rules of :mod:`.detection`, its timing suspects confirmed by re-measuring (:mod:`.confirm`), each golden
case's image state per commit (same, changed, not reproducible, not comparable: :mod:`.fingerprints`), and printed
in one set of words (:mod:`.text`; one writer of a finding's line for every view: ``text.finding_line``).
"""
