"""speed"""
