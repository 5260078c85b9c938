"""Where a planted line is: the divergence tests check that the finder names it exactly."""

from __future__ import annotations

from pathlib import Path


def marked_line(path: Path, function: str, marker: str) -> str:
    """``file:line in function`` of the line carrying ``# marker`` inside ``function``."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {function}("))
    number = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith(f"# {marker}")) + 1
    return f"{path.name}:{number} in {function}"
