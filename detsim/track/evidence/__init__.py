"""An evidence bundle of a pytest run, and what changed since the previous one (``detsim-track evidence``;
docs/evidence.md).

Inputs: a pytest selection, the devices to run it on, the area's earlier bundles. The steps, in the order of
docs/evidence.md, are :mod:`.bundle`'s: pytest processes and what they leave behind (:mod:`.pytest_runs`, with
:mod:`.plugin` adding ``--device`` where no conftest does), test times judged against a noisy history and
re-timed (:mod:`.durations`), the comparison with the previous bundle (:mod:`.previous`, through the one
comparer :func:`detsim.track.compare.outputs.compare_outputs`), ``sha256.txt`` and checking a bundle against it
(:mod:`.manifest`), ``summary.md`` and the printed report (:mod:`.summary`). Outputs: the bundle folder and
``results.json``, as the frozen dataclasses of :mod:`.outcomes`.
"""
