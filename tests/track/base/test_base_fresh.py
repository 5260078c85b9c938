"""detsim.track.base.fresh: children that end with their command, jobs in a fresh interpreter, conversations."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from detsim.host.signals import Terminated, terminate_as_interrupt
from detsim.track.base import fresh
from detsim.track.base.fresh import PINNED, ChildError, Conversation, last_line, pinned_env, run, run_job, start

linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")

# a child that starts a grandchild in its process group, says both pids, and sleeps
FAMILY = ("import os, subprocess, sys, time\n"
          "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
          "open(sys.argv[1] + '.partial', 'w').write(f'{os.getpid()} {grandchild.pid}')\n"
          "os.replace(sys.argv[1] + '.partial', sys.argv[1])\n"
          "time.sleep(60)\n")

JOBS = '''import os, sys


def echo(job):
    return {"job": job, "threads": os.environ.get("OMP_NUM_THREADS"), "seed": os.environ.get("PYTHONHASHSEED"),
            "detsim": sys.modules["detsim"].__file__}


def fails(job):
    print("some progress", file=sys.stderr)
    raise ValueError(f"no good: {job['why']}")


def silent(job):
    os._exit(0)
'''


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper is gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _gone(pids, seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return not any(_alive(p) for p in pids)


def _pids(path: Path, seconds: float = 30) -> list[int]:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.02)
    return [int(p) for p in path.read_text().split()]


def test_run_captures_output_and_the_childs_own_cpu_seconds(tmp_path):
    busy = "import sys, time\nt = time.process_time()\nwhile time.process_time() - t < 0.2: pass\nprint('out')"
    done = run([sys.executable, "-c", busy], cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "out\n", "") and done.result is None
    assert 0.2 <= done.cpu_s < 10
    idle = run([sys.executable, "-c", "import sys; print('why', file=sys.stderr); sys.exit(3)"])
    assert idle.returncode == 3 and idle.cpu_s < done.cpu_s  # earlier children are not counted again
    with pytest.raises(ChildError, match="^python exited 3: why$"):
        idle.check("python")


def test_run_measures_the_childs_wall_seconds():
    assert 0.3 <= run([sys.executable, "-c", "import time; time.sleep(0.3)"]).wall_s < 30


def test_a_program_that_cannot_start_is_one_line():
    with pytest.raises(ChildError, match="^no-such-program could not start: No such file or directory$"):
        run(["no-such-program"])


@linux_only
def test_past_its_time_limit_the_child_and_its_group_are_killed(tmp_path):
    said = tmp_path / "pids"
    began = time.monotonic()
    with pytest.raises(fresh.TimedOut, match=r"^the family ran past 2 s$"):
        run([sys.executable, "-c", FAMILY, str(said)], timeout=2, what="the family")
    assert time.monotonic() - began < 20
    assert _gone(_pids(said))


@linux_only
@pytest.mark.parametrize("signum, raised", [(signal.SIGTERM, Terminated), (signal.SIGINT, KeyboardInterrupt)])
def test_sigterm_or_ctrl_c_of_the_parent_ends_the_child_and_its_group_first(tmp_path, signum, raised):
    said = tmp_path / "pids"
    main = threading.get_ident()

    def signal_when_started():
        _pids(said)
        signal.pthread_kill(main, signum)

    threading.Thread(target=signal_when_started, daemon=True).start()
    with pytest.raises(raised):
        with terminate_as_interrupt():
            run([sys.executable, "-c", FAMILY, str(said)])
    assert _gone(_pids(said), seconds=0.5)  # killed and reaped before the interrupt went on


@linux_only
def test_a_child_dies_with_a_parent_killed_outright(tmp_path):
    said = tmp_path / "pid"
    parent = start([sys.executable, "-c", "import sys, time\n"
                    "from detsim.track.base.fresh import start\n"
                    "child = start(['sleep', '60'])\n"
                    f"open({str(said)!r}, 'w').write(str(child.pid))\n"
                    "time.sleep(60)\n"], env=pinned_env(fresh.HERE))
    try:
        child = _pids(said)
        os.kill(parent.pid, signal.SIGKILL)
        assert _gone(child)
    finally:
        fresh.stop(parent)


def test_a_job_gets_its_json_and_answers_json_in_a_fresh_interpreter(tmp_path):
    (tmp_path / "jobs.py").write_text(JOBS)
    (tmp_path / "detsim").mkdir()  # a checkout in the working directory must not shadow the package
    (tmp_path / "detsim" / "__init__.py").write_text("raise ImportError('the working directory, not the package')\n")
    done = run_job("jobs:echo", {"n": [1, 2]}, path=(fresh.HERE, tmp_path), cwd=tmp_path, env=PINNED)
    assert done.returncode == 0 and done.result["job"] == {"n": [1, 2]}
    assert (done.result["threads"], done.result["seed"]) == ("1", "0")
    assert Path(done.result["detsim"]).resolve().is_relative_to(fresh.HERE.resolve())


def test_a_failing_job_is_one_line_or_whole_stderr_when_asked(tmp_path):
    (tmp_path / "jobs.py").write_text(JOBS)
    with pytest.raises(ChildError, match="^the check exited 1: ValueError: no good: bad input$"):
        run_job("jobs:fails", {"why": "bad input"}, path=(fresh.HERE, tmp_path), what="the check")
    kept = run_job("jobs:fails", {"why": "x"}, path=(fresh.HERE, tmp_path), check=False)
    assert kept.result is None and kept.returncode == 1
    assert "some progress" in kept.stderr and "Traceback (most recent call last)" in kept.stderr
    with pytest.raises(ChildError, match="^jobs:silent exited 0 without an answer$"):
        run_job("jobs:silent", {}, path=(fresh.HERE, tmp_path))


def test_the_pinned_environment_puts_its_path_first_and_sets_the_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", "/already/there")
    env = pinned_env(tmp_path / "a", tmp_path / "b", **PINNED)
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tmp_path / "a"), str(tmp_path / "b"), "/already/there"]
    assert {k: env[k] for k in PINNED} == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    monkeypatch.delenv("PYTHONPATH")
    assert "PYTHONPATH" not in pinned_env() and pinned_env(tmp_path)["PYTHONPATH"] == str(tmp_path)
    assert fresh.thread_vars(3) == {"OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"}


def test_the_last_line_skips_blank_lines_and_valgrinds_own():
    assert last_line("Traceback\n  x\nValueError: bad\n\n==123== ERROR SUMMARY: 0 errors\n") == "ValueError: bad"
    assert last_line("\n \n") == ""


SERVER = ("import json, sys\n"
          "print(json.dumps({'ready': True}), flush=True)\n"
          "for line in sys.stdin:\n"
          "    n = json.loads(line)['n']\n"
          "    if n < 0:\n"
          "        sys.exit('negative numbers end me')\n"
          "    print(json.dumps({'twice': 2 * n}), flush=True)\n")


def test_a_conversation_answers_line_by_line_and_a_death_is_one_line():
    with Conversation([sys.executable, "-c", SERVER], what="the doubler") as server:
        assert server.greeting == {"ready": True}
        assert [server.ask({"n": n})["twice"] for n in (1, 4)] == [2, 8]
        with pytest.raises(ChildError, match="^the doubler died: negative numbers end me$"):
            server.ask({"n": -1})
    with pytest.raises(ChildError, match="^the mute did not start: no output$"):
        Conversation([sys.executable, "-c", "pass"], what="the mute")


def test_a_conversation_left_by_an_exception_is_killed_at_once():
    began = time.monotonic()
    with pytest.raises(RuntimeError):
        with Conversation([sys.executable, "-c", SERVER.replace("for line", "import time; time.sleep(60)\nfor line")],
                          timeout=60) as server:
            raise RuntimeError("the caller failed")
    assert server.process.returncode == -signal.SIGKILL and time.monotonic() - began < 20


def test_the_child_side_writes_the_answer_of_its_entry(tmp_path, monkeypatch):
    (tmp_path / "jobs.py").write_text(JOBS)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "answer.json"
    assert fresh._main(["jobs:echo", json.dumps({"a": 1}), str(out)]) == 0
    assert json.loads(out.read_text())["job"] == {"a": 1} and not Path(f"{out}.partial").exists()


TYPED = """
from dataclasses import dataclass
from detsim.track.base.fresh import Job

@dataclass(frozen=True)
class Ask(Job):
    name: str
    sizes: tuple[int, ...]
    threads: int | None = None

def typed(job: Ask) -> dict:
    return {"kind": type(job).__name__, "name": job.name, "sizes": list(job.sizes),
            "tuple": isinstance(job.sizes, tuple), "threads": job.threads}
"""


def test_a_typed_job_crosses_as_json_and_is_read_back_validated(tmp_path, monkeypatch):
    (tmp_path / "typed_jobs.py").write_text(TYPED)
    monkeypatch.syspath_prepend(str(tmp_path))
    import typed_jobs

    job = typed_jobs.Ask("x", (1, 2))
    assert job.to_json() == {"name": "x", "sizes": [1, 2], "threads": None}
    out = tmp_path / "answer.json"
    assert fresh._main(["typed_jobs:typed", json.dumps(job.to_json()), str(out)]) == 0
    assert json.loads(out.read_text()) == {"kind": "Ask", "name": "x", "sizes": [1, 2], "tuple": True, "threads": None}
    for bad, why in (({"name": "x"}, "Ask: no sizes"), ({"name": "x", "sizes": [1], "extra": 1}, "unknown field"),
                     ({"name": "x", "sizes": ["1"]}, r"Ask.sizes\[0\]: '1' is not int"),
                     ({"name": "x", "sizes": [], "threads": "2"}, "Ask.threads")):
        with pytest.raises(fresh.JobError, match=why):
            fresh._main(["typed_jobs:typed", json.dumps(bad), str(out)])
