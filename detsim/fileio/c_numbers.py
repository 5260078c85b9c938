"""Numbers read from text the way C reads them (glibc's ``strtod``/``atof`` and ``strtol``/``atoi``).

nanoBragg reads every number of its command line with ``atof``/``atoi`` (spec §2.0), the ``-img``/``-mask``
header values with ``atof``, its source file with ``atof`` and its matrix and HKL files with ``fscanf``'s
``%lg``/``%d``, which follow the same grammar. Python's ``float()``/``int()`` do not: they accept ``1_00``
(100 where C reads 1), full-width and other Unicode digits (``１００``, ``١٠٠``: 100 where C reads 0) and
Unicode spaces, and refuse hex floats (``0x1p3``, 8 for C). Every number detsim reads from text therefore
goes through this module, so that no text gives detsim a different number than nanoBragg.

Grammar (C99 §7.20.1.3, as glibc implements it): leading C spaces (`` \\t\\n\\v\\f\\r``), an optional sign,
then a decimal number (digits with an optional point, at least one digit, an optional exponent ``e±digits``),
a hex number (``0x``, hex digits with an optional point, an optional binary exponent ``p±digits``), ``inf`` or
``infinity``, or ``nan`` or ``nan(chars)``, letters in either case. Only ASCII digits count. An integer
(``strtol`` in base 10, which ``atoi`` calls) is an optional sign and decimal digits.

* :func:`strtod` / :func:`strtol`: the number at the start of a text and how many characters it took.
* :func:`atof` / :func:`atoi`: what C's functions return: the leading number, 0 when there is none.
* :func:`parse_float` / :func:`parse_int`: the number a whole text is (C spaces around it allowed), or
  ``None``; detsim's strict reading, which refuses a text rather than read a prefix of it.
"""

from __future__ import annotations

import math
import re

__all__ = ["C_INT_MAX", "C_INT_MIN", "C_SPACES", "NUMBER", "atof", "atoi", "number_value",
           "parse_float", "parse_int", "strtod", "strtol"]

C_INT_MIN, C_INT_MAX = -(2**31), 2**31 - 1  # a C int, as nanoBragg's atoi results are stored
_C_LONG_MIN, _C_LONG_MAX = -(2**63), 2**63 - 1  # strtol's range (LP64), which it clamps to

C_SPACES = " \t\n\v\f\r"  # isspace() in the C locale
_DECIMAL = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_HEX = r"0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
_SPECIAL = r"[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN](?:\([0-9A-Za-z_]*\))?"
NUMBER = rf"[+-]?(?:{_HEX}|{_DECIMAL}|{_SPECIAL})"  # one number as strtod reads it (regular expression)

_LEADING_SPACE = f"[{re.escape(C_SPACES)}]*"
_FLOAT_PREFIX = re.compile(rf"{_LEADING_SPACE}({NUMBER})", re.ASCII)
_INT_PREFIX = re.compile(rf"{_LEADING_SPACE}([+-]?[0-9]+)", re.ASCII)


def number_value(text: str) -> float:
    """The double C reads from ``text``, which must match :data:`NUMBER` whole (correctly rounded, as glibc)."""
    body = text.lstrip("+-")
    negative = text.startswith("-")
    if body[:2] in ("0x", "0X"):
        try:
            value = float.fromhex(body)
        except OverflowError:  # strtod gives HUGE_VAL (and ERANGE)
            value = math.inf
    elif body[:1] in "iInN":
        value = math.nan if body[:1] in "nN" else math.inf
    else:
        value = float(body)  # ASCII decimal text: Python rounds it as glibc does
    return -value if negative else value


def strtod(text: str) -> tuple[float, int]:
    """C's ``strtod``: the number at the start of ``text`` and the characters it used (0.0 and 0 for none)."""
    match = _FLOAT_PREFIX.match(text)
    if match is None:
        return 0.0, 0
    return number_value(match.group(1)), match.end()


def strtol(text: str) -> tuple[int, int]:
    """C's ``strtol(text, &end, 10)``: the integer at the start of ``text`` (clamped to a C long) and its length."""
    match = _INT_PREFIX.match(text)
    if match is None:
        return 0, 0
    return min(max(int(match.group(1)), _C_LONG_MIN), _C_LONG_MAX), match.end()


def atof(text: str) -> float:
    """C's ``atof``: the leading number of ``text``, 0.0 when it starts with none (``atof("12abc") == 12``)."""
    return strtod(text)[0]


def atoi(text: str) -> int:
    """C's ``atoi``, ``(int) strtol(text, NULL, 10)``: a long beyond a C int wraps, as gcc converts it."""
    value = strtol(text)[0]
    return (value - C_INT_MIN) % 2**32 + C_INT_MIN


def _rest_is_space(text: str, end: int) -> bool:
    return end > 0 and text[end:].strip(C_SPACES) == ""


def parse_float(text: str) -> float | None:
    """The number ``text`` is, read as C reads it, or None when anything but C spaces follows it.

    ``parse_float(" 1e2 ") == 100.0``, ``parse_float("0x1p3") == 8.0``, ``parse_float("inf") == inf``;
    ``parse_float("1_00")``, ``parse_float("１００")`` and ``parse_float("100abc")`` are None.
    """
    value, end = strtod(text)
    return value if _rest_is_space(text, end) else None


def parse_int(text: str) -> int | None:
    """The decimal integer ``text`` is (unbounded), or None when it is anything else (``"7.9"``, ``"0x10"``)."""
    match = _INT_PREFIX.match(text)
    if match is None or not _rest_is_space(text, match.end()):
        return None
    return int(match.group(1))
