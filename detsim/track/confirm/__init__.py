"""Confirming a timing suspect by re-measuring both commits interleaved, before it becomes a verdict."""
