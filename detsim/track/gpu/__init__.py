"""The prepared device check (``detsim-track gpu-check``, ``.ci/gpu``, docs/gpu.md): every path's tests, golden
parity, determinism and speed on one CUDA device in one time-boxed run, each step in a child process of its own;
with ``--dry-run`` (or no CUDA device) the same steps on the CPU at small sizes."""
