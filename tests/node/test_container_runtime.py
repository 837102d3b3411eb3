"""The NVIDIA container runtime is installed and containerd uses it (the GPU Operator runs with
driver.enabled=false and relies on it)."""
import pytest

from gpuconform.checks import check
from gpuconform.node.facts import CannotTell

CONFIGURE = ("nvidia-ctk runtime configure --runtime=containerd --set-as-default && "
             "systemctl restart containerd  (remediation/containerd-nvidia-runtime.sh --apply)")


def _injection(expected, mode):
    if expected.container_runtime.injection != mode:
        pytest.skip(f"the profile's GPU injection is {expected.container_runtime.injection}, not {mode} "
                    "(container_runtime.injection)")


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
       fix=CONFIGURE, needs=["node.containerd.nvidia_runtime"], evidence=["containerd_dump", "containerd_files", "cdi_specs"])
def test_containerd_default_runtime(node, expected):
    """containerd's default_runtime_name is `nvidia` when the profile's injection is default-runtime."""
    _containerd(expected)
    _injection(expected, "default-runtime")
    cri, source = node.containerd_config
    cdi = node.nvidia_cdi_specs if cri.enable_cdi else []
    assert cri.default == "nvidia", (
        f"containerd's default runtime is {cri.default or 'runc (unset)'!r}, not 'nvidia' ({source})"
        + (f"; this node injects GPUs through CDI ({', '.join(cdi)}, enable_cdi on): if that is the platform's "
           "design (GPU Operator v25.10 and later), its profile must say container_runtime.injection: cdi" if cdi else ""))


@check("node.containerd.cdi", "containerd injects NVIDIA GPUs through CDI",
       fix="enable_cdi = true in containerd's CRI config (the GPU Operator's toolkit sets it with cdi.enabled), then "
           "systemctl restart containerd; the workload spec comes from the device plugin (device-list-strategy cdi-cri: "
           "its pod's log says why it is missing) or `nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml`",
       needs=["node.containerd.installed"], evidence=["containerd_dump", "containerd_files", "cdi_specs"])
def test_containerd_cdi(node, expected):
    """With injection cdi: containerd's enable_cdi is on and one of its cdi_spec_dirs holds an NVIDIA GPU spec."""
    _containerd(expected)
    _injection(expected, "cdi")
    cri, source = node.containerd_config
    if cri.enable_cdi is None:
        raise CannotTell(f"enable_cdi is not set in {source}: its default depends on containerd's version "
                         "(off in 1.7, on from 2.0) and `containerd config dump` did not run")
    assert cri.enable_cdi, f"containerd's enable_cdi is off ({source}): CDI devices are not injected"
    specs = node.nvidia_cdi_specs
    found = ", ".join(f"{p} ({k or 'no kind'})" for p, k in node.cdi_specs.items()) or "none"
    assert specs, (f"no CDI spec gives workloads NVIDIA GPUs (kind nvidia.com/gpu or <vendor>.nvidia.com/gpu, "
                   f"not the operator's management.nvidia.com/gpu) in "
                   f"{', '.join(cri.cdi_spec_dirs)}; spec files: {found}")


@check("node.containerd.config_version", "containerd runs the profile's config version",
       fix="the host's containerd is of another generation than the platform's: containerd 1.x runs config version 2, "
           "2.x version 3 (`containerd config migrate` writes a file's version 3 form); install the containerd the "
           "platform runs and write its config with `nvidia-ctk runtime configure --runtime=containerd`, or declare "
           "this host's version (container_runtime.config_version, or a group matching this host)",
       needs=["node.containerd.installed"], evidence=["containerd_dump", "containerd_files"])
def test_containerd_config_version(node, expected):
    """containerd's config (its `config dump`, else the files) has the profile's `config_version`."""
    _containerd(expected)
    want = expected.container_runtime.config_version
    if want is None:
        pytest.skip("the profile accepts any containerd config version (container_runtime.config_version: null)")
    cri, source = node.containerd_config
    assert cri.version == want, (
        f"containerd's config is version {cri.version} ({source}), expected version {want} "
        f"(container_runtime.config_version)")
