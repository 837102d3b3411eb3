"""The CNCF Kubernetes AI Conformance program: its checklists (data), the suite's results mapped to
its requirements, the PRODUCT.yaml export and the program's validation rules (README.md)."""
