"""The small workloads whose instruction count the suite records (``P1@64``, ``P1@128``, ``P2@32``, a golden
case by id), and the code that renders them: counted workloads are small variants of the timed ones, since
valgrind runs about 25 M instructions per second."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from detsim.track.base.golden import golden_dir
from detsim.track.base.workloads import reduced
from detsim.track.cost.counting import Count, count

DTYPES = ("float64", "float32")


@dataclass(frozen=True)
class CostSpec:
    """One counted region: ``detsim.simulate`` of ``workload`` (``P1@64`` or a golden case id) on the CPU
    in ``dtype``, eager (the compiled path is not counted: inductor under valgrind takes minutes)."""

    workload: str
    dtype: str = "float64"

    @property
    def label(self) -> str:
        return f"{self.workload} cpu {self.dtype} eager"

    def setup(self, root: Path | None = None) -> str:
        """Python code that builds ``_config`` (uncounted)."""
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        read = "import detsim\nfrom detsim.commandline.to_config import config_from_argv\n"
        if reduced(self.workload) is not None:
            return (f"{read}from detsim.track.base.workloads import reduced\n"
                    f"_config = reduced({self.workload!r}).config(config_from_argv)")
        return (f"{read}from pathlib import Path\nfrom detsim.track.base.golden import find_case\n"
                f"_config = find_case({self.workload!r}, Path({str(golden_dir(root))!r})).config(config_from_argv)")

    def region(self) -> str:
        return f"detsim.simulate(_config, device='cpu', dtype=torch.{self.dtype})"


def count_spec(spec: CostSpec, *, root: Path | None = None, **kwargs) -> Count:
    """The instructions of one render of ``spec`` (:func:`~detsim.track.cost.counting.count`)."""
    return count(spec.setup(root), spec.region(), **kwargs)
