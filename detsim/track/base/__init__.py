"""The shared base of the tracking suite: every fact the suite's areas agree on, defined once.

* :mod:`.golden` - golden cases: find them, build a case's configuration in its folder, load
  nanoBragg's image;
* :mod:`.metrics` - parity: Pearson r and the acceptance line r >= 0.9995;
* :mod:`.hashing` - sha256 of bytes, files, tensors and images (the one image-hash definition);
* :mod:`.provenance` - git state, the environment record, and the machine class image bits hold for;
* :mod:`.output` - atomic files and report folders, and the output-option convention;
* :mod:`.exitcodes` - the exit codes of every command;
* :mod:`.workloads` - the named speed workloads (P1, P2, P4096) as nanoBragg command lines;
* :mod:`.targets` - what the determinism and divergence tools run (cases, command lines, callables);
* :mod:`.commits` - another commit's package, exported to import it beside this one;
* :mod:`.fresh` - child processes: work in a fresh interpreter (jobs, conversations), the pinned
  environment, and every child ending with its command (a time-out, Ctrl-C, SIGTERM);
* :mod:`.git` - read-only git in a folder, one error type.

Nothing here prints or parses command lines; the command modules of the areas do.
"""
