"""The short Markdown summary of a device check (``summary.md``, and what ``.ci/gpu`` prints), drawn from its
record (:mod:`detsim.track.gpu.check`) alone."""

from __future__ import annotations

from detsim.track.base.metrics import PARITY_MIN_R


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
    lines += _speed(record, steps) + _parity(record, steps) + _determinism(record, steps) + _facts(steps)
    return "\n".join(lines) + "\n"


def _speed(record: dict, steps: dict) -> list[str]:
    rows = [s for name, s in steps.items() if name.startswith("speed ") and s["data"].get("workloads")]
    if not rows:
        return []
    names = record["plan"]["speed_workloads"]
    head = " | ".join(f"{w} warm | {w} cold" for w in names)
    lines = ["", "## Speed (pixel·steps per second; cold = first call, compile included)", "",
             f"| path | {head} | launches per {names[0]} render | overhead ms |",
             "|---|" + "---|" * (2 * len(names) + 2)]
    for s in rows:
        cells = []
        for w in names:
            m = s["data"]["workloads"].get(w)
            cells += [f"{m['warm_pixel_steps_per_s']:.3g}", f"{m['cold_pixel_steps_per_s']:.3g}"] if m else ["-", "-"]
        first = s["data"]["workloads"].get(names[0])
        overhead = s["data"].get("overhead")
        lines.append(f"| {s['name'].removeprefix('speed ')} | {' | '.join(cells)} | {_launches(first)} | "
                     f"{overhead['warm_best_ms'] if overhead else '-'} |")
    unfused = [f"{s['name'].removeprefix('speed ')} on {w}" for s in rows for w, m in s["data"]["workloads"].items()
               if not m["fused"] and not s["name"].startswith("speed eager")]
    if unfused:
        lines += ["", f"PathRender by the eager code, not the path's fused kernel: {', '.join(unfused)}."]
    return lines


def _launches(measured: dict | None) -> str:
    if not measured:
        return "-"
    counts = measured["launches"]
    if counts["kernels"] is None:
        return f"{counts['aten_ops']} aten ops (kernels: CUDA only)"
    return f"{counts['kernels']} kernels, {counts['memory_ops']} copies/fills, {counts['aten_ops']} aten ops"


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
    nanobragg = steps.get("nanobragg", {})
    if nanobragg.get("status") == "ok":
        rates = ", ".join(f"{w}: {m['pixel_steps_per_s']:.3g} pixel·steps/s"
                          for w, m in nanobragg["data"]["workloads"].items())
        lines.append(f"- nanoBragg.c on {nanobragg['data']['threads']} threads: {rates}")
    return lines if len(lines) > 2 else []


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:160]
