"""``k8s-node://`` as a testinfra connection type: ``--hosts`` and the ``host`` fixture (which
testinfra makes from it) treat a Kubernetes node like any other host. It names the node only:
the node is probed through a probe pod (:mod:`gpuconform.node.k8s_node.pods`), and has no shell
to run anything else on."""
from __future__ import annotations

import urllib.parse
from typing import Any

from testinfra.backend import base

from gpuconform.node.k8s_node.spec import SCHEME


def register_backend() -> None:
    """Make ``k8s-node://`` a testinfra connection type (testinfra looks backends up in this table)."""
    import testinfra.backend
    testinfra.backend.BACKENDS.setdefault(SCHEME, f"{__name__}.K8sNodeBackend")


class K8sNodeBackend(base.BaseBackend):
    """A Kubernetes node as a testinfra host, named by the node."""
    NAME = SCHEME

    def __init__(self, name: str, *args: Any, **kwargs: Any):
        self.node = urllib.parse.unquote(name)
        super().__init__(self.node, *args, **kwargs)

    def run(self, command: str, *args: str, **kwargs: Any):
        raise RuntimeError(f"{SCHEME}://{self.node} is read through a read-only probe pod only; "
                           f"what needs a shell on the host (--remediate) needs ssh:// access")
