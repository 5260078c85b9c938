"""``detsim-track``: one command, one subcommand per job of the tracking suite.

Each subcommand module exposes ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``; exit
codes are :class:`~detsim.track.base.exitcodes.ExitCode`'s, Ctrl-C and SIGTERM cleaning up alike.
"""

from __future__ import annotations

import signal
import sys

from detsim.track.base.exitcodes import MEANING, ExitCode


def _interrupted_while_starting(signum, frame):
    """Ctrl-C before :func:`main` runs (while the modules load): exit quietly, as an interrupt, no traceback."""
    raise SystemExit(int(ExitCode.INTERRUPTED))


_STARTING = signal.getsignal(signal.SIGINT) is signal.default_int_handler
if _STARTING:
    signal.signal(signal.SIGINT, _interrupted_while_starting)

import argparse  # noqa: E402 - after the handler above: Ctrl-C while these load exits quietly
import importlib  # noqa: E402

from detsim.host.shutdown import skip_final_collection  # noqa: E402
from detsim.host.signals import Terminated, terminate_as_interrupt  # noqa: E402

if _STARTING:  # loaded: Ctrl-C is Python's own again (main catches it), also for a program that imports this
    signal.signal(signal.SIGINT, signal.default_int_handler)


# subcommand -> its module, detsim.track.commands.<name with _ for ->; the first is what a bare ``detsim-track`` runs.
SUBCOMMANDS = {name: f"detsim.track.commands.{name.replace('-', '_')}" for name in (
    "regressions", "baselines", "bench-gate", "determinism", "diverge", "trace-diff", "parity", "evidence", "speed",
    "explain", "bisect", "record", "publish", "gpu-check", "history")}
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
    parser = argparse.ArgumentParser(
        prog="detsim-track", description="The tracking suite of detsim: one subcommand per job.",
        epilog="`detsim-track COMMAND -h` gives a command's options; docs/ the rest. Exit status: "
               + ", ".join(f"{int(code)} {words}" for code, words in MEANING.items()) + ".",
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=20, width=110))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, module in modules.items():
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    skip_final_collection()
    argv = sys.argv[1:] if argv is None else list(argv)
    if (not argv or argv[0].startswith("-")) and argv[:1] not in (["-h"], ["--help"]):
        argv = [DEFAULT, *argv]
    name = argv[0] if argv[0] in SUBCOMMANDS else "?"
    try:  # Ctrl-C and SIGTERM from here on, the command's modules loading included, end as interrupts
        with terminate_as_interrupt():
            return _run(argv)
    except Terminated:
        print(f"detsim-track {name}: terminated (SIGTERM)", file=sys.stderr)
        return ExitCode.TERMINATED
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED


def _run(argv: list[str]) -> int:
    # a named subcommand imports its own module only: one command's import error cannot break another
    modules = _available([argv[0]] if argv and argv[0] in SUBCOMMANDS else None)
    parser = build_parser(modules)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return ExitCode.UNMEASURED
    return int(modules[args.command].run(args))


if __name__ == "__main__":
    sys.exit(main())
