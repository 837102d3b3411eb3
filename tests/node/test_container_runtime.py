"""The NVIDIA container runtime is installed and containerd uses it (the GPU Operator runs with
driver.enabled=false and relies on it)."""
import pytest

from gpuconform.checks import check

CONFIGURE = ("nvidia-ctk runtime configure --runtime=containerd --set-as-default && "
             "systemctl restart containerd  (remediation/containerd-nvidia-runtime.sh --apply)")


def _containerd(expected):
    if expected.container_runtime.engine != "containerd":
        pytest.skip("the profile names no containerd engine (container_runtime.engine: none)")


@check("node.toolkit.nvidia_ctk", "NVIDIA Container Toolkit (nvidia-ctk) is installed",
       fix={"rhel": "dnf install nvidia-container-toolkit", "debian": "apt-get install nvidia-container-toolkit",
            "default": "install nvidia-container-toolkit"},
       evidence=["nvidia_ctk"])
def test_nvidia_ctk_present(node, expected):
    """`nvidia-ctk --version` runs."""
    if not expected.container_runtime.nvidia_ctk_required:
        pytest.skip("the profile does not require nvidia-ctk on the host")
    assert node.nvidia_ctk_version, ("nvidia-ctk is not installed" if not node.tool("nvidia-ctk")
                                     else "`nvidia-ctk --version` failed")


@check("node.toolkit.runtime_binary", "nvidia-container-runtime binary is executable",
       fix="install nvidia-container-toolkit (the package ships /usr/bin/nvidia-container-runtime; the GPU "
           "Operator's toolkit /usr/local/nvidia/toolkit/nvidia-container-runtime): the profile's "
           "container_runtime.runtime_binary must name where it is",
       evidence=["runtime_binary"])
def test_runtime_binary_executable(node, expected):
    """The profile's runtime binary exists and is executable."""
    _containerd(expected)
    rb = node.runtime_binary(expected.container_runtime.runtime_binary)
    assert rb.executable, f"{rb.path} is {'not executable' if rb.exists else 'missing'}"


@check("node.containerd.installed", "containerd, the profile's container engine, is installed",
       fix={"rhel": "dnf install containerd.io", "debian": "apt-get install containerd",
            "default": "install containerd"},
       evidence=["tools", "containerd_files"])
def test_containerd_installed(node, expected):
    """The profile names containerd as the engine (container_runtime.engine): it is on the host."""
    _containerd(expected)
    assert node.tool("containerd"), (
        "containerd is not installed, but the profile says container_runtime.engine: containerd")


@check("node.containerd.nvidia_runtime", "containerd has an `nvidia` runtime using nvidia-container-runtime",
       fix=CONFIGURE, needs=["node.containerd.installed"], evidence=["containerd_dump", "containerd_files"])
def test_containerd_nvidia_runtime(node, expected):
    """containerd's CRI config has runtime `nvidia` whose BinaryName is the profile's runtime binary."""
    _containerd(expected)
    cri, source = node.containerd_config
    rt = cri.runtimes.get("nvidia")
    assert rt is not None, f"containerd (config v{cri.version}, {source}) has no `nvidia` runtime; has: {', '.join(cri.runtimes) or 'none'}"
    assert rt.binary_name == expected.container_runtime.runtime_binary, (
        f"containerd runtime `nvidia` runs {rt.binary_name!r}, expected {expected.container_runtime.runtime_binary!r}")


@check("node.containerd.nvidia_default", "nvidia is containerd's default runtime",
       fix=CONFIGURE, needs=["node.containerd.nvidia_runtime"], evidence=["containerd_dump", "containerd_files"])
def test_containerd_default_runtime(node, expected):
    """containerd's default_runtime_name is `nvidia` when the profile asks for it."""
    _containerd(expected)
    if not expected.container_runtime.nvidia_default:
        pytest.skip("the profile does not ask for nvidia as the default runtime")
    cri, source = node.containerd_config
    assert cri.default == "nvidia", f"containerd's default runtime is {cri.default or 'runc (unset)'!r}, not 'nvidia' ({source})"
