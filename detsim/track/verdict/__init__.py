"""Judging the recorded history: what regressed, since which commit, with which evidence.

Each series' latest point (:mod:`detsim.track.history`) is judged (:mod:`.detection`, with the statistics
of :mod:`.steps`; without a stored baseline, image fingerprints commit to commit, :mod:`.fingerprint_series`)
into a :class:`~.finding.Finding`; :mod:`.analysis` collects them per machine and across a fleet into
the report and its exit code, and :mod:`.lines` prints it.
"""
