"""What the suite runs with torch or detsim's core imported, just above :mod:`detsim.track.base`, which may
import neither."""
