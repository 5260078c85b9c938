"""parity"""
