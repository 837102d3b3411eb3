"""Stash keys shared by the plugin's modules."""
import pytest

from gpuconform.plugin.inputs import RunInputs
from gpuconform.profile import LoadedProfile

#: every input of the run, read once at configure time (plugin/inputs.py ``read``)
INPUTS = pytest.StashKey[RunInputs]()
PROFILE = pytest.StashKey[LoadedProfile]()
#: (title, text) pairs a check adds with the ``evidence`` fixture; shown with its result
EVIDENCE = pytest.StashKey[list]()
