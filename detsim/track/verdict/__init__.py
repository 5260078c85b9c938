"""Judging the recorded history (docs/tracking.md, "The verdict"): :mod:`.detection` per series,
:mod:`.analysis` per machine and fleet, :mod:`.lines` (in full) and :mod:`.screen` (one screen) to print it."""
