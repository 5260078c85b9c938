"""A fake cache of the npm tarballs the status page's offline copy is made from (no network in tests)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from detsim.track.publish.vendor import ASSETS, tarball


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
