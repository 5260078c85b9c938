"""``detsim batch``: many nanoBragg command lines rendered by long-lived workers on a Dask cluster.

:mod:`~detsim.batch.frames` reads the batch (a file of command lines, or a base line and a CSV sweep),
:mod:`~detsim.batch.plan` checks every frame and names its outputs before anything renders,
:mod:`~detsim.batch.manifest` keeps what each frame wrote, :mod:`~detsim.batch.worker` renders one frame on a
worker (reusing an unchanged setup), :mod:`~detsim.batch.cluster` runs the frames on the cluster with one
retry each, and :mod:`~detsim.batch.cli` is the command. Dask is imported only by the last two (the
``cluster`` extra): ``detsim`` without ``batch`` never imports it.
"""
