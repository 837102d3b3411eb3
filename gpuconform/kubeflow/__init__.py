"""Library of the kubeflow layer: the dex login through oauth2-proxy (``login``), the served
certificate's checks (through ``gpuconform.tls``), the run state (``run``: each login
and the certificate once), the web apps' JSON endpoints (``webapps``) and the Kubernetes objects
of an install (``objects``). It is handed values (URL, CA bundle, names); it never reads the
profile nor imports the checks.
"""
