"""Stash keys shared by the plugin's modules."""
import pytest

from gpuconform.profile import LoadedProfile

PROFILE = pytest.StashKey[LoadedProfile]()
