"""The suite's two kinds of layer, each declared here once.

Checks (``CHECK_LAYERS``): node, cluster and kubeflow. A check layer is a folder of checks,
``tests/<name>/``; the pytest marker of that name, which every check of the folder carries and no
other check does (markers mirror folders: plugin/hooks.py); and a section of the report
(report/model.py). pyproject.toml repeats the markers for pytest (selftest/unit/test_layers.py
keeps it in step). Each layer's gate, "blocked by" its first check, is registered by the layer's
fixtures: plugin/gating.py's ``GATES``, a different thing.

Code (``CODE_LAYERS``): the modules of gpuconform/, bottom first. A module imports its own unit
(the package or module named in a layer) and units of the layers below it, never a unit of its
own layer or one above, and no import -- at the top of a module or inside a function -- closes a
cycle (selftest/unit/test_import_graph.py, which also checks the table of docs/architecture.md
against this one). The test bed declares its own order, testbed/layers.py.
"""
from __future__ import annotations

import dataclasses

#: layer → the help of its marker
CHECK_LAYERS = {
    "node": "node (host) conformance checks",
    "cluster": "Kubernetes cluster conformance checks",
    "kubeflow": "Kubeflow conformance checks",
}


@dataclasses.dataclass(frozen=True)
class CodeLayer:
    name: str
    #: dotted names of modules and packages (a package: every module below it; the tree's own
    #: package, ``gpuconform``, only its __init__, so that a new module must be given its layer)
    units: tuple[str, ...]
    holds: str              #: what the layer is for, in a few words


CODE_LAYERS = (
    CodeLayer("vocabulary", ("gpuconform", "gpuconform.errors", "gpuconform.checks", "gpuconform.once",
                             "gpuconform.gcpause", "gpuconform.resources", "gpuconform.safetext",
                             "gpuconform.yamlparse", "gpuconform.layers"),
              "what every layer says: could not check, the check registry, compute once, the package's "
              "files, text safe for a terminal, strict YAML, these layers"),
    CodeLayer("secrets", ("gpuconform.redact",), "the one place secrets are masked"),
    CodeLayer("inputs", ("gpuconform.yamlfile", "gpuconform.tls"),
              "the one gate of every file an input names; a TLS endpoint's certificate"),
    CodeLayer("formats", ("gpuconform.parsers", "gpuconform.mig", "gpuconform.aiconformance"),
              "one parser per format; the MIG catalog; the AI Conformance checklists and their rules"),
    CodeLayer("kubernetes", ("gpuconform.cluster",),
              "the Kubernetes API: connection, snapshot, the one wait helper, the run's namespace, workloads"),
    CodeLayer("targets", ("gpuconform.node", "gpuconform.kubeflow"),
              "hosts (the probe, its facts, the fixes) and Kubeflow (login, web apps); "
              "k8s-node:// hosts and Kubeflow's objects are reached through the Kubernetes layer"),
    CodeLayer("profile", ("gpuconform.profile",), "what is expected: the profile, loaded and validated once"),
    CodeLayer("report", ("gpuconform.report",), "records, verdict, waivers, drift, HTML, JUnit"),
    CodeLayer("launch", ("gpuconform.suite", "gpuconform.nightly"),
              "the suite's folder and `gpuconform run`; the nightly job as shipped"),
    CodeLayer("wiring", ("gpuconform.plugin", "gpuconform.__main__"),
              "the pytest plugin (options, fixtures, hooks, the one gate); the `gpuconform` command"),
)
