"""Do two runs differ, and where first? (``detsim-track determinism``, ``diverge``, ``trace-diff``,
``evidence``, and what ``explain`` says about image-hash, reproducibility and parity changes;
docs/determinism.md, docs/trace.md, docs/evidence.md)

Inputs: a target (a golden case, a nanoBragg command line, a callable, a module or a script) run here or in
a fresh interpreter, at one commit's package or two (:mod:`.runs`); two per-pixel trace logs, whatever
printed them (:mod:`.traces`); a pytest selection run on every device, and the area's earlier bundles
(:mod:`.bundle`).

One record of a run (:mod:`.record`, recorded op by op by :mod:`.recorder`) round-trips through JSON, so runs
recorded apart compare. One comparer (:func:`.outputs.compare_outputs`) pairs named outputs: a run's results,
a trace's quantities per pixel, a bundle's tests, warnings, runs and stable artifacts. Three questions keep
their own rules: the op-stream walk inside a run (:mod:`.firstdiff`), test times judged against a noisy
history (:mod:`.durations`) and one bundle against its own ``sha256.txt`` (:mod:`.manifest`).

Outputs: which runs agree bit for bit across repeats, threads, dtypes, devices and modes (:mod:`.matrix`);
the first divergent event of two records and why (:mod:`.firstdiff`, :mod:`.divergences`), in words for
``explain`` (:mod:`.op_streams`); the first traced quantity that differs (:mod:`.traces`); an evidence
bundle of a pytest run and what changed since the previous one (:mod:`.bundle` and the modules it names).
Each comparison carries a verdict line and an exit code (0 agree, 1 differ, 2 nothing comparable or a run
crashed).

Not here: the reproducibility axes and cases (``detsim/track/base/golden.py``) and the status page's
commit-to-commit image states (``detsim/track/judge/fingerprints.py``).
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
