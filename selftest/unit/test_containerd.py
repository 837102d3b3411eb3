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
