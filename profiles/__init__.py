"""Example platform profiles, shipped as the package data ``gpuconform.profiles`` (setup.py)."""
