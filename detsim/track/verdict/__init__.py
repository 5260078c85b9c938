"""Judging the recorded history: what regressed, where, since which commit (docs/tracking.md, "The verdict")."""
