"""The stored history of the asv suite and its golden baseline.

``detsim-track regressions`` (:mod:`.cmd_regressions`) reads what was recorded (:mod:`.jsonc`,
:mod:`.asvresults`), orders it by commit (:mod:`.ordering`), models it as series (:mod:`.series`),
judges the latest point of each (:mod:`.detection`, with the statistics of :mod:`.steps`) into a
verdict (:mod:`.verdict`) and prints it (:mod:`.render`). ``detsim-track baselines``
(:mod:`.cmd_baselines`) shows or refreshes the golden baseline file (:mod:`.baseline_file`), rendering
the golden hashes as the asv tracks do (:mod:`.golden_hashes`).
"""
