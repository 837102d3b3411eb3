"""containerd config versions 1, 2, 3, imports and drop-ins."""
import pytest

from gpuconform.parsers import containerd

V1 = """
[plugins.cri.containerd]
  default_runtime_name = "nvidia"
  [plugins.cri.containerd.runtimes.nvidia]
    runtime_type = "io.containerd.runc.v2"
    [plugins.cri.containerd.runtimes.nvidia.options]
      BinaryName = "/usr/bin/nvidia-container-runtime"
"""
V2 = """
version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "nvidia"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
      BinaryName = "/usr/bin/nvidia-container-runtime"
"""
V3_MAIN = """
version = 3
imports = ["/etc/containerd/conf.d/*.toml"]
[plugins."io.containerd.cri.v1.runtime".containerd]
  default_runtime_name = "runc"
"""
V3_DROPIN = """
version = 3
[plugins."io.containerd.cri.v1.runtime".containerd]
  default_runtime_name = "nvidia"
  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]
      BinaryName = "/usr/bin/nvidia-container-runtime"
"""


@pytest.mark.parametrize("text, version", [(V1, 1), (V2, 2)])
def test_cri_runtimes_by_version(text, version):
    cri = containerd.cri_runtimes(containerd.loads(text))
    assert cri.version == version and cri.default == "nvidia"
    assert cri.runtimes["nvidia"].binary_name == "/usr/bin/nvidia-container-runtime"


def test_v3_drop_in_overrides_main_file():
    files = {"/etc/containerd/config.toml": V3_MAIN, "/etc/containerd/conf.d/99-nvidia.toml": V3_DROPIN}
    cfg, unmatched = containerd.merge_files(files)
    cri = containerd.cri_runtimes(cfg)
    assert (cri.version, cri.default, unmatched) == (3, "nvidia", [])
    assert cri.runtimes["nvidia"].runtime_type == "io.containerd.runc.v2"


def test_import_matching_nothing_is_reported():
    cfg, unmatched = containerd.merge_files({"/etc/containerd/config.toml": V3_MAIN})
    assert unmatched == ["/etc/containerd/conf.d/*.toml"]
    assert containerd.cri_runtimes(cfg).default == "runc"


def test_probe_concatenation_splits_back_into_files():
    text = "### file /etc/containerd/config.toml\nversion = 2\n### file /etc/containerd/conf.d/a.toml\nx = 1\n"
    assert containerd.split_dumped_files(text) == {"/etc/containerd/config.toml": "version = 2\n",
                                                   "/etc/containerd/conf.d/a.toml": "x = 1\n"}


def test_bad_toml_names_its_source():
    with pytest.raises(containerd.ConfigError, match="/etc/containerd/config.toml: not valid TOML"):
        containerd.merge_files({"/etc/containerd/config.toml": "version = = 2"})


@pytest.mark.parametrize("text, enable_cdi", [
    (V1, None), (V2, None),                      # containerd 1.7 (off) or 2.x (on) reads these: unknown
    (V3_MAIN, True),                             # only containerd 2.x reads version 3: its default, on
    (V2.replace("[plugins.\"io.containerd.grpc.v1.cri\".containerd]",
                "[plugins.\"io.containerd.grpc.v1.cri\"]\n  enable_cdi = true\n"
                "  cdi_spec_dirs = [\"/etc/cdi\"]\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]"), True),
    (V3_MAIN.replace("[plugins.\"io.containerd.cri.v1.runtime\".containerd]",
                     "[plugins.\"io.containerd.cri.v1.runtime\"]\n  enable_cdi = false\n"
                     "[plugins.\"io.containerd.cri.v1.runtime\".containerd]"), False),
])
def test_enable_cdi_where_each_version_keeps_it(text, enable_cdi):
    assert containerd.cri_runtimes(containerd.loads(text)).enable_cdi is enable_cdi


def test_cdi_dirs_from_the_config_else_containerds_defaults():
    v2 = V2.replace("[plugins.\"io.containerd.grpc.v1.cri\".containerd]",
                    "[plugins.\"io.containerd.grpc.v1.cri\"]\n  cdi_spec_dirs = [\"/etc/cdi\"]\n"
                    "[plugins.\"io.containerd.grpc.v1.cri\".containerd]")
    assert containerd.cri_runtimes(containerd.loads(v2)).cdi_spec_dirs == ("/etc/cdi",)
    assert containerd.cri_runtimes(containerd.loads(V3_MAIN)).cdi_spec_dirs == ("/etc/cdi", "/var/run/cdi")


def test_workload_gpu_specs_are_nvidia_gpu_kinds_in_containerds_dirs():
    specs = containerd.parse_cdi_specs(
        "kind=management.nvidia.com/gpu /var/run/cdi/management.nvidia.com-gpu.yaml\n"
        "kind=k8s.device-plugin.nvidia.com/gpu /run/cdi/k8s.device-plugin.nvidia.com-gpu.yaml\n"
        "kind=nvidia.com/gpu /etc/cdi/nvidia.yaml\n"
        "kind=example.com/gpu /etc/cdi/other.yaml\n"
        "kind=notnvidia.com/gpu /etc/cdi/lookalike.yaml\n"
        "kind= /etc/cdi/broken.yaml\n")
    assert specs["/etc/cdi/broken.yaml"] == ""
    # /run and /var/run are one directory; the operator's management spec serves its own pods only
    assert containerd.nvidia_gpu_specs(specs, ("/etc/cdi", "/var/run/cdi")) == [
        "/etc/cdi/nvidia.yaml (nvidia.com/gpu)",
        "/run/cdi/k8s.device-plugin.nvidia.com-gpu.yaml (k8s.device-plugin.nvidia.com/gpu)"]
    assert containerd.nvidia_gpu_specs(specs, ("/var/run/cdi",)) == [
        "/run/cdi/k8s.device-plugin.nvidia.com-gpu.yaml (k8s.device-plugin.nvidia.com/gpu)"]
