"""Loaded into a suite run with ``-p retry_plugin``: says the nvidia-ctk check needed 2 retries,
as a cluster check waiting with tenacity would (``record_retries``)."""
from gpuconform.report import record_retries


def pytest_runtest_setup(item):
    if "test_nvidia_ctk_present" in item.nodeid:
        record_retries(item, 2)
