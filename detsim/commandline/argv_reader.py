"""Reading a nanoBragg argument list the way nanoBragg reads it (:func:`parse_argv`, spec §2.0), with the flag
table of :mod:`detsim.commandline.flag_table`.

nanoBragg walks argv left to right and tests every ``-`` token against every flag pattern with ``strstr``; a
token can therefore fire several handlers, and the last assignment wins. :func:`parse_argv` reproduces that,
with one difference: the handler a token was *meant* for (the longest pattern it matches) is strict - fewer
values than its arity allows (:class:`~detsim.commandline.flag_table.Arity`), or a value that is not wholly a
number in C's grammar, is an error naming the flag - and a token that matches no pattern is an error instead of
being ignored. The result is an :class:`~detsim.commandline.arguments.Arguments` record of raw, user-unit
values, which :mod:`detsim.commandline.to_config` turns into a :class:`~detsim.model.config.SimulationConfig`.
"""

from __future__ import annotations

from detsim.commandline.arguments import ArgumentError, Arguments
from detsim.commandline.flag_table import HANDLERS, Handler, Values
from detsim.fileio import c_numbers


def _is_number(text: str) -> bool:
    return c_numbers.parse_float(text) is not None


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
            if strict:
                consumed.update(range(i + 1, i + 1 + _checked_values(argv, i, handler, token)))
            elif i + handler.nargs >= len(argv):
                continue  # nanoBragg's guard: too few tokens follow for this handler to run
            handler.action(args, Values(argv, i, token, strict))
            if handler.stop:
                break
    return args


def _ends_values(handler: Handler, token: str) -> bool:
    """Whether ``token`` is a flag rather than a value of ``handler`` (nanoBragg's -cell stops at any '-')."""
    if handler.arity.ends_at_dash:
        return token.startswith("-")
    return token.startswith("-") and not _is_number(token)


def _checked_values(argv: list[str], i: int, handler: Handler, token: str) -> int:
    """How many following tokens are values of the flag typed at ``i``; too few is an error.

    A flag reads up to ``arity.most`` values and is refused with fewer than ``arity.least``
    (:class:`~detsim.commandline.flag_table.Arity`): only ``-cell`` gives a shorter list a meaning on purpose (b and c
    default to a, angles to 90 degrees); any other flag given fewer values, at the end of the line or before
    the next flag, would have nanoBragg skip its handler or read the next flag as 0. ``-misset`` takes
    3 angles or the word 'random'. ``-curved_det`` takes none but must be followed by a token, which it
    ignores unless it is a flag (nanoBragg ignores ``-curved_det`` as the last argument).
    """
    if handler.pattern == "-curved_det":
        if i + 1 >= len(argv):
            raise ArgumentError(f"{token} must be followed by another token (nanoBragg ignores it as the last one)")
        return 0 if _ends_values(handler, argv[i + 1]) else 1
    arity = handler.arity
    if arity.word is not None and i + 1 < len(argv) and arity.word in argv[i + 1]:
        return 1
    got = 0
    while got < arity.most and i + 1 + got < len(argv) and not _ends_values(handler, argv[i + 1 + got]):
        got += 1
    after = argv[i + 1 + got] if i + 1 + got < len(argv) else None
    if got < arity.fewest:
        values = handler.doc.rpartition("|")[0]
        wanted = arity.fewest
        message = f"{token} expects {'at least ' if arity.fewest < arity.most else ''}{wanted} value{'s' if wanted > 1 else ''}"
        message += f" ({values}), got {got}" if values else f", got {got}"
        if after is not None:
            message += f" before {after}"
        raise ArgumentError(message)
    if got < arity.most and arity.ends_at_dash and after is not None and _is_number(after):
        raise ArgumentError(f"{token} reads no value that starts with '-': nanoBragg stops reading at {after} "
                            f"and ignores it")
    return got
