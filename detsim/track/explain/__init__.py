"""Why a flagged regression happened, across commits: ``detsim-track explain``.

Each side of a comparison is one commit's ``detsim`` core with this checkout's tracking suite laid over
it (:mod:`.sides`), measured in a fresh interpreter (:mod:`.side_job`): a cost regression becomes a
differential callgrind profile and aten-op diff (:mod:`.profile`, :mod:`.opcount`), a parity change the
first traced quantity that differs (:mod:`.parity_trace`), an image-hash change the first op whose output
differs although its inputs agree (:mod:`.hashes`), and commits between the last good and the first bad
recorded ones are bisected (:mod:`.bisection`). :mod:`.bundle` writes the evidence.
"""
