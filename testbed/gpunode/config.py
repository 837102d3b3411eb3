"""The real GPU node's configuration files, as a site writes them for containerd, the kubelet and
CNI. The NVIDIA parts are NOT written here: ``nvidia-ctk`` itself adds the NVIDIA runtime to
containerd, writes its own config and the CDI spec (node.py), and the device plugin/GFD objects
come from NVIDIA's Helm chart (stage.py). Standard library only: it runs on the GPU machine.
"""
from __future__ import annotations

import json

CONTAINERD_SOCK = "/run/containerd/containerd.sock"
CNI_BIN = "/opt/cni/bin"
CNI_CONF = "/etc/cni/net.d"
POD_CIDR = "10.244.0.0/24"
PAUSE = "registry.k8s.io/pause:3.10.1"   # containerd v2.2's default sandbox image (pkg/cri/config)


def containerd(*, restrict_oom_score_adj: bool) -> str:
    """containerd v2 config (version 3: CRI split into `io.containerd.cri.v1.runtime` and
    `io.containerd.cri.v1.images`, containerd `docs/cri/config.md`). `restrict_oom_score_adj`:
    a VM that refuses to lower oom_score_adj even to root (the lent H200) needs it, else every
    sandbox fails in runc's nsexec."""
    return f"""version = 3
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "{CONTAINERD_SOCK}"

[plugins."io.containerd.cri.v1.runtime"]
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
  restrict_oom_score_adj = {str(restrict_oom_score_adj).lower()}
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["{CNI_BIN}"]
    conf_dir = "{CNI_CONF}"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{PAUSE}"
"""


def cni_conflist() -> str:
    """A bridge with host-local addresses: pods reach each other and the node; no masquerade
    (the VM has no iptables)."""
    return json.dumps({
        "cniVersion": "1.0.0", "name": "gpunode",
        "plugins": [
            {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": False,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_CIDR}]],
                      "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "loopback"},
        ]}, indent=2) + "\n"


def kubelet(*, ca_file: str, oom_score_adj: int = 0) -> str:
    """KubeletConfiguration (kubelet.config.k8s.io/v1beta1). `oom_score_adj` 0: the VM refuses
    the kubelet's default of -999."""
    cfg = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": ca_file}},
        "authorization": {"mode": "Webhook"},
        "cgroupDriver": "cgroupfs",          # no systemd on the machine
        "containerRuntimeEndpoint": f"unix://{CONTAINERD_SOCK}",
        "oomScoreAdj": oom_score_adj,
        "failSwapOn": False,
        "clusterDomain": "cluster.local",
        "clusterDNS": [],                    # no DNS add-on on this node
        "podCIDR": POD_CIDR,
        "imageGCHighThresholdPercent": 100,  # images were imported, none can be pulled again
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "serializeImagePulls": False,
        "nodeStatusReportFrequency": "10s",
        "syncFrequency": "10s",
        "fileCheckFrequency": "10s",
    }
    return json.dumps(cfg, indent=2) + "\n"


def nfd_configs(chart_values: dict) -> tuple[dict, dict]:
    """(nfd-master config, nfd-worker config) as the device plugin chart configures its Node
    Feature Discovery dependency (values.yaml `nfd.master.config`, `nfd.worker.config`)."""
    nfd = chart_values.get("nfd") or {}
    return (dict((nfd.get("master") or {}).get("config") or {}),
            dict((nfd.get("worker") or {}).get("config") or {}))
