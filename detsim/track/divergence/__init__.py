"""divergence"""
