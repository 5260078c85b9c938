"""What the host gives a run: memory, worker threads and forked processes, and SIGTERM.

In: the machine (available memory, CPU count, signals). Out: chunk and block sizes (``memory``), chunks shared
across threads (``threads``) or forked processes (``processes``) with the same bits for any count, and SIGTERM
turned into Ctrl-C for ``detsim`` and ``detsim-track`` (``signals``), and their processes' exit without the
final garbage collection (``shutdown``). Of the rest of detsim it imports only the configuration's error type.
"""
