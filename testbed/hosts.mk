# Simulated GPU hosts (placeholder; see testbed/hosts/README.md)
