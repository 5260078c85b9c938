"""Judging: what regressed, where, since which commit (docs/tracking.md, "The verdict"; docs/bench-gate.md).

Inputs: the asv history a project recorded (``asv.conf.json``, ``results/asv/<machine>/``, ``results/hashes/``,
``results/baselines/``: :mod:`.history`), or a pytest-benchmark run and its stored baseline file (:mod:`.bench`;
where that file and the golden hashes hold the same render, they must agree: :mod:`.stored_baselines`).
Output: one typed judgement (:class:`~.verdict.Judgement` of :class:`~.verdict.Report`\\ s of
:class:`~.finding.Finding`\\ s; ``verdict.json`` is its serialised form, which every view reads), made by
:mod:`.analysis` (the skipped series' reasons: :mod:`.skips`), judged by one thresholds table (:mod:`.thresholds`)
and the rules of :mod:`.detection`, its timing suspects confirmed by re-measuring (:mod:`.confirm`), each golden
case's image state per commit (same, changed, not reproducible, not comparable: :mod:`.fingerprints`), and printed
in one set of words (:mod:`.text`).
"""
