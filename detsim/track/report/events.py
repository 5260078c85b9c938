"""The page's list of a machine's events (:mod:`detsim.track.judge.events`), drawn from its stored verdict: every
step of every series, each line as the verdict's text writes it (:func:`detsim.track.judge.text.event_text`),
newest first, with its commit's subject."""

from __future__ import annotations

from html import escape
from typing import Mapping, Sequence

from detsim.track.judge.text import event_text

FLAGGING_STEPS = ("regressed", "changed", "irreproducible", "broken")  # drawn red; "fixed" green
STYLE = {True: "color:#c62828", False: "color:#2e7d32"}  # inline: the page's style sheet is another module's
CELL = "font-size:12px;padding:1px 8px"


def events_section(events: Sequence[Mapping], subjects: Mapping[str, str]) -> str:
    """``<h2>`` and a table of ``events`` (``verdict.json``'s records), newest first; nothing without any."""
    if not events:
        return ""
    rows = "".join(
        f'<tr style="{STYLE[e["step"] in FLAGGING_STEPS]}"><td style="{CELL};font-family:monospace">'
        f'{escape(event_text(e))}</td><td style="{CELL}">{escape(subjects.get(e["commit"], ""))}</td></tr>'
        for e in reversed(events))
    return (f"<h2>Events: every step of the history ({len(events)})</h2>"
            f'<table class="events">{rows}</table>')
