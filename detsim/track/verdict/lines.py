"""The verdict as text, in full (``-v`` and the report file; :mod:`.screen` has the default, shorter form): a
line per finding from its JSON record, so the text and ``--json`` always agree, its label first and the
evidence that decided last; then what was not measured or skipped, the notes and a summary.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Mapping

from detsim.track.verdict.analysis import Judgement, Report
from detsim.track.verdict.finding import CHANGED, NONDETERMINISTIC

GROUP_HASHES = 5  # more image-hash findings than this at one commit print as one line


def fmt(value: float | None, unit: str) -> str:
    """A value in its unit, scaled for reading (seconds to ns, bytes in MiB)."""
    if value is None:
        return "?"
    if unit == "seconds":
        for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {name}"
        return f"{value * 1e9:.3g} ns"
    if unit == "bytes":
        return f"{value / 2**20:.1f} MiB"
    if unit == "instructions":  # counts: every digit is meaningful (a 2 % rise is a regression)
        return f"{value:,.0f} instructions"
    return f"{value:.4g} {unit}".strip()


CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0, DEL and C1: never written raw to a terminal or a text report


def printable(text: str) -> str:
    """``text`` with its control characters written as escapes (ESC as ``\\x1b``): a commit subject cannot
    move the cursor, recolour, ring or clear the terminal that prints it."""
    return CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", text)


def commit_text(sha: str, subjects: Mapping[str, str]) -> str:
    subject = printable(subjects.get(sha) or "")
    return f"{sha[:8]}" + (f' "{subject}"' if subject else "")


def where_text(record: Mapping, subjects: Mapping[str, str]) -> str:
    """Since which commit a finding holds."""
    if record["last_good"] is None:
        return f"at every recorded commit since {commit_text(record['first_bad'], subjects)}"
    return f"since {commit_text(record['first_bad'], subjects)}, last good {commit_text(record['last_good'], subjects)}"


def change_text(r: Mapping, sha_digits: int | None = None) -> str:
    """Old -> new in the family's terms (image hashes cut to ``sha_digits``)."""
    if r["family"] == "parity":
        old = "?" if r["old_r"] is None else f"{r['old_r']:.9f}"
        return f"r {old} -> {r['new_r']:.9f}"
    if r["family"] == "determinism":
        return f"{(r['old_sha256'] or '?')[:sha_digits]} -> {(r['new_sha256'] or '?')[:sha_digits]}"
    ratio = "" if r["ratio"] is None else f", x{r['ratio']:.2f}"
    return f"{fmt(r['old'], r['unit'])} -> {fmt(r['new'], r['unit'])}{ratio}"


def finding_text(r: Mapping) -> str:
    """What changed, in the family's own terms (the commits are added by the caller)."""
    if r["family"] == "parity":
        return f"parity {r['case']}: {change_text(r)} (1 - r {r['old']} -> {r['new']})"
    if r["family"] == "reproducibility":
        return f"images of {r.get('case')} differ between two runs ({r['axis']}: {r['runs']})"
    if r["family"] == "determinism":
        again = f"; changed again at {', '.join(c[:8] for c in r['changed_again_at'])}" if r["changed_again_at"] else ""
        note = f" ({r['note']})" if r.get("note") else ""
        return f"image hash {r.get('case') or r['benchmark']}: {change_text(r)}{again}{note}"
    extra = [f"rank test p={r['rank_test_p']:.2g}"] if "rank_test_p" in r else []
    extra += [r[key] for key in ("evidence", "confirmation_evidence") if key in r]  # a count's, a timing step's
    evidence = f" ({', '.join(extra)})" if extra else ""
    return f"{r['family']} {r['benchmark']}{r['params']}: {change_text(r)}{evidence}"


def _cases(group: list[Mapping]) -> str:
    return ", ".join(r.get("case") or r["benchmark"] for r in group)


def regression_lines(records: list[Mapping], subjects: Mapping[str, str]) -> list[str]:
    """One line per finding, its label first; the non-reproducible cases of one axis and commits as one
    line, and large groups of image-hash findings of the same commits as one."""
    irreproducible: dict[tuple, list[Mapping]] = {}
    hashes: dict[tuple, list[Mapping]] = {}
    for r in records:
        if r["family"] == "reproducibility":
            irreproducible.setdefault((r["axis"], r["first_bad"], r["last_good"]), []).append(r)
        elif r["family"] == "determinism":
            hashes.setdefault((r["first_bad"], r["last_good"]), []).append(r)
    lines = [f"{NONDETERMINISTIC} images of {len(group)} golden case{'s' * (len(group) > 1)} ({_cases(group)}) "
             f"differ between two runs ({axis}: {group[0]['runs']}), {where_text(group[0], subjects)}"
             for (axis, _, _), group in irreproducible.items()]
    lines += [f"{CHANGED} image hash of {len(group)} golden cases ({_cases(group)}), "
              f"{where_text(group[0], subjects)} (sha256s with --json)"
              for group in hashes.values() if len(group) > GROUP_HASHES]
    lines += [f"{r['label']} {finding_text(r)}, {where_text(r, subjects)}" for r in records
              if r["family"] != "reproducibility"
              and (r["family"] != "determinism" or len(hashes[(r["first_bad"], r["last_good"])]) <= GROUP_HASHES)]
    return lines


def summary_line(report: Report) -> str:
    verdicts = [f for f in report.regressions if f.is_verdict]
    summary = ", ".join(f"{k} {v}" for k, v in sorted(Counter(f.series.family for f in verdicts).items()))
    steps = Counter(f.detail.get("confirmation") for f in report.regressions if not f.is_verdict)
    unconfirmed = "".join(f", {n} timing step{'s' * (n > 1)} {status}" for status, n in sorted(steps.items()))
    return (f"summary: {len(verdicts)} regressed{' (' + summary + ')' if summary else ''}{unconfirmed}, "
            f"{len(report.unmeasured)} not measured, {report.skipped} skipped at the latest commit; "
            f"exit {int(report.exit)}")


def header(report: Report) -> str:
    """``detsim-track: machine M, N commits recorded (first .. last),``: the latest commit follows."""
    return (f"detsim-track: machine {report.machine}, {len(report.commits)} commits recorded "
            f"({report.commits[0][:8]} .. {report.commits[-1][:8]}),")


def _machine_lines(report: Report) -> list[str]:
    """One machine's whole verdict, line by line."""
    lines = [f"{header(report)} latest {commit_text(report.latest, report.subjects)}"]
    lines += regression_lines([f.record() for f in report.regressions], report.subjects)
    if report.built:
        lines += [f"NOT MEASURED at {report.latest[:8]}: {label}" for label in report.unmeasured]
    lines += [f"skipped at {report.latest[:8]}: {skipped.text()} (the benchmarks in --json)" for skipped in report.skips]
    lines += [f"note: {note}" for note in report.notes]
    lines.append(summary_line(report))
    return lines


def report_lines(judgement: Judgement) -> list[str]:
    """The whole verdict: each machine's, then, for several, which machines agree, the cross-machine facts and
    the fleet's exit."""
    if judgement.single is not None:
        return _machine_lines(judgement.single)
    fleet = judgement
    lines = [line for report in fleet.reports.values() for line in [*_machine_lines(report), ""]]
    lines += [f"detsim-track: machine {m} not judged: {why}" for m, why in fleet.failed.items()]
    lines.append(f"machines: {', '.join(list(fleet.reports) + list(fleet.failed))}")
    lines += fleet.agreement
    lines += [f"note: {fact}" for fact in fleet.facts]
    lines.append(f"fleet: exit {int(fleet.exit)} (the worst of the machines'; 2 wins)")
    return lines
