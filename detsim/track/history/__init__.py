"""What asv recorded, read: config, result files, commit order, and one series per benchmark and parameters."""
