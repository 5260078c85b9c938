"""determinism"""
