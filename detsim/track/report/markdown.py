"""``verdict.md``: the stored verdict in Markdown, for where CI users look (GitHub's job summary).

Input: the verdict (a :class:`~detsim.track.judge.verdict.Judgement`, one machine's or several). Output: the
exit status and its meaning, then per machine each finding that needs action in one line, in the words the
terminal prints (:func:`detsim.track.judge.text.finding_line`), what was not measured, and links to the status
page and the full report. ``detsim-track regressions`` writes it beside ``verdict.json`` and ``verdict.txt`` and appends it to
``$GITHUB_STEP_SUMMARY`` where that is set (:func:`append_to_summary`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping

from detsim.track.base.exitcodes import MEANING, ExitCode
from detsim.track.judge.text import NOISE_LABEL, finding_line
from detsim.track.judge.verdict import TEXT_FILE, Judgement

SUMMARY_ENV = "GITHUB_STEP_SUMMARY"  # the file GitHub Actions shows as the job's summary (appended to)


def _fenced(lines: list[str]) -> list[str]:
    """``lines`` as a code block, its fence longer than any run of backticks in them (a commit subject's)."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "text", *lines, fence]


def meaning(code: int) -> str:
    """What an exit status says, in the words of the help and the status page."""
    try:
        return MEANING.get(ExitCode(code), ExitCode(code).name.lower())
    except ValueError:
        return "unknown exit status"


def markdown_lines(verdict: Judgement, page: str, report: str = TEXT_FILE) -> list[str]:
    """The verdict in Markdown; ``page`` and ``report``: the links to the status page and the full report, as
    seen from where the file is read."""
    code = int(verdict.exit)
    lines = [f"## detsim-track verdict: exit {code}, {meaning(code)}", "",
             f"The status page: [{Path(page).name}]({page}); the full report: [{Path(report).name}]({report}).", ""]
    for machine, mine in verdict.reports.items():
        act = [f for f in mine.regressions if f.label != NOISE_LABEL]
        noise = len(mine.regressions) - len(act)
        lines += [f"### machine `{machine}`: exit {int(mine.exit)}, {meaning(int(mine.exit))}", "",
                  f"Latest commit `{mine.latest[:8]}`, {len(mine.commits)} commits "
                  f"recorded; {len(act)} finding{'s' * (len(act) != 1)} to act on, {noise} noise, "
                  f"{len(mine.unmeasured)} not measured.", ""]
        shown = [finding_line(f, mine.subjects) for f in act]
        shown += [f"decide: {command}" for command in sorted({f.detail["decide_command"] for f in act
                                                               if f.detail.get("decide_command")})]
        shown += [f"NOT MEASURED at {mine.latest[:8]}: {label}" for label in mine.unmeasured]
        if shown:
            lines += [*_fenced(shown), ""]
    for machine, why in verdict.failed.items():
        lines += [f"Machine `{machine}` not judged: {why}", ""]
    return lines


def page_link(folder: Path, page: Path) -> str:
    """The status page as a link from ``folder`` (where ``verdict.md`` is)."""
    return Path(os.path.relpath(page, folder)).as_posix()


def append_to_summary(text: str, environ: Mapping[str, str] = os.environ) -> Path | None:
    """Append ``text`` to the file ``$GITHUB_STEP_SUMMARY`` names (kept: other steps write there too); the file,
    or None where the variable is unset or empty. Raises OSError where it cannot be written."""
    target = environ.get(SUMMARY_ENV)
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as summary:
        summary.write(text if text.endswith("\n") else text + "\n")
    return Path(target)
