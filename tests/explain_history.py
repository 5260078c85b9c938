"""A throwaway git history built from the project, with planted changes (for the explain slow tests, and for the
tutorial docs/tutorial-why-images-changed.md, which builds its history with this file as a command):

    python tests/explain_history.py DIR

makes DIR a new git repository: the project's committed tree (HEAD) as ``base``, then a changed polarization term
(``physics: planted polarization change``), then a reordered float sum (``geometry: planted reordering of the
position sum``) at HEAD. DIR must not exist; nothing outside it is written.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# planted changes: (file, old text, new text)
EXTRA_WORK = ("detsim/rendering/engine.py", "        return paths.chunk_values(chunk)\n",
              "        torch.exp(torch.linspace(0.0, 1.0, 400_000, dtype=torch.float64)).sum()  # planted extra work\n"
              "        return paths.chunk_values(chunk)\n")
PHYSICS = ("detsim/model/physics.py", "    factor = 1.0 + cos2t_sq\n", "    factor = 1.0 + 0.9 * cos2t_sq  # planted\n")
REORDER = ("detsim/model/geometry.py",
           "    pos = (fdet[:, None, :, None] * geom.fdet + sdet[:, None, :, None] * geom.sdet\n"
           "           + (layer_offsets_m[:, None] * geom.odet)[None, :, None, :] + geom.pix0_m)\n",
           "    pos = (fdet[:, None, :, None] * geom.fdet + (sdet[:, None, :, None] * geom.sdet + geom.pix0_m)\n"
           "           + (layer_offsets_m[:, None] * geom.odet)[None, :, None, :])\n")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def make_history(repo: Path) -> str:
    """The project's committed tree as the first commit of a new repository at ``repo``; its sha."""
    repo.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "HEAD"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(repo)], input=archive, check=True)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return git(repo, "rev-parse", "HEAD")


def commit_change(repo: Path, message: str, plant: tuple[str, str, str] | None = None) -> str:
    """Commit ``plant`` (or a harmless note) on top; the new sha."""
    if plant is None:
        path = repo / "NOTES.txt"
        path.write_text((path.read_text() if path.exists() else "") + message + "\n")
        git(repo, "add", "NOTES.txt")
    else:
        name, old, new = plant
        text = (repo / name).read_text()
        assert text.count(old) == 1, f"the plant does not fit {name} any more"
        (repo / name).write_text(text.replace(old, new))
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def tutorial_history(repo: Path) -> list[tuple[str, str]]:
    """The tutorial's history at ``repo``: base, a changed physical term, a reordered sum; (sha, subject) each."""
    made = [(make_history(repo), "base")]
    for subject, plant in (("physics: planted polarization change", PHYSICS),
                           ("geometry: planted reordering of the position sum", REORDER)):
        made.append((commit_change(repo, subject, plant), subject))
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/explain_history.py",
                                     description="build the throwaway history of docs/tutorial-why-images-changed.md")
    parser.add_argument("folder", type=Path, help="where the new repository goes (must not exist)")
    folder = parser.parse_args(argv).folder
    if folder.exists() or folder.is_symlink():
        print(f"explain_history: {folder} exists; give a new folder", file=sys.stderr)
        return 2
    made = tutorial_history(folder)
    print(f"built {folder}: {len(made)} commits")
    for n, (sha, subject) in enumerate(reversed(made)):
        print(f"  HEAD{f'~{n}' if n else ''}  {sha[:8]} {subject}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
