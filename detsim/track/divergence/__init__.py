"""Where do two runs of one computation first differ, and why?

A run is recorded event by event (:mod:`.recorder`): aten ops through a dispatch mode
(:mod:`.aten_ops`) and Triton launches through wrappers (:mod:`.triton_hooks`), each event with the
fingerprints of its tensors (:mod:`.events`), never-written memory filled with a value of the run's own
and left out of the fingerprints (:mod:`.unwritten`). Two records are walked side by side
(:mod:`.firstdiff`) to name the first culprit, read of uninitialized memory, state leaked from run A into
run B, swapped operands or change of path, and its victims (:mod:`.findings`, explained by
:mod:`.diagnosis`). :func:`.finder.find_divergence` is the Python API behind
``detsim-track diverge``.
"""
