"""containerd configuration of a simulated host: the files on disk and what ``config dump`` prints.

Version 2 (containerd 1.7) is the classic layout nvidia-ctk <= 1.17 edits in place; version 3
(containerd 2.x) keeps the runtime in the drop-in ``/etc/containerd/conf.d/99-nvidia.toml`` that
the top-level config pulls in with ``imports``. containerd 1.7 dumps strings in double quotes,
containerd 2.x (go-toml v2) in single quotes: parsers must read both.
"""
from __future__ import annotations

from testbed.hosts.scenarios import Scenario

DROPIN = "/etc/containerd/conf.d/99-nvidia.toml"


def files(s: Scenario) -> dict[str, str]:
    """Path -> content of the containerd config files on the host."""
    if s.containerd_config_version >= 3:
        main = ('version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n\n'
                '[plugins."io.containerd.cri.v1.images".pinned_images]\n'
                '  sandbox = "registry.k8s.io/pause:3.10"\n')
        out = {"/etc/containerd/config.toml": main}
        if s.containerd_dropin and s.containerd_nvidia_runtime:
            out[DROPIN] = _dropin_v3(s)
        return out
    return {"/etc/containerd/config.toml": _config_v2(s)}


def _runtime_v2_file(key: str, name: str, binary: str | None) -> str:
    block = (f'\n        [{key}.containerd.runtimes.{name}]\n'
             '          privileged_without_host_devices = false\n'
             '          runtime_engine = ""\n          runtime_root = ""\n'
             '          runtime_type = "io.containerd.runc.v2"\n\n'
             f'          [{key}.containerd.runtimes.{name}.options]\n')
    if binary:
        block += f'            BinaryName = "{binary}"\n'
    return block + "            SystemdCgroup = true\n"


def _config_v2(s: Scenario) -> str:
    key = 'plugins."io.containerd.grpc.v1.cri"'
    text = ('disabled_plugins = []\nimports = []\noom_score = 0\nroot = "/var/lib/containerd"\n'
            'state = "/run/containerd"\nversion = 2\n\n[plugins]\n\n'
            f'  [{key}]\n    sandbox_image = "registry.k8s.io/pause:3.10"\n'
            + ("" if s.containerd_enable_cdi is None else f"    enable_cdi = {str(s.containerd_enable_cdi).lower()}\n")
            + '\n'
            f'    [{key}.containerd]\n      default_runtime_name = "{s.containerd_default_runtime}"\n'
            f'\n      [{key}.containerd.runtimes]\n')
    if s.containerd_nvidia_runtime:
        text += _runtime_v2_file(key, "nvidia", s.runtime_path)
    return text + _runtime_v2_file(key, "runc", None)


def _dropin_v3(s: Scenario) -> str:
    key = 'plugins."io.containerd.cri.v1.runtime"'
    cdi = "" if s.containerd_enable_cdi is None else f"    enable_cdi = {str(s.containerd_enable_cdi).lower()}\n"
    # nvidia-ctk writes default_runtime_name only with --set-as-default
    default = ("" if s.containerd_default_runtime == "runc"
               else f'      default_runtime_name = "{s.containerd_default_runtime}"\n')
    return ('version = 3\n\n[plugins]\n\n'
            f'  [{key}]\n{cdi}\n    [{key}.containerd]\n' + default +
            f'\n      [{key}.containerd.runtimes]\n'
            + _runtime_v2_file(key, "nvidia", s.runtime_path))


def dump(s: Scenario) -> str:
    """What ``containerd config dump`` prints: the full merged configuration."""
    if s.containerd_config_version >= 3:
        return _dump_v3(s)
    return _dump_v2(s)


def _dump_v2_runtime(key: str, name: str, binary: str | None) -> str:
    opts = f'            BinaryName = "{binary}"\n' if binary else ""
    return (f'\n        [{key}.containerd.runtimes.{name}]\n'
            '          base_runtime_spec = ""\n          cni_conf_dir = ""\n          cni_max_conf_num = 0\n'
            '          container_annotations = []\n          pod_annotations = []\n'
            '          privileged_without_host_devices = false\n'
            '          privileged_without_host_devices_all_devices_allowed = false\n'
            '          runtime_engine = ""\n          runtime_path = ""\n          runtime_root = ""\n'
            '          runtime_type = "io.containerd.runc.v2"\n          sandbox_mode = "podsandbox"\n'
            '          snapshotter = ""\n\n'
            f'          [{key}.containerd.runtimes.{name}.options]\n' + opts +
            '            SystemdCgroup = true\n')


def _dump_v2(s: Scenario) -> str:
    key = 'plugins."io.containerd.grpc.v1.cri"'
    runtimes = ""
    if s.containerd_nvidia_runtime:
        runtimes += _dump_v2_runtime(key, "nvidia", s.runtime_path)
    runtimes += _dump_v2_runtime(key, "runc", None)
    return f'''disabled_plugins = []
imports = ["/etc/containerd/config.toml"]
oom_score = 0
plugin_dir = ""
required_plugins = []
root = "/var/lib/containerd"
state = "/run/containerd"
temp = ""
version = 2

[cgroup]
  path = ""

[debug]
  address = ""
  format = ""
  gid = 0
  level = ""
  uid = 0

[grpc]
  address = "/run/containerd/containerd.sock"
  gid = 0
  max_recv_message_size = 16777216
  max_send_message_size = 16777216
  tcp_address = ""
  uid = 0

[metrics]
  address = ""
  grpc_histogram = false

[plugins]

  [{key}]
    device_ownership_from_security_context = false
    disable_apparmor = false
    disable_cgroup = false
    enable_cdi = {str(s.enable_cdi).lower()}
    enable_selinux = false
    max_container_log_line_size = 16384
    sandbox_image = "registry.k8s.io/pause:3.10"
    selinux_category_range = 1024
    stats_collect_period = 10
    systemd_cgroup = false

    [{key}.cni]
      bin_dir = "/opt/cni/bin"
      conf_dir = "/etc/cni/net.d"
      max_conf_num = 1

    [{key}.containerd]
      default_runtime_name = "{s.containerd_default_runtime}"
      disable_snapshot_annotations = true
      discard_unpacked_layers = false
      ignore_blockio_not_enabled_errors = false
      ignore_rdt_not_enabled_errors = false
      no_pivot = false
      snapshotter = "overlayfs"

      [{key}.containerd.runtimes]
{runtimes}
    [{key}.registry]
      config_path = "/etc/containerd/certs.d"

  [plugins."io.containerd.runtime.v1.linux"]
    no_shim = false
    runtime = "runc"
    shim = "containerd-shim"

  [plugins."io.containerd.snapshotter.v1.overlayfs"]
    root_path = ""
    upperdir_label = false

[timeouts]
  "io.containerd.timeout.shim.cleanup" = "5s"
  "io.containerd.timeout.shim.load" = "5s"
  "io.containerd.timeout.shim.shutdown" = "3s"
  "io.containerd.timeout.task.state" = "2s"

[ttrpc]
  address = ""
  gid = 0
  uid = 0
'''


def _dump_v3_runtime(key: str, name: str, binary: str | None) -> str:
    opts = f"            BinaryName = '{binary}'\n" if binary else ""
    return (f"\n        [{key}.containerd.runtimes.{name}]\n"
            "          runtime_type = 'io.containerd.runc.v2'\n          runtime_path = ''\n"
            "          pod_annotations = []\n          container_annotations = []\n"
            "          privileged_without_host_devices = false\n"
            "          privileged_without_host_devices_all_devices_allowed = false\n"
            "          base_runtime_spec = ''\n          cni_conf_dir = ''\n          cni_max_conf_num = 0\n"
            "          snapshotter = ''\n          sandboxer = 'podsandbox'\n          io_type = ''\n\n"
            f"          [{key}.containerd.runtimes.{name}.options]\n" + opts +
            "            SystemdCgroup = true\n")


def _dump_v3(s: Scenario) -> str:
    key = "plugins.'io.containerd.cri.v1.runtime'"
    imports = "['/etc/containerd/conf.d/99-nvidia.toml']" if s.containerd_dropin and \
        s.containerd_nvidia_runtime else "[]"
    runtimes = ""
    if s.containerd_nvidia_runtime:
        runtimes += _dump_v3_runtime(key, "nvidia", s.runtime_path)
    runtimes += _dump_v3_runtime(key, "runc", None)
    return f"""version = 3
root = '/var/lib/containerd'
state = '/run/containerd'
temp = ''
imports = {imports}
plugin_dir = ''
disabled_plugins = []
required_plugins = []
oom_score = 0

[grpc]
  address = '/run/containerd/containerd.sock'
  tcp_address = ''
  uid = 0
  gid = 0
  max_recv_message_size = 16777216
  max_send_message_size = 16777216

[ttrpc]
  address = ''
  uid = 0
  gid = 0

[debug]
  address = ''
  uid = 0
  gid = 0
  level = ''
  format = ''

[metrics]
  address = ''
  grpc_histogram = false

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    disable_snapshot_annotations = true
    discard_unpacked_layers = false
    max_concurrent_downloads = 3

    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = 'registry.k8s.io/pause:3.10'

    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '/etc/containerd/certs.d:/etc/docker/certs.d'

  [{key}]
    enable_selinux = false
    selinux_category_range = 1024
    max_container_log_line_size = 16384
    disable_apparmor = false
    restrict_oom_score_adj = false
    disable_proc_mount = false
    unset_seccomp_profile = ''
    tolerate_missing_hugetlb_controller = true
    disable_hugetlb_controller = true
    device_ownership_from_security_context = false
    ignore_image_defined_volumes = false
    netns_mounts_under_state_dir = false
    enable_unprivileged_ports = true
    enable_unprivileged_icmp = true
    enable_cdi = {str(s.enable_cdi).lower()}
    cdi_spec_dirs = ['/etc/cdi', '/var/run/cdi']
    drain_exec_sync_io_timeout = '0s'
    ignore_deprecation_warnings = []

    [{key}.containerd]
      default_runtime_name = '{s.containerd_default_runtime}'
      ignore_blockio_not_enabled_errors = false
      ignore_rdt_not_enabled_errors = false

      [{key}.containerd.runtimes]
{runtimes}
    [{key}.cni]
      bin_dir = '/opt/cni/bin'
      conf_dir = '/etc/cni/net.d'
      max_conf_num = 1
      setup_serially = false
      conf_template = ''
      ip_pref = ''
      use_internal_loopback = false

  [plugins.'io.containerd.snapshotter.v1.overlayfs']
    root_path = ''
    upperdir_label = false
    sync_remove = false
    slow_chown = false
    mount_options = []

[cgroup]
  path = ''

[timeouts]
  'io.containerd.timeout.bolt.open' = '0s'
  'io.containerd.timeout.cri.defercleanup' = '1m0s'
  'io.containerd.timeout.metrics.shimstats' = '2s'
  'io.containerd.timeout.shim.cleanup' = '5s'
  'io.containerd.timeout.shim.load' = '5s'
  'io.containerd.timeout.shim.shutdown' = '3s'
  'io.containerd.timeout.task.state' = '2s'

[stream_processors]
"""
