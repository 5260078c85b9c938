"""Hashed evidence bundles of test runs: run pytest with the plugin, write the bundle, compare it with
the previous one."""
