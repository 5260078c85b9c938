"""The status page's table: one row per family with the latest verdict, its colour and its links.

The families and what each colour means are docs/tracking.md's ("Reading the page"). A timing finding whose
confirmation says ``undecided`` or ``noise`` does not make a row red; only undecided steps make it grey
(never amber: nothing is known to be wrong).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from detsim.track.publish.links import graph_url
from detsim.track.judge.finding import Status

ROWS = ("timing", "memory", "cost", "parity", "determinism")
MERGED = {"throughput": "timing", "hash count": "determinism", "fingerprint": "determinism",
          "reproducibility": "determinism"}
# the determinism row's words by the labels of its findings, the first that applies (finding.FAMILY_LABELS)
DETERMINISM_WORDS = (("NONDETERMINISTIC", "not reproducible"), ("CHANGED", "changed"))
HIDDEN = ("reference", "machine class")  # the machine's own speed and class: context, not verdicts
GREEN, RED, AMBER, GREY = "ok", "regressed", "attention", "not measured"
UNDECIDED = (Status.SUSPECT, Status.UNDECIDED)  # timing confirmations of a step not re-measured
NOT_COUNTED = (*UNDECIDED, Status.NOISE)  # timing confirmations that do not make a row red


def row_family(family: str) -> str:
    return MERGED.get(family, family)


@dataclass
class Presence:
    """How a family's series stand at the latest commit."""

    measured: int = 0
    failed: list[str] = field(default_factory=list)  # series labels
    skipped: int = 0


def presence(families: Mapping[str, Mapping]) -> dict[str, Presence]:
    """Row family -> how its series stand at the latest commit, from the verdict's ``families`` (family ->
    ``measured``, ``failed`` labels, ``skipped``); the machine's own speed and class are left out."""
    out: dict[str, Presence] = {}
    for family, state in families.items():
        if family in HIDDEN:
            continue
        row = out.setdefault(row_family(family), Presence())
        row.measured += state["measured"]
        row.failed.extend(state["failed"])
        row.skipped += state["skipped"]
    return out


@dataclass(frozen=True)
class Item:
    text: str
    href: str | None = None
    commit: str | None = None  # the first bad commit it names
    evidence: str | None = None  # what decided the confirmation (shown on hover)


@dataclass(frozen=True)
class Row:
    family: str
    status: str  # GREEN, RED, AMBER or GREY
    verdict: str  # the words shown in the coloured cell
    summary: str
    items: tuple[Item, ...] = ()


def _num(value) -> str:
    return "?" if value is None else f"{value:.6g}"


def finding_text(record: Mapping) -> str:
    """One line for a finding of the verdict's JSON report."""
    family, label = record.get("family"), (record.get("case") or record.get("benchmark", "?") + record.get("params", ""))
    if family == "parity":
        old = record.get("old_r")
        return f"{label}: r {'?' if old is None else f'{old:.9f}'} -> {record.get('new_r', 0):.9f}"
    if family == "reproducibility":
        return f"{label}: two runs differ ({record.get('axis')})"
    if family == "determinism":
        old, new = record.get("old_sha256") or "?", record.get("new_sha256") or "?"
        return f"{label}: image sha256 {old[:12]} -> {new[:12]}"
    ratio = record.get("ratio")
    text = f"{label}: {_num(record.get('old'))} -> {_num(record.get('new'))} {record.get('unit', '')}".rstrip()
    return text + (f" (x{ratio:.2f})" if ratio else "")


def family_rows(report: Mapping, present: Mapping[str, Presence], benchmarks: Mapping[str, Mapping],
                note_not_comparable: str | None = None, machine: str | None = None) -> list[Row]:
    """The rows of the verdict ``report`` (``Report.as_json()``): :data:`ROWS` first, then any other
    family with series. ``note_not_comparable``: why determinism was not compared here, if it was not;
    ``machine``: links show that machine's series only (several machines on one history)."""
    findings: dict[str, list[Mapping]] = {}
    for record in report.get("regressions", []):
        findings.setdefault(row_family(record.get("family", "track")), []).append(record)
    extra = sorted((set(present) | set(findings)) - set(ROWS) - set(HIDDEN))
    rows = []
    for family in (*ROWS, *extra):
        here, found = present.get(family, Presence()), findings.get(family, [])
        items = []
        for record in found:
            confirmation = record.get("confirmation")
            text = finding_text(record) + (f" [{confirmation}]" if confirmation else "")
            href = graph_url(record.get("benchmark", ""), record.get("params", ""), benchmarks,
                             commits=(record.get("last_good"), record.get("first_bad") or ""), machine=machine) \
                if record.get("benchmark") else None
            items.append(Item(text, href, record.get("first_bad"), record.get("confirmation_evidence")))
        for label in here.failed:
            name, _, params = label.partition("(")
            items.append(Item(f"{label}: failed at the latest commit",
                              graph_url(name, "(" + params if params else "", benchmarks, machine=machine)))
        counted = [r for r in found if r.get("confirmation") not in NOT_COUNTED]
        undecided = [r for r in found if r.get("confirmation") in UNDECIDED]
        if counted and family == "determinism":
            status = RED
            labels = [r.get("label") for r in counted]
            verdict = next(word for label, word in (*DETERMINISM_WORDS, (None, "regressed"))
                           if label is None or label in labels)
            summary = ", ".join(f"{labels.count(label)} {word}" for label, word in DETERMINISM_WORDS if label in labels) \
                or f"{len(counted)} regressed"
        elif counted:
            status, verdict = RED, "regressed"
            summary = f"{len(counted)} regressed" + (f", {len(undecided)} undecided" if undecided else "")
        elif here.failed or (family == "determinism" and here.skipped and not here.measured):
            status = AMBER
            if here.failed:
                verdict, summary = "not measured", f"{len(here.failed)} failed at the latest commit"
            else:
                verdict, summary = "not comparable", note_not_comparable or \
                    f"{here.skipped} skipped at the latest commit (not comparable on this machine)"
            if here.measured:
                summary += f"; {here.measured} measured"
        elif undecided:
            status, verdict = GREY, "undecided"
            command = undecided[0].get("decide_command")
            summary = f"{len(undecided)} undecided" + (f" (`{command}` decides)" if command else "") + \
                (f"; {here.measured} measured" if here.measured else "")
        elif not here.measured:
            status, verdict = GREY, "not measured"
            summary = f"{here.skipped} skipped at the latest commit" if here.skipped else "no benchmark of this family recorded"
        else:
            status, verdict = GREEN, "ok"
            summary = f"{here.measured} measured, none regressed" + (f" ({here.skipped} skipped)" if here.skipped else "")
            noise = len(found) - len(counted) - len(undecided)
            if noise:
                summary += f"; {noise} dismissed as noise"
        rows.append(Row(family, status, verdict, summary, tuple(items)))
    return rows
