"""``detsim-track publish``: asv's published folder readable at a glance and offline (docs/tracking.md)."""
