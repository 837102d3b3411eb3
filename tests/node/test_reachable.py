from gpuconform.checks import check
from gpuconform.node.topics import system
from gpuconform.node.facts import CannotTell


@check("node.reachable", **system.REACHABLE)
def test_host_answers_probe(node):
    """The host runs the probe and returns its facts."""
    if node.could_not_check:  # its k8s-node:// pod never ran, or this machine could not start the probe
        raise CannotTell(node.error)
    assert node.error is None, node.error
