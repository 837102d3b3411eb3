"""The pods of the cluster checks, shipped as the package data ``gpuconform.manifests`` (setup.py)."""
