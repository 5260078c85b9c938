"""The shared base of the tracking suite: every fact the suite's areas agree on, defined once, and the few
things every command does alike.

Inputs: the checkout (golden cases, baseline files, git), the process and its torch. Outputs: facts and
records, no judgement: the golden cases and their stored hashes (:mod:`.golden`), image hashes
(:mod:`.hashing`), Pearson r and the acceptance line (:mod:`.metrics`), exit codes (:mod:`.exitcodes`), the
machine class and git state of a result (:mod:`.provenance`, :mod:`.git`), the reference workloads
(:mod:`.workloads`), how an instruction count is made (:mod:`.callgrind`), child processes and their typed jobs
(:mod:`.fresh`), the one timed render (:mod:`.timing`), the one parity loop over cases (:mod:`.parity`), the one
bisection (:mod:`.bisection`), how something the suite ran ended (:mod:`.status`), the
tracking run's recording steps (:mod:`.recording`, run by path by ``.ci/track``, standard library only); and,
needing torch or the core, safe output (:mod:`.output`), this process and its devices (:mod:`.runtime`), the
computations the determinism commands run (:mod:`.targets`) and the golden renders (:mod:`.golden_hashes`).

The asv suite loads the modules it needs from the working tree under a name of its own
(``benchmarks/common.py``), beside whichever commit's ``detsim`` asv installed: those, and what they import,
use only the standard library, numpy and the base, relatively (``tests/track/test_track_layout.py``
checks it), so a value torch provides is passed in. Nothing here prints or parses command lines.
"""
