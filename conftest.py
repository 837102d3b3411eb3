"""Loads the gpuconform pytest plugin for the conformance suite (tests/)."""
pytest_plugins = ["gpuconform.plugin.plugin"]
