"""The short Markdown summary of a device check (``summary.md``, and what ``.ci/gpu`` prints), drawn from its
record (:mod:`detsim.track.gpu.check`) alone."""

from __future__ import annotations

from detsim.track.base.metrics import PARITY_MIN_R
from detsim.track.gpu.goals import GOALS_BY_KEY


def summary(record: dict) -> str:
    steps = {s["name"]: s for s in record["steps"]}
    machine = steps.get("probe", {}).get("data", {})
    env, cuda = machine.get("environment", {}), machine.get("cuda")
    where = f"{cuda['name']} (CUDA {cuda['cuda_version']})" if cuda else "no CUDA device"
    lines = [f"# Device check: {where}, {record['started']}", ""]
    if record["dry_run"]:
        lines += ["**Dry run on the CPU** at small sizes (the Triton path under Triton's interpreter): it proves the "
                  "steps run; no figure in it is a GPU figure.", ""]
    lines += [f"commit `{(record['commit'] or 'unknown')[:12]}`{' (dirty)' if record['dirty'] else ''}; torch "
              f"{env.get('torch', '?')}, triton {env.get('triton', '?')}, Python {env.get('python', '?')}; "
              f"{env.get('cpu_count', '?')} CPU cores; {record['wall_s']} s of a {record['budget_s']:.0f} s budget; "
              f"exit {record['exit_code']}", "", "| step | status | s | note |", "|---|---|---|---|"]
    lines += [f"| {s['name']} | {s['status']} | {s['seconds']} | {_cell(s['reason'])} |" for s in record["steps"]]
    lines += (_goals(record) + _speed(record, steps) + _side_by_side(record, steps) + _parity(record, steps)
              + _determinism(record, steps) + _facts(steps))
    return "\n".join(lines) + "\n"


def _goals(record: dict) -> list[str]:
    rows = record.get("goals")
    if not rows:
        return []
    lines = ["", "## Goals", "",
             "| goal | limit | verdict | measured | where | gap / note |", "|---|---|---|---|---|---|"]
    for row in rows:
        # a dry run's CPU figure is in the note, said to be one
        shown = row["value"] is not None and not (record["dry_run"] and row["verdict"] == "not measured")
        value = GOALS_BY_KEY[row["key"]].shown(row["value"]) if shown else "-"
        lines.append(f"| {row['what']} | {row['limit']} | **{row['verdict']}** | {value} | {_cell(row['where'])} | "
                     f"{_cell(row['note'])} |")
    return lines


def _speed(record: dict, steps: dict) -> list[str]:
    rows = [s for name, s in steps.items() if name.startswith("speed ") and s["data"].get("workloads")]
    if not rows:
        return []
    names = record["plan"]["speed_workloads"]
    clock = rows[0]["data"].get("clock", "?")
    head = " | ".join(f"{w} kernel | {w} end to end | {w} cold" for w in names)
    lines = ["", f"## Speed (pixel·steps per second, the median of the timed calls; kernel: render() of a prepared "
             f"set-up, by {clock}; end to end: prepare + render + synchronize; cold: the first call, compile "
             f"included)", "",
             f"| path | {head} | launches per {names[0]} render | fixed cost ms (new / same configuration) |",
             "|---|" + "---|" * (3 * len(names) + 2)]
    for s in rows:
        cells = []
        for w in names:
            m = s["data"]["workloads"].get(w)
            cells += [f"{m['kernel']['pixel_steps_per_s']:.3g}", f"{m['end_to_end']['pixel_steps_per_s']:.3g}",
                      f"{m['cold_pixel_steps_per_s']:.3g}"] if m else ["-", "-", "-"]
        first = s["data"]["workloads"].get(names[0])
        cost = s["data"].get("fixed_cost")
        lines.append(f"| {s['name'].removeprefix('speed ')} | {' | '.join(cells)} | {_launches(first)} | "
                     f"{_cost(cost)} |")
    unfused = [f"{s['name'].removeprefix('speed ')} on {w}" for s in rows for w, m in s["data"]["workloads"].items()
               if not m["fused"] and not s["name"].startswith("speed eager")]
    if unfused:
        lines += ["", f"Rendered by the eager code, not the path's fused kernel: {', '.join(unfused)}."]
    return lines


def _cost(cost: dict | None) -> str:
    return "-" if not cost else f"{cost['new']['median_ms']} / {cost['cached']['median_ms']}"


def _launches(measured: dict | None) -> str:
    """One render of a prepared set-up, as the profiler counted it."""
    if not measured or not measured.get("launches"):
        return "-"
    counts = measured["launches"]["render"]
    if counts["kernels"] is not None:
        return f"{counts['kernels']} kernels, {counts['memory_ops']} copies/fills, {counts['aten_ops']} aten ops"
    interpreted = counts.get("interpreted_launches")
    return (f"{interpreted} Triton launches (interpreter), " if interpreted is not None else "") + \
        f"{counts['aten_ops']} aten ops (kernels: CUDA only)"


def _side_by_side(record: dict, steps: dict) -> list[str]:
    rows = record.get("side_by_side")
    if not rows:
        return []
    cuda = steps.get("probe", {}).get("data", {}).get("cuda")
    card = cuda["name"] if cuda else "no CUDA device (dry run: CPU figures)"
    threads = steps["nanobragg"]["data"]["threads"]
    lines = ["", f"## Against nanoBragg.c ({threads} OpenMP threads on this host) on the same command lines", "",
             f"{card}; {record['started']}; commit `{(record['commit'] or 'unknown')[:12]}`. detsim/nanoBragg: "
             "detsim's best path end to end (warm) over nanoBragg.c's wall time (start-up and writing included), "
             "as pixel·steps per second; above 1 detsim is faster.", "",
             "| workload | pixel·steps | nanoBragg.c s | nanoBragg.c pixel·steps/s | float64: detsim (path) | "
             "detsim/nanoBragg | float32: detsim (path) | detsim/nanoBragg |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        cells = []
        for dtype in ("float64", "float32"):
            ours = row[dtype]
            cells += ["-", "-"] if ours is None else [f"{ours['pixel_steps_per_s']:.3g} ({ours['path']})",
                                                      f"{ours['ratio']:.3g}"]
        lines.append(f"| {row['workload']} | {row['pixel_steps']:.3g} | {row['nanobragg_s']} | "
                     f"{row['nanobragg_pixel_steps_per_s']:.3g} | {' | '.join(cells)} |")
    return lines


def _parity(record: dict, steps: dict) -> list[str]:
    rows = [s for name, s in steps.items() if name.startswith("parity ") and s["data"].get("cases")]
    if not rows:
        return []
    lines = ["", f"## Golden parity against nanoBragg.c (line: r >= {PARITY_MIN_R})", "",
             "| path | device | cases rendered | min r | 1 - min r | worst case | under the line | errors | "
             "left to the eager code |", "|---|---|---|---|---|---|---|---|---|"]
    for s in rows:
        d = s["data"]
        min_r = "- | -" if d["min_r"] is None else f"{d['min_r']:.9f} | {1 - d['min_r']:.2e}"
        lines.append(f"| {d['path']} | {d['device']} | {d['rendered']} | {min_r} | {d['worst_case'] or '-'} | "
                     f"{len(d['below_line'])} | {len(d['errors'])} | {d['eager_code']} |")
    return lines


def _determinism(record: dict, steps: dict) -> list[str]:
    rows = [s for name, s in steps.items() if name.startswith("determinism ") and s["data"]]
    if not rows:
        return []
    workload = rows[0]["data"]["workload"]
    lines = ["", f"## Determinism ({workload}: image sha256, one stream)", "",
             "| path | twice in one process | in two processes |", "|---|---|---|"]
    for s in rows:
        d = s["data"]
        lines.append(f"| {s['name'].removeprefix('determinism ')} | {_same(d['in_process'])} | "
                     f"{_same(d['across_processes'])} |")
    lines += [f"- {s['name']}: {s['reason']}" for name, s in steps.items() if name.startswith("divergence ")]
    return lines


def _same(value: bool | None) -> str:
    return "not compared" if value is None else ("identical" if value else "DIFFERENT")


def _facts(steps: dict) -> list[str]:
    lines = ["", "## Facts"]
    match = steps.get("cuda float64 eager vs cpu", {})
    if match.get("status") == "ok":
        d = match["data"]
        lines.append(f"- CUDA float64 eager vs CPU float64: bit-identical in {d['identical']} of {d['compared']} "
                     f"golden cases")
    kernel = steps.get("atomics", {})
    if kernel.get("status") in ("ok", "failed"):
        found = sorted({a for v in kernel["data"]["variants"].values() for a in v["atomics"]})
        errors = kernel["data"].get("errors", [])
        lines.append(f"- Triton kernel compiled for {kernel['data']['target']}, {len(kernel['data']['variants'])} "
                     f"variants searched: {'atomics: ' + ', '.join(found) if found else 'no atomic operation'}"
                     + (f" ({len(errors)} could not be compiled: {errors[0]})" if errors else ""))
    bench = steps.get("asv benchmarks", {})
    if bench.get("data", {}).get("results"):
        measured = [r for r in bench["data"]["results"] if "value" in r]
        values = ", ".join(f"{'/'.join(str(v) for v in r['params'].values())}: {r['value']} {bench['data']['unit']}"
                           for r in measured)
        lines.append(f"- asv benchmarks ({bench['data']['benchmark']}), measured by the suite's own code, not by "
                     f"asv; in gpu.json for the history: {values}")
    return lines if len(lines) > 2 else []


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:160]
