"""detsim-track speed (detsim.track.commands.speed): the comparison run against a stand-in nanoBragg,
its report folder and exit codes."""

from __future__ import annotations

import copy
import json
import shutil
import sys
from pathlib import Path

import pytest
import torch

from detsim.commandline.command import main as detsim_main
from detsim.track.base.fresh import Finished
from detsim.track.base.provenance import cpu_model, vector_flags
from detsim.track.base.workloads import WORKLOADS
from detsim.track.cli import main
from detsim.track.commands import speed
from detsim.track.measure import speed as measure

P1_12 = WORKLOADS["P1"].resized(12)  # what _run measures


@pytest.fixture(scope="module")
def p1_image(tmp_path_factory):
    """The ``detsim`` command's float image of P1 at 12² (nanoBragg's arguments): what a stand-in nanoBragg
    that agrees with detsim writes, rendered once here instead of in each stand-in's own interpreter."""
    folder = tmp_path_factory.mktemp("p1")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)  # the command also writes its default files (intimage.img) where it runs
        assert detsim_main([*P1_12.argv(), "-floatfile", "P1@12.bin"]) == 0
    return folder / "P1@12.bin"


@pytest.fixture(scope="module")
def one_render_row(tmp_path_factory):
    """One real eager float64 render row of P1 at 12² and its image, for the tests about nanoBragg's side, where
    detsim's render is not what they check: the command's render job, run in this process (a fresh interpreter
    would only add torch's import; the job in its own process is tests/track/measure/test_measure_speed.py's)."""
    scratch = tmp_path_factory.mktemp("render")

    def in_this_process(entry, job, **_):
        assert entry == measure.RENDER_JOB
        return Finished(0, b"", b"", 0.0, result=measure.render_job(job))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(measure, "run_job", in_this_process)
        row, image = measure.detsim_row(P1_12, "eager", "float64", scratch, device="cpu", repeats=1, threads=1)
    assert image is not None, row.get("error")
    return row, image


@pytest.fixture
def reused_render(monkeypatch, one_render_row):
    """The command's render runs answered by copies of :func:`one_render_row` (a run per request, as before)."""
    asked = []

    def detsim_row(workload, mode, dtype, scratch, **_):
        asked.append((workload.name, mode, dtype))
        row, image = one_render_row
        copied = scratch / f"{mode}-{dtype}-{len(asked)}.bin"
        shutil.copy(image, copied)
        return copy.deepcopy(row), copied

    monkeypatch.setattr(speed, "detsim_row", detsim_row)
    return asked


def _stand_in(tmp_path, body: str, name: str = "nanoBragg"):
    """An executable that takes nanoBragg's arguments (here: a copy of detsim's image, or a broken one)."""
    script = tmp_path / name
    script.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    script.chmod(0o755)
    return script


def _agreeing(tmp_path, p1_image, check: str = "", name: str = "nanoBragg"):
    """A stand-in nanoBragg (or another program ``name``) that writes detsim's own image of P1 at 12² (after the
    ``check`` lines)."""
    return _stand_in(tmp_path, f"import shutil\n{check}shutil.copy({str(p1_image)!r}, "
                               "sys.argv[sys.argv.index('-floatfile') + 1])", name)


def _run(tmp_path, stand_in, *extra):
    out = tmp_path / "report"
    code = main(["speed", "--workloads", "P1", "--pixels", "12", "--repeats", "1", "--modes", "eager",
                 "--nanobragg", str(stand_in), "--out", str(out), "--threads", "1", "--scopes", "render", *extra])
    return code, out


def test_speed_run_reports_wall_and_cpu_rates_ratios_and_parity(tmp_path, capsys, p1_image, monkeypatch):
    run_job = measure.run_job

    def render_jobs_here(entry, job, **options):  # as one_render_row's; nanoBragg's timer keeps its process
        if entry != measure.RENDER_JOB:
            return run_job(entry, job, **options)
        return Finished(0, b"", b"", 0.0, result=measure.render_job(job))

    monkeypatch.setattr(measure, "run_job", render_jobs_here)
    code, out = _run(tmp_path, _agreeing(tmp_path, p1_image))
    assert code == 0, capsys.readouterr().err
    report = json.loads((out / "speed.json").read_text())
    assert report["threads"] == [1] and report["scopes"] == ["render"]
    rows = report["rows"]
    assert [(r["program"], r["scope"], r["dtype"]) for r in rows] == [
        ("nanoBragg.c", "process", "float64"), ("detsim eager", "render", "float64"),
        ("detsim eager", "render", "float32")]
    reference, *ours = rows
    assert reference["rate"] == pytest.approx(12 * 12 / reference["wall_s"])
    assert reference["wall_s"] == min(reference["wall_all"]) and reference["cpu_s"] > 0
    for row in ours:
        assert row["r"] > 0.9999999 and row["r_against"] == "nanoBragg.c"
        assert row["vs_nanobragg"] == pytest.approx(reference["wall_s"] / row["wall_s"])
        assert row["vs_nanobragg_cpu"] == pytest.approx(reference["cpu_s"] / row["cpu_s"])
        assert row["peak_rss_mb"] > 0 and row["chunk_pixels"] >= 1 and row["threads"] == 1
    summary = (out / "summary.md").read_text()
    assert "-detpixels 12 -pixel 8.53333 -oversample 1" in summary
    printed = capsys.readouterr().out
    assert "| P1@12 | detsim eager | render | 1 | float32 |" in printed
    # the table names the machine it ran on: the CPU's model, torch's kernel level and its vector flags
    machine = printed.splitlines()[0]
    assert machine.startswith(f"CPU: {cpu_model()},") and vector_flags() in machine and machine in summary


# The whole detsim command in its own process twice (~2 s of torch's import each) in the slow job; in the default
# job a stand-in command that checks its arguments and thread count and writes detsim's image. The real command
# run as a row's process, through the same measure.detsim_process_row: tests/track/measure/test_measure_speed.py
@pytest.mark.parametrize("command", ["stand-in", pytest.param("detsim", marks=pytest.mark.slow)])
def test_each_thread_count_gets_nanobragg_and_whole_process_detsim_rows(tmp_path, capsys, p1_image, command,
                                                                        monkeypatch):
    threads = "import os\nassert os.environ['OMP_NUM_THREADS'] in ('1', '2'), os.environ['OMP_NUM_THREADS']\n"
    stand_in = _agreeing(tmp_path, p1_image, check=threads)
    if command == "stand-in":
        arguments = f"assert sys.argv[1:-2] == {[*P1_12.argv(), '-mode', 'eager', '-dtype', 'float64']!r}\n"
        detsim = _agreeing(tmp_path, p1_image, check=threads + arguments, name="detsim")
        monkeypatch.setattr(measure, "DETSIM_COMMAND", [str(detsim)])
    code, out = _run(tmp_path, stand_in, "--threads", "1", "2", "--dtypes", "float64", "--scopes", "process")
    assert code == 0, capsys.readouterr().err
    rows = json.loads((out / "speed.json").read_text())["rows"]
    assert [(r["program"], r["scope"], r["threads"]) for r in rows] == [
        ("nanoBragg.c", "process", 1), ("detsim eager", "process", 1),
        ("nanoBragg.c", "process", 2), ("detsim eager", "process", 2)]
    for row in rows:
        assert row["command"][0] == f"OMP_NUM_THREADS={row['threads']}" and row["wall_s"] > 0
        assert len(row["wall_all"]) == len(row["cpu_all"]) == 1
    whole = [r for r in rows if r["scope"] == "process" and r["program"] != "nanoBragg.c"]
    assert all(r["r"] > 0.9999999 for r in whole)  # the command's own image, checked like a render's
    assert all(r["vs_nanobragg"] == pytest.approx(rows[2 * (r["threads"] - 1)]["wall_s"] / r["wall_s"])
               for r in whole)  # against nanoBragg.c at the same thread count


def test_an_image_that_disagrees_exits_1(tmp_path, capsys, reused_render):
    stand_in = _stand_in(tmp_path, (
        "import numpy as np\n"
        "path = sys.argv[sys.argv.index('-floatfile') + 1]\n"
        "np.random.default_rng(0).random((12, 12)).astype('<f4').tofile(path)"))
    code, out = _run(tmp_path, stand_in, "--dtypes", "float64")
    assert code == 1
    assert "r = " in capsys.readouterr().err
    assert json.loads((out / "speed.json").read_text())["rows"][1]["r"] < speed.PARITY_MIN_R


def test_an_undefined_r_disagrees_and_the_report_stays_strict_json(tmp_path, capsys, reused_render):
    stand_in = _stand_in(tmp_path, (
        "import numpy as np\n"
        "path = sys.argv[sys.argv.index('-floatfile') + 1]\n"
        "np.zeros((12, 12), '<f4').tofile(path)"))
    code, out = _run(tmp_path, stand_in, "--dtypes", "float64")
    assert code == 1 and "r undefined against nanoBragg.c" in capsys.readouterr().err
    assert json.loads((out / "speed.json").read_text())["rows"][1]["r"] is None


def test_a_failing_reference_program_exits_2_and_says_why(tmp_path, capsys, reused_render):
    stand_in = _stand_in(tmp_path, "print('bad flag', file=sys.stderr)\nsys.exit(3)")
    code, out = _run(tmp_path, stand_in, "--dtypes", "float64")
    assert code == 2
    rows = json.loads((out / "speed.json").read_text())["rows"]
    assert "nanoBragg exited 3" in rows[0]["error"] and "bad flag" in rows[0]["error"]


def test_a_missing_reference_program_is_refused_before_any_run(tmp_path, capsys):
    code, out = _run(tmp_path, tmp_path / "no-such-nanoBragg")
    assert code == 2 and not out.exists()
    assert "not an executable file" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--repeats", "--threads", "--pixels"])
def test_counts_below_one_are_refused_when_the_options_are_read(tmp_path, capsys, option):
    with pytest.raises(SystemExit) as stopped:
        main(["speed", option, "0", "--out", str(tmp_path / "r")])
    assert stopped.value.code == 2 and f"argument {option}: must be 1 or more, got 0" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_more_threads_than_detsim_takes_are_refused_when_the_options_are_read(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["speed", "--threads", "1", "100000", "--out", str(tmp_path / "r")])
    assert stopped.value.code == 2 and "argument --threads: must be at most 1024, got 100000" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_device_this_machine_lacks_is_refused_before_any_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(speed, "_measure", lambda *a, **k: pytest.fail("nothing may run"))
    assert main(["speed", "--device", "cuda", "--out", str(tmp_path / "r")]) == 2
    captured = capsys.readouterr()
    assert captured.err == "detsim-track speed: --device cuda: no CUDA device on this machine\n"
    assert captured.out == "" and not (tmp_path / "r").exists()


def test_an_existing_report_folder_is_refused_before_any_run(tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    assert main(["speed", "--out", str(tmp_path / "taken")]) == 2
    assert "already exists" in capsys.readouterr().err and list((tmp_path / "taken").iterdir()) == []


def test_the_default_report_folder_is_under_the_projects_reports(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr("detsim.track.base.output.utc_stamp", lambda: "20000101T000000Z")
    monkeypatch.setattr(speed, "repo_root", lambda: tmp_path)
    taken = tmp_path / "reports" / "20000101T000000Z" / "speed"
    taken.mkdir(parents=True)
    assert main(["speed"]) == 2 and f"{taken} already exists" in capsys.readouterr().err
    assert main(["speed", "--out-root", str(tmp_path / "reports")]) == 2


@pytest.mark.parametrize("option", ["--out", "--out-root"])
def test_a_report_place_that_cannot_be_written_is_refused_before_any_run(tmp_path, capsys, monkeypatch, option):
    monkeypatch.setattr(speed, "_measure", lambda *a: pytest.fail("nothing may be timed"))
    (tmp_path / "a_file").write_text("x")
    for place in (tmp_path / "a_file" / "r", Path("/sys/detsim-track-speed")):
        assert main(["speed", option, str(place)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and f"{option} {place}" in err


@pytest.mark.parametrize("body, problem", [
    ("pass", "wrote no image to P1@12-nanobragg-1.bin"),
    ("open(sys.argv[sys.argv.index('-floatfile') + 1], 'wb').write(bytes(100))", "holds 100 bytes, not the 576"),
])
def test_a_reference_program_without_a_whole_image_is_a_failed_run_named_in_one_line(tmp_path, capsys, body, problem, reused_render):
    stand_in = _stand_in(tmp_path, body)
    code, out = _run(tmp_path, stand_in, "--dtypes", "float64")
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    [line] = [line for line in err.splitlines() if "nanoBragg.c" in line]
    assert str(stand_in) in line and problem in line
    rows = json.loads((out / "speed.json").read_text())["rows"]
    assert problem in rows[0]["error"] and "wall_s" in rows[1]  # detsim's own runs still measured
    assert reused_render == [("P1@12", "eager", "float64")]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def _killed(pid: int, seconds: float = 10) -> bool:
    """Whether ``pid`` is gone or a zombie within ``seconds`` (SIGKILL to its group takes a moment to end it):
    killed, not orphaned and still running."""
    import time

    deadline = time.monotonic() + seconds
    while True:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except FileNotFoundError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


def _pid_when_written(said: Path, running) -> int:
    """The pid the stand-in writes to ``said`` once it runs (``running()``: whether the command still runs)."""
    import time

    deadline = time.monotonic() + 120
    while not (said.exists() and said.read_text()):
        assert time.monotonic() < deadline and running(), "the stand-in never started"
        time.sleep(0.05)
    return int(said.read_text())


# The command in a process of its own (torch's import) in the slow job; in the default job it runs here and SIGTERM
# reaches this process's main thread, as it would the command's. SIGTERM to a detsim command of its own, and to a
# child run's parent: tests/host/test_processes.py and tests/track/base/test_base_fresh.py
@pytest.mark.parametrize("where", ["here", pytest.param("own process", marks=pytest.mark.slow)])
def test_sigterm_while_the_reference_program_runs_ends_it_with_the_command(tmp_path, capsys, where):
    import os
    import signal
    import subprocess
    import threading

    said = tmp_path / "pid"
    stand_in = _stand_in(tmp_path, f"import os, time\nopen({str(said)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)")
    argv = ["speed", "--workloads", "P1", "--pixels", "12", "--repeats", "1", "--nanobragg", str(stand_in), "--out",
            str(tmp_path / "report")]
    if where == "here":
        main_thread, pids = threading.get_ident(), []

        def terminate_when_it_runs():
            pids.append(_pid_when_written(said, lambda: True))
            signal.pthread_kill(main_thread, signal.SIGTERM)

        threading.Thread(target=terminate_when_it_runs, daemon=True).start()
        assert main(argv) == 143
        assert _killed(pids[0]) and "terminated (SIGTERM)" in capsys.readouterr().err
        assert not (tmp_path / "report").exists()
        return
    root = Path(__file__).resolve().parents[3]
    command = subprocess.Popen([sys.executable, "-m", "detsim.track.cli", *argv], cwd=tmp_path,
                               env={**os.environ, "PYTHONPATH": str(root)}, stderr=subprocess.PIPE, text=True)
    try:
        pid = _pid_when_written(said, lambda: command.poll() is None)
        command.send_signal(signal.SIGTERM)
        assert command.wait(timeout=30) == 143
        assert _killed(pid)
        assert "terminated (SIGTERM)" in command.stderr.read() and not (tmp_path / "report").exists()
    finally:
        command.kill()
        command.wait()
