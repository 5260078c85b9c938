"""Confirming a timing suspect before it becomes a verdict (docs/tracking.md, "How each family is judged"):
:mod:`.apply` re-measures a report's suspects, :mod:`.remeasure` runs both commits interleaved in processes
forked by :mod:`.fork_server`, and :mod:`.decision` tests the paired rounds."""
