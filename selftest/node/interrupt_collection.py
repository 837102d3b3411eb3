"""A pytest plugin for selftest/node/test_deadlines.py: Ctrl-C (a real SIGINT to the run itself)
arrives while pytest collects the node checks, half-way (some modules collected, later ones not),
as an operator's can on a loaded machine."""
import os
import signal


def pytest_collectstart(collector) -> None:
    if collector.path is not None and collector.path.name == "test_persistence.py" and "node" in collector.path.parts:
        os.kill(os.getpid(), signal.SIGINT)
