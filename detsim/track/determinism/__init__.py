"""Is a computation deterministic, and across what?

``detsim-track determinism`` runs targets (:mod:`detsim.track.runtime.targets`) over repeats x thread
counts x dtypes x devices x execution modes (:mod:`.runs`, in this process or one fresh process per run,
:mod:`.isolated_run`) and compares every run bit for bit with the runs it should agree with
(:mod:`.matrix`: hashes, comparisons, verdict, rendering and the evidence files).
"""
