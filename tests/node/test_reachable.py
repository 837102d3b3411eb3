from gpuconform.checks import check


@check("node.reachable", "Host answers the read-only probe",
       fix="Check SSH access (key, user, --ssh-config) and that the host is up; "
           "raise timeouts.probe_s in the profile for slow hosts.")
def test_host_answers_probe(node):
    """The host runs the probe and returns its facts."""
    assert node.error is None, node.error
