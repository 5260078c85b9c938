"""The verdict on one screen, the default output (its rules: docs/tracking.md, "The verdict"): a line per
finding that needs action, at most :data:`WIDTH` characters, then one summary line; :mod:`.lines` has it in full.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Mapping

from detsim.track.verdict.analysis import Judgement, Report
from detsim.track.verdict.finding import CHANGED, CONFIRMATION_LABELS, NONDETERMINISTIC, REGRESSED, Finding, Status
from detsim.track.verdict.lines import change_text, commit_text, header, printable

WIDTH = 160  # the longest line of the default output
GROUP_AT = 3  # this many findings of one label and family between the same commits print as one line
SUBJECT_ROOM = 24  # characters a group line keeps for the subject before it lists fewer names
NOISE_LABEL = CONFIRMATION_LABELS[Status.NOISE]
ELLIPSIS = "…"


def cut(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the cut marked with an ellipsis."""
    return text if len(text) <= width else text[:max(width - 1, 0)] + ELLIPSIS


def fitted(head: str, sha: str, subjects: Mapping[str, str], *, prefix: str = "since", tail: str = "") -> str:
    """``<head> since <short sha> "<subject>"<tail>``, the subject (then the head) cut to fit :data:`WIDTH`."""
    where = f" {prefix} {sha[:8]}"
    head = cut(head, WIDTH - len(where) - len(tail))
    subject = printable(subjects.get(sha) or "")
    room = WIDTH - len(head) - len(where) - len(tail) - 3  # a space and two quotes
    if subject and room > 1:
        return f'{head}{where} "{cut(subject, room)}"{tail}'
    return head + where + tail


def short_params(params: str) -> str:
    """asv's parameter text with only the values: ``(workload='P1', dtype='float32')`` -> ``(P1, float32)``."""
    return re.sub(r"'([\w.@+-]*)'", r"\1", re.sub(r"\b[A-Za-z_]\w*=", "", params))


def short_name(record: Mapping) -> str:
    """A finding's golden case, or its benchmark without the module and its parameters' values only
    (``PathThroughput.track_ns_per_pixel_step(P1, eager, float32, cpu)``)."""
    if record.get("case"):
        return record["case"]
    module, _, rest = record["benchmark"].partition(".")
    name = rest if module.startswith("bench") and rest else record["benchmark"]
    return name + short_params(record.get("params") or "")


def case_tag(record: Mapping) -> str:
    """The shortest name of a finding in a list: a golden case's id up to its first ``_`` (unique, and what
    ``--case`` accepts), else its short name."""
    return record["case"].split("_", 1)[0] if record.get("case") else short_name(record)


def family_word(record: Mapping) -> str:
    return "image hash" if record["family"] == "determinism" else record["family"]


def _prefix(record: Mapping) -> str:
    return "since" if record["last_good"] else "at every recorded commit since"


def finding_line(record: Mapping, subjects: Mapping[str, str], tail: str = "") -> str:
    """One finding, ``tail`` at its end: the change whole, the name and then the subject cut to fit."""
    label, change = f"{record['label']} {family_word(record)} ", f": {change_text(record, 8)}"
    where = len(f" {_prefix(record)} 12345678")
    name = cut(short_name(record), WIDTH - len(label) - len(change) - where - len(tail))  # the change stays whole
    return fitted(label + name + change, record["first_bad"], subjects, prefix=_prefix(record), tail=tail)


def names_fitting(names: list[str], room: int, more: str = ", ... +{}") -> str:
    """``a01, b01, c01, ... +51``: as many of ``names`` as fit in ``room`` characters (one at least), the
    others counted in ``more``."""
    for shown in range(len(names), 0, -1):
        rest = len(names) - shown
        text = ", ".join(names[:shown]) + (more.format(rest) if rest else "")
        if len(text) <= room or shown == 1:
            return text
    return ""


def _group_head(records: list[Mapping], names: str) -> str:
    first, count = records[0], len(records)
    family = first["family"]
    if family == "reproducibility":
        cases = f"{count} golden cases ({names})" if count > 1 else first.get("case") or first["benchmark"]
        return f"{first['label']} images of {cases} differ between two runs ({first['axis']})"
    what = "golden cases" if all(r.get("case") for r in records) else "benchmarks"
    head = f"{first['label']} {family_word(first)} of {count} {what} ({names})"
    if family == "parity":
        return head + f", r down to {min(r['new_r'] for r in records):.9f}"
    ratios = [r["ratio"] for r in records if r["ratio"] is not None and family != "determinism"]
    if ratios:
        low, high = min(ratios), max(ratios)
        head += f", x{low:.2f}" + (f" to x{high:.2f}" if f"{high:.2f}" != f"{low:.2f}" else "")
    return head


def group_line(records: list[Mapping], subjects: Mapping[str, str]) -> str:
    """Findings of one label and family between the same commits as one line, naming the first that fit."""
    where = len(f" {_prefix(records[0])} 12345678") + SUBJECT_ROOM
    listed = names_fitting([case_tag(r) for r in records], WIDTH - len(_group_head(records, "")) - where)
    return fitted(_group_head(records, listed), records[0]["first_bad"], subjects, prefix=_prefix(records[0]))


def finding_lines(findings: Iterable[Finding], subjects: Mapping[str, str]) -> list[str]:
    """The lines of the findings that need action (a ``NOISE`` step needs none), in the verdict's order; the
    command that decides an undecided step at the end of its line, or, for several, on a line after them."""
    groups: dict[tuple, list[Mapping]] = {}
    for finding in findings:
        if finding.label != NOISE_LABEL:
            record = finding.record()
            key = (record["label"], record["family"], record.get("axis"), record["last_good"], record["first_bad"])
            groups.setdefault(key, []).append(record)
    undecided = [r for group in groups.values() for r in group if r.get("decide_command")]
    decide = "decide: " + "; ".join(sorted({r["decide_command"] for r in undecided}))
    lines, told = [], False
    for group in groups.values():
        if group[0]["family"] == "reproducibility" or len(group) >= GROUP_AT:
            lines.append(group_line(group, subjects))
            continue
        for record in group:
            line = finding_line(record, subjects)
            if len(undecided) == 1 and record.get("decide_command"):
                with_command = finding_line(record, subjects, f"; {decide}")
                told = with_command.startswith(line.split(" since ")[0])  # its facts uncut
                line = with_command if told else line
            lines.append(line)
    if undecided and not told:  # after the last undecided step
        last = max(i for i, line in enumerate(lines) if line.startswith(tuple(CONFIRMATION_LABELS.values())))
        lines.insert(last + 1, cut(decide + " (re-measures the undecided steps)", WIDTH))
    return lines


def unmeasured_lines(report: Report) -> list[str]:
    """The earlier commits that measured nothing, then what failed at the latest commit: nothing at all when it
    did not build, else the benchmarks."""
    at = report.latest[:8]
    earlier = []
    if report.unbuilt:
        head = (f"NOT MEASURED: {len(report.unbuilt)} earlier commit{'s' * (len(report.unbuilt) > 1)} measured "
                "nothing (did not build, or the suite did not import): ")
        names = [commit_text(c, report.subjects) for c in report.unbuilt]
        earlier = [cut(head + names_fitting(names, WIDTH - len(head), ", +{} more"), WIDTH)]
    if not report.built:
        return [*earlier, f"NOT MEASURED at {at}: nothing (the commit did not build, or its suite did not import)"]
    labels = list(report.unmeasured)
    if len(labels) < GROUP_AT:
        return [*earlier, *[cut(f"NOT MEASURED at {at}: {label} (it failed there)", WIDTH) for label in labels]]
    head = f"NOT MEASURED at {at}: {len(labels)} benchmarks failed there ("
    return [*earlier, head + names_fitting(labels, WIDTH - len(head) - 1) + ")"]


LABEL_ORDER = (REGRESSED, CHANGED, NONDETERMINISTIC, *CONFIRMATION_LABELS.values())  # the summary's order


def summary_line(report: Report) -> str:
    """What needs action, what was measured, what was noise, what was skipped and why (the largest group
    first, as many reasons as fit, the others counted), and the exit."""
    labels = Counter(finding.label for finding in report.regressions)
    act = [f"{labels[label]} {label.lower()}" for label in LABEL_ORDER if labels[label] and label != NOISE_LABEL]
    if report.unmeasured or not report.built:
        act.append(f"{len(report.unmeasured)} not measured")
    head = (f"summary: {', '.join(act) or 'nothing to act on'}; {report.measured} measured, {labels[NOISE_LABEL]} "
            f"noise, {report.skipped} skipped")
    tail = f"; exit {int(report.exit)}"
    if report.skips:
        head += ": " + names_fitting([s.text() for s in report.skips], WIDTH - len(head) - len(tail) - 2, ", +{} more")
    return head + tail


def _machine_screen(report: Report) -> list[str]:
    """One machine's verdict on one screen."""
    return [fitted(header(report), report.latest, report.subjects, prefix="latest"),
            *finding_lines(report.regressions, report.subjects), *unmeasured_lines(report), summary_line(report)]


def screen_lines(judgement: Judgement) -> list[str]:
    """Each machine's verdict on one screen, then, for several, which machines agree and the fleet's exit."""
    if judgement.single is not None:
        return _machine_screen(judgement.single)
    fleet = judgement
    lines = [line for report in fleet.reports.values() for line in _machine_screen(report)]
    lines += [cut(f"detsim-track: machine {m} not judged: {why}", WIDTH) for m, why in fleet.failed.items()]
    lines.append(cut(f"machines: {', '.join(list(fleet.reports) + list(fleet.failed))}", WIDTH))
    lines += [cut(line, WIDTH) for line in fleet.agreement]
    lines.append(f"fleet: exit {int(fleet.exit)} (the worst of the machines'; 2 wins)")
    return lines
