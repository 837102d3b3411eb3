"""Node checks take the items they state a rule about from the profile (one test per item)."""
import pytest

from gpuconform.plugin.keys import PROFILE


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    prof = metafunc.config.stash[PROFILE]
    for fixture, items in (("required_param", prof.cmdline_params("cmdline_required")),
                           ("forbidden_param", prof.cmdline_params("cmdline_forbidden")),
                           ("sysctl_key", prof.sysctl_keys())):
        if fixture in metafunc.fixturenames:
            metafunc.parametrize(fixture, items, ids=[str(i) for i in items])
