"""A 403 from the API server becomes one line naming the rule to add: the three forms of the
API server's RBAC message (apiserver endpoints/handlers/responsewriters/errors.go,
forbiddenMessage), and a 403 that is not RBAC's (an admission policy) told as any other refusal.
The bodies are Status objects as the API server sends them."""
from __future__ import annotations

import json

import pytest

from gpuconform.cluster.errors import forbidden_line, request_error_line

USER = "system:serviceaccount:gpuconform:gpuconform"


class Refusal(Exception):
    """What the kubernetes client raises for a non-2xx answer: status, reason, body."""

    def __init__(self, message: str, status: int = 403):
        super().__init__(message)
        self.status, self.reason = status, {403: "Forbidden", 404: "Not Found"}[status]
        self.body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                                "reason": self.reason.replace(" ", ""), "code": status})


@pytest.mark.parametrize("message,line", [
    (f'nodes is forbidden: User "{USER}" cannot list resource "nodes" in API group "" at the cluster scope',
     f"forbidden: needs list nodes (cluster-wide) while listing nodes; {USER} is not granted it"),
    (f'pods "p" is forbidden: User "{USER}" cannot get resource "pods/log" in API group "" in the namespace "ns1"',
     f"forbidden: needs get pods/log (in namespace ns1) while listing nodes; {USER} is not granted it"),
    (f'clusterpolicies.nvidia.com is forbidden: User "{USER}" cannot list resource "clusterpolicies" in API '
     f'group "nvidia.com" at the cluster scope',
     f"forbidden: needs list clusterpolicies.nvidia.com (cluster-wide) while listing nodes; {USER} is not granted it"),
    (f'namespaces "gpu-operator" is forbidden: User "{USER}" cannot get resource "namespaces" in API group "" in '
     f'the namespace "gpu-operator"',
     f"forbidden: needs get namespaces (namespace gpu-operator) while listing nodes; {USER} is not granted it"),
    (f'forbidden: User "{USER}" cannot get path "/metrics"',
     f"forbidden: needs get path /metrics (non-resource URL) while listing nodes; {USER} is not granted it"),
    ('pods "x" is forbidden: ValidatingAdmissionPolicy \'p\' with binding \'p\' denied request: no',
     'listing nodes: HTTP 403 Forbidden: pods "x" is forbidden: ValidatingAdmissionPolicy \'p\' with binding \'p\' '
     'denied request: no'),
])
def test_a_403_names_what_is_missing(message, line):
    assert forbidden_line(Refusal(message), "listing nodes") == line
    assert request_error_line(Refusal(message), "listing nodes") == line


def test_other_statuses_keep_their_line():
    assert request_error_line(Refusal("nodes \"x\" not found", 404), "reading node x") == \
        'reading node x: HTTP 404 Not Found: nodes "x" not found'
