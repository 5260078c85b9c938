"""Do two runs differ, and where first? (``detsim-track determinism``, ``diverge``, ``trace-diff``, and what
``explain`` says about image-hash, reproducibility and parity changes; docs/determinism.md, docs/trace.md)

Inputs: a computation (a golden case, a nanoBragg command line, a callable, a module or a script) run here or
in a fresh interpreter, at one commit's package or two (:mod:`.runs`); two per-pixel trace logs, whatever
printed them (:mod:`.traces`).

One log of a run (:mod:`.run_log`, traced op by op by :mod:`.tracer`) round-trips through JSON, so runs traced
apart compare. One comparer (:func:`.outputs.compare_outputs`) pairs named outputs: a run's results, a trace's
quantities per pixel (and, outside this area, an evidence bundle's tests: :mod:`detsim.track.evidence`). The
op-stream walk inside a run keeps its own rules (:mod:`.firstdiff`).

Outputs: which runs agree bit for bit across repeats, threads, dtypes, devices and modes (:mod:`.matrix`);
the first divergent event of two logs and why (:mod:`.firstdiff`, :mod:`.divergences`), in words for
``explain`` (:mod:`.op_streams`); the first traced quantity that differs (:mod:`.traces`). Each comparison
carries a verdict line and an exit code (0 agree, 1 differ, 2 nothing comparable or a run crashed).

Not here: the reproducibility axes and cases (``detsim/track/base/golden.py``), the status page's
commit-to-commit image states (``detsim/track/judge/fingerprints.py``) and the evidence bundle of a pytest run
(:mod:`detsim.track.evidence`).
"""


def spelled(*options: tuple[str, object]) -> list[str]:
    """The words of ``(flag, value)`` pairs, as the evidence folders' re-runnable commands spell them: nothing
    for None, False or an empty list, the flag alone for True, else the flag and its value or values."""
    words = []
    for flag, value in options:
        if value is True:
            words.append(flag)
        elif isinstance(value, (list, tuple)):
            words += [flag, *map(str, value)] if value else []
        elif value is not None and value is not False:
            words += [flag, str(value)]
    return words
