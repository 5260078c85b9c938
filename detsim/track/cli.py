"""``detsim-track``: one command, one subcommand per job of the tracking suite.

Each subcommand module exposes ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``; exit
codes are :class:`~detsim.track.base.exitcodes.ExitCode`'s, Ctrl-C and SIGTERM cleaning up alike.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from detsim.signals import Terminated, terminate_as_interrupt
from detsim.track.base.exitcodes import ExitCode


# subcommand -> module; the first is what a bare ``detsim-track`` runs.
SUBCOMMANDS = {
    "regressions": "detsim.track.commands.regressions",
    "baselines": "detsim.track.commands.baselines",
    "bench-gate": "detsim.track.commands.bench_gate",
    "determinism": "detsim.track.commands.determinism",
    "diverge": "detsim.track.commands.diverge",
    "trace-diff": "detsim.track.commands.trace_diff",
    "parity": "detsim.track.commands.parity",
    "evidence": "detsim.track.commands.evidence",
    "speed": "detsim.track.commands.speed",
    "explain": "detsim.track.commands.explain",
    "bisect": "detsim.track.commands.bisect",
    "record": "detsim.track.commands.record",
    "publish": "detsim.track.commands.publish",
}
DEFAULT = "regressions"


def _available(names=None) -> dict[str, object]:
    """The command modules of ``names`` (default: every subcommand) that this installation has."""
    modules = {}
    for name in names or SUBCOMMANDS:
        module = SUBCOMMANDS[name]
        try:
            modules[name] = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    return modules


def build_parser(modules: dict[str, object]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="detsim-track", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in modules.items():
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if (not argv or argv[0].startswith("-")) and argv[:1] not in (["-h"], ["--help"]):
        argv = [DEFAULT, *argv]
    # a named subcommand imports its own module only: one command's import error cannot break another
    modules = _available([argv[0]] if argv and argv[0] in SUBCOMMANDS else None)
    parser = build_parser(modules)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return ExitCode.UNMEASURED
    try:
        with terminate_as_interrupt():
            return int(modules[args.command].run(args))
    except Terminated:
        print(f"detsim-track {args.command}: terminated (SIGTERM)", file=sys.stderr)
        return ExitCode.TERMINATED
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
