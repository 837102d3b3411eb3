"""A real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler) with KWOK playing H100 GPU workers, the GPU Operator's objects and CUDA pods.

Entry points: :class:`testbed.cluster.bed.TestBed` (Python / pytest fixture),
``python -m testbed.cluster up|down|status`` (``make testbed-up`` / ``make testbed-down``).
"""
