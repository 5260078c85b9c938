"""The ``detsim`` command: ``detsim batch ...`` renders many frames (:mod:`detsim.batch`); anything else is
nanoBragg's command line (:mod:`detsim.commandline`). No nanoBragg flag is a bare word, so the two never meet.
The dispatch lives here, above both, so that neither sub-package imports the other's caller."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Console entry point."""
    from detsim.host.shutdown import skip_final_collection

    skip_final_collection()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["batch"]:
        from detsim.batch.cli import main as batch_main

        return batch_main(argv[1:])
    from detsim.commandline.command import main as command_main

    return command_main(argv)


__all__ = ["main"]
