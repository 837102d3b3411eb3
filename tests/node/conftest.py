"""Node checks take the items they state a rule about from the profile (one test per item)."""
import pytest

from gpuconform.plugin.keys import PROFILE
from gpuconform.redact import redact

NONE = "<none>"
#: fixture -> the profile field its items come from
FIELDS = {"required_param": "kernel.cmdline_required", "forbidden_param": "kernel.cmdline_forbidden",
          "sysctl_key": "sysctl"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    prof = metafunc.config.stash[PROFILE]
    for fixture, items in (("required_param", prof.cmdline_params("cmdline_required")),
                           ("forbidden_param", prof.cmdline_params("cmdline_forbidden")),
                           ("sysctl_key", prof.sysctl_keys())):
        if fixture in metafunc.fixturenames:
            items = list(items) or [NONE]  # one result saying so, never pytest's "empty parameter set"
            # a profile item can hold a secret (a kernel parameter's value): ids reach JUnit and the report
            metafunc.parametrize(fixture, items, ids=[redact(str(i)) for i in items])


@pytest.fixture(autouse=True)
def _profile_lists_none(request: pytest.FixtureRequest) -> None:
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    for fixture, field in FIELDS.items():
        if params.get(fixture) == NONE:
            pytest.skip(f"the profile lists nothing to check here ({field} is empty)")
