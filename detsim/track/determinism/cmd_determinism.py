"""``detsim-track determinism``: is it deterministic, and across what?

Runs each target (golden case ids, nanoBragg command lines, ``module:function`` callables) over the
matrix repeats x thread counts x dtypes x devices x execution modes, hashes every output (sha256 of the
float32 bytes, as ``-floatfile`` writes them, and of the native bytes), and prints which runs agree bit
for bit. Runs that should agree (same target, device, dtype, mode and thread count) must: if they do not,
the exit code is 1. Differences across thread counts, modes and devices are findings, reported with
their size (differing elements, max abs/rel difference). A run that raises is recorded verbatim with its
configuration and the matrix goes on. ``--out`` writes the evidence bundle (:mod:`detsim.track.determinism.matrix`
holds the comparison and rendering).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import torch

from detsim.track.base.output import atomic_directory, atomic_write_text, utc_stamp, write_json
from detsim.track.base.provenance import environment, thread_count
from detsim.track.determinism.matrix import Matrix, RunConfig, RunResult, digest_outputs
from detsim.track.base.targets import DTYPES, Target, TargetError, golden_dir, golden_ids, resolve_callable, \
    resolve_case, resolve_command_line

HELP = "run cases repeatedly across threads, dtypes, devices and modes; show which runs agree bit for bit"

EXIT_OK, EXIT_DIFFERS, EXIT_UNMEASURED = 0, 1, 2
DEFAULT_CASES = ("c02_xds_xbeam_quirk", "o01_polar_0.9")  # two 128x128 golden cases, well under a second
DEFAULT_OUT = "reports/{stamp}/determinism"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cases", nargs="*", metavar="CASE",
                        help="golden case ids or unique prefixes (default: %s)" % " ".join(DEFAULT_CASES))
    parser.add_argument("--nanobragg", action="append", default=[], metavar="'ARGS'",
                        help="a nanoBragg command line to run as a case (repeatable; files relative to the cwd)")
    parser.add_argument("--call", action="append", default=[], metavar="MODULE:FUNC",
                        help="a callable f(device=, dtype=) returning tensors (module:function or file.py:function)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per configuration (default 2)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts (default 1 2)")
    parser.add_argument("--dtypes", nargs="+", choices=sorted(DTYPES), default=["float64", "float32"])
    parser.add_argument("--devices", nargs="+", default=None,
                        help="devices (default: cpu, plus cuda when torch sees one)")
    parser.add_argument("--modes", nargs="+", default=None,
                        help="execution modes (default: every entry of detsim.engine.MODES)")
    parser.add_argument("--grad", action="append", default=[], metavar="PARAM",
                        help="also hash d(image.sum())/d(PARAM), e.g. detector.distance_mm or crystal.cell[0]")
    parser.add_argument("--chunk-pixels", type=int, default=None, help="engine chunk size (default automatic)")
    parser.add_argument("--deterministic", action="store_true",
                        help="run with torch.use_deterministic_algorithms(True) and inductor's deterministic mode")
    parser.add_argument("--isolate", action="store_true",
                        help="run every repeat in a fresh Python process (slower; survives hard crashes)")
    parser.add_argument("--strict", action="store_true",
                        help="also fail (exit 1) when thread counts on the same device give different bits")
    parser.add_argument("--golden-dir", type=Path, default=None, help="golden cases folder (default tests/golden)")
    parser.add_argument("--out", nargs="?", const=DEFAULT_OUT, default=None, metavar="DIR",
                        help="write the evidence bundle there (default with no value: %s; {stamp} = UTC time)"
                        % DEFAULT_OUT)
    parser.add_argument("--list-cases", action="store_true", help="list the golden case ids and exit")


def run(args: argparse.Namespace) -> int:
    if args.list_cases:
        print("\n".join(golden_ids(args.golden_dir or golden_dir())))
        return EXIT_OK
    if args.repeats < 1 or any(t < 1 for t in args.threads):
        print("determinism: --repeats and --threads must be >= 1", file=sys.stderr)
        return EXIT_UNMEASURED
    try:
        targets = build_targets(args)
    except TargetError as exc:
        print(f"determinism: {exc}", file=sys.stderr)
        return EXIT_UNMEASURED
    out_dir = _out_dir(args.out)
    if out_dir is not None and out_dir.exists():
        print(f"determinism: {out_dir} already exists; refusing to overwrite it", file=sys.stderr)
        return EXIT_UNMEASURED
    devices = args.devices or ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    from detsim.engine import MODES
    modes = args.modes or list(MODES)
    matrix = run_matrix(targets, devices=devices, dtypes=args.dtypes, modes=modes, threads=args.threads,
                        repeats=args.repeats, deterministic=args.deterministic,
                        isolate=_isolation(args) if args.isolate else None)
    text = matrix.render(strict=args.strict)
    print(text)
    code = matrix.exit_code(strict=args.strict)
    if out_dir is not None:
        write_bundle(out_dir, matrix, args, text, code)
        print(f"evidence: {out_dir}")
    return code


def build_targets(args: argparse.Namespace) -> list[Target]:
    grads = tuple(args.grad)
    directory = args.golden_dir or golden_dir()
    cases = list(args.cases)
    if not cases and not args.nanobragg and not args.call:
        cases = list(DEFAULT_CASES)
    if args.call and grads:
        raise TargetError("--grad applies to simulation cases only; a callable returns its own gradients")
    targets = [resolve_case(c, grads, args.chunk_pixels, directory) for c in cases]
    targets += [resolve_command_line(c, grads, args.chunk_pixels) for c in args.nanobragg]
    targets += [resolve_callable(c) for c in args.call]
    return targets


def _out_dir(out: str | None) -> Path | None:
    if out is None:
        return None
    stamp = utc_stamp()
    return Path(out.replace("{stamp}", stamp).replace("<STAMP>", stamp))


@contextlib.contextmanager
def deterministic_mode(enabled: bool):
    """``torch.use_deterministic_algorithms(True)`` and inductor's ``deterministic`` for the block."""
    if not enabled:
        yield
        return
    import torch._inductor.config as inductor_config

    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
              inductor_config.deterministic)
    torch.use_deterministic_algorithms(True)
    inductor_config.deterministic = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        inductor_config.deterministic = before[2]


def run_matrix(targets: list[Target], *, devices, dtypes, modes, threads, repeats: int,
               deterministic: bool = False, isolate: dict | None = None) -> Matrix:
    """Run every configuration ``repeats`` times; crashes and unavailable devices are recorded, not raised."""
    matrix = Matrix(threads=list(threads), repeats=repeats, deterministic=deterministic)
    for target in targets:
        matrix.add_target(target)
        missing = [m for m in modes if m not in target.modes]
        if missing:
            matrix.notes.append(f"{target.name}: {target.kind} targets have no {', '.join(missing)} mode "
                                f"(only {', '.join(target.modes)}); those rows are left out")
        for device in devices:
            reason = device_unavailable(device)
            for dtype in dtypes:
                for mode in (m for m in modes if m in target.modes):
                    skip = reason or target.unavailable(device, mode)
                    for n in threads:
                        config = RunConfig(target.name, device, dtype, mode, n)
                        for repeat in range(repeats):
                            if skip:
                                matrix.add(RunResult(config, repeat, "skipped", reason=skip))
                            elif isolate is not None:
                                matrix.add(_run_isolated(target, config, repeat, deterministic, isolate))
                            else:
                                matrix.add(run_once(target, config, repeat, deterministic))
    return matrix


def device_unavailable(device: str) -> str | None:
    """Why a device cannot run here, or None."""
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        return f"not a torch device: {exc}"
    if dev.type == "cuda" and not torch.cuda.is_available():
        return "torch.cuda.is_available() is False" + ("" if torch.version.cuda else " (CPU-only torch build)")
    return None


def run_once(target: Target, config: RunConfig, repeat: int, deterministic: bool) -> RunResult:
    """One run in this process; an exception becomes a crashed result with the traceback verbatim."""
    start = time.perf_counter()
    try:
        with thread_count(config.threads), deterministic_mode(deterministic):
            outputs = target.run(config.device, DTYPES[config.dtype], config.mode)
            if config.device.startswith("cuda"):
                torch.cuda.synchronize()
            outputs = {k: v.detach().to("cpu") for k, v in outputs.items()}
    except Exception:
        return RunResult(config, repeat, "crashed", seconds=time.perf_counter() - start, error=traceback.format_exc())
    return RunResult(config, repeat, "ok", seconds=time.perf_counter() - start, hashes=digest_outputs(outputs),
                     outputs=outputs)


def _isolation(args: argparse.Namespace) -> dict:
    return {"grads": list(args.grad), "chunk_pixels": args.chunk_pixels,
            "golden_dir": str(args.golden_dir or golden_dir())}


def _run_isolated(target: Target, config: RunConfig, repeat: int, deterministic: bool, isolate: dict) -> RunResult:
    """One run in a fresh interpreter; a non-zero exit (even a segfault) is a crash with its stderr."""
    job = {**isolate, "kind": target.kind, "spec": target.spec, "device": config.device, "dtype": config.dtype,
           "mode": config.mode, "threads": config.threads, "deterministic": deterministic}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="detsim-determinism-") as tmp:
        result_path = Path(tmp) / "outputs.pt"
        env = {**os.environ, "OMP_NUM_THREADS": str(config.threads)}
        done = subprocess.run([sys.executable, "-m", "detsim.track.determinism.cmd_determinism", "--worker", json.dumps(job),
                               str(result_path)], capture_output=True, text=True, env=env)
        seconds = time.perf_counter() - start
        if done.returncode != 0 or not result_path.exists():
            error = done.stderr or f"worker exited with status {done.returncode} and no output"
            return RunResult(config, repeat, "crashed", seconds=seconds,
                             error=f"[isolated worker, exit status {done.returncode}]\n{error}")
        outputs = torch.load(result_path, weights_only=True)
    return RunResult(config, repeat, "ok", seconds=seconds, hashes=digest_outputs(outputs), outputs=outputs)


def _worker(job_json: str, result_path: str) -> int:
    job = json.loads(job_json)
    grads, chunk = tuple(job["grads"]), job["chunk_pixels"]
    if job["kind"] == "golden":
        target = resolve_case(job["spec"], grads, chunk, Path(job["golden_dir"]))
    elif job["kind"] == "nanobragg":
        target = resolve_command_line(job["spec"], grads, chunk)
    else:
        target = resolve_callable(job["spec"])
    with thread_count(job["threads"]), deterministic_mode(job["deterministic"]):
        outputs = target.run(job["device"], DTYPES[job["dtype"]], job["mode"])
    torch.save({k: v.detach().to("cpu") for k, v in outputs.items()}, result_path)
    return 0


def command_line(args: argparse.Namespace, *, out: Path | None = None, entry: str = "detsim-track") -> str:
    """The canonical, re-runnable command for these arguments (every axis spelled out)."""
    parts = [*shlex.split(entry), "determinism", *args.cases]
    if not args.cases and not args.nanobragg and not args.call:
        parts += list(DEFAULT_CASES)
    for c in args.nanobragg:
        parts += ["--nanobragg", c]
    for c in args.call:
        parts += ["--call", c]
    from detsim.engine import MODES
    parts += ["--repeats", str(args.repeats), "--threads", *map(str, args.threads), "--dtypes", *args.dtypes,
              "--devices", *(args.devices or ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])),
              "--modes", *(args.modes or list(MODES))]
    for g in args.grad:
        parts += ["--grad", g]
    if args.chunk_pixels:
        parts += ["--chunk-pixels", str(args.chunk_pixels)]
    if args.golden_dir:
        parts += ["--golden-dir", str(args.golden_dir)]
    parts += [flag for flag, on in (("--deterministic", args.deterministic), ("--isolate", args.isolate),
                                    ("--strict", args.strict)) if on]
    if out is not None:
        parts += ["--out", str(out)]
    return shlex.join(parts)


def write_bundle(out_dir: Path, matrix: Matrix, args: argparse.Namespace, text: str, code: int) -> None:
    """matrix.json/txt, runs.tsv (per-run hashes), env.json, commands.txt, crashes/, summary.md - atomically."""
    env = environment()
    env["deterministic_algorithms"] = torch.are_deterministic_algorithms_enabled()
    env["determinism_flag"] = bool(args.deterministic)
    command = command_line(args, out=out_dir)
    with atomic_directory(out_dir) as tmp:
        write_json(tmp / "matrix.json", matrix.to_dict(strict=args.strict, exit_code=code))
        atomic_write_text(tmp / "matrix.txt", text + "\n")
        atomic_write_text(tmp / "runs.tsv", matrix.runs_tsv())
        write_json(tmp / "env.json", env)
        atomic_write_text(tmp / "commands.txt", _commands_text(args, matrix, command))
        for name, body in matrix.crash_reports().items():
            atomic_write_text(tmp / "crashes" / name, body)
        atomic_write_text(tmp / "summary.md", matrix.summary_markdown(
            command=command, env=env, strict=args.strict, exit_code=code))


def _commands_text(args: argparse.Namespace, matrix: Matrix, command: str) -> str:
    lines = [f"# run from: {Path.cwd()}", command,
             "# the same without the installed entry point (PYTHONPATH=<repo> in a fresh clone):",
             command_line(args, out=None, entry=f"{Path(sys.executable).name} -m detsim.track.cli"),
             "# one configuration at a time:"]
    for config in matrix.configs():
        one = argparse.Namespace(**{**vars(args), "threads": [config.threads], "dtypes": [config.dtype],
                                    "devices": [config.device], "modes": [config.mode]})
        target = matrix.targets[config.target]
        one.cases = [target.spec] if target.kind == "golden" else []
        one.nanobragg = [target.spec] if target.kind == "nanobragg" else []
        one.call = [target.spec] if target.kind == "callable" else []
        lines.append(command_line(one))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        sys.exit(_worker(sys.argv[2], sys.argv[3]))
    from detsim.track.cli import main
    sys.exit(main(["determinism", *sys.argv[1:]]))
