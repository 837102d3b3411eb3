"""The suite's shared vocabulary of failure, at the bottom of the import graph: every layer (node,
cluster, Kubeflow, TLS, the report) raises and reads these, none of them imports another layer
for them."""
from __future__ import annotations


class CannotTell(Exception):
    """A fact that could not be read; str() says why. Reported as "could not check"."""
