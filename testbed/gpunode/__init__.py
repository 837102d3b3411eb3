"""A real one-node Kubernetes GPU node on the lent H200: build (build.sh), stage (stage.py),
bring up and judge on the GPU machine (node.py). See testbed/gpunode/README.md."""
