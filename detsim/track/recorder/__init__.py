"""The recorder: a project's commits measured into its results (asv's results files and, for a target, its rows).

detsim is its first target: :mod:`.own` records detsim's own commits with its asv suite in asv's environments;
:mod:`.target` records a target's commits built into the project's venv with the suite for targets (reusing
unchanged installed trees), on this machine or with a Dask cluster (:mod:`.cluster`); :mod:`.window` is a
recorded window's account. :mod:`.steps` is the tracking run's entry, run by path; it and what it imports
(:mod:`.files`, :mod:`.plan`, :mod:`.second`, :mod:`.processes`, :mod:`.own`) need only the standard library.
This file stays empty of imports: the steps load this folder as a package of their own.
"""
