from gpuconform.checks import check
from gpuconform.node.facts import CannotTell


@check("node.reachable", "Host answers the read-only probe",
       fix="Check SSH access (key, user, --ssh-config) and that the host is up; "
           "raise timeouts.probe_s in the profile for slow hosts.")
def test_host_answers_probe(node):
    """The host runs the probe and returns its facts."""
    if node.could_not_check:  # its k8s-node:// pod never ran, or this machine could not start the probe
        raise CannotTell(node.error)
    assert node.error is None, node.error
