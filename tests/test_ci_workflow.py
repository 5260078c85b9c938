"""The GitHub Actions workflow to copy (.github/workflows/detsim.yml): it parses, runs the tests on pushes and pull
requests, the tracking run on pushes to main with its verdict and page kept, the bench gate on pull requests, and
every ``run:`` step is a script or make target of the repository (no logic of its own)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml  # PyYAML: installed with asv (the dev extra)

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "detsim.yml"


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _triggers(workflow: dict) -> dict:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as True


def _make_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))


def _runs(job: dict) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def test_the_jobs_and_when_they_run():
    workflow = _workflow()
    assert set(_triggers(workflow)) == {"push", "pull_request"}
    jobs = workflow["jobs"]
    assert set(jobs) == {"tests", "track", "bench"}
    assert "if" not in jobs["tests"] and _runs(jobs["tests"])[-1] == "make test"
    assert jobs["track"]["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert _runs(jobs["track"])[-1] == "bash .ci/track"
    checkout = next(s for s in jobs["track"]["steps"] if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0  # the run records the latest commits: it needs the history
    assert jobs["bench"]["if"] == "github.event_name == 'pull_request'" and _runs(jobs["bench"])[-1] == "bash .ci/bench"


def test_the_tracking_run_keeps_its_verdict_and_page_whatever_its_exit():
    steps = _workflow()["jobs"]["track"]["steps"]
    kept = {s["with"]["name"]: s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")}
    assert kept["verdict"]["with"]["path"] == "reports/latest/verdict.*"
    assert kept["status-page"]["with"]["path"] == "reports/html"
    assert all(step["if"] == "always()" for step in kept.values())  # a regressed run (exit 1) keeps them too


def test_every_run_step_is_a_script_or_make_target_of_the_repository():
    targets = _make_targets()
    runs = [command for job in _workflow()["jobs"].values() for command in _runs(job)]
    assert runs
    for command in runs:
        assert "\n" not in command.strip() and not re.search(r"[;&|]", command), f"logic in the YAML: {command!r}"
        words = shlex.split(command)
        if words[0] == "make":
            assert len(words) == 2 and words[1] in targets, f"{command!r}: not a target of the Makefile"
        else:
            assert words[0] == "bash" and len(words) == 2, f"{command!r}: not a script of the repository"
            script = ROOT / words[1]
            assert words[1].startswith(".ci/") and script.is_file(), f"{command!r}: no such script"
            assert script.read_text().startswith("#!/usr/bin/env bash\n")
