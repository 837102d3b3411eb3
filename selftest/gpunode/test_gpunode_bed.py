"""The real GPU node's parts proven without a GPU (testbed/gpunode): the binaries build and run,
containerd itself imports the images the OCI writer makes and reads the config the bed and
NVIDIA's nvidia-ctk write, the chart rendered for the node asks what the node is built for.
The node itself runs on the lent H200 (docs/real-gpu-cluster-run.md)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from testbed.gpunode import config, images, oci, operator_stack, stage
from testbed.gpuoperator import binaries as operator_binaries

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bins() -> Path:
    return stage.bin_dir()


def run(*argv, **kw) -> str:
    out = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=120, **kw)
    assert out.returncode == 0, f"{argv}: rc={out.returncode}\n{out.stdout}\n{out.stderr}"
    return out.stdout + out.stderr


def test_binaries_report_the_pinned_versions(bins):
    v = stage.versions()
    assert v["K8S_VERSION"] in run(bins / "kube", "kube-apiserver", "--version")
    assert v["K8S_VERSION"] in run(bins / "kube", "kubelet", "--version")
    assert v["CONTAINERD_VERSION"] in run(bins / "containerd", "--version")
    assert v["RUNC_VERSION"].lstrip("v") in run(bins / "runc", "--version")
    assert v["NVIDIA_CONTAINER_TOOLKIT_VERSION"].lstrip("v") in run(bins / "nvidia-ctk", "--version")
    assert v["NFD_VERSION"] in run(bins / "nfd-master", "-version")
    assert oci.shared_libraries(bins / "runc") == [], "runc must be static: the GPU machine's libc is not the builder's"


@pytest.fixture
def containerd(bins, tmp_path):
    """A real containerd on a private socket and root, with the native snapshotter (no overlayfs
    needed): the importer and the config loader of the runtime the GPU node runs."""
    sock = tmp_path / "c.sock"
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'version = 3\nroot = "{tmp_path}/root"\nstate = "{tmp_path}/state"\n'
                   f'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n[grpc]\n  address = "{sock}"\n'
                   '[[plugins."io.containerd.transfer.v1.local".unpack_config]]\n'
                   '  platform = "linux/amd64"\n  snapshotter = "native"\n')
    log = open(tmp_path / "containerd.log", "w")
    proc = subprocess.Popen([bins / "containerd", f"--config={cfg}"], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while not sock.exists():
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "containerd.log").read_text()
        time.sleep(0.2)
    yield lambda *args: run(bins / "ctr", "--address", sock, "-n", "k8s.io", *args)
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def test_containerd_imports_the_images_under_their_references(bins, containerd, tmp_path):
    image = images.busybox("docker.io/library/busybox:1.37.0", bins / "busybox")
    archive = tmp_path / "busybox.tar"
    digest = oci.write_archive(image, archive)
    containerd("images", "import", "--snapshotter", "native", archive)
    listed = containerd("images", "ls")
    assert "docker.io/library/busybox:1.37.0" in listed and digest in listed
    # unpacked by containerd's native snapshotter: the applets are links to busybox
    snapshots = list((tmp_path / "root").glob("io.containerd.snapshotter.v1.native/snapshots/*/bin/sh"))
    assert snapshots and os.readlink(snapshots[0]) == "/bin/busybox"
    assert os.access(snapshots[0].parent / "busybox", os.X_OK)


def _driver_root(tmp_path):
    """A driver folder whose NVML and libcuda are this machine's libm: dynamic libraries with
    system dependencies (libc, the loader) outside the folder, as the real ones have."""
    libm = next(p for p in oci.shared_libraries(Path(sys.executable).resolve()) if "libm.so" in p)
    root = tmp_path / "nvidia"
    (root / "lib64").mkdir(parents=True)
    for name in ("libnvidia-ml.so.1", "libcuda.so.1"):
        shutil.copy(libm, root / "lib64" / name)
    return root, libm


def test_device_plugin_image_carries_its_libraries_and_the_drivers_needs(bins, tmp_path):
    root, libm = _driver_root(tmp_path)
    deps = images.driver_dependencies(str(root))
    assert deps and not any(d.startswith(str(root)) for d in deps), deps
    assert set(deps) == set(oci.shared_libraries(Path(libm))), "the driver libraries' own needs, no more"
    image = images.device_plugin("nvcr.io/nvidia/k8s-device-plugin:v0.18.0", bins, deps, bins / "busybox")
    needed = oci.shared_libraries(bins / "nvidia-device-plugin")
    assert needed, "the device plugin is a cgo program: it needs the C library"
    assert set(needed) | set(deps) <= set(image.files)
    assert image.entrypoint == ["nvidia-device-plugin"] and image.env["NVIDIA_VISIBLE_DEVICES"] == "all"
    # the GPU Operator's DaemonSets run a shell and a bash entrypoint script from this image
    assert "/bin/bash" in image.files and image.links["/bin/sh"] == "/bin/busybox"


def test_containerd_reads_the_nodes_config_and_nvidia_ctk_makes_nvidia_the_default(bins, tmp_path):
    cfg = tmp_path / "etc" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text(config.containerd(restrict_oom_score_adj=True))
    dump = run(bins / "containerd", f"--config={cfg}", "config", "dump")
    assert "restrict_oom_score_adj = true" in dump and "enable_cdi = true" in dump
    assert "default_runtime_name = 'runc'" in dump or 'default_runtime_name = "runc"' in dump
    env = dict(os.environ, PATH=f"{bins}:{os.environ['PATH']}")
    run(bins / "nvidia-ctk", "runtime", "configure", "--runtime=containerd", f"--config={cfg}",
        "--set-as-default", "--config-source=file", f"--drop-in-config={tmp_path / 'etc' / 'conf.d' / '99-nvidia.toml'}",
        env=env)
    dump = run(bins / "containerd", f"--config={cfg}", "config", "dump")
    assert "default_runtime_name = 'nvidia'" in dump or 'default_runtime_name = "nvidia"' in dump
    assert "/usr/bin/nvidia-container-runtime" in dump


def test_toolkit_config_as_the_node_sets_it(bins, tmp_path):
    path = tmp_path / "config.toml"
    run(bins / "nvidia-ctk", "config", "default", f"--output={path}")
    run(bins / "nvidia-ctk", "config", f"--config-file={path}", "--in-place",
        "--set", "nvidia-container-runtime.mode=cdi",
        "--set", "accept-nvidia-visible-devices-envvar-when-unprivileged=false",
        "--set", "accept-nvidia-visible-devices-as-volume-mounts=true")
    text = path.read_text()
    assert 'mode = "cdi"' in text
    assert "accept-nvidia-visible-devices-envvar-when-unprivileged = false" in text
    assert "accept-nvidia-visible-devices-as-volume-mounts = true" in text


def test_cni_config_names_plugins_that_were_built(bins):
    conf = json.loads(config.cni_conflist())
    types = {p["type"] for p in conf["plugins"]} | {p["ipam"]["type"] for p in conf["plugins"] if "ipam" in p}
    assert types and all((bins / t).is_file() for t in types)


def test_chart_rendered_for_the_node():
    """NVIDIA's chart with the node's values: the plugin hands devices as volume mounts and gets
    CAP_SYS_ADMIN (the chart's own rule, templates/_helpers.tpl), one image for plugin and GFD, NFD's configs from the chart."""
    objects = stage.chart.render(stage.CHART_VALUES)
    ds = {o["metadata"]["name"]: o for o in objects if o["kind"] == "DaemonSet"}
    plugin = next(o for n, o in ds.items() if "gpu-feature-discovery" not in n)
    ctr = plugin["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"} in ctr["env"]
    # CAP_SYS_ADMIN: what the toolkit counts as privileged (internal/config/image/privileged.go),
    # so the plugin's own NVIDIA_VISIBLE_DEVICES=all is still honoured
    assert "SYS_ADMIN" in ctr["securityContext"]["capabilities"]["add"]
    assert any("gpu-feature-discovery" in n for n in ds)
    assert images.chart_image(objects).endswith(":" + stage.versions()["K8S_DEVICE_PLUGIN_VERSION"])
    values = yaml.safe_load((stage.dp_binaries.chart_dir() / "values.yaml").read_text())
    master, worker = config.nfd_configs(values)
    assert "nvidia.com" in master["extraLabelNs"]
    assert worker["sources"]["pci"]["deviceLabelFields"] == ["vendor"]


def test_the_nodes_run_needs_no_package_the_payload_leaves_out(tmp_path):
    """The payload leaves out cryptography, the SSH stack and the Kubernetes client's asyncio
    dependencies (stage.NOT_IMPORTED): with them unimportable, every suite module imports and the
    node's run (-m "node or cluster") collects."""
    from importlib import metadata
    blocked = set()
    for name in stage.NOT_IMPORTED:
        try:
            files = metadata.distribution(name).files or []
        except metadata.PackageNotFoundError:
            continue
        blocked |= {f.parts[0].split(".")[0] for f in files
                    if f.suffix in (".py", ".so") and not f.parts[0].endswith((".dist-info", ".libs"))}
    assert {"cryptography", "paramiko", "nacl"} <= blocked, blocked
    code = f"""
import importlib, pkgutil, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {sorted(blocked)!r}:
            raise ImportError(name + " is not carried to the GPU node")
sys.meta_path.insert(0, Block())
import gpuconform
for m in pkgutil.walk_packages(gpuconform.__path__, "gpuconform."):
    importlib.import_module(m.name)
# what the bring-up imports on the machine (testbed/gpunode/node.py), its certificates read as staged
for name in ("testbed.gpunode.node", "testbed.gpunode.config", "testbed.gpunode.images", "testbed.cluster.procs",
             "testbed.cluster.controlplane", "testbed.kube", "testbed.waiting",
             "testbed.gpuoperator.operator"):
    importlib.import_module(name)
from testbed.gpunode import node
pki = node.StagedPKI(node.Path(sys.argv[1]))
assert pki.pair("admin").key.is_file() and pki.service_account.key.is_file()
import pytest
sys.exit(pytest.main(["--collect-only", "-q", "-m", "node or cluster", "-p", "no:cacheprovider", "tests"]))
"""
    from testbed.gpunode import node
    node.issue_pki(tmp_path / "pki")   # as stage.py does, where cryptography is at hand
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "pki")], cwd=stage.REPO, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert " tests collected" in out.stdout or " selected" in out.stdout, out.stdout[-2000:]


# -- part 3: NVIDIA's GPU Operator on the node ----------------------------------------------------
@pytest.fixture(scope="module")
def operator_bins() -> Path:
    return stage.operator_bin_dir()


@pytest.fixture(scope="module")
def operator_objects() -> list[dict]:
    return stage.render_operator()


def test_operator_programs_report_the_pinned_versions(operator_bins):
    v = stage.operator_versions()
    assert v["NVIDIA_CONTAINER_TOOLKIT_VERSION"].lstrip("v") in run(operator_bins / "nvidia-ctk-installer", "--version")
    assert v["GPU_OPERATOR_VERSION"] in run(operator_bins / "nvidia-validator", "--version")
    # the stand-in for libnvidia-container's CLI never passes for the real one
    out = subprocess.run([operator_bins / "nvidia-container-cli", "info"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 1 and "not built in this test bed" in out.stderr


def test_operator_chart_rendered_for_the_node(operator_objects):
    """The article's values adapted to the lent H200 (operator_stack.values): MIG left alone, CDI, the toolkit's drop-in where containerd reads it,
    unprivileged env var injection refused, the operands' versions the ones built."""
    policy = next(o for o in operator_objects if o["kind"] == "ClusterPolicy")["spec"]
    assert policy["driver"]["enabled"] is False and policy["migManager"]["enabled"] is False
    assert policy["dcgm"]["enabled"] is False and policy["dcgmExporter"]["enabled"] is False
    assert policy["cdi"] == {"enabled": True, "default": True}
    env = {e["name"]: e["value"] for e in policy["toolkit"]["env"]}
    assert env["RUNTIME_DROP_IN_CONFIG"].startswith(operator_stack.TOOLKIT_CONFIG_DIR_IN_POD)
    assert env["RUNTIME_DROP_IN_CONFIG_HOST_PATH"] == operator_stack.CONTAINERD_DROP_IN
    assert env["ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"] == "false"
    refs = operator_stack.references(operator_objects)
    v = stage.operator_versions()
    assert refs["toolkit"].endswith(":" + v["NVIDIA_CONTAINER_TOOLKIT_VERSION"])
    assert refs["device-plugin"].endswith(":" + v["K8S_DEVICE_PLUGIN_VERSION"])
    assert refs["validator"].endswith(":" + v["GPU_OPERATOR_VERSION"])
    assert refs["operator"].endswith(":" + v["GPU_OPERATOR_VERSION"])


def test_operator_images_hold_what_the_operands_run(bins, operator_bins, operator_objects, containerd, tmp_path):
    """Each image holds what its upstream Dockerfile puts there, and containerd imports it under
    the reference the ClusterPolicy names: the toolkit installer finds every program and library
    it copies (installer/executables.go, libraries.go) under /artifacts/deb."""
    refs = operator_stack.references(operator_objects)
    module = operator_binaries.module_dir()
    built = {
        "validator": images.validator(refs["validator"], operator_bins / "nvidia-validator", Path(sys.executable),
                                      module / "validator", bins / "busybox", []),
        "toolkit": images.toolkit(refs["toolkit"], bins, operator_bins, bins / "busybox"),
        "operator": images.operator(refs["operator"], operator_binaries.bin_dir() / "gpu-operator", module),
    }
    v = built["validator"]
    assert {"/usr/bin/nvidia-validator", "/usr/bin/vectorAdd", "/bin/bash",
            "/var/nvidia/manifests/cuda-workload-validation.yaml",
            "/var/nvidia/manifests/plugin-workload-validation.yaml"} <= set(v.files)
    assert {"/bin/sh", "/bin/stat", "/usr/sbin/chroot"} <= set(v.links) and v.env["NVIDIA_VISIBLE_DEVICES"] == "void"
    t = built["toolkit"]
    for name in images.TOOLKIT_PROGRAMS:
        assert f"/artifacts/deb/usr/bin/{name}" in t.files, name
    for name in images.TOOLKIT_LIBRARIES:
        assert f"/artifacts/deb/usr/lib/x86_64-linux-gnu/{name}" in t.files, name
    assert t.links["/work/nvidia-toolkit"] == "/work/nvidia-ctk-installer" and "/bin/bash" in t.files
    o = built["operator"]
    assert "/usr/bin/gpu-operator" in o.files
    assert "/opt/gpu-operator/state-container-toolkit/0500_daemonset.yaml" in o.files
    assert "/opt/gpu-operator/manifests/state-driver/0500_daemonset.yaml" in o.files
    for name, image in built.items():
        archive = tmp_path / f"{name}.tar"
        digest = oci.write_archive(image, archive)
        containerd("images", "import", "--snapshotter", "native", archive)
        listed = containerd("images", "ls")
        assert image.ref in listed and digest in listed, (name, listed)


def test_plain_image_has_a_c_library_and_no_nvidia_tool(bins, tmp_path):
    """The AI Conformance checks' plain image: no NVIDIA program, but the C library nvidia-smi needs
    once the runtime injects it (without it exec fails and the shell says "nvidia-smi: not found",
    as on the H200, 2026-12-04)."""
    root, _ = _driver_root(tmp_path)
    deps = images.driver_dependencies(str(root))
    image = images.plain("gpuconform.local/plain:busybox", bins / "busybox", deps)
    libc = next(d for d in deps if "/libc.so" in d)
    assert libc in image.files and image.links["/bin/sh"] == "/bin/busybox"
    # where the toolkit's update-ldcache hook registers the injected driver libraries
    assert image.files["/etc/ld.so.conf"] == images.LDCONFIG_FILES["/etc/ld.so.conf"] and "/etc/ld.so.conf.d" in image.dirs
    assert not any("nvidia" in path for path in (*image.files, *image.links)), sorted(image.files)


def test_the_nodes_bind_mount_covers_and_uncovers_a_file(tmp_path):
    """node._mount/_umount, what binds the driver's nvidia-smi over the VM's script (a real
    mount(2): the node runs as root, as CI does); a failure names the paths."""
    from testbed.gpunode import node
    real, script = tmp_path / "real", tmp_path / "script"
    real.write_text("real\n")
    script.write_text("script\n")
    node._mount(str(real), str(script), 0x1000)
    try:
        assert script.read_text() == "real\n"
    finally:
        node._umount(str(script))
    assert script.read_text() == "script\n"
    with pytest.raises(node.NodeError, match=f"{tmp_path}/missing .*No such file"):
        node._mount(str(tmp_path / "missing"), str(script), 0x1000)
