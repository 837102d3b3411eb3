"""gpuconform: acceptance and nightly conformance suite for GPU Kubernetes ML platforms."""
__version__ = "0.1.0"
