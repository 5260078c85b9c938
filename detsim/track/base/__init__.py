"""The shared base of the tracking suite: every fact the suite's areas agree on, defined once.

* :mod:`.golden` - golden cases: find them, build a case's configuration in its folder, load
  nanoBragg's image;
* :mod:`.metrics` - parity: Pearson r and the acceptance line r >= 0.9995;
* :mod:`.hashing` - sha256 of bytes, files and images (the one image-hash definition), and fingerprints;
* :mod:`.provenance` - git state, the CPU, and the machine class image bits hold for;
* :mod:`.baseline_file` - the stored golden hashes, one file per machine class;
* :mod:`.exitcodes` - the exit codes of every command;
* :mod:`.workloads` - the named speed workloads (P1, P2, P4096) as nanoBragg command lines;
* :mod:`.callgrind` - what an instruction count is made of: its script, its valgrind command, its total;
* :mod:`.commits` - another commit's package, exported to import it beside this one;
* :mod:`.counts` - the argparse types of counts, for refusing a bad one while the options are read;
* :mod:`.fresh` - child processes: work in a fresh interpreter (jobs, conversations), the pinned
  environment, and every child ending with its command (a time-out, Ctrl-C, SIGTERM);
* :mod:`.git` - read-only git in a folder, one error type.

Nothing here prints or parses command lines; the command modules do. The base imports only the
standard library, numpy and itself (relatively; ``tests/track/test_track_layout.py`` checks it): the asv
suite loads it from the working tree under a name of its own (``benchmarks/common.py``), beside whichever
commit's ``detsim`` asv installed. So nothing here imports torch or detsim's core: a value they provide
is passed in (the torch module, a reader of argument lists), and what must run them sits in
:mod:`detsim.track.runtime`.
"""
