"""The verdict as text, each line drawn from a finding's JSON record, so the text and ``--json`` always agree
(its rules: docs/tracking.md, "The verdict"): in full (``-v`` and ``verdict.txt``, :func:`report_lines`), a line
per finding, its label first and the evidence that decided last, then what was not measured or skipped, the notes
and a summary; and on one screen, the default output (:func:`screen_lines`), a line per finding that needs action,
at most :data:`WIDTH` characters, then one summary line.
"""

from __future__ import annotations

import enum
import re
from collections import Counter
from typing import Iterable, Mapping

from detsim.track.judge.finding import CHANGED, CONFIRMATION_LABELS, NONDETERMINISTIC, REGRESSED, REMEASURED, Finding, \
    Confirmation
from detsim.track.base.device_costs import COUNT_UNITS
from detsim.track.judge.benchmarks import COST_UNIT
from detsim.track.judge.family import Family
from detsim.track.judge.verdict import Judgement, Report
from detsim.track.judge.confirm import REMEASURES

GROUP_HASHES = 5  # more image-hash findings than this at one commit print as one line (in full)
WIDTH = 160  # the longest line of the default output
GROUP_AT = 3  # this many findings of one label and family between the same commits print as one line (on screen)
SUBJECT_ROOM = 24  # characters a group line keeps for the subject before it lists fewer names
NOISE_LABEL = CONFIRMATION_LABELS[Confirmation.NOISE]
ELLIPSIS = "…"


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
    if unit == COST_UNIT:  # counts: every digit is meaningful (a 2 % rise is a regression)
        return f"{value:,.0f} instructions"
    if unit in COUNT_UNITS:  # launches, copies, syncs, registers, local bytes: whole numbers
        return f"{value:,.0f} {unit}"
    return f"{value:.4g} {unit}".strip()


CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0, DEL and C1: never written raw to a terminal or a text report


def printable(text: str) -> str:
    """``text`` with its control characters written as escapes (ESC as ``\\x1b``): a commit subject cannot
    move the cursor, recolour, ring or clear the terminal that prints it."""
    return CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", text)


def commit_text(sha: str, subjects: Mapping[str, str]) -> str:
    subject = printable(subjects.get(sha) or "")
    return f"{sha[:8]}" + (f' "{subject}"' if subject else "")


def since(record: Mapping) -> str:
    """The words before a finding's first bad commit: since when it holds."""
    return "since" if record["last_good"] else "at every recorded commit since"


def where_text(record: Mapping, subjects: Mapping[str, str]) -> str:
    """Since which commit a finding holds (and the last good one, where there is one)."""
    last_good = f", last good {commit_text(record['last_good'], subjects)}" if record["last_good"] else ""
    return f"{since(record)} {commit_text(record['first_bad'], subjects)}{last_good}"


def change_text(r: Mapping, sha_digits: int | None = None) -> str:
    """Old -> new in the family's terms (image hashes cut to ``sha_digits``)."""
    if r["family"] == Family.PARITY:
        old = "?" if r["old_r"] is None else f"{r['old_r']:.9f}"
        return f"r {old} -> {r['new_r']:.9f}"
    if r["family"] == Family.IMAGE_CHANGED:
        return f"{(r['old_sha256'] or '?')[:sha_digits]} -> {(r['new_sha256'] or '?')[:sha_digits]}"
    ratio = "" if r["ratio"] is None else f", x{r['ratio']:.2f}"
    return f"{fmt(r['old'], r['unit'])} -> {fmt(r['new'], r['unit'])}{ratio}"


class View(enum.Enum):
    """Where a finding's line is shown (:func:`finding_line`)."""

    SCREEN = "screen"  # the terminal and verdict.md: the short name, fitted to WIDTH with the subject
    FULL = "full"  # verdict.txt and asv's feed: the whole name, the evidence, since when and the last good
    GATE = "gate"  # the bench gate: the evidence, against the baseline's commit
    PAGE = "page"  # an item of the status page's family row: the name and the change only


SHA_DIGITS = {View.SCREEN: 8, View.FULL: None, View.GATE: 16, View.PAGE: 12}  # of an image sha256 on a line


def _evidence(r: Mapping, view: View) -> str:
    """What decided a finding, at the end of its line in full and in the gate."""
    if view is View.GATE:
        return f" ({r['evidence']})" if r.get("evidence") else ""
    if r["family"] == Family.PARITY:
        return f" (1 - r {r['old']} -> {r['new']})"
    if r["family"] == Family.IMAGE_CHANGED:
        again = f"; changed again at {', '.join(c[:8] for c in r['changed_again_at'])}" if r["changed_again_at"] else ""
        return again + (f" ({r['note']})" if r.get("note") else "")
    extra = [f"rank test p={r['rank_test_p']:.2g}"] if "rank_test_p" in r else []
    extra += [r[key] for key in ("evidence", "confirmation_evidence") if key in r]  # a count's, a timing step's
    return f" ({', '.join(extra)})" if extra else ""


def _name(r: Mapping, view: View) -> str:
    """A finding's name on a line of ``view``."""
    if view is View.SCREEN:
        return short_name(r)
    if view is View.GATE:
        return r["benchmark"]
    if view is View.PAGE:
        return r.get("case") or r["benchmark"] + r["params"]
    by_case = r["family"] in (Family.PARITY, Family.IMAGE_CHANGED, Family.RUNS_DIFFER)  # in full
    return r.get("case") or r["benchmark"] if by_case else r["benchmark"] + r["params"]


def finding_line(finding: Finding | Mapping, subjects: Mapping[str, str] | None = None, *, view: View = View.SCREEN,
                 tail: str = "") -> str:
    """A finding's line (a :class:`Finding` or its JSON record), the one writer of every view's: ``LABEL FAMILY
    NAME: CHANGE (EVIDENCE), WHERE``, as ``view`` shows it (the page's items leave out the label and family, under
    their family's row; on screen the change stays whole, the name and then the subject are cut to fit
    :data:`WIDTH`, ``tail`` at its end)."""
    r = finding.to_dict() if isinstance(finding, Finding) else finding
    name, digits = _name(r, view), SHA_DIGITS[view]
    if view is View.PAGE:
        if r["family"] == Family.RUNS_DIFFER:
            return f"{name}: two runs differ ({r.get('axis')})"
        if r["family"] in (Family.PARITY, Family.IMAGE_CHANGED):
            return f"{name}: {'image sha256 ' * (r['family'] == Family.IMAGE_CHANGED)}{change_text(r, digits)}"
        number = lambda value: "?" if value is None else f"{value:.6g}"  # noqa: E731
        text = f"{name}: {number(r.get('old'))} -> {number(r.get('new'))} {r.get('unit', '')}".rstrip()
        return text + (f" (x{r['ratio']:.2f})" if r.get("ratio") else "")
    if r["family"] == Family.RUNS_DIFFER:  # within the gate's run: no baseline involved
        if view is View.GATE:
            return f"{r['label']} images of {name} differ between {r['runs']}{_evidence(r, view)}"
        return (f"{r['label']} images of {name} differ between two runs ({r['axis']}: {r['runs']}), "
                f"{where_text(r, subjects or {})}")
    head, change = f"{r['label']} {family_word(r)} ", f": {change_text(r, digits)}"
    if view is View.GATE:
        where = f"the baseline of {r['last_good'][:8]}" if r["last_good"] else "the baseline"
        return f"{head}{name}{change}{_evidence(r, view)}, against {where}"
    if view is View.FULL:
        return f"{head}{name}{change}{_evidence(r, view)}, {where_text(r, subjects or {})}"
    room = WIDTH - len(head) - len(change) - len(f" {since(r)} 12345678") - len(tail)  # the change stays whole
    return fitted(head + cut(name, room) + change, r["first_bad"], subjects or {}, prefix=since(r), tail=tail)


def _cases(group: list[Mapping]) -> str:
    return ", ".join(r.get("case") or r["benchmark"] for r in group)


def regression_lines(records: list[Mapping], subjects: Mapping[str, str]) -> list[str]:
    """One line per finding, its label first; the non-reproducible cases of one axis and commits as one
    line, and large groups of image-hash findings of the same commits as one."""
    irreproducible: dict[tuple, list[Mapping]] = {}
    hashes: dict[tuple, list[Mapping]] = {}
    for r in records:
        if r["family"] == Family.RUNS_DIFFER:
            irreproducible.setdefault((r["axis"], r["first_bad"], r["last_good"]), []).append(r)
        elif r["family"] == Family.IMAGE_CHANGED:
            hashes.setdefault((r["first_bad"], r["last_good"]), []).append(r)
    lines = [f"{NONDETERMINISTIC} images of {len(group)} golden case{'s' * (len(group) > 1)} ({_cases(group)}) "
             f"differ between two runs ({axis}: {group[0]['runs']}), {where_text(group[0], subjects)}"
             for (axis, _, _), group in irreproducible.items()]
    lines += [f"{CHANGED} image hash of {len(group)} golden cases ({_cases(group)}), "
              f"{where_text(group[0], subjects)} (sha256s with --json)"
              for group in hashes.values() if len(group) > GROUP_HASHES]
    lines += [finding_line(r, subjects, view=View.FULL) for r in records
              if r["family"] != Family.RUNS_DIFFER and (r["family"] != Family.IMAGE_CHANGED
                                                         or len(hashes[(r["first_bad"], r["last_good"])]) <= GROUP_HASHES)]
    return lines


def full_summary_line(report: Report) -> str:
    """The full report's summary: the screen's (:func:`summary_line`, the same counts), with the findings that
    need action counted by family before the exit."""
    acting = [f for f in report.regressions if f.label != NOISE_LABEL]
    families = ", ".join(f"{k} {v}" for k, v in sorted(Counter(f.series.family for f in acting).items()))
    head, _, code = summary_line(report).rpartition("; exit ")
    return f"{head}{'; by family: ' + families if families else ''}; exit {code}"


def header(report: Report) -> str:
    """``detsim-track: machine M, N commits recorded (first .. last),``: the latest commit follows (a target's
    recording also says how many of them took a twin's results)."""
    reused = "" if report.reused is None else f"; {len(report.reused)} reused a twin's results"
    return (f"detsim-track: machine {report.machine}, {len(report.commits)} commits recorded "
            f"({report.commits[0][:8]} .. {report.commits[-1][:8]}{reused}),")


def _machine_lines(report: Report) -> list[str]:
    """One machine's whole verdict, line by line."""
    lines = [f"{header(report)} latest {commit_text(report.latest, report.subjects)}"]
    lines += regression_lines([f.to_dict() for f in report.regressions], report.subjects)
    if report.built:
        lines += [f"NOT MEASURED at {report.latest[:8]}: {label}" for label in report.unmeasured]
    lines += [f"skipped at {report.latest[:8]}: {s.text()} (the benchmarks in --json)" for s in report.skips]
    lines += [f"note: {note}" for note in report.notes]
    lines += event_lines(report, limit=None)
    lines.append(full_summary_line(report))
    return lines


def report_lines(judgement: Judgement) -> list[str]:
    """The whole verdict: each machine's, then, for several, which machines agree, the cross-machine facts and
    the fleet's exit."""
    return _judgement_lines(judgement, _machine_lines, full=True)


def _judgement_lines(judgement: Judgement, machine_lines, *, full: bool) -> list[str]:
    """The only machine's ``machine_lines``, or each machine's (in ``full``, a blank line after each), then the
    machines not judged and which agree (cut to the screen, unless ``full``), the facts (in full) and the exit."""
    if judgement.single is not None:
        return machine_lines(judgement.single)
    lines = []
    for report in judgement.reports.values():
        lines += [*machine_lines(report), ""] if full else machine_lines(report)
    tail = [*(f"detsim-track: machine {m} not judged: {why}" for m, why in judgement.failed.items()),
            f"machines: {', '.join([*judgement.reports, *judgement.failed])}", *judgement.agreement]
    if full:
        lines += [*tail, *(f"note: {fact}" for fact in judgement.facts)]
    else:
        lines += [cut(line, WIDTH) for line in tail]
    return [*lines, f"fleet: exit {int(judgement.exit)} (the worst of the machines'; 2 wins)"]


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
    return "image hash" if record["family"] == Family.IMAGE_CHANGED else record["family"]


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
    if family == Family.RUNS_DIFFER:
        cases = f"{count} golden cases ({names})" if count > 1 else first.get("case") or first["benchmark"]
        return f"{first['label']} images of {cases} differ between two runs ({first['axis']})"
    what = "golden cases" if all(r.get("case") for r in records) else "benchmarks"
    head = f"{first['label']} {family_word(first)} of {count} {what} ({names})"
    if family == Family.PARITY:
        return head + f", r down to {min(r['new_r'] for r in records):.9f}"
    ratios = [r["ratio"] for r in records if r["ratio"] is not None and family != Family.IMAGE_CHANGED]
    if ratios:
        low, high = min(ratios), max(ratios)
        head += f", x{low:.2f}" + (f" to x{high:.2f}" if f"{high:.2f}" != f"{low:.2f}" else "")
    return head


def group_line(records: list[Mapping], subjects: Mapping[str, str]) -> str:
    """Findings of one label and family between the same commits as one line, naming the first that fit."""
    where = len(f" {since(records[0])} 12345678") + SUBJECT_ROOM
    listed = names_fitting([case_tag(r) for r in records], WIDTH - len(_group_head(records, "")) - where)
    return fitted(_group_head(records, listed), records[0]["first_bad"], subjects, prefix=since(records[0]))


def finding_lines(findings: Iterable[Finding], subjects: Mapping[str, str]) -> list[str]:
    """The lines of the findings that need action (a ``NOISE`` step needs none), in the verdict's order; the
    command that decides an undecided step at the end of its line, or, for several, on a line after them."""
    groups: dict[tuple, list[Mapping]] = {}
    for finding in findings:
        if finding.label != NOISE_LABEL:
            record = finding.to_dict()
            key = (record["label"], record["family"], record.get("axis"), record["last_good"], record["first_bad"])
            groups.setdefault(key, []).append(record)
    undecided = [r for group in groups.values() for r in group if r.get("decide_command")]
    commands = sorted({r["decide_command"] for r in undecided})  # one: the run's machine and --repo
    decide = "decide: " + "; ".join(commands)
    lines, told = [], False
    for group in groups.values():
        if group[0]["family"] == Family.RUNS_DIFFER or len(group) >= GROUP_AT:
            lines.append(group_line(group, subjects))
            continue
        for record in group:
            line = finding_line(record, subjects)
            if len(undecided) == 1 and record.get("decide_command"):
                with_command = finding_line(record, subjects, tail=f"; {decide}")
                told = with_command.startswith(line.split(" since ")[0])  # its facts uncut
                line = with_command if told else line
            lines.append(line)
    if undecided and not told:  # after the last undecided step
        last = max(i for i, line in enumerate(lines) if line.startswith(tuple(CONFIRMATION_LABELS.values())))
        lines[last + 1:last + 1] = [_decide_line(command) for command in commands]
    return lines


def _decide_line(command: str) -> str:
    """``decide: COMMAND (what it does)``; what it does left out where the line would not fit, the command
    never cut (it is copied and run: its ``--repo`` may be a long path)."""
    line = f"decide: {command} ({REMEASURES})"
    return line if len(line) <= WIDTH else f"decide: {command}"


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


def to_act(findings: Iterable[Finding], unmeasured: int, failed: bool) -> str:
    """What needs action, as a summary of either judge says it: ``1 regressed, 2 changed, 3 not measured`` (by
    label in :data:`LABEL_ORDER`; noise needs none; the unmeasured count where ``failed``)."""
    labels = Counter(finding.label for finding in findings)
    act = [f"{labels[label]} {label.lower()}" for label in LABEL_ORDER if labels[label] and label != NOISE_LABEL]
    return ", ".join(act + [f"{unmeasured} not measured"] * failed) or "nothing to act on"


def summary_line(report: Report) -> str:
    """What needs action, what was measured, what was noise, what was skipped and why (the largest group
    first, as many reasons as fit, the others counted), and the exit."""
    act = to_act(report.regressions, len(report.unmeasured), bool(report.unmeasured or not report.built))
    noise = sum(finding.label == NOISE_LABEL for finding in report.regressions)
    head = f"summary: {act}; {report.measured} measured, {noise} noise, {report.skipped} skipped"
    tail = f"; exit {int(report.exit)}"
    if report.skips:
        head += ": " + names_fitting([s.text() for s in report.skips], WIDTH - len(head) - len(tail) - 2, ", +{} more")
    return head + tail


def _machine_screen(report: Report) -> list[str]:
    """One machine's verdict on one screen."""
    return [fitted(header(report), report.latest, report.subjects, prefix="latest"),
            *finding_lines(report.regressions, report.subjects), *unmeasured_lines(report), *event_lines(report),
            summary_line(report)]


def screen_lines(judgement: Judgement) -> list[str]:
    """Each machine's verdict on one screen, then, for several, which machines agree and the fleet's exit."""
    return _judgement_lines(judgement, _machine_screen, full=False)


FEW_COMMITS = 8  # a history of more commits than this is told as its events too (a short one's findings say it all)
EVENT_LINES = 12  # events listed on one screen, the latest kept


def _step_word(record: Mapping) -> str:
    """An event's step, a timing step's confirmation with it (the history alone never confirms one; re-measuring
    confirms it, explains it as noise, or leaves it undecided)."""
    if record["family"] in REMEASURED and record["step"] == "regressed" and record["label"] == REGRESSED:
        return "regressed (confirmed)"
    words = {CONFIRMATION_LABELS[c]: f" ({c.value})" for c in (Confirmation.SUSPECT, Confirmation.NOISE,
                                                                Confirmation.UNDECIDED)}
    return record["step"] + words.get(record["label"], "")


def event_text(record: Mapping) -> str:
    """One event, from its JSON record: ``<commit> <step> <family> <name>: <old> -> <new> (after <commit>)``."""
    head = f"{record['commit'][:8]} {_step_word(record)} {family_word(record)} {short_name(record)}: "
    if record["new"] is None:
        return head + f"failed (measured {fmt(record['old'], record['unit'])} at {record['before'][:8]})"
    if record["old"] is None:
        return head + f"measured again, {fmt(record['new'], record['unit'])}"
    if record.get("old_sha256") or record.get("new_sha256"):
        change = f"{(record.get('old_sha256') or '?')[:8]} -> {(record.get('new_sha256') or '?')[:8]}"
    elif record["unit"] in ("seconds", "bytes", COST_UNIT) or record["unit"].endswith("/s"):
        change = f"{fmt(record['old'], record['unit'])} -> {fmt(record['new'], record['unit'])}"
    else:  # 1 - r, counts, 0/1 tracks: the unit first
        change = f"{record['unit']} {record['old']:.3g} -> {record['new']:.3g}"
    return head + change + (f" (after {record['before'][:8]})" if record.get("before") else "")


def _event_groups(records: list[Mapping]) -> list[str]:
    """One line per event; :data:`GROUP_AT` or more of one step at one commit (a commit that broke every
    benchmark) as one line naming them."""
    groups: dict[tuple, list[Mapping]] = {}
    for r in records:
        groups.setdefault((r["commit"], _step_word(r)), []).append(r)
    lines = []
    for (commit, step), group in groups.items():
        if len(group) < GROUP_AT:
            lines += [event_text(r) for r in group]
            continue
        head = f"{commit[:8]} {step}: {len(group)} series ("
        named = [short_name(r) if len({g["family"] for g in group}) == 1 else f"{family_word(r)} {short_name(r)}"
                 for r in group]  # a case named once per family it stepped in
        lines.append(head + names_fitting(named, WIDTH - len(head) - 3) + ")")
    return lines


def _suspect_step(record: Mapping) -> bool:
    """Whether an event is a timing step the history alone cannot decide: a suspect, or a suspect's return
    within the rule (a fixed timing or throughput series that was measured before)."""
    if record["step"] == "fixed":
        return record["family"] in REMEASURED and record["old"] is not None
    return record["label"] in (CONFIRMATION_LABELS[Confirmation.SUSPECT], CONFIRMATION_LABELS[Confirmation.UNDECIDED])


def suspect_line(records: list[Mapping]) -> str | None:
    """The suspect timing steps among ``records`` (:func:`_suspect_step`) in one line: how many, of which step,
    at how many commits; None without any."""
    suspects = [r for r in records if _suspect_step(r)]
    if not suspects:
        return None
    steps = Counter("back within the rule" if r["step"] == "fixed" else r["step"] for r in suspects)
    commits = len({r["commit"] for r in suspects})
    return (f"{len(suspects)} suspect timing step{'s' * (len(suspects) != 1)} at {commits} commit"
            f"{'s' * (commits != 1)} ({', '.join(f'{n} {step}' for step, n in steps.items())}): not re-measured "
            "here, each in verdict.txt and verdict.json")


def event_lines(report: Report, limit: int | None = EVENT_LINES, *, always: bool = False) -> list[str]:
    """The history's events (:mod:`.events`), where it has more than :data:`FEW_COMMITS` commits (or
    ``always``): a head line, then a line per event (:func:`_event_groups`). In full (``limit`` None) every
    event in commit order; on one screen the decided events (at most ``limit`` lines, the latest), then the
    suspect timing steps in one line (:func:`suspect_line`)."""
    if not (always or len(report.commits) > FEW_COMMITS):
        return []
    records = [e.to_dict() for e in report.events]
    lines = _event_groups([r for r in records if limit is None or not _suspect_step(r)])
    shown = lines if limit is None or len(lines) <= limit else lines[len(lines) - limit:]
    tail = [] if limit is None else [line for line in [suspect_line(records)] if line]
    more = f"; the {len(lines) - len(shown)} earlier lines in verdict.txt" if len(shown) < len(lines) else ""
    count = len(report.events)
    head = f"events: {count} step{'s' * (count != 1)} over {len(report.commits)} commits{more}"
    return [head, *(cut("  " + line, WIDTH) for line in [*shown, *tail])]
