"""A local failure to start the probe (fork/exec of ``ssh`` or ``sh`` on this machine, seen as
``OSError: [Errno 14] Bad address: '/bin/sh'``) is retried once, and is never reported as the
host failing to answer: "could not check", not "unreachable" with every check blocked."""
import subprocess

import pytest
import testinfra

from gpuconform.node import collect, probe
from gpuconform.node.facts import CannotTell

SCRIPT = probe.build_script(probe.ProbeInputs(), 5)


@pytest.fixture
def failing_starts(monkeypatch):
    """Make the next N process starts of this machine fail as a fork/exec does."""
    real, left = subprocess.Popen, [0]

    def popen(*args, **kwargs):
        if left[0] > 0:
            left[0] -= 1
            raise OSError(14, "Bad address", "/bin/sh")
        return real(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    return left


def reachable_verdict(facts) -> str:
    from tests.node.test_reachable import test_host_answers_probe
    try:
        test_host_answers_probe(facts)
    except CannotTell:
        return "error"
    except AssertionError:
        return "fail"
    return "pass"


def test_one_failed_start_is_retried(failing_starts):
    failing_starts[0] = 1
    facts = collect.probe_host(testinfra.get_host("local://"), "here", SCRIPT)
    assert facts.error is None and facts.sections and failing_starts[0] == 0
    assert reachable_verdict(facts) == "pass"


def test_two_failed_starts_are_could_not_check_not_unreachable(failing_starts):
    failing_starts[0] = 2
    facts = collect.probe_host(testinfra.get_host("local://"), "here", SCRIPT)
    assert facts.could_not_check and "could not start the probe" in facts.error
    assert "Bad address" in facts.error and "/bin/sh" in facts.error
    assert reachable_verdict(facts) == "error"


def test_the_hosts_answer_is_not_retried():
    """ssh's exit 255 (testinfra raises RuntimeError) is the host's answer: one try, unreachable."""
    calls = []

    class Host:
        def run(self, script):
            calls.append(script)
            raise RuntimeError(type("R", (), {"stderr": "ssh: connect to host gpu-1 port 22: No route to host"})())

    facts = collect.probe_host(Host(), "gpu-1", SCRIPT)
    assert len(calls) == 1 and not facts.could_not_check and "No route to host" in facts.error
    assert reachable_verdict(facts) == "fail"
