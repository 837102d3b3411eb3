"""NVIDIA's GPU Operator in the cluster test bed: its controller built from its Go module, its
chart rendered by a real Helm with the article's values, and the controller run against the bed's
kube-apiserver (``operator.py``)."""
