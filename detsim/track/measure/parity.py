"""detsim against the reference images (docs/parity.md): the suite's parity loop (:mod:`detsim.track.base.parity`)
on the user's cases, each outcome as the report records it, and the report's pictures and pages.

Inputs: golden cases (or case folders of the user's), a dtype, a device, the line on r. Outputs: a **case
result** per case, the JSON-ready record ``parity.json`` stores: ``id``, ``dir``, ``args``, ``shape`` [slow,
fast], ``seconds`` (prepare + render, wall), the agreement of the images
(:func:`~detsim.track.base.metrics.image_metrics`) and ``status``, the word of the case's
:class:`~detsim.track.base.status.Status` in the report (:data:`WORDS`: "pass" where r meets the line, "fail",
"error" with ``error``); then the text table, summary.md and index.html of the report.

Pictures are 8-bit PNG, one image pixel per PNG pixel, row 0 = slow index 0. Reference and detsim share one
log grey scale (taken from the reference), so their pictures compare directly; the difference is on a signed
log scale, white below the float32 resolution of the brightest pixel.
"""

from __future__ import annotations

import html
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from detsim.track.base.golden import GoldenCase, working_directory
from detsim.track.base.parity import CaseParity, case_parity
from detsim.track.base.status import Status
from detsim.track.base.timing import timed

WORDS = {Status.OK: "pass", Status.FAILED: "fail", Status.CRASHED: "error"}  # a case's Status in the report


def run_case(case: GoldenCase, *, dtype: torch.dtype, device: str, min_r: float) -> CaseParity:
    """Render one case with detsim, as the ``detsim`` command reads its arguments, and compare it with its
    reference; a case that cannot be read or rendered is CRASHED (the report goes on)."""
    from detsim import config_from_argv, prepare, render

    return case_parity(case, config_from_argv,
                       lambda config: timed(torch, lambda: render(prepare(config, device=device, dtype=dtype)), device),
                       min_r=min_r)


def case_result(outcome: CaseParity) -> dict:
    """The case result of an outcome (module docstring); the report adds pictures and traces to it."""
    case = outcome.case
    result: dict = {"id": case.id, "dir": str(case.folder), "args": list(case.args)}
    if outcome.config is not None:
        result["shape"] = [outcome.config.detector.spixels, outcome.config.detector.fpixels]
    if outcome.status is Status.CRASHED:
        return {**result, "status": WORDS[outcome.status], "error": outcome.error}
    return {**result, "seconds": round(outcome.seconds, 3), **outcome.metrics, "status": WORDS[outcome.status]}


def worst_pixel_trace(outcome: CaseParity) -> tuple[str, list[str]]:
    """detsim's trace of the worst pixel of a rendered case: (file name, its lines)."""
    from detsim.diagnostics.pixel_trace import trace_records

    s, f = outcome.metrics["worst"]["s"], outcome.metrics["worst"]["f"]
    with working_directory(outcome.case.folder):
        lines = [rec.line() for _, records in trace_records(outcome.config, [(s, f)]) for rec in records]
    return f"trace_s{s}_f{f}.log", lines


def next_steps(result: dict, trace: Path) -> list[str]:
    """What to do with the trace ``trace`` of a failing case: the reference's trace, then trace-diff."""
    s, f = result["worst"]["s"], result["worst"]["f"]
    return [
        f"detsim's trace of the worst pixel (s={s}, f={f}): {trace}",
        f"the reference program's trace of the same pixel: add the TRACE_C prints of docs/trace.md, run it "
        f"on {result['dir']}/args.txt for slow {s}, fast {f} and save its output as c.log",
        f"then: detsim-track trace-diff c.log {trace}",
    ]


# ---- pictures and pages

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def encode_png(pixels: np.ndarray) -> bytes:
    """A PNG file of an 8-bit image: ``pixels`` (H, W) grey or (H, W, 3) RGB uint8, row 0 at the top."""
    pixels = np.ascontiguousarray(pixels)
    if pixels.dtype != np.uint8 or pixels.ndim not in (2, 3) or (pixels.ndim == 3 and pixels.shape[2] != 3):
        raise ValueError(f"encode_png needs uint8 (H, W) or (H, W, 3), got {pixels.dtype} {pixels.shape}")
    height, width = pixels.shape[:2]
    if height == 0 or width == 0:
        raise ValueError("encode_png needs a non-empty image")
    colour_type = 0 if pixels.ndim == 2 else 2
    rows = pixels.reshape(height, -1)
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1).tobytes()  # filter 0 per row

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    return _PNG_SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


@dataclass(frozen=True)
class IntensityScale:
    """The log mapping shared by a reference picture and detsim's picture (photons)."""

    knee: float  # background level: values well below it stay nearly white
    vmax: float  # black from here up

    @classmethod
    def of(cls, reference: np.ndarray) -> "IntensityScale":
        """Knee at the median of the positive reference values (the background level), vmax at its maximum."""
        finite = reference[np.isfinite(reference)]
        positive = finite[finite > 0]
        if positive.size == 0:
            return cls(knee=1.0, vmax=0.0)
        vmax = float(positive.max())
        knee = max(float(np.median(positive)), vmax * 1e-9)
        return cls(knee=knee, vmax=vmax)


def intensity_picture(image: np.ndarray, scale: IntensityScale) -> np.ndarray:
    """(H, W) uint8 grey levels: 255 (white) at or below 0, 0 (black) at or above ``scale.vmax``."""
    v = np.nan_to_num(np.asarray(image, dtype=np.float64), nan=0.0, posinf=scale.vmax, neginf=0.0)
    if scale.vmax <= 0:
        return np.full(v.shape, 255, np.uint8)
    return _fade(np.clip(v, 0.0, None), scale.knee, scale.vmax)


def _fade(values: np.ndarray, knee: float, top: float) -> np.ndarray:
    """uint8 levels on a log scale bent at ``knee``: 255 (white) at 0, 0 (black) from ``top`` up."""
    level = np.log10(1.0 + values / knee) / np.log10(1.0 + top / knee)
    return (255.0 * (1.0 - np.clip(level, 0.0, 1.0)) + 0.5).astype(np.uint8)


def difference_floor(reference: np.ndarray, ours: np.ndarray) -> float:
    """The difference below which the map stays white: float32 resolution (2^-24) of the brightest pixel."""
    values = np.abs(np.concatenate([np.ravel(reference), np.ravel(ours)]).astype(np.float64))
    peak = float(values[np.isfinite(values)].max(initial=0.0))
    return peak * 2.0 ** -24 if peak > 0 else np.finfo(np.float64).tiny


def difference_picture(difference: np.ndarray, floor: float) -> tuple[np.ndarray, float]:
    """(H, W, 3) uint8 signed log map of ``difference`` (detsim - reference), and the full-colour level:
    ``log10(1 + |d|/floor) / log10(1 + max|d|/floor)``, red where d > 0, blue where d < 0, non-finite green."""
    d = np.asarray(difference, dtype=np.float64)
    finite = np.isfinite(d)
    top = float(np.abs(d[finite]).max(initial=0.0))
    rgb = np.full(d.shape + (3,), 255, np.uint8)
    if top > floor:
        fade = _fade(np.abs(np.where(finite, d, 0.0)), floor, top)
        rgb[..., 1] = fade
        rgb[..., 2] = np.where(d > 0, fade, 255)
        rgb[..., 0] = np.where(d < 0, fade, 255)
    rgb[~finite] = (0, 200, 0)
    return rgb, top


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _num(value, spec: str = ".4g") -> str:
    return "n/a" if value is None else format(value, spec)


def table_rows(results: list[dict]) -> list[list[str]]:
    """Cells of the summary table, one row per case, as plain text."""
    rows = []
    for r in results:
        worst = r.get("worst") or {}
        pixel = f"({worst['s']}, {worst['f']})" if worst else "n/a"
        values = f"{_num(worst.get('detsim'))} / {_num(worst.get('reference'))}" if worst else "n/a"
        one_minus_r = None if r.get("r") is None else 1.0 - r["r"]
        rows.append([r["id"], r["status"].upper(), _num(r.get("r"), ".8f"), _num(one_minus_r, ".1e"),
                     _num(r.get("max_abs")), _num(r.get("max_rel")),
                     pixel, values, _num(r.get("sum_ratio"), ".7f")])
    return rows


HEADER = ["case", "verdict", "r", "1-r", "max |Δ|", "max rel", "worst (s, f)", "detsim / reference", "sum ratio"]


def text_table(results: list[dict]) -> str:
    """The table printed by ``detsim-track parity``."""
    rows = [HEADER] + table_rows(results)
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def markdown(summary: dict) -> str:
    """summary.md: the run, the table, and per failing case the next step."""
    lines = [f"# Parity report {summary['stamp']}", "", _run_line(summary), "",
             "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for row in table_rows(summary["cases"]):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    lines.append("")
    for case in summary["cases"]:
        lines.append(f"## {case['id']}: {case['status'].upper()}")
        lines.append("")
        if case.get("error"):
            lines += [f"Error: `{case['error']}`", ""]
        if case.get("pictures"):
            p = case["pictures"]
            lines.append(f"![reference]({p['reference']}) ![detsim]({p['detsim']}) ![difference]({p['difference']})")
            lines.append("")
        hints = case.get("next_steps") or []
        lines += (["Next:", ""] + [f"- {h}" for h in hints] + [""]) if hints else []
    return "\n".join(lines) + "\n"


def _run_line(summary: dict) -> str:
    env = summary["environment"]
    counts = summary["counts"]
    commit = (env.get("commit") or "unknown")[:12] + (" (dirty)" if env.get("dirty") else "")
    return (f"{counts['pass']} pass, {counts['fail']} fail, {counts['error']} error of {counts['total']} cases; "
            f"threshold r >= {summary['min_r']}; dtype {summary['dtype']} on {summary['device']}; "
            f"detsim {commit}, torch {env.get('torch')}, Python {env.get('python')}; cases from {summary['cases_dir']}")


_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 90%; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
tr.fail td, tr.error td { background: #fde2e2; }
.verdict-pass { color: #176b1d; font-weight: bold; } \
.verdict-fail, .verdict-error { color: #b00020; font-weight: bold; }
figure { display: inline-block; vertical-align: top; margin: 0 1em 1em 0; }
figure img { width: 256px; image-rendering: pixelated; border: 1px solid #999; }
figcaption { font-size: 80%; max-width: 256px; }
code { background: #f3f3f3; padding: 1px 3px; }
"""

# Marks the page with how many pictures loaded, and flags a broken one in place.
_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0, broken = 0;
  for (var i = 0; i < imgs.length; i++) {
    if (imgs[i].complete && imgs[i].naturalWidth > 0) { ok++; }
    else { broken++; imgs[i].alt = 'missing picture: ' + imgs[i].getAttribute('src'); }
  }
  document.body.setAttribute('data-images-ok', ok);
  document.body.setAttribute('data-images-broken', broken);
});
"""


def index_html(summary: dict) -> str:
    """index.html: the table (linked to per-case sections) and, per case, the three pictures."""
    head = "".join(f"<th>{_e(h)}</th>" for h in HEADER)
    body_rows = []
    for case, row in zip(summary["cases"], table_rows(summary["cases"])):
        cells = [f'<td><a href="#{_e(case["id"])}">{_e(row[0])}</a></td>',
                 f'<td class="verdict-{_e(case["status"])}">{_e(row[1])}</td>']
        cells += [f"<td>{_e(c)}</td>" for c in row[2:]]
        body_rows.append(f'<tr class="{_e(case["status"])}">{"".join(cells)}</tr>')
    sections = [_case_section(case) for case in summary["cases"]]
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>detsim parity {_e(summary['stamp'])}</title><style>{_STYLE}</style>"
        f"<script>{_SCRIPT}</script></head>\n<body>\n"
        f"<h1>detsim parity report {_e(summary['stamp'])}</h1>\n<p>{_e(_run_line(summary))}</p>\n"
        f"<table><thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(body_rows) + "\n</tbody></table>\n"
        "<p>Pictures: reference and detsim on the same log grey scale (dark = bright). Difference = detsim − "
        "reference on a signed log scale: <span style=\"color:#c00\">red</span> where detsim is larger, "
        "<span style=\"color:#00c\">blue</span> where it is smaller, white below the floor given in each caption.</p>\n"
        + "\n".join(sections) + "\n</body></html>\n"
    )


def _case_section(case: dict) -> str:
    parts = [f'<h2 id="{_e(case["id"])}">{_e(case["id"])}: '
             f'<span class="verdict-{_e(case["status"])}">{_e(case["status"].upper())}</span></h2>']
    if case.get("args"):
        parts.append(f"<p><code>{_e(' '.join(case['args']))}</code></p>")
    if case.get("error"):
        parts.append(f"<p>Error: <code>{_e(case['error'])}</code></p>")
    pics = case.get("pictures")
    if pics:
        scale = case["scale"]
        captions = {
            "reference": f"reference (log scale, knee {scale['knee']:.3g}, black at {scale['vmax']:.3g})",
            "detsim": "detsim (same scale)",
            "difference": f"detsim − reference (white below {scale['floor']:.3g}, full colour at "
                          f"{scale['max_abs']:.3g})",
        }
        for key in ("reference", "detsim", "difference"):
            parts.append(f'<figure><a href="{_e(pics[key])}"><img src="{_e(pics[key])}" alt="{_e(key)}"></a>'
                         f"<figcaption>{_e(captions[key])}</figcaption></figure>")
    hints = case.get("next_steps") or []
    if hints:
        parts.append("<p>Next:</p><ul>" + "".join(f"<li>{_e(h)}</li>" for h in hints) + "</ul>")
    return "<section>" + "\n".join(parts) + "</section>"
