"""detsim-track parity (detsim.track.commands.parity): case selection, the report folder, verdicts,
printed table and exit status, end to end on planted golden cases."""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
import torch

from _tolerances import PARITY_MIN_R
from conftest import GOLDEN_DIR
from detsim.track.base.golden import ENV_VAR
from detsim.track.cli import Terminated, main as track_main
from detsim.track.commands import parity
from parity_files import SMALL_CASES, decode_png


def test_threshold_is_the_test_suites():
    parser = argparse.ArgumentParser()
    parity.add_arguments(parser)
    assert parser.parse_args([]).min_r == PARITY_MIN_R


def test_default_cases_are_the_source_trees_golden_cases(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)  # found from outside the project, too
    assert parity.default_cases_dir().resolve() == GOLDEN_DIR.resolve()
    other = tmp_path / "mine"
    other.mkdir()
    (other / "manifest.json").write_text("[]")
    monkeypatch.setenv(ENV_VAR, str(other))
    assert parity.default_cases_dir() == other


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Two intact golden cases, one broken copy (a slightly different misset), one unreadable case."""
    root = tmp_path_factory.mktemp("parity")
    cases = root / "cases"
    for case in SMALL_CASES:
        shutil.copytree(GOLDEN_DIR / case, cases / case)
    broken = cases / "broken_misset"
    shutil.copytree(GOLDEN_DIR / SMALL_CASES[0], broken)
    args = (broken / "args.txt").read_text().replace("-misset 15 25 5", "-misset 15 25 5.3")
    (broken / "args.txt").write_text(args)
    (cases / "unreadable").mkdir()
    (cases / "unreadable" / "args.txt").write_text("-cell 70 70 70 90 90 90 -default_F 10 -detpixels 8 -bogus_flag\n")
    return root


def _run(root: Path, *argv: str, capsys, reports: str) -> tuple[int, str, str, Path | None]:
    """One run; each test writes under its own ``reports`` folder (stamps have a one-second resolution)."""
    code = track_main(["parity", "--cases-dir", str(root / "cases"), "--reports", str(root / reports), *argv])
    out, err = capsys.readouterr()
    found = re.search(r"^report: (\S+)index\.html$", out, re.MULTILINE)
    return code, out, err, Path(found.group(1)) if found else None


@pytest.fixture(scope="module")
def planted_report(planted):
    """The report of a run from a checkout of its own (not the one detsim runs from)."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=planted, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "the user's checkout"], cwd=planted, check=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(planted)
        code = track_main(["parity", "--cases-dir", str(planted / "cases"), "--reports", str(planted / "reports")])
    [folder] = list((planted / "reports").glob("*/parity"))
    return code, folder


def test_planted_broken_case_fails_and_intact_cases_pass(planted_report):
    code, folder = planted_report
    assert code == 1
    summary = json.loads((folder / "parity.json").read_text())
    status = {c["id"]: c["status"] for c in summary["cases"]}
    assert status == {"broken_misset": "fail", SMALL_CASES[0]: "pass", SMALL_CASES[1]: "pass", "unreadable": "error"}
    cases = {c["id"]: c for c in summary["cases"]}
    assert cases["broken_misset"]["r"] < PARITY_MIN_R <= cases[SMALL_CASES[0]]["r"]
    assert "bogus_flag" in cases["unreadable"]["error"]
    assert summary["counts"] == {"total": 4, "pass": 2, "fail": 1, "error": 1}
    assert summary["environment"]["torch"] and summary["min_r"] == PARITY_MIN_R
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True).stdout.strip()
    assert summary["environment"]["commit"] == head  # the git state of the folder it ran in
    intact = cases[SMALL_CASES[1]]
    assert intact["max_rel"] < 1e-6 and abs(intact["sum_ratio"] - 1) < 1e-6 and "trace" not in intact


def test_failing_case_comes_with_the_trace_of_its_worst_pixel(planted_report):
    _, folder = planted_report
    case = next(c for c in json.loads((folder / "parity.json").read_text())["cases"] if c["id"] == "broken_misset")
    s, f = case["worst"]["s"], case["worst"]["f"]
    log = (folder / case["trace"]).read_text().splitlines()
    assert log[0] == f"TRACE_PY: pixel {s} {f}"
    value = float(log[-1].split()[-1])
    assert log[-1].startswith("TRACE_PY: pixel_value") and value == pytest.approx(case["worst"]["detsim"], rel=1e-9)
    assert any("trace-diff" in step for step in case["next_steps"])


def test_every_case_has_its_pictures_and_the_pages_show_them(planted_report):
    _, folder = planted_report
    summary = json.loads((folder / "parity.json").read_text())
    html = (folder / "index.html").read_text()
    markdown = (folder / "summary.md").read_text()
    for case in summary["cases"]:
        if case["status"] == "error":
            assert "pictures" not in case and case["id"] in html
            continue
        for kind in ("reference", "detsim", "difference"):
            path = folder / case["pictures"][kind]
            picture = decode_png(path.read_bytes())
            assert picture.shape[:2] == tuple(case["shape"])
            assert f'src="{case["pictures"][kind]}"' in html and f"({case['pictures'][kind]})" in markdown
    intact = decode_png((folder / "cases" / SMALL_CASES[0] / "difference.png").read_bytes())
    broken = decode_png((folder / "cases" / "broken_misset" / "difference.png").read_bytes())
    assert (intact == 255).all()  # float32 rounding of the reference stays below the floor
    assert (broken[..., 0] < 255).any() and (broken[..., 2] < 255).any()
    assert "| broken_misset | FAIL |" in markdown and f"| {SMALL_CASES[0]} | PASS |" in markdown
    assert not list(folder.parent.parent.glob(".*partial"))


def test_printed_table_and_exit_status(planted, capsys):
    code, out, _, folder = _run(planted, *SMALL_CASES, capsys=capsys, reports="table")
    assert code == 0 and folder is not None and folder.is_dir()
    header, *rows = out.splitlines()[:3]
    assert header.split()[:4] == ["case", "verdict", "r", "1-r"]
    assert [row.split()[:2] for row in rows] == [[SMALL_CASES[0], "PASS"], [SMALL_CASES[1], "PASS"]]
    assert "2 pass, 0 fail, 0 error of 2 cases" in out


def test_bad_input_exits_2_and_nothing_is_overwritten(planted, capsys, monkeypatch):
    code, _, err, _ = _run(planted, "no_such_case", capsys=capsys, reports="bad")
    assert code == 2 and "unknown case id(s): no_such_case" in err
    assert track_main(["parity", "--cases-dir", str(planted / "nowhere")]) == 2
    monkeypatch.setattr(parity, "utc_stamp", lambda: "20000101T000000Z")
    assert _run(planted, SMALL_CASES[1], capsys=capsys, reports="fixed")[0] == 0
    target = planted / "fixed" / "20000101T000000Z" / "parity" / "index.html"
    before = target.read_bytes()
    code, _, err, _ = _run(planted, SMALL_CASES[0], capsys=capsys, reports="fixed")
    assert code == 2 and "already exists" in err and target.read_bytes() == before


@pytest.mark.parametrize("kind", ["a regular file", "missing", "a symlink to nothing"])
def test_a_cases_dir_that_is_not_a_folder_is_named_for_what_it_is(tmp_path, capsys, monkeypatch, kind):
    monkeypatch.setattr(parity, "run_case", lambda *a, **k: pytest.fail("no case may run"))
    {"a regular file": lambda p: p.write_text("x"), "missing": lambda p: None,
     "a symlink to nothing": lambda p: p.symlink_to(p.parent / "gone")}[kind](tmp_path / "cases")
    assert track_main(["parity", "--cases-dir", str(tmp_path / "cases"), "--reports", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == \
        f"parity: --cases-dir {tmp_path / 'cases'}: {kind}; give a folder of cases (or one case folder)\n"
    assert not (tmp_path / "r").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_device_this_machine_lacks_is_one_line_before_any_case_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(parity, "run_case", lambda *a, **k: pytest.fail("no case may run"))
    assert track_main(["parity", "a01_cubic_mosflm_center", "--device", "cuda", "--reports", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err == "parity: --device cuda: no CUDA device on this machine\n"
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("stop", [KeyboardInterrupt, Terminated], ids=["ctrl-c", "sigterm"])
def test_a_stopped_run_leaves_no_report_folder_nor_the_folders_made_for_it(tmp_path, capsys, monkeypatch, stop):
    def stopped(*args, **kwargs):
        raise stop()

    monkeypatch.setattr(parity, "run_case", stopped)
    reports = tmp_path / "R"
    code = track_main(["parity", "a01_cubic_mosflm_center", "--reports", str(reports)])
    assert code == (143 if stop is Terminated else 130)
    assert list(tmp_path.iterdir()) == []


def test_a_single_case_folder_is_a_case(planted, capsys):
    code = track_main(["parity", "--cases-dir", str(planted / "cases" / SMALL_CASES[1]),
                       "--reports", str(planted / "single")])
    out = capsys.readouterr().out
    assert code == 0 and re.search(rf"^{SMALL_CASES[1]}\s+PASS", out, re.MULTILINE) and "1 pass, 0 fail" in out


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="no chromium/chrome executable on PATH for the headless check")
def test_index_html_opens_in_a_headless_browser_with_its_images(planted_report, tmp_path):
    _, folder = planted_report
    n_images = len(re.findall(r"<img ", (folder / "index.html").read_text()))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        done = subprocess.run(
            [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000", "--dump-dom", url],
            capture_output=True, text=True, timeout=120)
    finally:
        server.shutdown()
        server.server_close()
    body = re.search(r"<body[^>]*>", done.stdout)
    assert body is not None, done.stderr[-2000:]
    assert f'data-images-ok="{n_images}"' in body.group(0) and 'data-images-broken="0"' in body.group(0)
    assert n_images == 9 and "broken_misset" in done.stdout


def test_reports_that_cannot_be_written_are_refused_before_any_case_runs(planted, capsys, monkeypatch):
    monkeypatch.setattr(parity, "run_case", lambda *a, **k: pytest.fail("no case may run"))
    (planted / "a_file").write_text("x")
    for place in (planted / "a_file", Path("/sys/detsim-track-parity")):
        assert track_main(["parity", "--cases-dir", str(planted / "cases"), "--reports", str(place)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and f"--reports {place}" in err


@pytest.mark.parametrize("value", ["nan", "1.5", "-2", "inf", "abc"])
def test_min_r_outside_minus_one_to_one_is_refused_at_parse_time(planted, capsys, monkeypatch, value):
    monkeypatch.setattr(parity, "run_case", lambda *a, **k: pytest.fail("no case may run"))
    with pytest.raises(SystemExit) as stopped:
        track_main(["parity", "--cases-dir", str(planted / "cases"), "--reports", str(planted / "minr"),
                    "--min-r", value])
    assert stopped.value.code == 2 and f"--min-r: {value!r} is not a" in capsys.readouterr().err
    assert not (planted / "minr").exists()


def test_a_report_written_outside_a_repository_says_where_and_how_much(tmp_path, capsys, monkeypatch):
    shutil.copytree(GOLDEN_DIR / SMALL_CASES[0], tmp_path / "cases" / SMALL_CASES[0])
    monkeypatch.chdir(tmp_path)  # a folder of no repository: the default ./reports lands here
    assert subprocess.run(["git", "rev-parse"], cwd=tmp_path, capture_output=True).returncode != 0
    assert track_main(["parity", "--cases-dir", "cases"]) == 0
    out = capsys.readouterr().out
    [folder] = list((tmp_path / "reports").glob("*/parity"))
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert f"report: {folder.resolve()}/index.html\n" in out
    assert f"wrote {size / 1e3:.1f} kB to {folder.resolve()}/ (not inside a repository; --reports DIR writes " \
           "elsewhere)\n" in out
