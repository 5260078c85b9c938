"""Where do two runs of one computation first differ, and why?

A run is recorded event by event (:mod:`.recorder`): aten ops through a dispatch mode
(:mod:`.aten_ops`) and Triton launches through wrappers (:mod:`.triton_hooks`), each event with the
fingerprints of its tensors (:mod:`.records`). Two records are walked side by side to name the first
culprit, its victims or a change of path (:mod:`.firstdiff`). :func:`.finder.find_divergence` is the
Python API; ``detsim-track diverge`` (:mod:`.cmd_diverge`) the command.
"""
