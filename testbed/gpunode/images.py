"""The images the real GPU node runs, built from local binaries (no registry reaches the GPU
machine) under the references the manifests name. What each holds follows the upstream image:
k8s-device-plugin `deployments/container/Dockerfile` (binaries in /usr/bin, NVIDIA_* env,
entrypoint nvidia-device-plugin), the CUDA images' env (nvidia/cuda `base` Dockerfiles: PATH and
LD_LIBRARY_PATH with /usr/local/nvidia, NVIDIA_VISIBLE_DEVICES=all). Standard library only.
"""
from __future__ import annotations

import glob
import shutil
import subprocess
from pathlib import Path


from testbed.gpunode.oci import Image, shared_libraries

PAUSE = "registry.k8s.io/pause:3.10.1"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: what the update-ldcache hook of NVIDIA's toolkit needs in a container: an ld.so.conf that
#: includes ld.so.conf.d, where the hook drops the driver's library folders
LDCONFIG_FILES = {"/etc/ld.so.conf": b"include /etc/ld.so.conf.d/*.conf\n"}
BASE_DIRS = {"/etc/ld.so.conf.d": 0o755, "/tmp": 0o1777}


def pause(binary: Path) -> Image:
    img = Image(PAUSE, entrypoint=["/pause"], user="65535:65535")
    img.add_binary("/pause", binary)
    return img


def _with_busybox(img: Image, busybox: Path) -> Image:
    """busybox at /bin/busybox and a link for each applet it lists."""
    img.add_binary("/bin/busybox", busybox, with_libraries=False)
    listing = subprocess.run([str(busybox), "--list-full"], capture_output=True, text=True, timeout=30, check=True)
    for applet in listing.stdout.split():
        path = "/" + applet.lstrip("/")
        if path != "/bin/busybox":
            img.links[path] = "/bin/busybox"
    return img


def busybox(ref: str, binary: Path) -> Image:
    img = Image(ref, cmd=["sh"], env={"PATH": PATH}, dirs=dict(BASE_DIRS))
    return _with_busybox(img, binary)


def plain(ref: str, binary: Path, libc: list[str]) -> Image:
    """An image without NVIDIA tools as a distribution's base image is (ubuntu:22.04): a shell,
    the C library, which nvidia-smi injected at run time needs (``libc`` as
    :func:`driver_dependencies` lists it), and an ld.so.conf that includes ld.so.conf.d, where the
    toolkit's update-ldcache hook registers the injected driver libraries (without it the injected
    nvidia-smi "couldn't find libnvidia-ml.so": the H200, 2026-12-04)."""
    img = busybox(ref, binary)
    img.files.update(LDCONFIG_FILES)
    return _with_libraries(img, libc)


def driver_dependencies(driver_root: str) -> list[str]:
    """What the driver's user-space libraries (NVML, libcuda), injected into a container at run
    time, need from the image: the system libraries ``ldd`` lists for them outside the driver's
    folder (libm, libdl, ...). The upstream images' Ubuntu/UBI base has all of glibc; a container
    whose image lacks one cannot load NVML: the plugin dlopens libnvidia-ml.so.1 from the driver
    root (k8s-device-plugin cmd/nvidia-device-plugin/main.go) and, without it, finds no platform
    ("Incompatible strategy detected auto", internal/plugin/factory.go)."""
    found: list[str] = []
    for name in ("libnvidia-ml.so.1", "libcuda.so.1"):
        lib = next(iter(sorted(Path(driver_root).glob(f"lib*/{name}"))), None)
        if lib is None:
            raise FileNotFoundError(f"no {name} under {driver_root}")
        found += [dep for dep in shared_libraries(lib) if not dep.startswith(driver_root) and dep not in found]
    return found


def _with_libraries(img: Image, libraries: list[str]) -> Image:
    for lib in libraries:
        img.files.setdefault(lib, Path(lib))
    return img


def _with_bash(img: Image) -> Image:
    """The machine's bash with what it links: the operator's entrypoint scripts are bash
    (``[[ ]]``; assets/state-*/0400_configmap.yaml) and its containers run ``/bin/bash -c``."""
    img.add_binary("/bin/bash", Path(shutil.which("bash") or "/bin/bash"))
    return img


def device_plugin(ref: str, bins: Path, driver_deps: list[str], busybox_binary: Path) -> Image:
    """k8s-device-plugin's image: both programs in /usr/bin; a shell and bash for the operator's
    DaemonSets (an init container's ``sh -c until [ -f … ]``, the plugin's bash entrypoint)."""
    img = Image(ref, entrypoint=["nvidia-device-plugin"], files=dict(LDCONFIG_FILES), dirs=dict(BASE_DIRS),
                env={"PATH": PATH, "NVIDIA_DISABLE_REQUIRE": "true", "NVIDIA_VISIBLE_DEVICES": "all",
                     "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"})
    for name in ("nvidia-device-plugin", "gpu-feature-discovery"):
        img.add_binary(f"/usr/bin/{name}", bins / name)
    _with_busybox(img, busybox_binary)
    _with_bash(img)
    return _with_libraries(img, driver_deps)


def validator(ref: str, program: Path, vectoradd_program: Path, manifests: Path, busybox_binary: Path,
              driver_deps: list[str]) -> Image:
    """gpu-operator's validator image (validator/Dockerfile): nvidia-validator and the CUDA sample
    vectorAdd in /usr/bin, the workload pod manifests in /var/nvidia/manifests, entrypoint bash;
    busybox gives what its init containers and steps call (sh, stat, chroot, sleep)."""
    img = Image(ref, entrypoint=["/bin/bash"], files=dict(LDCONFIG_FILES), dirs=dict(BASE_DIRS),
                env={"PATH": PATH, "NVIDIA_DISABLE_REQUIRE": "true", "NVIDIA_VISIBLE_DEVICES": "void",
                     "NVIDIA_DRIVER_CAPABILITIES": "utility,compute"})
    _with_busybox(img, busybox_binary)
    _with_bash(img)
    img.add_binary("/usr/bin/nvidia-validator", program)
    img.add_binary("/usr/bin/vectorAdd", vectoradd_program)
    for manifest in sorted(manifests.glob("*.yaml")):
        img.files[f"/var/nvidia/manifests/{manifest.name}"] = manifest
    return _with_libraries(img, driver_deps)


#: what the toolkit image's installer copies from /artifacts/deb (toolkit
#: cmd/nvidia-ctk-installer/toolkit/installer: executables.go, libraries.go, artifact-root.go)
TOOLKIT_PROGRAMS = ("nvidia-ctk", "nvidia-cdi-hook", "nvidia-container-runtime", "nvidia-container-runtime.cdi",
                    "nvidia-container-runtime.legacy", "nvidia-container-runtime-hook", "nvidia-container-cli")
TOOLKIT_LIBRARIES = ("libnvidia-container.so.1", "libnvidia-container-go.so.1")


def toolkit(ref: str, bins: Path, operator_bins: Path, busybox_binary: Path) -> Image:
    """nvidia-container-toolkit's image (deployments/container/Dockerfile, `application`):
    /work/nvidia-ctk-installer (and its nvidia-toolkit link) on PATH, the packages' files under
    /artifacts/deb, a shell; bash for the operator's entrypoint script."""
    img = Image(ref, entrypoint=["/work/nvidia-ctk-installer"], dirs=dict(BASE_DIRS),
                env={"PATH": "/work:" + PATH, "NVIDIA_DISABLE_REQUIRE": "true", "NVIDIA_VISIBLE_DEVICES": "void",
                     "NVIDIA_DRIVER_CAPABILITIES": "utility"})
    _with_busybox(img, busybox_binary)
    _with_bash(img)
    img.add_binary("/work/nvidia-ctk-installer", operator_bins / "nvidia-ctk-installer")
    img.links["/work/nvidia-toolkit"] = "/work/nvidia-ctk-installer"
    for name in TOOLKIT_PROGRAMS:
        source = bins / name if (bins / name).exists() else operator_bins / name
        img.add_binary(f"/artifacts/deb/usr/bin/{name}", source, with_libraries=False)
    for name in TOOLKIT_LIBRARIES:
        img.files[f"/artifacts/deb/usr/lib/x86_64-linux-gnu/{name}"] = operator_bins / name
    return img


def operator(ref: str, program: Path, module: Path) -> Image:
    """gpu-operator's image (docker/Dockerfile): /usr/bin/gpu-operator and the operand assets and
    manifests under /opt/gpu-operator, where the controller reads them."""
    img = Image(ref, entrypoint=["gpu-operator"], dirs=dict(BASE_DIRS), env={"PATH": PATH})
    img.add_binary("/usr/bin/gpu-operator", program)
    for folder in ("assets", "manifests"):
        for f in sorted((module / folder).rglob("*")):
            if f.is_file():
                img.files[f"/opt/gpu-operator/{f.relative_to(module / folder)}" if folder == "assets"
                          else f"/opt/gpu-operator/manifests/{f.relative_to(module / folder)}"] = f
    return img


def vectoradd(ref: str, program: Path, busybox_binary: Path, driver_deps: list[str]) -> Image:
    img = Image(ref, files=dict(LDCONFIG_FILES), dirs=dict(BASE_DIRS), cmd=["/cuda-samples/vectorAdd"], env={
        "PATH": "/usr/local/nvidia/bin:/usr/local/cuda/bin:" + PATH,
        "LD_LIBRARY_PATH": "/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
        "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "NVIDIA_REQUIRE_CUDA": "cuda>=12.5"})
    _with_busybox(img, busybox_binary)
    img.add_binary("/cuda-samples/vectorAdd", program)
    return _with_libraries(img, driver_deps)


def find_nvcc() -> str:
    found = shutil.which("nvcc") or next(iter(sorted(glob.glob("/usr/local/cuda*/bin/nvcc"), reverse=True)), None)
    if not found:
        raise FileNotFoundError("no nvcc on this machine (PATH, /usr/local/cuda*/bin)")
    return found


def compile_vectoradd(source: Path, work: Path) -> Path:
    """vectoradd.cu for Hopper (sm_90) with the CUDA runtime linked in: only the driver's
    libcuda, injected at run time, is needed from outside."""
    work.mkdir(parents=True, exist_ok=True)
    out = work / "vectorAdd"
    subprocess.run([find_nvcc(), "-O2", "-gencode", "arch=compute_90,code=sm_90", "-cudart", "static",
                    "-o", str(out), str(source)], check=True, timeout=180, capture_output=True)
    return out


def chart_image(objects: list[dict]) -> str:
    """The image NVIDIA's rendered chart runs its device plugin and GFD from (one for both)."""
    refs = {c["image"] for o in objects if o.get("kind") == "DaemonSet"
            for c in o["spec"]["template"]["spec"].get("containers", [])}
    if len(refs) != 1:
        raise ValueError(f"expected one image in the chart's DaemonSets, found {sorted(refs)}")
    return refs.pop()

