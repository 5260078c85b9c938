"""Which quantity of a per-pixel trace differs first?

Trace logs (any program's ``<PREFIX>: name [key=value ...] values...`` lines, or ``--trace-json``
files) are read into pixel blocks (:mod:`.tracelog`), aligned and compared within a tolerance
(:mod:`.alignment`); ``detsim-track trace-diff`` prints the first difference.
"""
