"""A pytest plugin for selftest/node/test_deadlines.py: Ctrl-C (a real SIGINT to the run itself)
arrives while pytest collects the kubeflow checks, as an operator's can on a loaded machine."""
import os
import signal


def pytest_collectstart(collector) -> None:
    if collector.path is not None and collector.path.name == "test_ingress.py" and "kubeflow" in collector.path.parts:
        os.kill(os.getpid(), signal.SIGINT)
