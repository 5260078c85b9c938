"""The ``detsim`` command: nanoBragg's command line, read as nanoBragg reads it, and the run it asks for.

In: an argument list (argv[1:]). Out: a :class:`~detsim.model.config.SimulationConfig`, then image files and
nanoBragg's report lines. ``flag_table`` holds the flags (which token sets which value), ``usage`` the help
drawn from it, ``argv_reader`` the reader of an argument list; ``arguments`` the raw values it fills;
``to_config`` turns them into a validated configuration (with the ``-img``/``-mask`` headers and input
files); ``command`` is the command itself (``detsim``: render, write, report).
"""
