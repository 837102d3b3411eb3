"""The NVIDIA container runtime is installed and containerd uses it (the GPU Operator runs with
driver.enabled=false and relies on it)."""
import pytest

from gpuconform.checks import check
from gpuconform.node.topics import container_runtime
from gpuconform.node.facts import CannotTell


def _injection(expected, mode):
    if expected.container_runtime.injection != mode:
        pytest.skip(f"the profile's GPU injection is {expected.container_runtime.injection}, not {mode} "
                    "(container_runtime.injection)")


def _containerd(expected):
    if expected.container_runtime.engine != "containerd":
        pytest.skip("the profile names no containerd engine (container_runtime.engine: none)")


@check("node.toolkit.nvidia_ctk", **container_runtime.TOOLKIT_NVIDIA_CTK)
def test_nvidia_ctk_present(node, expected):
    """`nvidia-ctk --version` runs."""
    if not expected.container_runtime.nvidia_ctk_required:
        pytest.skip("the profile does not require nvidia-ctk on the host")
    assert node.nvidia_ctk_version, ("nvidia-ctk is not installed" if not node.tool("nvidia-ctk")
                                     else "`nvidia-ctk --version` failed")


@check("node.toolkit.runtime_binary", **container_runtime.TOOLKIT_RUNTIME_BINARY)
def test_runtime_binary_executable(node, expected):
    """The profile's runtime binary exists and is executable."""
    _containerd(expected)
    rb = node.runtime_binary(expected.container_runtime.runtime_binary)
    assert rb.executable, f"{rb.path} is {'not executable' if rb.exists else 'missing'}"


@check("node.containerd.installed", **container_runtime.CONTAINERD_INSTALLED)
def test_containerd_installed(node, expected):
    """The profile names containerd as the engine (container_runtime.engine): it is on the host."""
    _containerd(expected)
    assert node.tool("containerd"), (
        "containerd is not installed, but the profile says container_runtime.engine: containerd")


@check("node.containerd.nvidia_runtime", **container_runtime.CONTAINERD_NVIDIA_RUNTIME, needs=["node.containerd.installed"])
def test_containerd_nvidia_runtime(node, expected):
    """containerd's CRI config has runtime `nvidia` whose BinaryName is the profile's runtime binary."""
    _containerd(expected)
    cri, source = node.containerd_config
    rt = cri.runtimes.get("nvidia")
    assert rt is not None, f"containerd (config v{cri.version}, {source}) has no `nvidia` runtime; has: {', '.join(cri.runtimes) or 'none'}"
    assert rt.binary_name == expected.container_runtime.runtime_binary, (
        f"containerd runtime `nvidia` runs {rt.binary_name!r}, expected {expected.container_runtime.runtime_binary!r}")


@check("node.containerd.nvidia_default", **container_runtime.CONTAINERD_NVIDIA_DEFAULT, needs=["node.containerd.nvidia_runtime"])
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


@check("node.containerd.cdi", **container_runtime.CONTAINERD_CDI, needs=["node.containerd.installed"])
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


@check("node.containerd.config_version", **container_runtime.CONTAINERD_CONFIG_VERSION, needs=["node.containerd.installed"])
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
