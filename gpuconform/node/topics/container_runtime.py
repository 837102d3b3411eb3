"""The container runtime: the NVIDIA Container Toolkit, containerd's runtimes and CDI specs."""
from __future__ import annotations

from functools import cached_property

from gpuconform.errors import CannotTell
from gpuconform.node.topic import Base, CheckText, Companion, Step
from gpuconform.parsers import containerd, host

CONTAINERD_FILES = "/etc/containerd/config.toml /etc/containerd/conf.d/*.toml"

STEPS = (
    Step("nvidia_ctk", "$T nvidia-ctk --version", "nvidia-ctk --version"),
    Step("runtime_binary", 'set -f; for p in $GPUC_RUNTIMES; do if [ -e "$p" ]; then ls -lL "$p"; '
                           'if [ -x "$p" ]; then echo "$p: executable"; else echo "$p: not executable"; fi; '
                           'else echo "$p: missing"; fi; done; true',
         "ls -lL <container_runtime.runtime_binary>"),
    Step("containerd_dump", "$T containerd config dump", "containerd config dump"),
    Step("containerd_files", f'for f in {CONTAINERD_FILES}; do [ -f "$f" ] && {{ echo "### file $f"; cat "$f"; }}; done; true',
         f"cat {CONTAINERD_FILES}"),
    # CDI specs where containerd looks by default, each with its kind (vendor/class): the top-level
    # `kind` of a spec in YAML or JSON (tags.cncf.io/container-device-interface, specs-go/config.go)
    Step("cdi_specs", 'for d in /etc/cdi /var/run/cdi; do for f in "$d"/*.yaml "$d"/*.yml "$d"/*.json; do '
                      '[ -f "$f" ] || continue; k=$(grep -o -E \'"?kind"?[[:space:]]*:[[:space:]]*"?[A-Za-z0-9._/-]+\' "$f" '
                      '| head -n 1 | sed -E \'s/.*:[[:space:]]*"?//\'); echo "kind=$k $f"; done; done; true',
         "grep kind /etc/cdi/* /var/run/cdi/*"),
)
TOOLS = ("containerd", "nvidia-ctk", "nvidia-container-runtime")


class Facts(Base):
    @cached_property
    def nvidia_ctk_version(self) -> str | None:
        sec = self.section("nvidia_ctk")
        return host.parse_tool_version(sec.out) if sec.ok else None

    @cached_property
    def _runtime_binaries(self) -> dict[str, host.Binary]:
        return host.parse_binaries(self.section("runtime_binary").out)

    def runtime_binary(self, path: str) -> host.Binary:
        """The nvidia-container-runtime at ``path`` (a path the profile names, so the probe looked)."""
        found = self._runtime_binaries.get(path)
        if found is None:
            raise CannotTell(f"the probe did not look at {path} (not among the profile's runtime binaries)")
        return found

    @cached_property
    def containerd_config(self) -> tuple[containerd.CriRuntimes, str]:
        """(CRI runtimes, where they were read from)."""
        dump = self.section("containerd_dump")
        if self.tool("containerd") and dump.ok:
            return containerd.cri_runtimes(containerd.loads(dump.out, "containerd config dump")), \
                "containerd config dump"
        files = containerd.split_dumped_files(self.section("containerd_files").out)
        if not files:
            why = "containerd is not installed" if not self.tool("containerd") else "config dump failed"
            raise CannotTell(f"{why} and /etc/containerd/config.toml is absent")
        try:
            cfg, unmatched = containerd.merge_files(files)
        except containerd.ConfigError as exc:
            raise CannotTell(str(exc)) from None
        source = " + ".join(files)
        if unmatched:
            source += f" (imports matching nothing: {', '.join(unmatched)})"
        return containerd.cri_runtimes(cfg), source

    @cached_property
    def cdi_specs(self) -> dict[str, str]:
        """CDI spec files in containerd's default spec dirs: {path: kind}."""
        return containerd.parse_cdi_specs(self.section("cdi_specs").out)

    @cached_property
    def nvidia_cdi_specs(self) -> list[str]:
        """The NVIDIA GPU specs among them in the dirs containerd reads (its cdi_spec_dirs)."""
        cri, _source = self.containerd_config
        return containerd.nvidia_gpu_specs(self.cdi_specs, cri.cdi_spec_dirs)


_NVIDIA_RUNTIME = Companion("containerd-nvidia-runtime.sh", lambda facts, expected, param:
                            (("RUNTIME_BINARY", expected.container_runtime.runtime_binary),))
COMPANIONS = {
    "node.containerd.nvidia_runtime": _NVIDIA_RUNTIME,
    "node.containerd.nvidia_default": _NVIDIA_RUNTIME,
}


# -- the checks' words (their checks: tests/node/test_container_runtime.py)
CONFIGURE = ("nvidia-ctk runtime configure --runtime=containerd --set-as-default && "
             "systemctl restart containerd")

TOOLKIT_NVIDIA_CTK: CheckText = {
    "title": "NVIDIA Container Toolkit (nvidia-ctk) is installed",
    "fix": {"rhel": "dnf install nvidia-container-toolkit", "debian": "apt-get install nvidia-container-toolkit",
            "default": "install nvidia-container-toolkit"},
    "evidence": ["nvidia_ctk"],
}

TOOLKIT_RUNTIME_BINARY: CheckText = {
    "title": "nvidia-container-runtime binary is executable",
    "fix": "install nvidia-container-toolkit (the package ships /usr/bin/nvidia-container-runtime; the GPU "
           "Operator's toolkit /usr/local/nvidia/toolkit/nvidia-container-runtime): the profile's "
           "container_runtime.runtime_binary must name where it is",
    "evidence": ["runtime_binary"],
}

CONTAINERD_INSTALLED: CheckText = {
    "title": "containerd, the profile's container engine, is installed",
    "fix": {"rhel": "dnf install containerd.io", "debian": "apt-get install containerd",
            "default": "install containerd"},
    "evidence": ["tools", "containerd_files"],
}

CONTAINERD_NVIDIA_RUNTIME: CheckText = {
    "title": "containerd has an `nvidia` runtime using nvidia-container-runtime",
    "fix": CONFIGURE,
    "evidence": ["containerd_dump", "containerd_files"],
}

CONTAINERD_NVIDIA_DEFAULT: CheckText = {
    "title": "nvidia is containerd's default runtime",
    "fix": CONFIGURE,
    "evidence": ["containerd_dump", "containerd_files", "cdi_specs"],
}

CONTAINERD_CDI: CheckText = {
    "title": "containerd injects NVIDIA GPUs through CDI",
    "fix": "enable_cdi = true in containerd's CRI config (the GPU Operator's toolkit sets it with cdi.enabled), then "
           "systemctl restart containerd; the workload spec comes from the device plugin (device-list-strategy cdi-cri: "
           "its pod's log says why it is missing) or `nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml`",
    "evidence": ["containerd_dump", "containerd_files", "cdi_specs"],
}

CONTAINERD_CONFIG_VERSION: CheckText = {
    "title": "containerd runs the profile's config version",
    "fix": "the host's containerd is of another generation than the platform's: containerd 1.x runs config version 2, "
           "2.x version 3 (`containerd config migrate` writes a file's version 3 form); install the containerd the "
           "platform runs and write its config with `nvidia-ctk runtime configure --runtime=containerd`, or declare "
           "this host's version (container_runtime.config_version, or a group matching this host)",
    "evidence": ["containerd_dump", "containerd_files"],
}
