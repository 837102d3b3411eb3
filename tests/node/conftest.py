"""Node checks take the items they state a rule about from the profile (one test per item)."""
import pytest

from gpuconform.plugin.keys import PROFILE
from gpuconform.redact import redact


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    prof = metafunc.config.stash[PROFILE]
    for fixture, items in (("required_param", prof.cmdline_params("cmdline_required")),
                           ("forbidden_param", prof.cmdline_params("cmdline_forbidden")),
                           ("sysctl_key", prof.sysctl_keys())):
        if fixture in metafunc.fixturenames:
            # a profile item can hold a secret (a kernel parameter's value): ids reach JUnit and the report
            metafunc.parametrize(fixture, items, ids=[redact(str(i)) for i in items])
