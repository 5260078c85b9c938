"""detsim.track.target.cluster: a cluster asked for is one of --workers N or --scheduler ADDRESS, checked
before anything starts; tasks on a LocalCluster give the same results on one worker as on two, a task that
raises is retried and one that keeps raising is failed with its line, a task whose worker process dies under
it runs again and comes back once, and the progress line counts tasks done, failed and the time left; a
scheduler and workers started by hand (docs/cluster.md's local example) run them too."""

from __future__ import annotations

import ast
import io
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")
import cloudpickle  # noqa: E402 - distributed's own dependency

from detsim.track.target import cluster  # noqa: E402
from detsim.track.target.cluster import Cluster, ClusterError, Outcome, Tasks, client  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the tasks below, to worker processes
NO_DASHBOARD = {"dashboard": False, "dashboard_address": ":0"}  # (another cluster on the host may hold 8787)


def test_a_cluster_is_workers_or_a_scheduler_and_a_bad_one_is_refused_before_it_starts():
    assert Cluster(workers=2).describe() == "2 Dask worker process(es) on this machine"
    assert Cluster(scheduler="tcp://127.0.0.1:8786").describe() == "the Dask cluster at tcp://127.0.0.1:8786"
    for bad, why in [(dict(), "one of them"), (dict(workers=2, scheduler="tcp://h:1"), "one of them"),
                     (dict(workers=0), "give 1 or more"), (dict(scheduler="tcp://a b"), "not a scheduler address")]:
        with pytest.raises(ValueError, match=why):
            Cluster(**bad)


def square_slowly(x: int) -> int:
    return x * x


def fails_once(marker: str, x: int) -> int:
    """Raises the first time it runs (a marker file says it ran), then returns ``x``."""
    if not os.path.exists(marker):
        Path(marker).write_text("ran")
        raise RuntimeError("planted failure")
    return x


def always_fails(x: int) -> int:
    raise ValueError(f"no result for {x}\nsecond line")


def _run(client, submissions, stream) -> dict:
    tasks = Tasks(client, "t", stream)
    for key, function, *args in submissions:
        tasks.submit(key, function, *args)
    return tasks.results()


@pytest.fixture(scope="module")
def threads():
    """Two clusters of worker threads (one worker, two): in this process, started in about a second."""
    made = []
    for n in (1, 2):
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=False,
                                           scheduler_kwargs=NO_DASHBOARD)
        made.append((cluster, distributed.Client(cluster)))
    yield [client for _, client in made]
    for cluster, client in made:
        client.close()
        cluster.close()


def test_one_worker_and_two_give_the_same_results_and_a_failure_is_retried_or_named(threads, tmp_path):
    got = []
    for i, client in enumerate(threads):
        stream = io.StringIO()
        work = [(n, square_slowly, n) for n in range(6)]
        work += [("flaky", fails_once, str(tmp_path / f"marker{i}"), 7), ("bad", always_fails, 3)]
        results = _run(client, work, stream)
        got.append({key: (o.value, o.failed) for key, o in results.items()})
        lines = stream.getvalue().splitlines()
        assert lines[-1].startswith("t: 7 done, 1 failed, 0 left")  # the core's line (its own tests: tests/batch)
    assert got[0] == got[1]
    assert got[0] == {**{n: (n * n, None) for n in range(6)}, "flaky": (7, None),
                      "bad": (None, "ValueError: no result for 3")}


def test_a_key_submitted_twice_is_one_task(threads):
    tasks = Tasks(threads[1], "t", io.StringIO())
    tasks.submit("a", square_slowly, 2)
    tasks.submit("a", square_slowly, 3)
    assert {k: o.value for k, o in tasks.results().items()} == {"a": 4}


def dies_once(marker: str, x: int) -> int:
    """Ends its own worker process the first time it runs (mid-task: the marker is written), then returns ``x``
    and counts its completed runs in ``marker``.done."""
    if not os.path.exists(marker):
        Path(marker).write_text(str(os.getpid()))
        os._exit(1)
    with open(marker + ".done", "a") as out:
        out.write(f"{x}\n")
    return x


# A worker process killed mid-task runs in the slow job (a crashed worker of a real cluster in the default job:
# tests/batch/test_cluster.py); its in-process twin: a task that fails once runs again and comes back once in
# test_one_worker_and_two_give_the_same_results_and_a_failure_is_retried_or_named
@pytest.mark.slow
def test_a_task_whose_worker_dies_under_it_runs_again_and_comes_back_once(tmp_path):
    stream = io.StringIO()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, scheduler_kwargs=NO_DASHBOARD,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        marker = str(tmp_path / "marker")
        results = _run(client, [("lost", dies_once, marker, 5), ("other", square_slowly, 4)], stream)
    assert {k: (o.value, o.failed) for k, o in results.items()} == {"lost": (5, None), "other": (16, None)}
    assert Path(marker).read_text().isdigit()  # it did die once, mid-task
    assert Path(marker + ".done").read_text() == "5\n"  # and ran to its end once
    assert stream.getvalue().splitlines()[-1].startswith("t: 2 done, 0 failed, 0 left")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_scheduler_reached_by_its_address_runs_the_tasks_on_its_workers():
    """``client(Cluster(scheduler=ADDRESS))`` of a scheduler already running, here with two worker threads in
    this process (the test below starts them as docs/cluster.md does, in processes of their own)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", scheduler_kwargs=NO_DASHBOARD) as running_cluster:
        stream = io.StringIO()
        with client(Cluster(scheduler=running_cluster.scheduler_address)) as running:
            running.wait_for_workers(2, timeout=60)
            assert _run(running, [(n, pow, n, 2) for n in range(4)], stream) == {
                n: Outcome(n * n) for n in range(4)}
            assert len({w["id"] for w in running.scheduler_info()["workers"].values()}) == 2
        assert stream.getvalue().splitlines()[-1].startswith("t: 4 done, 0 failed, 0 left")


@pytest.mark.slow
def test_an_existing_scheduler_and_its_workers_started_by_hand_run_the_tasks(tmp_path):
    """docs/cluster.md's local example: ``dask scheduler --host 127.0.0.1`` and ``dask worker ADDRESS
    --nworkers 2 --nthreads 1`` (on a free port here: another cluster may hold 8786), then the tasks by
    ``client(Cluster(scheduler=ADDRESS))`` (three processes: the slow job's; the rule is the test above's)."""
    dask = Path(sys.executable).with_name("dask")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    scheduler = subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", ":0"], **quiet)
    workers = subprocess.Popen([str(dask), "worker", address, "--nworkers", "2", "--nthreads", "1",
                                "--dashboard-address", ":0"], **quiet)
    try:
        stream = io.StringIO()
        with client(Cluster(scheduler=address)) as running:
            running.wait_for_workers(2, timeout=60)
            # a function every worker imports (the test module's own are sent by value: the scheduler, a process
            # of its own here, unpickles the graph)
            assert _run(running, [(n, pow, n, 2) for n in range(4)], stream) == {
                n: Outcome(n * n) for n in range(4)}
            assert len({w["id"] for w in running.scheduler_info()["workers"].values()}) == 2
        assert stream.getvalue().splitlines()[-1].startswith("t: 4 done, 0 failed, 0 left")
    finally:
        for process in (workers, scheduler):
            process.terminate()
            process.wait(timeout=30)


def test_an_address_where_no_scheduler_answers_is_one_line(monkeypatch):
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1)
    address = f"tcp://127.0.0.1:{_free_port()}"
    with pytest.raises(ClusterError, match=f"^--scheduler {address}: no scheduler answers"):
        with client(Cluster(scheduler=address)):
            pass


ROOT = Path(__file__).resolve().parents[3]
LOADED = ("detsim.track.cli", "detsim.track.commands.record", "detsim.track.recorder.cluster")  # what a command loads


@pytest.mark.slow  # its in-process twin: test_the_modules_a_command_loads_import_dask_only_inside_functions
def test_dask_is_imported_only_when_a_cluster_is_asked_for():
    code = (f"import sys, {', '.join(LOADED)}; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'dask', 'distributed'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def _module_file(name: str) -> Path | None:
    path = ROOT.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _loaded_imports(path: Path) -> set[str]:
    """The absolute names ``path`` imports when it is loaded: its module level (in ``if`` and ``try`` blocks too),
    not its functions' bodies, which run only when called."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1 if path.name != "__init__.py" else -1])
    if path.name == "__init__.py":
        package = ".".join(path.parent.relative_to(ROOT).parts)
    names, todo = set(), list(ast.parse(path.read_text()).body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = package.split(".")
                module = ".".join([*parts[:len(parts) - node.level + 1], *([module] if module else [])])
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
        todo.extend(ast.iter_child_nodes(node))
    return names


def _closure(roots) -> tuple[set[Path], set[str]]:
    """The package's files loading ``roots`` loads (their packages' ``__init__`` files too) and the names of
    other packages they import."""
    files, outside, todo = set(), set(), [*roots]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for depth in range(1, len(parts) + 1):
            file = _module_file(".".join(parts[:depth]))
            if parts[0] != "detsim":
                outside.add(parts[0])
            elif file is not None and file not in files:
                files.add(file)
                todo.extend(_loaded_imports(file))
    return files, outside


def test_the_modules_a_command_loads_import_dask_only_inside_functions():
    """The fresh interpreter of the slow test above, read instead of run: what loading the command imports."""
    files, outside = _closure(LOADED)
    assert {ROOT / "detsim" / "track" / "recorder" / "cluster.py", ROOT / "detsim" / "__init__.py"} <= files
    assert "torch" in outside or "numpy" in outside  # it sees past the package
    assert not outside & {"dask", "distributed"}, sorted(outside)
    lazy = {node.module for node in ast.walk(ast.parse((ROOT / "detsim/track/target/cluster.py").read_text()))
            if isinstance(node, ast.ImportFrom)}
    assert "distributed" in lazy  # the cluster's module does import it: inside the functions that start one
