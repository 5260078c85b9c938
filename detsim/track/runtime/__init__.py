"""What the suite runs with torch or detsim's core imported: :mod:`detsim.track.base` may import neither.

The base holds facts in the standard library and numpy only, because the asv suite loads it from the
working tree beside whichever commit's ``detsim`` asv installed (``benchmarks/common.py``). What needs
more sits here, just above the base:

* :mod:`.output` - atomic files and report folders (on the core's :func:`detsim.files.atomic_write`), and
  the output-option convention;
* :mod:`.targets` - what the determinism and divergence tools run (cases, command lines, callables);
* :mod:`.tensors` - a tensor's own bytes and their sha256;
* :mod:`.process` - this process's environment record and its torch thread count;
* :mod:`.devices` - whether a torch device named on the command line exists on this machine.
"""
