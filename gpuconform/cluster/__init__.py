"""The cluster library: talk to a Kubernetes API server for the cluster checks.

Data flows one way: the checks (tests/cluster) hand values to this library; it never reads the
profile nor imports the checks. Modules:

* ``connect``   -- a client from kubeconfig / context / in-cluster config, counting requests,
                   one-line errors for an unreachable or unauthorised API server, refusals
                   (certificate, TLS, 401) named at once, a stalled server given up once;
* ``facts``     -- a read-only snapshot, one list call per kind, fetched on first use;
* ``pods``      -- pod states (ready, terminal, image pull, crash) and one-line descriptions;
* ``migconfig`` -- relabel nvidia.com/mig.config and follow the MIG manager (disruptive check);
* ``miglayout`` -- a node's expected allocatable from the cluster's own mig-parted ConfigMap;
* ``waiting``   -- the one wait helper (tenacity: deadline, pauses, backoff); watches ride it;
                   one progress line per wait (object, last state, time left);
* ``namespace`` -- the run's labelled, prefixed, Pod-Security-restricted namespace and its cleanup;
* ``workloads`` -- pods from ``manifests/`` run to completion, diagnostics captured before deletion;
* ``operator``, ``kyverno``, ``nodes`` -- what the GPU Operator, Kyverno and GPU nodes look like;
* ``sweep``     -- ``python -m gpuconform.cluster.sweep``: remove leftovers of interrupted runs.
"""
