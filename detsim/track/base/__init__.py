"""The shared base of the tracking suite: every fact the suite's areas agree on, defined once.

It imports only the standard library, numpy and itself, relatively (``tests/track/test_track_layout.py``
checks it): the asv suite loads it from the working tree under a name of its own (``benchmarks/common.py``),
beside whichever commit's ``detsim`` asv installed. So a value torch or detsim's core provides is passed in,
and what must run them sits in :mod:`detsim.track.runtime`. Nothing here prints or parses command lines.
"""
