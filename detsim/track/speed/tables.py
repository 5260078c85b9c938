"""The speed report as text: the markdown table of rows (printed and in ``summary.md``), and the page.
Undefined cells are "–"; a failed run shows its error across the row."""

from __future__ import annotations

from detsim.track.base.workloads import Workload
from detsim.track.speed.jobs import WARM_UP_PIXELS

HEADER = ("| workload | program | scope | threads | dtype | wall s | CPU s | × nanoBragg.c wall | × nanoBragg.c CPU "
          "| pixel·steps/s | peak RSS MB | r |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")


def _maybe(value, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def machine_line(env: dict) -> str:
    """The CPU a table was measured on, which every speed table names: its model, torch's kernel level and the
    vector flags (docs/tracking.md, "Speed": which of detsim's speed moves with them)."""
    return (f"CPU: {env.get('cpu')}, {env.get('cpu_count')} logical CPUs; torch kernels: "
            f"{env.get('cpu_capability')}; vector flags: {env.get('cpu_flags') or 'none read'}")


def format_table(rows: list[dict]) -> str:
    lines = [HEADER]
    for r in rows:
        head = f"| {r['workload']} | {r['program']} | {r['scope']} | {r['threads']} | {r['dtype']} |"
        if r.get("error"):
            lines.append(f"{head} failed: {r['error']} | | | | | | |")
            continue
        lines.append(f"{head} {r['wall_s']:.3f} | {r['cpu_s']:.3f} | {_maybe(r.get('vs_nanobragg'), '.3g')} "
                     f"| {_maybe(r.get('vs_nanobragg_cpu'), '.3g')} | {r['rate']:.3g} "
                     f"| {_maybe(r.get('peak_rss_mb'), '.0f')} | {_maybe(r.get('r'), '.8f')} |")
    return "\n".join(lines)


def summary_markdown(rows: list[dict], table: str, workloads: list[Workload], *, threads: list[int], device: str,
                     env: dict) -> str:
    """``summary.md``: the conditions (``env`` is :func:`~detsim.track.runtime.process.environment`'s
    record), what the numbers mean, the table and the command lines."""
    against = sorted({r["r_against"] for r in rows if "r_against" in r})
    lines = [
        "# detsim speed", "",
        f"{machine_line(env)}; threads: {', '.join(map(str, threads))}; "
        f"device: {device}; detsim commit {(env.get('commit') or 'unknown')[:12]}"
        f"{' (dirty)' if env.get('dirty') else ''}.", "",
        "Every run is a fresh process. Scope `process`: the whole program as a user runs it, with "
        "`OMP_NUM_THREADS` set to the thread count (for `detsim`, interpreter start, torch import and the "
        "written files included). Scope `render`: detsim's prepare + render after import and a warm-up on a "
        f"{WARM_UP_PIXELS}² detector, torch's thread count set. wall s: wall-clock seconds, what a user waits; "
        "CPU s: user + system seconds of all threads together (on an idle machine, CPU ≈ threads × wall for a "
        "run that uses its threads). Best wall time of the repeats, with that repeat's CPU time. "
        "× nanoBragg.c: nanoBragg.c's seconds over the row's, at the same thread count. "
        f"r: Pearson r of the image against {', '.join(against) or 'nothing (no reference run)'}.", "",
        table, "", "## Command lines (nanoBragg.c and `detsim`, plus `-mode M -dtype D` for detsim)", "",
    ]
    for w in workloads:
        lines.append(f"* {w.name} ({w.pixels}², {w.steps} step{'' if w.steps == 1 else 's'} per pixel): "
                     f"`{' '.join(w.argv())}`")
    return "\n".join(lines) + "\n"
