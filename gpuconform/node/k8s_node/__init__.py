"""Node checks through Kubernetes, no SSH: ``--hosts=k8s-node://<node>`` and
``--hosts=k8s-node://?selector=<label selector>``. One module per job:

* :mod:`.spec`: the host spec, checked, and its selectors resolved against the API server;
* :mod:`.backend`: ``k8s-node://`` as a testinfra connection type (the ``host`` fixture);
* :mod:`.template`: the probe pod, one per node;
* :mod:`.pods`: the batched pod client, the probe pool of these hosts (it alone talks to the
  Kubernetes API when probing; imported only where such a host is probed).

The names of the first three that callers use are here too.
"""
from gpuconform.node.k8s_node.backend import register_backend
from gpuconform.node.k8s_node.spec import SCHEME, check_spec, selector_of
from gpuconform.node.k8s_node.template import NAMESPACE_SUFFIX, Settings, pod_body, pod_name

__all__ = ["NAMESPACE_SUFFIX", "SCHEME", "Settings", "check_spec", "pod_body", "pod_name", "register_backend", "selector_of"]
