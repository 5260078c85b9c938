"""Tracking a target: any repository with a nanoBragg-compatible command, detsim itself by default.

Inputs: the target's ``detsim-target.toml`` (:mod:`.spec`), its git history, the golden cases. Outputs: per
commit and case a typed outcome (:mod:`.outcome`: an image judged against nanoBragg.c's, or a failure of its
own kind), the first commit where a criterion turns (:mod:`.bisection`, :mod:`.criteria`), and where an image
departs from its reference (:mod:`.departure`). How to point the suite at a port: docs/targets.md.
"""
