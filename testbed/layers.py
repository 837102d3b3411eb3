"""The test bed's modules in layers, bottom first, declared once: the rule and its check are the
suite's (gpuconform/layers.py, selftest/unit/test_import_graph.py).

Of the suite, the bed imports only what ``SUITE_USED`` names, where it must: this table is made of
the suite's ``CodeLayer``; the real GPU node builds the images the profile names, read by the
suite's own loader (its defaults included), so that the bed and the run never disagree about a
reference. The suite never imports the bed.
"""
from __future__ import annotations

from gpuconform.layers import CodeLayer

BED_LAYERS = (
    CodeLayer("base", ("testbed", "testbed.layers", "testbed.gobuild", "testbed.waiting", "testbed.ports"),
              "the Go builds' cache; the bed's one wait helper; the ports its servers listen on; these layers"),
    CodeLayer("kubernetes", ("testbed.kube",), "the bed's helpers around the Kubernetes client"),
    CodeLayer("parts", ("testbed.hosts", "testbed.gpuoperator"),
              "simulated SSH hosts (scenarios, roots, tool emulators); the GPU Operator's build and install"),
    CodeLayer("device plugin", ("testbed.deviceplugin",),
              "the nvidia-device-plugin chart, applied as the operator's install applies its own"),
    CodeLayer("cluster", ("testbed.cluster",),
              "control plane, KWOK GPU workers, the platform, device simulator, host roots behind workers"),
    CodeLayer("beds on top", ("testbed.kubeflow", "testbed.gpunode", "testbed.trainer"),
              "the Kubeflow bed; the real GPU node; Kubeflow Trainer and JobSet on the cluster bed"),
)

#: bed unit → the suite's units it may import
SUITE_USED = {"testbed.layers": ("gpuconform.layers",), "testbed.gpunode": ("gpuconform.profile",)}
