"""The companion fix scripts, shipped as the package data ``gpuconform.remediation`` (setup.py)."""
