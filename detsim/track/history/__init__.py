"""What asv recorded, read: its config (:mod:`.jsonc`), the result files per machine (:mod:`.asvresults`),
commits in order (:mod:`.ordering`) and one series per benchmark and parameters (:mod:`.series`).
"""
