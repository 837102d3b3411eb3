"""The pytest plugin: wiring in plugin.py, fixtures in fixtures.py, hooks in hooks.py."""
