"""Every command-line input checked once, before anything runs: a mistake is one line naming the
input and what was expected (pytest shows it as ``ERROR: <line>`` and exits 4).

All of them are read in one place, :func:`read`, at configure time, into one frozen
:class:`RunInputs` stored on the config (``config.stash[keys.INPUTS]``): the profile, waivers,
baseline, remediation, the host list (parsed once, from --hosts or the profile) and the report
files. Nothing is written back into ``config.option`` (the report's page path handed to
pytest-html aside: plugin/reporting.py says why).

Every file an input names (profile, waivers, baseline, kubeconfig from --kubeconfig or
$KUBECONFIG, ssh files) goes through one gate, :func:`gpuconform.yamlfile.read_file`: a regular
file, its size capped, read with that bound (never a FIFO that blocks, never ``/dev/zero``). This
module checks the rest: the profile's path, the kubeconfig's context and server, host specs, the
report folder and name.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import os
import re
import tempfile
import urllib.parse
from pathlib import Path

import pytest
import testinfra.backend

from gpuconform import profile as profile_mod
from gpuconform import resources, yamlfile
from gpuconform.node import k8s_node
from gpuconform.plugin import remediation_fixtures
from gpuconform.redact import redact
from gpuconform.report import drift as drift_mod
from gpuconform.report import waivers as waivers_mod

k8s_node.register_backend()  # k8s-node:// hosts: node checks through probe pods

#: Backends that open an SSH connection: ``timeouts.ssh_connect_s`` reaches them as ``?timeout=``.
SSH_BACKENDS = ("ssh", "safe-ssh", "paramiko")
_MAX_PORT = 65535
#: testinfra's query parameters that it reads as whole numbers, with the least each may be
_NUMBER_QUERY = {"timeout": 1, "controlpersist": 0, "read_timeout_sec": 1, "operation_timeout_sec": 1}
#: the client library's default kubeconfig
DEFAULT_KUBECONFIG = "~/.kube/config"


class InputError(pytest.UsageError):
    """A bad input; str() is the one line shown, secrets masked (``ssh://root:pw@gpu-1:99999``)."""

    def __init__(self, line: str):
        super().__init__(redact(line))


def profile_path(value: str | None, default: str) -> str:
    """--profile, else $GPUCONFORM_PROFILE (the option's default), else the shipped profile; an
    empty value is a mistake (a variable that expanded to nothing), not "the default". A name
    with no folder that is no file here names an example shipped with the suite (``seed-h100``,
    ``seed-h100.yaml``), so an installed suite needs no copy of it."""
    if value is None:
        return default
    if not value.strip():
        raise InputError("--profile / $GPUCONFORM_PROFILE: empty; name a profile file (or leave both unset "
                         "for profiles/seed-h100.yaml)")
    if os.sep not in value and not os.path.lexists(value):
        example = resources.example_profile_path(value if value.endswith((".yaml", ".yml")) else f"{value}.yaml")
        if example.is_file():
            return str(example)
    return value


def files(options: dict[str, str | None]) -> None:
    """The files named by options (``{"--ssh-config": path}``) through the gate."""
    for flag, path in options.items():
        if path:
            yamlfile.read_file(path, flag, InputError)


def kubeconfig(option: str | None, context: str | None, env: str | None) -> None:
    """The kubeconfig the cluster layer will read (--kubeconfig, else each file of $KUBECONFIG that
    exists) through the gate, and, as the client library would choose them, the context (--context
    or current-context) and its server URL: a wrong name or a malformed URL is bad input, not a
    cluster that does not answer."""
    default = os.path.expanduser(DEFAULT_KUBECONFIG)
    if option:
        paths, what = [option], "kubeconfig (--kubeconfig)"
    elif env:
        paths, what = [p for p in env.split(os.pathsep) if p and os.path.lexists(p)], "kubeconfig ($KUBECONFIG)"
    elif context is not None and os.path.lexists(default):  # else the run may not need a cluster at all
        paths, what = [default], "kubeconfig"
    else:
        return
    contexts: dict[str, object] = {}
    clusters: dict[str, tuple[str, object]] = {}
    current = None
    for path in paths:
        _, data = yamlfile.read_mapping(path, what, InputError)
        for name, entry in _named(data.get("contexts")):
            contexts.setdefault(name, entry.get("context"))
        for name, entry in _named(data.get("clusters")):
            clusters.setdefault(name, (path, entry.get("cluster")))
        if current is None and isinstance(data.get("current-context"), str):
            current = data["current-context"]
    if context is not None and context not in contexts:
        shown = ", ".join(sorted(contexts)[:10]) or "none"
        raise InputError(f"--context={context}: no such context in {os.pathsep.join(paths)} (its contexts: {shown})")
    chosen = contexts.get(context or current or "")
    name = chosen.get("cluster") if isinstance(chosen, dict) else None
    path, cluster = clusters.get(name, (None, None)) if isinstance(name, str) else (None, None)
    server = cluster.get("server") if isinstance(cluster, dict) else None
    if server is not None:
        why = _server_url(server)
        if why:
            raise InputError(f"{path}: clusters[{name}].server {server!r}: {why}")


def _named(items) -> list[tuple[str, dict]]:
    return [(i["name"], i) for i in items if isinstance(i, dict) and isinstance(i.get("name"), str)] \
        if isinstance(items, list) else []


def _server_url(server) -> str | None:
    """Why ``server`` is not an API server URL the client can use, or None."""
    if not isinstance(server, str):
        return "not a URL"
    try:
        url = urllib.parse.urlsplit(server)
        port = url.port
    except ValueError as exc:
        return f"not a URL ({exc})"
    if url.scheme not in ("https", "http"):
        return "not an https:// or http:// URL"
    if not url.hostname:
        return "no host name"
    if port is not None and not 0 < port <= _MAX_PORT:
        return f"port {port} is not in 1-{_MAX_PORT}"
    return None


def host_specs(raw: str, connection: str | None, where: str, connect_timeout_s: int) -> str:
    """``raw`` (comma-separated testinfra host specs) validated, each SSH spec carrying the
    profile's connect timeout; ``where`` names the input (``--hosts`` or the profile's hosts)."""
    specs = raw.split(",")
    out = []
    for spec in specs:
        if not spec.strip():
            raise InputError(f"{where} {raw!r}: an empty host (a stray comma, or nothing after '=')")
        out.append(_host_spec(spec.strip(), connection, where, connect_timeout_s))
    return ",".join(out)


def _not_an_option(spec: str, what: str, value: str | None, where: str) -> None:
    """testinfra hands the host name to ``ssh`` (the sudo user to ``sudo``, the folder to ``chroot``)
    as an argument: one starting with '-' would be read as an option (``-oProxyCommand=…`` runs a
    command on this machine)."""
    if value is not None and urllib.parse.unquote(value).lstrip().startswith("-"):
        raise InputError(f"{where} {spec}: the {what} starts with '-' (ssh, sudo or chroot would read it as an option)")


def _numbers(spec: str, query: str, where: str) -> None:
    for key, values in urllib.parse.parse_qs(query, keep_blank_values=True).items():
        least = _NUMBER_QUERY.get(key)
        if least is not None and not all(re.fullmatch(r"[0-9]{1,9}", v) and int(v) >= least for v in values):
            raise InputError(f"{where} {spec}: ?{key}={values[0]!r} is not a whole number of seconds "
                             f"(at least {least})")


def _host_spec(spec: str, connection: str | None, where: str, connect_timeout_s: int) -> str:
    if connection == "chroot" and "://" not in spec:
        _not_an_option(spec, "chroot folder", spec, where)
        if not Path(spec).is_dir():
            raise InputError(f"{where} {spec}: a chroot host is a directory, and this is not one")
        return spec
    url_form = spec if "://" in spec else f"{connection or 'paramiko'}://{spec}"
    if url_form.startswith(f"{k8s_node.SCHEME}://"):
        why = k8s_node.check_spec(url_form)
        if why:
            raise InputError(f"{where} {spec}: {why}")
        return url_form
    try:
        url = urllib.parse.urlsplit(url_form)
        port = url.port  # raises on a port that is not a number or out of range
    except ValueError as exc:
        raise InputError(f"{where} {spec}: not a host spec ({exc})") from None
    if port is not None and not 0 < port <= _MAX_PORT:
        raise InputError(f"{where} {spec}: port {port} is not in 1-{_MAX_PORT}")
    try:
        testinfra.backend.get_backend_class(url.scheme)
    except RuntimeError:
        known = ", ".join(f"{k}://" for k in sorted(testinfra.backend.BACKENDS))
        raise InputError(f"{where} {spec}: unknown connection type {url.scheme!r} (known: {known})") from None
    if url.scheme not in ("local",) and not url.hostname:
        raise InputError(f"{where} {spec}: no host name")
    _not_an_option(spec, "host name", url.hostname, where)
    _not_an_option(spec, "user", url.username, where)
    query = urllib.parse.parse_qs(url.query)
    _not_an_option(spec, "sudo_user", (query.get("sudo_user") or [None])[0], where)
    _numbers(spec, url.query, where)
    if url.scheme in SSH_BACKENDS and "timeout" not in urllib.parse.parse_qs(url.query):
        query = "&".join(filter(None, [url.query, f"timeout={connect_timeout_s}"]))
        return urllib.parse.urlunsplit(url._replace(query=query))
    return spec


def report_name(name: str) -> str:
    """A report name is a plain file name inside --report-dir (no folder, no '..', no control
    character: a newline would forge lines wherever the name is shown)."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or name.startswith(".") \
            or any(ch < " " or ch == "\x7f" for ch in name):
        raise InputError(f"--report-name {name!r}: a plain file name without folders or a leading "
                         f"dot (the report goes to --report-dir)")
    if len(name.encode()) > 200:
        raise InputError(f"--report-name: {len(name.encode())} bytes long; at most 200")
    return name


def report_dir(folder: Path, option: str = "--report-dir") -> Path:
    """The report folder (or another output folder, given by ``option``), created if need be,
    proven writable by writing a file there."""
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{option} {folder}: exists and is not a directory")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder, prefix=".gpuconform-write-test-"):
            pass
    except OSError as exc:
        raise InputError(f"{option} {folder}: cannot write there: {exc.strerror or exc}") from None
    return folder


def fallback_dir() -> Path:
    """Where reports go when the report folder refuses them at the end of a run."""
    return Path(tempfile.mkdtemp(prefix="gpuconform-reports-", dir=os.environ.get("TMPDIR") or "/tmp"))


# -- the run's inputs, read once --------------------------------------------------------------
CHROOT = "chroot://"


@dataclasses.dataclass(frozen=True)
class HostList:
    """The hosts to check, as given (--hosts, else the profile's ``hosts:``), validated once:
    SSH specs carry the profile's connect timeout, ``chroot:///ROOT`` became ``ROOT`` under the
    chroot connection. ``k8s-node://?selector=`` specs are as written: the API server is asked
    for their nodes where the hosts are first needed (plugin/hosts.py), not here."""
    specs: tuple[str, ...]
    where: str                       # the input they came from, for error lines
    connection: str | None           # testinfra's --connection
    connect: tuple[tuple[str, object], ...] = ()  # testinfra's other connection options

    @property
    def selectors(self) -> bool:
        return any(k8s_node.selector_of(s) is not None for s in self.specs)


@dataclasses.dataclass(frozen=True)
class ReportPaths:
    """Where this run's reports go: ``<folder>/<name>.json`` and, when the suite names the page
    (pytest-html present, no --html), ``<folder>/<name>.html``."""
    folder: Path
    name: str

    @property
    def json(self) -> Path:
        return self.folder / f"{self.name}.json"

    @property
    def html(self) -> Path:
        return self.folder / f"{self.name}.html"


@dataclasses.dataclass(frozen=True)
class RunInputs:
    """Every input of a run, checked: built by :func:`read`, once, before anything runs."""
    suite: Path
    profile: profile_mod.LoadedProfile
    waivers: tuple
    baseline: tuple[str, dict, str] | None      # (path as given, document, sha256)
    fail_on_drift: tuple[str, ...]
    remediate: tuple[str, tuple[str, ...]] | None  # (mode, check ids; () = all), None: off
    hosts: HostList | None                      # None: no hosts given (testinfra's local host)
    started: dt.datetime
    today: dt.date
    reports: ReportPaths | None                # None: --no-reports, --collect-only, an xdist worker
    selection: str | None                       # -m / -k as given, for the report
    ai_conformance: Path | None                 # --ai-conformance's folder; None: not asked, or not this process


#: testinfra's connection options, handed to ``testinfra.get_hosts`` as they are
_CONNECT_OPTIONS = ("ssh_config", "ssh_identity_file", "sudo", "sudo_user", "ansible_inventory", "force_ansible")


def read(config: pytest.Config, suite: Path) -> RunInputs:
    """All the run's inputs from the command line and the profile, checked; bad input raises
    :class:`pytest.UsageError` (one line naming it, exit 4)."""
    opt = config.option
    path = profile_path(opt.gpuconform_profile, str(Path(suite, "profiles", "seed-h100.yaml")))
    try:
        loaded = profile_mod.load(path)
        waivers = waivers_mod.load(opt.gpuconform_waivers) if opt.gpuconform_waivers else ()
        baseline, fail_on_drift = drift_mod.options(opt.gpuconform_baseline, opt.gpuconform_fail_on_drift,
                                                    opt.gpuconform_force_baseline, loaded.name)
    except (profile_mod.ProfileError, waivers_mod.WaiverError, drift_mod.BaselineError) as exc:
        raise pytest.UsageError(str(exc)) from None
    kubeconfig(opt.gpuconform_kubeconfig, opt.gpuconform_context, os.environ.get("KUBECONFIG"))
    files({"--ssh-config": getattr(opt, "ssh_config", None),
           "--ssh-identity-file": getattr(opt, "ssh_identity_file", None)})
    wanted = remediation_fixtures.selection(opt.gpuconform_remediate, opt.gpuconform_remediate_checks)
    hosts = host_list(opt, loaded)
    started = dt.datetime.now(dt.timezone.utc)
    controller = not (opt.collectonly or hasattr(config, "workerinput"))
    reports = _report_files(opt, loaded, started, config.invocation_params.dir) \
        if controller and not opt.gpuconform_no_reports else None
    selection = " ".join(f"{flag} {val!r}" for flag, val in (("-m", opt.markexpr), ("-k", opt.keyword)) if val)
    return RunInputs(suite=suite, profile=loaded, waivers=waivers, baseline=baseline, fail_on_drift=fail_on_drift,
                     remediate=None if wanted is None else (opt.gpuconform_remediate, wanted),
                     hosts=hosts, started=started, today=waivers_mod.today_utc(),
                     reports=reports, selection=selection or None,
                     ai_conformance=ai_conformance_dir(opt, loaded) if controller else None)


def ai_conformance_dir(opt, loaded: profile_mod.LoadedProfile) -> Path | None:
    """--ai-conformance's folder, checked: PRODUCT.yaml needs the profile's product and the run's reports."""
    if opt.gpuconform_ai_conformance is None:
        return None
    if loaded.profile.ai_conformance.product is None:
        raise InputError(f"--ai-conformance: {loaded.path}: ai_conformance.product: the product's "
                         f"metadata is required for PRODUCT.yaml (platform_name, vendor_name …)")
    if opt.gpuconform_no_reports:
        raise InputError("--ai-conformance: the run's reports are its evidence: drop --no-reports")
    return report_dir(Path(opt.gpuconform_ai_conformance), "--ai-conformance")


def host_list(opt, loaded: profile_mod.LoadedProfile) -> HostList | None:
    """The one parse of the host list: --hosts, else the profile's ``hosts:``."""
    raw, where = getattr(opt, "hosts", None), "--hosts"
    if raw is None and loaded.profile.hosts:
        raw, where = ",".join(loaded.profile.hosts), f"{loaded.path}: hosts:"
    if raw is None:
        return None
    connection = getattr(opt, "connection", None)
    specs = raw.split(",")
    roots = [s for s in specs if s.startswith(f"{CHROOT}/")]
    if roots:  # testinfra reads the URL's (empty) host part: such hosts are paths under --connection=chroot
        if len(roots) != len(specs):
            raise InputError(f"{where}: chroot:///PATH hosts cannot be mixed with other kinds in one run")
        raw, connection = ",".join(s[len(CHROOT):] for s in roots), "chroot"
    checked = host_specs(raw, connection, where, loaded.profile.timeouts.ssh_connect_s)
    return HostList(tuple(checked.split(",")), where, connection,
                    tuple((name, getattr(opt, name, None)) for name in _CONNECT_OPTIONS))


#: A report's file name at most this many bytes before its suffix: a long profile name is cut and
#: keeps a hash of itself (a name over 255 bytes is refused by the file system, fallback included).
NAME_BYTES = 120


def _file_name(name: str) -> str:
    if len(name.encode()) <= NAME_BYTES:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    return name.encode()[:NAME_BYTES - 13].decode(errors="ignore") + "-" + digest


def _report_files(opt, loaded: profile_mod.LoadedProfile, started: dt.datetime, cwd: Path) -> ReportPaths:
    if opt.gpuconform_report_name is not None:
        name = report_name(opt.gpuconform_report_name)
    else:  # the profile's name is free text: keep it a file name
        stamp = started.strftime("%Y%m%dT%H%M%SZ")
        name = _file_name(re.sub(r"[^A-Za-z0-9_.-]+", "_", loaded.name).lstrip(".")) + f"-{stamp}"
    # default: ./reports, where the run is started (in a checkout its root; never into an installed package)
    return ReportPaths(report_dir(Path(opt.gpuconform_report_dir or Path(cwd, "reports"))), name)
