"""The frames of a batch: one per command line of a lines file, or one per row of a sweep CSV.

A lines file holds one nanoBragg command line a line (split as a shell splits it, quotes kept together);
blank lines and ``#`` comments are skipped, and a leading program name (``detsim``, ``nanoBragg``) is
dropped. A sweep is a base command line and a CSV whose header names flags (``-distance,-phi``): each row
is the base line followed by each column's flag and the cell's values (split on white space, so a cell may
hold several: ``100 100 100 90 90 90``). Later flags win, as on nanoBragg's command line, so a column
overrides the base. An empty cell leaves its flag out of that row.

Frames are named from their place: ``line0003`` (the file's line 3), ``row0003`` (the CSV's third row of
values). A file that cannot be read into frames raises :class:`BatchInputError`, one line naming the file
and line.
"""

from __future__ import annotations

import csv
import os
import shlex
from dataclasses import dataclass

PROGRAM_NAMES = ("detsim", "nanoBragg", "nanobragg")


class BatchInputError(ValueError):
    """A batch that cannot be rendered as given; the message is one line naming the file (and line)."""


@dataclass(frozen=True)
class BatchFrame:
    """One image to render: its name (its output folder), where it came from and its command line."""

    name: str  # lineNNNN or rowNNNN: the frame's folder under the output directory
    source: str  # FILE:LINE, for messages and the manifest
    argv: tuple[str, ...]  # the nanoBragg arguments (no program name)

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


def _split(text: str, where: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError as exc:  # an unclosed quote
        raise BatchInputError(f"{where}: cannot split the command line ({exc})") from None


def _without_program(tokens: list[str]) -> list[str]:
    if tokens and os.path.basename(tokens[0]) in PROGRAM_NAMES:
        return tokens[1:]
    return tokens


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchInputError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None


def read_lines(path: str) -> list[BatchFrame]:
    """The frames of a file of command lines (1-based line numbers name them)."""
    frames = []
    for number, text in enumerate(_read_text(path).splitlines(), start=1):
        where = f"{path}:{number}"
        tokens = _without_program(_split(text, where))
        if not tokens:
            continue  # blank or a comment
        frames.append(BatchFrame(f"line{number:04d}", where, tuple(tokens)))
    if not frames:
        raise BatchInputError(f"{path}: holds no command line")
    return frames


def read_sweep(base: str, path: str) -> list[BatchFrame]:
    """The frames of a sweep: ``base`` then, per CSV row, each column's flag and values (1-based rows)."""
    base_tokens = _without_program(_split(base, "--base"))
    rows = list(csv.reader(_read_text(path).splitlines()))
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise BatchInputError(f"{path}:1: no header (a row of flag names such as -distance,-phi)")
    header = [cell.strip() for cell in rows[0]]
    for column, flag in enumerate(header, start=1):
        if not flag.startswith("-") or len(flag) < 2 or any(ch.isspace() for ch in flag):
            raise BatchInputError(f"{path}:1: column {column} is {flag!r}, not a flag name (such as -distance)")
    if len(set(header)) != len(header):
        raise BatchInputError(f"{path}:1: a flag is named by two columns")
    frames = []
    for number, row in enumerate(rows[1:], start=1):
        where = f"{path}:{number + 1}"
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise BatchInputError(f"{where}: {len(row)} values for {len(header)} columns")
        tokens = list(base_tokens)
        for flag, cell in zip(header, row):
            values = _split(cell, where)
            if cell.strip():
                tokens += [flag, *values]
        frames.append(BatchFrame(f"row{number:04d}", where, tuple(tokens)))
    if not frames:
        raise BatchInputError(f"{path}: holds no row of values under its header")
    return frames


__all__ = ["BatchInputError", "BatchFrame", "read_lines", "read_sweep"]
