"""What the publish and explain tests start from: a fake cache of the npm tarballs the status page's offline copy
is made from (no network in tests), a project whose page ``asv publish`` wrote, and a target's image that
departs from its reference at the edges, stored as ``detsim-track record`` stores it."""

from __future__ import annotations

import functools
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np

from detsim.track.report.asvpage import ASSETS, tarball
from detsim.track.target.departure import departure


def fake_asset_cache(cache: Path, specs=None) -> None:
    """Tarballs holding the members ASSETS names, each file's text naming its package and path."""
    cache.mkdir(parents=True, exist_ok=True)
    members: dict[str, list[str]] = {}
    for spec, member in ASSETS.values():
        members.setdefault(spec, []).append(member)
    for spec, names in members.items():
        if specs is not None and spec not in specs:
            continue
        with tarfile.open(tarball(cache, spec), "w:gz") as archive:
            for name in names:
                data = f"/* {spec} {name} */".encode()
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))


DATA = Path(__file__).resolve().parent / "data" / "asv"


def asv_published(tmp_path: Path) -> Path:
    """The regressed fixture's results on the commits of a real git repository, so that ``asv publish`` runs."""
    root = tmp_path / "asvproject"
    root.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    git = functools.partial(subprocess.run, cwd=root, env=env, check=True, capture_output=True, text=True)
    git(["git", "init", "-q", "-b", "main"])
    source = DATA / "regressed" / "results"
    stored = sorted((json.loads(p.read_text()) for p in (source / "asv" / "fixture-2cpu").glob("*.json")
                     if p.name != "machine.json"), key=lambda d: d["date"])
    renamed = {}
    for i, data in enumerate(stored):
        (root / "f").write_text(f"{i}\n")
        git(["git", "add", "f"])
        git(["git", "commit", "-q", "-m", f"commit {i}"])
        renamed[data["commit_hash"]] = git(["git", "rev-parse", "HEAD"]).stdout.strip()
    machine = root / "results" / "asv" / "fixture-2cpu"
    machine.mkdir(parents=True)
    shutil.copy(source / "asv" / "benchmarks.json", root / "results" / "asv")
    shutil.copy(source / "asv" / "fixture-2cpu" / "machine.json", machine)
    for data in stored:
        data["commit_hash"] = renamed[data["commit_hash"]]
        (machine / f"{data['commit_hash'][:8]}-{data['env_name']}.json").write_text(json.dumps(data))
    (root / "results" / "hashes").mkdir()
    for path in (source / "hashes").glob("*.json"):
        data = json.loads(path.read_text())
        data["commit"] = renamed[data["commit"]]
        (root / "results" / "hashes" / f"{data['commit']}.json").write_text(json.dumps(data))
    shutil.copytree(source / "baselines", root / "results" / "baselines")
    conf = (DATA / "regressed" / "asv.conf.json").read_text()
    (root / "asv.conf.json").write_text(conf.replace('"html_dir": "reports/html",',
                                                     '"html_dir": "reports/html", "branches": ["main"],'))
    done = subprocess.run([sys.executable, "-m", "asv", "publish"], cwd=root, capture_output=True, text=True,
                          env={**env, "HOME": str(tmp_path)}, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return root


def edge_departure() -> dict:
    """Where a 64x64 image whose outer 3 px are 3x too bright departs from its reference: at the edges, the
    central region passing (r = 1) while the full frame fails (r = 0.893)."""
    y, x = np.mgrid[0:64, 0:64]
    reference = np.exp(-((y - 31.5) ** 2 + (x - 31.5) ** 2) / 200) + 0.1
    image = reference.copy()
    for band in (np.s_[:3, :], np.s_[-3:, :], np.s_[:, :3], np.s_[:, -3:]):
        image[band] *= 3
    return departure(image, reference)


def store_departure(results: Path, commit: str, case: str, record: dict) -> None:
    """A departure record stored for (commit, case) under ``results``, as JSON (the layout :func:`stored_in` reads)."""
    path = results / "departures" / commit / f"{case}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


def stored_in(results: Path, commit: str, case: str) -> dict | None:
    """``detsim.track.target.departure.stored`` as the tests provide it: what :func:`store_departure` wrote."""
    path = Path(results) / "departures" / commit / f"{case}.json"
    return json.loads(path.read_text()) if path.is_file() else None
