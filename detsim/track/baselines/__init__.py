"""The stored golden image hashes, one file per machine class (:mod:`.baseline_file`), and the renders
that make them, hashed as the asv tracks hash them (:mod:`.golden_hashes`).
"""
