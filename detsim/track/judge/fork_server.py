"""A fork server that measures one benchmark at two commits: a script, spoken to by :func:`.confirm.remeasure`.

``python -P fork_server.py SPEC.json``, a :class:`~detsim.track.base.fresh.Conversation` (a greeting, then one
JSON line per request). SPEC: the benchmark, its parameter values, samples per side and round, the checkout
(for its ``benchmarks``, as asv takes them), one exported ``detsim`` package per side (``{"A": dir, "B": dir}``)
and the modules to ``preload`` once. Each request (``{"order": "AB"}`` or ``"BA"``) is one round: a fork per
side puts its package first on ``sys.path``, sets the benchmark up as asv would and warms it up (see
:data:`WARMS_NOTHING`), then the two sample in turn (a ``time_`` benchmark by its own ``timer``, a ``track_``
one by its value). The answer: ``{"A": {"samples": [...], "detsim_file": ..., "warmed_up": ...}, "B": ...}``
or ``{"error": ...}``. A process per side and round, so nothing one commit's code leaves in memory reaches the
other's; a fork, so a round costs a fraction of a second instead of torch's import. Standard library only, run
by its path: it imports no ``detsim`` (an imported one would be every fork's).
"""

import importlib
import json
import os
import sys
import time


LONG_CALL_S = 0.5  # a benchmark whose warm-up call takes longer (a whole process) takes one sample a side and round
# A long call whose warm-up took at most this many times its sample warmed nothing up (a benchmark that
# starts a whole process: nothing of it stays in the measuring one): later rounds skip its warm-up, which
# halves the cost of re-measuring it. A compile or a cache filled by the warm-up makes it far longer.
WARMS_NOTHING = 1.5
_warm_up = True  # the first round always warms up; the server clears it for the rounds after


def _prepare(spec: dict, side: str):
    """The side's benchmark, set up and warmed up: (a function taking one sample, the warm-up's seconds)."""
    sys.path[:0] = [spec["packages"][side], spec["root"]]
    # processes the benchmark starts (the ``detsim`` command) import the side's package too
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [spec["packages"][side], os.environ.get("PYTHONPATH")]))
    module_name, class_name, method_name = spec["benchmark"].rsplit(".", 2)
    instance = getattr(importlib.import_module(f"benchmarks.{module_name}"), class_name)()
    params = spec["params"]
    if hasattr(instance, "setup"):
        instance.setup(*params)
    method = getattr(instance, method_name)
    timer = getattr(instance, "timer", time.process_time)
    started = time.perf_counter()
    if _warm_up:
        method(*params)  # warm-up: lazy imports, allocator caches, compilation
    warmup_s = time.perf_counter() - started

    def sample() -> tuple[float, float]:
        """(the sample, the call's wall seconds)"""
        wall = time.perf_counter()
        if method_name.startswith("time_"):
            started = timer()
            method(*params)
            value = timer() - started
        else:
            value = float(method(*params))
        return value, time.perf_counter() - wall

    return sample, warmup_s


def _child(spec: dict, side: str, orders, results) -> None:
    """A side's process: set up, say ready, then one sample per ``s`` read from ``orders``."""
    try:
        sample, warmup_s = _prepare(spec, side)
        answer = {"ready": True, "detsim_file": sys.modules["detsim"].__file__, "warmup_s": warmup_s}
    except BaseException as exc:  # reported to the server, never raised past the fork
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    os.write(results, (json.dumps(answer) + "\n").encode())
    if "error" in answer:
        return
    with os.fdopen(orders) as reader:
        for _ in reader:
            try:
                value, wall_s = sample()
                line = json.dumps({"value": value, "wall_s": wall_s})
            except BaseException as exc:
                line = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
            os.write(results, (line + "\n").encode())


def _fork(spec: dict, side: str, others: list) -> tuple[int, object, object]:
    """A side's process and its pipes: (pid, writer of orders, reader of results). ``others``: the pipes
    of the sides forked before, closed in this child (a copy left open would keep their ends alive)."""
    orders_r, orders_w = os.pipe()
    results_r, results_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        for handle in others:
            handle.close()
        os.close(orders_w)
        os.close(results_r)
        try:
            _child(spec, side, orders_r, results_w)
        finally:
            os._exit(0)
    os.close(orders_r)
    os.close(results_w)
    return pid, os.fdopen(orders_w, "w"), os.fdopen(results_r)


def _read(reader, side: str) -> dict:
    line = reader.readline()
    return json.loads(line) if line else {"error": f"the measuring process of side {side} died"}


def _round(spec: dict, order: str) -> dict:
    global _warm_up
    sides = {}
    for side in order:
        sides[side] = _fork(spec, side, [h for _, writer, reader in sides.values() for h in (writer, reader)])
    try:
        answer = {side: _read(reader, side) for side, (_, _, reader) in sides.items()}
        failed = {side: a["error"] for side, a in answer.items() if "error" in a}
        if failed:
            return {"error": "; ".join(f"{side}: {why}" for side, why in sorted(failed.items())),
                    "side": sorted(failed)[0]}
        samples, walls = {side: [] for side in order}, {}
        long_calls = not _warm_up or any(a["warmup_s"] > LONG_CALL_S for a in answer.values())
        for _ in range(1 if long_calls else spec["samples"]):
            for side in order:
                _, writer, reader = sides[side]
                writer.write("s\n")
                writer.flush()
                got = _read(reader, side)
                if "error" in got:
                    return {"error": f"{side}: {got['error']}", "side": side}
                samples[side].append(got["value"])
                walls[side] = got["wall_s"]
        warmed_up = _warm_up
        if _warm_up and long_calls:  # later rounds skip a warm-up that warmed nothing up (WARMS_NOTHING)
            _warm_up = not all(walls[side] > LONG_CALL_S and answer[side]["warmup_s"] <= WARMS_NOTHING * walls[side]
                               for side in walls)
        return {side: {"samples": samples[side], "detsim_file": answer[side]["detsim_file"], "warmed_up": warmed_up}
                for side in order}
    finally:
        for pid, writer, reader in sides.values():
            writer.close()
            reader.close()
            os.waitpid(pid, 0)


def main(spec_path: str) -> None:
    with open(spec_path) as handle:
        spec = json.load(handle)
    for name in spec["preload"]:  # imported once, shared by every forked measurement
        importlib.import_module(name)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        order = str(json.loads(line).get("order"))
        ok = sorted(order) == ["A", "B"]
        print(json.dumps(_round(spec, order) if ok else {"error": f"a round is AB or BA, got {order!r}"}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
