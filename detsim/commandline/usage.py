"""The ``detsim`` command's help: ``detsim -h`` (the common flags on one screen, :data:`OVERVIEW`),
``detsim -h FLAG`` (one flag's synopsis, values and description) and ``detsim -help all`` (every flag of
:data:`~detsim.commandline.flag_table.HANDLERS`), drawn from the flag table itself."""

from __future__ import annotations

from dataclasses import fields
from enum import Enum

from detsim.commandline.arguments import ArgumentError, Arguments
from detsim.commandline.flag_sources import ALSO_READ, LINES, NANOBRAGG_COMMIT
from detsim.commandline.flag_table import HANDLERS, Handler, Values
from detsim.fileio import c_numbers
from detsim.model.units import DEFAULT_FLUENCE_PER_M2

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


# A flag's default where it is not the initial value of the field the flag sets (:class:`Arguments`): computed
# from other flags, the clock or the convention
_CONVENTION = "the convention's (MOSFLM's unless -xds, -adxv, -denzo or -dials; spec §3.1)"
_DERIVED_STEPS = "none: from the range, step and count given, by nanoBragg's rules (spec §5.3)"
COMPUTED_DEFAULTS = {
    "-seed": "the clock (the seconds since 1970 at the start, as nanoBragg's), so two runs' noise images differ "
             "unless -seed is given",
    "-misset_seed": "the clock, as -seed's (nanoBragg's is the -seed value)",
    "-misset": "no misset (0 0 0)",
    "-cell": "none: -cell or -mat is required",
    "-mat": "none: -cell or -mat is required",
    "-hkl": "none: every F is -default_F",
    "-Xbeam": "the convention's beam centre (the detector's centre for MOSFLM; spec §3.1)",
    "-Ybeam": "the convention's beam centre (the detector's centre for MOSFLM; spec §3.1)",
    **dict.fromkeys(["-Xclose", "-Yclose", "-ORGX", "-ORGY"], "from the beam centre (spec §3.1)"),
    "-close_distance": "from -distance and the detector's rotations",
    **dict.fromkeys(["-fdet_vector", "-sdet_vector", "-odet_vector", "-beam_vector", "-polar_vector",
                     "-spindle_axis", "-twotheta_axis", "-pix0_vector"], _CONVENTION),
    "-pivot": "the convention's (BEAM for MOSFLM, DENZO, ADXV, DIALS; SAMPLE for XDS)",
    "-detsize": "102.4 mm, or -detpixels x -pixel where the pixels are given",
    "-detsize_f": "102.4 mm, or -detpixels_f x -pixel where the pixels are given",
    "-detsize_s": "102.4 mm, or -detpixels_s x -pixel where the pixels are given",
    "-detpixels": "the detector size / -pixel (1024 with the defaults)",
    "-detpixels_f": "the detector size / -pixel (1024 with the defaults)",
    "-detpixels_s": "the detector size / -pixel (1024 with the defaults)",
    "-detector_abs": "1 / the sensor thickness (spec §5.3)",
    "-mosaic_dom": "10 with a -mosaic spread, else 1",
    "-oversample": "0: automatic, from the spot size (spec §4.5)",
    "-fluence": f"{DEFAULT_FLUENCE_PER_M2:g} photons/m2, or -flux x -exposure / -beamsize^2 where -flux is given",
    "-interpolate": "automatic: on where -N is 2 or less along an axis and -hkl is given (spec §2.1)",
    "-nointerpolate": "automatic: on where -N is 2 or less along an axis and -hkl is given (spec §2.1)",
    "-scale": "0: chosen from the image's maximum",
    "-pgmscale": "0: chosen from the image's maximum",
    **dict.fromkeys(["-osc", "-phistep", "-phisteps", "-hdivstep", "-hdivsteps", "-vdivstep", "-vdivsteps",
                     "-divsteps", "-dispsteps", "-detector_thicksteps", "-thicksteps", "-hdivrange", "-vdivrange",
                     "-divergence", "-mosaic"], _DERIVED_STEPS),
    "-threads": "OMP_NUM_THREADS, else torch's choice",
    "-chunk_pixels": "from the free memory",
}
_QUIET_FIELDS = ("pivot", "convention")  # set as a side effect by many flags: not what their default is about


def _fields_set(h: Handler) -> tuple[Arguments, Arguments]:
    """The arguments before and after the flag is read with placeholder values (as nanoBragg reads a side
    effect's), to find which fields it sets."""
    before, after = Arguments(), Arguments()
    argv = [h.pattern, *["7"] * 6]
    try:
        h.action(after, Values(argv, 0, h.pattern, strict=False))
    except ArgumentError:  # a choice among words: its field is the one its name says
        pass
    return before, after


def _shown_default(value) -> str:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (list, tuple)):
        return " ".join(_shown_default(v) for v in value) or "none"
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def default_text(h: Handler) -> str:
    """What a flag's value is when it is not given: :data:`COMPUTED_DEFAULTS`, else the initial value of the field
    it sets; for a switch, whether it is on by default."""
    if h.pattern in COMPUTED_DEFAULTS:
        return COMPUTED_DEFAULTS[h.pattern]
    before, after = _fields_set(h)
    changed = [f.name for f in fields(Arguments) if getattr(before, f.name) != getattr(after, f.name)]
    changed = [n for n in changed if n not in _QUIET_FIELDS] or changed
    if not changed:
        named = h.doc.rpartition("|")[0].split("|")  # a choice: its first word is the default (-dtype, -mode)
        return "on" if not h.takes else named[0].strip() if h.arity.most else "none"
    if not h.takes:  # a switch: on by default where reading it changes nothing
        return "off"
    return ", ".join(_shown_default(getattr(before, n)) for n in changed[:1])


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
        lines = [f"{names}: {_synopsis(h)}", f"  {_description(h)}", f"  takes {count}",
                 f"  default: {default_text(h)}"]
        if HANDLERS.index(h) < HANDLERS.index(_handler(_OWN_FIRST)):
            also = f"; {ALSO_READ[h.pattern]}" if h.pattern in ALSO_READ else ""
            lines.append(f"  read at nanoBragg.c {LINES[h.pattern]}{also} (bl831/nanoBragg {NANOBRAGG_COMMIT})")
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
