"""The ``detsim`` command's help: ``detsim -h`` (the common flags on one screen, :data:`OVERVIEW`),
``detsim -h FLAG`` (one flag's synopsis, values and description) and ``detsim -help all`` (every flag of
:data:`~detsim.commandline.flag_table.HANDLERS`), drawn from the flag table itself."""

from __future__ import annotations

from detsim.commandline.arguments import ArgumentError
from detsim.commandline.flag_table import HANDLERS, Handler
from detsim.fileio import c_numbers

HELP_FLAGS = ("-h", "-help", "--help")
HELP_ALL = "all"  # the topic that lists every flag: detsim -help all
_OWN_FIRST = "-dtype"  # the first of detsim's own flags in HANDLERS; those before it are nanoBragg's
_WIDTH = 100

# The flags `detsim -h` shows, grouped; every flag is in `detsim -help all`.
OVERVIEW: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("crystal", ("-cell", "-mat", "-hkl", "-default_F", "-N", "-misset", "-mosaic", "-mosaic_dom",
                 "-xtalsize", "-round_xtal", "-gauss_xtal")),
    ("beam", ("-lambda", "-energy", "-fluence", "-flux", "-divergence", "-divsteps", "-dispersion",
              "-dispsteps", "-polar", "-nopolar", "-sourcefile")),
    ("detector", ("-distance", "-pixel", "-detpixels", "-detsize", "-Xbeam", "-Ybeam", "-twotheta", "-pivot",
                  "-mosflm", "-xds", "-oversample", "-roi", "-detector_thick", "-water")),
    ("rotation", ("-phi", "-osc", "-phisteps", "-phistep")),
    ("output", ("-floatfile", "-intfile", "-noisefile", "-pgmfile", "-nonoise", "-nopgm", "-scale", "-seed",
                "-noprogress")),
    ("detsim", ("-dtype", "-device", "-mode", "-threads", "-trace_pixel")),
)


def _handler(pattern: str) -> Handler:
    return next(h for h in HANDLERS if h.pattern == pattern)


def _synopsis(h: Handler) -> str:
    values = h.doc.rpartition("|")[0]
    return h.pattern + (f" {values}" if values else "")


def _description(h: Handler) -> str:
    text = h.doc.rpartition("|")[2]
    arity = h.arity
    if arity.fewest < arity.most:
        text += f"; {arity.fill} (as nanoBragg)"
    return text


def usage() -> str:
    """The top-level help of the ``detsim`` command: one screen, the most used flags grouped."""
    lines = [
        "usage: detsim [flags]        nanoBragg's command line, read as nanoBragg reads it",
        "       detsim -h FLAG ...    what each FLAG takes and does",
        f"       detsim -help {HELP_ALL}      every flag ({len(HANDLERS)}), with its values and units",
        "",
        "Needs a crystal (-cell or -mat) and structure factors (-hkl or -default_F), for example:",
        "  detsim -cell 100 -default_F 100 -N 5 -detpixels 256 -distance 100 -floatfile image.bin",
        "",
    ]
    for title, patterns in OVERVIEW:
        row, indent = f"{title:<10}", " " * 10
        for item in (_synopsis(_handler(p)) for p in patterns):
            if len(row) + len(item) + 3 > _WIDTH and row.strip():
                lines.append(row.rstrip())
                row = indent
            row += item + "   "
        lines.append(row.rstrip())
    lines += [
        "",
        "Units as nanoBragg's: mm, Å, degrees, mrad, µm (see -help all). Later flags override earlier ones.",
        "A flag given fewer values than it takes is refused, except -cell: -cell 100 is a cubic 100 Å cell",
        "(b and c default to a, angles to 90, as in nanoBragg). An unknown flag or a bad value is one line",
        "on stderr and exit 2; no output file is written before every input and output path is checked.",
    ]
    return "\n".join(lines) + "\n"


def usage_all() -> str:
    """Every flag of :data:`HANDLERS` with its values and what it does (``detsim -help all``)."""
    def rows(handlers):
        for h in handlers:
            values = h.doc.rpartition("|")[0]
            names = ", ".join((h.pattern, *h.also))
            yield f"  {names + (' ' + values if values else ''):<38} {_description(h)}"

    own = next(i for i, h in enumerate(HANDLERS) if h.pattern == _OWN_FIRST)
    return "\n".join([
        "usage: detsim [flags]   (nanoBragg's command line; later flags override earlier ones)",
        "",
        "nanoBragg's flags (same names, units and defaults; a flag matches any token containing it, as in",
        "nanoBragg, except those of fixed length; an unknown flag or a bad value is an error, exit 2):",
        *rows(HANDLERS[:own]),
        "",
        "detsim's own flags:",
        *rows(HANDLERS[own:]),
        f"  {' '.join(HELP_FLAGS):<38} print the one-screen help and exit",
        f"  {'-h FLAG ...':<38} print what each FLAG takes and does",
        f"  {'-h ' + HELP_ALL:<38} print this list",
        "",
        "Outputs are written only after every input and output path has been checked.",
    ]) + "\n"


def _topic_handler(topic: str) -> Handler | None:
    """The handler a help topic names: an exact name or alias, else the one nanoBragg would run for it."""
    token = topic if topic.startswith("-") else "-" + topic
    for h in HANDLERS:
        if token in (h.pattern, *h.also):
            return h
    matching = [h for h in HANDLERS if h.matches(token)]
    return max(matching, key=lambda h: h.specificity(token)) if matching else None


def flag_help(topics: list[str]) -> str:
    """The full entry of each flag named in ``topics`` (``detsim -h FLAG ...``); unknown names are errors."""
    entries = []
    for topic in topics:
        h = _topic_handler(topic)
        if h is None:
            raise ArgumentError(f"-h: no flag {topic} (detsim -help {HELP_ALL} lists them)")
        arity = h.arity
        if arity.fewest < arity.most:
            count = f"{arity.fewest} to {arity.most} values"
        elif arity.word is not None:
            count = f"{arity.most} values or the word {h.doc.rpartition('|')[0].split('|')[-1].strip()}; fewer is an error"
        else:
            count = f"{arity.most} value{'s' if arity.most != 1 else ''}" + ("; fewer is an error" if arity.most else "")
        names = ", ".join((h.pattern, *h.also))
        lines = [f"{names}: {_synopsis(h)}", f"  {_description(h)}", f"  takes {count}"]
        if HANDLERS.index(h) < HANDLERS.index(_handler(_OWN_FIRST)):
            lines[-1] += f" ({arity.source})"
        entries.append("\n".join(lines))
    return "\n".join(entries) + "\n"


def help_text(after: list[str]) -> str:
    """What a help flag prints, given the tokens after it: the overview, every flag, or some flags.

    The topics are the flags among those tokens (values are passed over, so ``-h`` can go first on a
    whole command line), or a single word naming one (``-h cell``, ``-h all``).
    """
    topics = [t for t in after if t.startswith("-") and c_numbers.parse_float(t) is None]
    if not topics and len(after) == 1:
        topics = after
    if not topics:
        return usage()
    if topics == [HELP_ALL]:
        return usage_all()
    return flag_help(topics)


# -- reading an argument list -----------------------------------------------------------------------
