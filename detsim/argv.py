"""nanoBragg's command line, read the way nanoBragg reads it (spec §2.0).

nanoBragg walks argv left to right and tests every ``-`` token against every flag pattern with
``strstr``; a token can therefore fire several handlers (``-misset_seed`` also sets the misset angles,
``-twotheta_axis`` also sets two-theta, ``-mosaic_seed`` also sets the noise seed), and the last
assignment wins. This module reproduces that, with one difference: the handler a token was *meant* for
(the longest pattern it matches) is strict - a missing value, or one that is not wholly a number in C's
grammar (:mod:`detsim.cnumbers`), is an error naming the flag - and a token that matches no pattern is
an error instead of being ignored. Side-effect handlers read their values as C's ``atof``/``atoi`` would.

The flag table is :mod:`detsim.flags`; the result is an :class:`~detsim.arguments.Arguments` record of raw,
user-unit values, which :mod:`detsim.argconfig` turns into a :class:`~detsim.config.SimulationConfig`.
"""

from __future__ import annotations

from detsim import cnumbers
from detsim.arguments import ArgumentError, Arguments
from detsim.flags import HANDLERS, HELP_FLAGS, Handler, Values, usage

__all__ = ["HANDLERS", "HELP_FLAGS", "ArgumentError", "Arguments", "parse_argv", "usage"]


def _is_number(text: str) -> bool:
    return cnumbers.parse_float(text) is not None


def parse_argv(argv: list[str], initial: Arguments | None = None) -> Arguments:
    """Read a nanoBragg argument list (argv[1:]) into :class:`Arguments` (spec §2.0).

    ``initial`` holds values the flags start from (the ``-img``/``-mask`` headers, spec §2.5).
    """
    args = initial if initial is not None else Arguments()
    consumed: set[int] = set()
    for i, token in enumerate(argv):
        if i in consumed:
            continue
        if not token.startswith("-") or _is_number(token):
            raise ArgumentError(f"unexpected argument {token!r} (not a value of any flag before it)")
        matching = [h for h in HANDLERS if h.matches(token)]
        if not matching:
            raise ArgumentError(f"unknown flag {token}")
        meant = max(matching, key=lambda h: h.specificity(token))
        for handler in matching:
            strict = handler is meant
            if i + handler.nargs >= len(argv):
                if strict and handler.pattern != "-curved_det":
                    raise ArgumentError(f"{token} expects {handler.nargs} value(s)")
                continue
            if strict:
                _check_values(argv, i, handler, token)
            handler.action(args, Values(argv, i, token, strict))
            if strict:
                consumed.update(range(i + 1, i + 1 + _values_taken(argv, i, handler)))
            if handler.stop:
                break
    return args


def _values_taken(argv: list[str], i: int, handler: Handler) -> int:
    """How many following tokens are values of the flag at ``i`` (not flags of their own)."""
    if handler.pattern == "-cell":
        n = 0
        while n < 6 and i + 1 + n < len(argv) and not argv[i + 1 + n].startswith("-"):
            n += 1
        return n
    if handler.pattern == "-misset":
        return 1 if "rand" in argv[i + 1] else 3
    if handler.pattern == "-curved_det":
        return 0
    return handler.nargs


def _check_values(argv: list[str], i: int, handler: Handler, token: str) -> None:
    """A value that looks like a flag (and is not a negative number) means the value is missing."""
    if handler.pattern in ("-cell", "-curved_det") or handler.nargs == 0:
        return
    wanted = _values_taken(argv, i, handler)
    if i + wanted >= len(argv):
        what = "3 angles (deg) or 'random'" if handler.pattern == "-misset" else f"{wanted} value(s)"
        raise ArgumentError(f"{token} expects {what}")
    for k in range(1, wanted + 1):
        value = argv[i + k]
        if value.startswith("-") and not _is_number(value):
            raise ArgumentError(f"{token} expects {_values_taken(argv, i, handler)} value(s), got flag {value}")
