"""Why a flagged regression happened, across commits: ``detsim-track explain`` (docs/explain.md)."""
