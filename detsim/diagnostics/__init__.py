"""Diagnostics: the intermediate values of a render, for finding why two images differ.

In: a configuration and chosen pixels. Out: ``TRACE_PY`` lines and records (``pixel_trace``), taken through
the engine's observed path (:mod:`detsim.rendering.observed_path`: the GENERAL maths path with a hook called
between its steps), whose hook ``pixel_trace`` implements. Diagnostics import the engine; the engine never
imports them.
"""
