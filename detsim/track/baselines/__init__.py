"""The renders that make the stored golden image hashes, hashed as the asv tracks hash them
(:mod:`.golden_hashes`); the files, one per machine class, are :mod:`detsim.track.base.baseline_file`'s.
"""
