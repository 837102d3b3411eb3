"""Stash keys shared by the plugin's modules."""
import pytest

from gpuconform.profile import LoadedProfile

PROFILE = pytest.StashKey[LoadedProfile]()
#: (title, text) pairs a check adds with the ``evidence`` fixture; shown with its result
EVIDENCE = pytest.StashKey[list]()
