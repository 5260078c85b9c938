"""The reference workloads of the speed comparison with nanoBragg.c, as nanoBragg command lines (README.md,
"Against nanoBragg.c"). A reduced size keeps the per-pixel work and says so in its name (``P2@256``). A
configuration is built by a reader of argument lists the caller passes: this module imports no detsim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Callable

DETECTOR_MM = 102.4  # nanoBragg's default detector side; a larger pixel count makes finer pixels


@dataclass(frozen=True)
class Workload:
    name: str
    pixels: int  # detector side (square)
    oversample: int = 1
    mosaic_domains: int = 1
    phi_steps: int = 1

    @property
    def steps(self) -> int:
        """Sampling steps per pixel: subpixels × mosaic domains × phi steps (one source, one layer)."""
        return self.oversample ** 2 * self.mosaic_domains * self.phi_steps

    @property
    def pixel_steps(self) -> int:
        return self.pixels * self.pixels * self.steps

    def argv(self) -> list[str]:
        """The nanoBragg command line (without output flags)."""
        args = ["-cell", "100", "100", "100", "90", "90", "90", "-default_F", "100", "-N", "5",
                "-misset", "10", "20", "30", "-lambda", "1", "-distance", "100",
                "-detpixels", str(self.pixels), "-pixel", f"{DETECTOR_MM / self.pixels:g}",
                "-oversample", str(self.oversample)]
        if self.mosaic_domains > 1:
            args += ["-mosaic", "0.5", "-mosaic_dom", str(self.mosaic_domains), "-mosaic_seed", "42"]
        if self.phi_steps > 1:
            args += ["-phi", "0", "-osc", "0.5", "-phisteps", str(self.phi_steps)]
        return args + ["-nonoise", "-nopgm", "-noprogress"]

    def config(self, read: Callable[[list[str]], Any]):
        """The configuration ``read`` (``detsim.commandline.to_config.config_from_argv``) builds from :meth:`argv`."""
        return read(self.argv())

    def resized(self, pixels: int) -> "Workload":
        """The same per-pixel work on a ``pixels``² detector of the same size, named ``<name>@<pixels>``
        (``P2@256``) so that a name always means one detector size."""
        if pixels == self.pixels:
            return self
        return replace(self, name=f"{self.name.split('@')[0]}@{pixels}", pixels=pixels)


WORKLOADS = {
    "P1": Workload("P1", 1024),
    "P2": Workload("P2", 1024, oversample=2, mosaic_domains=10, phi_steps=5),
    "P4096": Workload("P4096", 4096),
}


def reduced(name: str) -> Workload | None:
    """The reference workload a reduced-size name stands for (``P2@32``: :data:`WORKLOADS`' P2 resized to
    32²), or None where ``name`` is not one."""
    match = re.fullmatch(r"(\w+)@(\d+)", name)
    if match is None or match[1] not in WORKLOADS:
        return None
    return WORKLOADS[match[1]].resized(int(match[2]))
