"""Files in and out: image formats, output written safely, input read within bounds, numbers read as C does.

In: paths named on the command line. Out: float and PGM images and their scaling (``images``), SMV images and
their headers written and read (``smv``), outputs replaced all or none and never clobbered (``safe_write``),
input text read line by line under caps (``bounded_read``), numbers read with C's ``strtod``/``strtol``
grammar (``c_numbers``).
"""
