"""The speed report as text: the markdown table of rows (printed and in ``summary.md``), and the page.

Rows are those of :mod:`.measure`. Undefined cells (no nanoBragg.c run, no memory figure, no r) are
shown as "–"; a failed run shows its error across the row.
"""

from __future__ import annotations

from detsim.track.base.workloads import Workload
from detsim.track.speed.render_job import WARM_UP_PIXELS

HEADER = ("| workload | program | dtype | seconds (best) | pixel·steps/s | × nanoBragg.c | peak RSS MB | r |\n"
          "|---|---|---|---|---|---|---|---|")


def format_table(rows: list[dict]) -> str:
    lines = [HEADER]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['workload']} | {r['program']} | {r['dtype']} | failed: {r['error']} | | | | |")
            continue
        ratio = f"{r['vs_nanobragg']:.2f}" if "vs_nanobragg" in r else "–"
        corr = f"{r['r']:.8f}" if r.get("r") is not None else "–"
        rss = f"{r['peak_rss_mb']:.0f}" if r.get("peak_rss_mb") is not None else "–"
        lines.append(f"| {r['workload']} | {r['program']} | {r['dtype']} | {r['seconds']:.3f} | {r['rate']:.3g} "
                     f"| {ratio} | {rss} | {corr} |")
    return "\n".join(lines)


def summary_markdown(rows: list[dict], table: str, workloads: list[Workload], *, threads: int, device: str,
                     env: dict) -> str:
    """``summary.md``: the conditions (``env`` is :func:`~detsim.track.runtime.process.environment`'s
    record), what the numbers mean, the table and the command lines."""
    against = sorted({r["r_against"] for r in rows if "r_against" in r})
    lines = [
        "# detsim speed", "",
        f"CPU: {env.get('cpu')}; torch threads and OMP_NUM_THREADS: {threads}; device: {device}; "
        f"detsim commit {(env.get('commit') or 'unknown')[:12]}{' (dirty)' if env.get('dirty') else ''}.", "",
        f"detsim: CPU seconds of prepare + render after import and a warm-up on a {WARM_UP_PIXELS}² detector "
        "(wall seconds on a GPU), best of the repeats; nanoBragg.c: CPU seconds of the whole process, best of the "
        "repeats. "
        f"r: Pearson r of the image against {', '.join(against) or 'nothing (no reference run)'}.", "",
        table, "", "## Command lines (nanoBragg.c and `detsim`, plus `-mode M -dtype D` for detsim)", "",
    ]
    for w in workloads:
        lines.append(f"* {w.name} ({w.pixels}², {w.steps} step{'' if w.steps == 1 else 's'} per pixel): "
                     f"`{' '.join(w.argv())}`")
    return "\n".join(lines) + "\n"
