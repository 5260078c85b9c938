"""The verdict's families: what a recorded benchmark measures, which decides how it is judged (docs/tracking.md,
"How each family is judged"; its threshold: :mod:`.thresholds`). :func:`.benchmarks.family_of` names a benchmark's.

Each member's value is the word the verdict, ``verdict.json`` and the history's table have always used, so a
member equals its word (``Family.IMAGE_CHANGED == "determinism"``), and the words read back as members
(``Family("determinism")``).
"""

from __future__ import annotations

import enum


class Family(str, enum.Enum):
    def __str__(self) -> str:  # as enum.StrEnum (Python 3.11+) does; the project supports 3.10
        return self.value

    __hash__ = str.__hash__  # a member hashes as its word, so a map keyed by members finds the word too

    TIMING = "timing"  # seconds of a run, lower is better; a step is a suspect until re-measured
    THROUGHPUT = "throughput"  # work per second, higher is better (judged on its inverse)
    PEAK_MEMORY = "memory"  # peak bytes of a run
    COUNTED_COST = "cost"  # exact counts: instructions by callgrind, device launches per render, the fused
    # kernel's compiled instructions and registers; no rank test
    OTHER_TRACK = "track"  # any other tracked number, lower is better
    PARITY = "parity"  # 1 - r of a golden case against nanoBragg.c's image
    RUNS_DIFFER = "reproducibility"  # 1 where two runs of one input differ in a bit (NONDETERMINISTIC)
    IMAGE_CHANGED = "determinism"  # 1 where a golden image's sha256 differs from the stored baseline (CHANGED)
    CASES_CHANGED = "hash count"  # how many golden images differ from the stored baseline
    IMAGE_FINGERPRINT = "fingerprint"  # the start of a golden image's sha256, compared commit to commit
    MACHINE_REFERENCE = "reference"  # a fixed workload timing the machine itself: never a verdict
    MACHINE_CLASS = "machine class"  # the fingerprint of the machine class the images were rendered on


FAMILY_ORDER = tuple(Family)  # the verdict's order of families
