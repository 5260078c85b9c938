"""The documentation cannot rot: every command of the README's tour and of the tutorials is run and its shown
output checked, every relative link of README.md and docs/*.md resolves, no doc is over the size limit, the
flag reference is `detsim -help all` itself and the thresholds reference names every row of the table.

A runnable block is a ```console block: each ``$ `` line is a command, the lines under it what it prints.
The commands of one block run in order in one bash shell, in a scratch folder that holds the checkout's
tests/, .ci/ and .venv (links), so a block may copy, write and ``cd`` there. A shown line must appear in the
command's output (stdout and stderr together), shown lines in their order; ``...`` in a line stands for any
text, and a line that is only ``...`` for any lines. A command must exit 0 unless the next one is
``echo $?``, which shows its status. A block marked ``<!-- docs-test: slow -->`` runs only with ``-m slow``;
one marked ``<!-- docs-test: run by TEST -->`` is too long for any run here (a whole tracking run, a GPU) and
is run by that test, which must exist and hold the block's first command.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RUNNABLE = [ROOT / "README.md", *sorted(DOCS.glob("tutorial-*.md"))]
SIZE_LIMIT = 20_480  # bytes: a doc longer than this is split by topic
LINKED = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
SCRATCH_LINKS = ("tests", ".ci", "Makefile", "pyproject.toml")

FENCE = re.compile(r"(?:<!-- docs-test: (?P<mark>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)
MARKER = "@@docs-test {} {}@@"


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    lang: str
    mark: str
    commands: tuple[str, ...]
    shown: tuple[tuple[str, ...], ...]  # per command, the lines shown under it

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}"


def _blocks(path: Path) -> list[Block]:
    text = path.read_text()
    found = []
    for match in FENCE.finditer(text):
        lines = match["body"].splitlines()
        if not any(line.startswith("$ ") for line in lines):
            continue
        commands, shown = [], []
        for line in lines:
            if line.startswith("$ "):
                commands.append(line[2:])
                shown.append([])
            elif commands:
                shown[-1].append(line.rstrip())
        found.append(Block(path.relative_to(ROOT).as_posix(), text.count("\n", 0, match.start("body")) + 1,
                           match["lang"], match["mark"] or "", tuple(commands), tuple(map(tuple, shown))))
    return found


def _all_blocks() -> list[Block]:
    return [block for path in RUNNABLE for block in _blocks(path)]


def _runs():
    """Per document, its runnable blocks in order (the default run's), and per slow block the blocks before it
    and itself (the slow run's): a block may use what an earlier one of its document made."""
    runs = []
    for path in RUNNABLE:
        blocks = [b for b in _blocks(path) if b.lang == "console" and not b.mark.startswith("run by ")]
        fast = [b for b in blocks if b.mark != "slow"]
        if fast:
            runs.append(pytest.param(fast, id=path.relative_to(ROOT).as_posix()))
        for n, block in enumerate(blocks):
            if block.mark == "slow":
                before = [b for b in blocks[:n] if b.mark != "slow"]
                runs.append(pytest.param([*before, block], id=str(block), marks=pytest.mark.slow))
    return runs


def _matches(pattern: str, line: str) -> bool:
    return re.fullmatch(".*".join(map(re.escape, pattern.split("..."))), line.rstrip()) is not None


def _shown_in(shown: tuple[str, ...], output: list[str]) -> str | None:
    """None where every shown line appears in ``output`` in order; else the first one that does not."""
    at = 0
    for want in shown:
        if want.strip() == "...":
            continue
        while at < len(output) and not _matches(want, output[at]):
            at += 1
        if at == len(output):
            return want
        at += 1
    return None


def _scratch(tmp_path: Path) -> Path:
    stamp = Path(sys.prefix) / ".installed"  # make venv's stamp, when make made this environment
    if stamp.exists() and stamp.stat().st_mtime < (ROOT / "pyproject.toml").stat().st_mtime:
        # a block's `make venv` (.ci/gpu's) would reinstall it from the scratch folder, which has no package
        pytest.fail(f"{sys.prefix} is older than pyproject.toml: run `make venv` first", pytrace=False)
    for name in SCRATCH_LINKS:
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))  # the environment running the tests, as .venv
    return tmp_path


@pytest.mark.parametrize("blocks", _runs())
def test_every_command_of_a_runnable_block_runs_and_prints_what_the_doc_shows(blocks, tmp_path):
    if not (Path(sys.prefix) / "bin" / "detsim-track").exists():
        pytest.skip("the docs' commands use .venv/bin: run the tests with the project's environment (make test)")
    steps = [(block, n) for block in blocks for n in range(len(block.commands))]
    script = ["exec 2>&1"]
    for at, (block, n) in enumerate(steps):
        script += [block.commands[n], f"__status=$?; printf '\\n{MARKER.format('%s', '%s')}\\n' {at} $__status; "
                                      "(exit $__status)"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "TRITON_INTERPRET"))}
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=_scratch(tmp_path), env=env, capture_output=True,
                          text=True, timeout=600)
    parts = re.split(r"\n" + MARKER.format(r"(\d+)", r"(\d+)") + r"\n", done.stdout)
    outputs, statuses = parts[0::3], [int(s) for s in parts[2::3]]
    assert len(statuses) == len(steps), f"{blocks[0].doc}: the commands stopped early:\n{done.stdout[-3000:]}"
    for at, (block, n) in enumerate(steps):
        command, output = block.commands[n], outputs[at]
        shows_status = n + 1 < len(block.commands) and block.commands[n + 1] == "echo $?"
        assert shows_status or statuses[at] == 0, f"{block}: `{command}` exited {statuses[at]}:\n{output[-3000:]}"
        missing = _shown_in(block.shown[n], output.splitlines())
        assert missing is None, f"{block}: `{command}` did not print {missing!r}; it printed:\n{output[-3000:]}"


def test_runnable_blocks_are_found_and_only_console_blocks_hold_commands_in_a_tutorial():
    blocks = _all_blocks()
    assert {b.doc for b in blocks} >= {"README.md", "docs/tutorial-first-tracking-run.md",
                                       "docs/tutorial-why-images-changed.md", "docs/tutorial-gpu-determinism.md"}
    for block in blocks:
        assert block.lang == "console", f"{block}: a block of commands in a tutorial must be ```console (run)"
        assert block.mark in ("", "slow") or block.mark.startswith("run by "), f"{block}: unknown mark {block.mark!r}"
    for path in RUNNABLE[1:]:
        shells = [m.start() for m in FENCE.finditer(path.read_text()) if m["lang"] in ("bash", "sh", "shell")]
        assert not shells, f"{path.name}: a tutorial's commands go in ```console blocks, which the tests run"


def test_a_block_too_long_to_run_here_names_a_test_that_runs_its_command():
    tests = {path: path.read_text() for path in (ROOT / "tests").rglob("test_*.py")}
    for block in _all_blocks():
        if not block.mark.startswith("run by "):
            continue
        name = block.mark.removeprefix("run by ")
        holders = [text for text in tests.values() if re.search(rf"^def {re.escape(name)}\(", text, re.M)]
        assert holders, f"{block}: no test named {name}"
        word = block.commands[0].split()[1]  # the script of `bash SCRIPT`, or the subcommand of `detsim-track SUB`
        assert any(word in text for text in holders), f"{block}: {name} does not run {word}"


def test_every_relative_link_resolves():
    broken = []
    for path in LINKED:
        text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (path.parent / target.split("#")[0]).exists():
                broken.append(f"{path.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_no_doc_is_over_the_size_limit_and_the_readme_reads_in_a_minute():
    sizes = {path.relative_to(ROOT).as_posix(): path.stat().st_size for path in LINKED}
    assert all(size <= SIZE_LIMIT for size in sizes.values()), {p: s for p, s in sizes.items() if s > SIZE_LIMIT}
    assert len((ROOT / "README.md").read_text().splitlines()) <= 100


def test_every_doc_is_in_the_index():
    index = (DOCS / "README.md").read_text()
    missing = [p.name for p in DOCS.glob("*.md") if p.name != "README.md" and f"({p.name})" not in index]
    assert not missing, f"not linked from docs/README.md: {missing}"


def test_the_flag_reference_is_detsims_own_help_all(capsys):
    """The command's own output, in this process (the README's tour runs the installed ``detsim`` itself)."""
    from detsim.commandline.command import main

    assert main(["-help", "all"]) == 0
    printed = capsys.readouterr().out
    shown = re.search(r"```text\n(usage: detsim .*?)```", (DOCS / "flags.md").read_text(), re.S)
    assert shown, "docs/flags.md holds no copy of `detsim -help all`"
    assert shown[1].rstrip() == printed.rstrip(), "docs/flags.md differs from `detsim -help all`: paste it again"


def test_the_thresholds_reference_names_every_row_of_the_table():
    from detsim.track.judge import thresholds

    doc = (DOCS / "thresholds.md").read_text()
    rows = {tuple(cell.strip(" `") for cell in line.strip("|").split("|")[:3])
            for line in doc.splitlines() if line.startswith("| `")}
    for row in thresholds.TABLE:
        assert (row.family, row.judge, f"{row.value:g}") in rows, f"docs/thresholds.md lacks {row}"


def test_the_readmes_exit_codes_are_the_suites_exit_codes():
    from detsim.track.base.exitcodes import ExitCode

    table = re.search(r"^\| exit \| meaning \|\n((?:\|.*\n)+)", (ROOT / "README.md").read_text(), re.M)
    assert table, "README.md has no exit-code table"
    shown = {int(code) for row in table[1].splitlines()[1:] for code in re.findall(r"\d+", row.split("|")[1])}
    assert shown == {int(code) for code in ExitCode}


def test_every_decide_line_a_tutorial_shows_is_run_as_pasted():
    """A ``decide:`` command a tutorial's verdict prints is a command of a later block of that tutorial, word for
    word (the runnable-block test then runs it, and checks the verdict printed that line)."""
    for path in sorted(DOCS.glob("tutorial-*.md")):
        blocks = [b for b in _blocks(path) if b.lang == "console"]
        for n, block in enumerate(blocks):
            for shown in (line for lines in block.shown for line in lines if line.startswith("decide: ")):
                command = re.sub(r" \([^()]*\)$", "", shown.removeprefix("decide: "))
                later = [c for b in blocks[n:] for c in b.commands]
                assert f".venv/bin/{command}" in later, f"{block}: `{command}` is shown but never run as pasted"
