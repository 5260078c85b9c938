"""The views of one judgement: ``detsim-track publish`` and ``detsim-track explain`` (docs/tracking.md,
docs/explain.md).

Inputs: the stored verdict (``verdict.json``, judged once by the judge; nothing here judges again), asv's
published folder (``asv publish``: the graphs the page links to), and for a target the departure records
``detsim-track record`` stores. Outputs: ``status.html`` beside asv's page (:mod:`.page`), asv's folder made
the verdict's (its Regressions tab, the status link, offline copies, swapped in whole: :mod:`.asvpage`), and
explain's answers and bundle (:mod:`.explain`, measuring two commits' cores in :mod:`.sides` and
:mod:`.profile`), and ``verdict.md`` for CI summaries (:mod:`.markdown`, written by ``detsim-track
regressions``). The image states per commit that the page draws are the judge's
(:mod:`detsim.track.judge.fingerprints`).
"""
