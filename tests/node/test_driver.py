"""The NVIDIA driver is loaded, at the profile's version, with its device nodes and nvidia-smi."""
from gpuconform.checks import check
from gpuconform.node.topics import driver


@check("node.driver.modules_loaded", **driver.DRIVER_MODULES_LOADED)
def test_driver_modules_loaded(node):
    """nvidia and nvidia_uvm appear in /proc/modules (state Live)."""
    missing = [m for m in ("nvidia", "nvidia_uvm") if m not in node.modules]
    assert not missing, f"not loaded: {', '.join(missing)} (/proc/modules)"


@check("node.driver.version", **driver.DRIVER_VERSION, needs=["node.driver.modules_loaded"])
def test_loaded_driver_version(node, expected):
    """/proc/driver/nvidia/version reports the profile's driver version (and flavour if set)."""
    info = node.driver_proc_version
    assert info, "/proc/driver/nvidia/version is missing or unreadable although nvidia is loaded"
    flavour_ok = expected.driver.flavour in ("any", info.flavour)
    assert info.version == expected.driver.version and flavour_ok, (
        f"loaded driver is {info.version} ({info.flavour} kernel module), "
        f"expected {expected.driver.version}" + ("" if expected.driver.flavour == "any" else f" ({expected.driver.flavour})"))


@check("node.driver.device_nodes", **driver.DRIVER_DEVICE_NODES, needs=["node.driver.modules_loaded"])
def test_device_nodes(node, expected):
    """/dev/nvidiactl, /dev/nvidia-uvm and /dev/nvidia0..N-1 are character devices (N = profile GPU count)."""
    wanted = ["nvidiactl", "nvidia-uvm"] + [f"nvidia{i}" for i in range(expected.gpu.count)]
    missing = [f"/dev/{d}" for d in wanted if d not in node.char_devices]
    assert not missing, f"missing device nodes: {', '.join(missing)}"


def _driver_elsewhere(node) -> str:
    """Where the host's driver is, when the GPU Operator's validator found it in its driver container."""
    root = node.driver_container_root
    return (f": its driver is the GPU Operator's driver container's (driver-ready: IS_HOST_DRIVER=false, "
            f"NVIDIA_DRIVER_ROOT={root}), not one installed on the host as the profile declares") if root else ""


@check("node.smi.runs", **driver.SMI_RUNS, needs=["node.driver.modules_loaded"])
def test_nvidia_smi_runs(node):
    """`nvidia-smi --query-gpu=... --format=csv,noheader` exits 0."""
    assert node.tool("nvidia-smi"), f"nvidia-smi is not installed on the host{_driver_elsewhere(node)}"
    sec = node.smi
    assert sec.timed_out_s is None, f"nvidia-smi {sec.failure}"
    assert sec.ok, f"nvidia-smi failed (exit {sec.rc}): {(sec.out or sec.err).strip().splitlines()[0] if (sec.out or sec.err).strip() else ''}"


@check("node.gpu.count", **driver.GPU_COUNT, needs=["node.smi.runs"])
def test_gpu_count(node, expected):
    """nvidia-smi lists exactly `gpu.count` GPUs."""
    seen = len(node.gpus)
    assert seen == expected.gpu.count, f"nvidia-smi sees {seen} GPU{'' if seen == 1 else 's'}, expected {expected.gpu.count}"


@check("node.gpu.product", **driver.GPU_PRODUCT, needs=["node.smi.runs"])
def test_gpu_product(node, expected):
    """Every GPU's nvidia-smi name equals `gpu.product`."""
    other = [f"GPU {g.index}: {g.name}" for g in node.gpus if g.name != expected.gpu.product]
    assert not other, f"expected {expected.gpu.product}, found {'; '.join(other)}"


@check("node.smi.driver_version", **driver.SMI_DRIVER_VERSION, needs=["node.smi.runs"])
def test_smi_driver_version(node, expected):
    """nvidia-smi's driver_version equals the profile's driver version on every GPU."""
    seen = sorted({g.driver_version or "unknown" for g in node.gpus})
    assert seen == [expected.driver.version], f"nvidia-smi reports driver {', '.join(seen)}, expected {expected.driver.version}"


@check("node.gpu.compute_mode", **driver.GPU_COMPUTE_MODE, needs=["node.smi.runs"])
def test_no_gpu_prohibits_compute(node, expected):
    """No GPU's compute mode is Prohibited: no CUDA context, so no pod, could use it (Default and
    Exclusive_Process are both a platform's choice)."""
    prohibited = [str(i) for i, mode in sorted(node.compute_modes.items()) if mode == "Prohibited"]
    assert not prohibited, (f"compute mode is Prohibited on GPU {', '.join(prohibited)}: no process can create "
                            f"a CUDA context there, yet the node still offers the GPU to pods")
