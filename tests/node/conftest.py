"""Node checks take the items they state a rule about from the profile (one test per item)."""
import pytest

from gpuconform.plugin import params
from gpuconform.plugin.keys import PROFILE
from gpuconform.redact import redact


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    prof = metafunc.config.stash[PROFILE]
    for fixture, items, field in (("required_param", prof.cmdline_params("cmdline_required"), "kernel.cmdline_required"),
                                  ("forbidden_param", prof.cmdline_params("cmdline_forbidden"),
                                   "kernel.cmdline_forbidden"),
                                  ("sysctl_key", prof.sysctl_keys(), "sysctl")):
        if fixture in metafunc.fixturenames:
            # a profile item can hold a secret (a kernel parameter's value): ids reach JUnit and the report
            params.parametrize(metafunc, fixture, items, field, lambda i: redact(str(i)))
