"""The image's entrypoint, run outside a container (there is no container runtime on these
machines): the files are laid out as manifests/in-cluster/Containerfile's COPY lines say, the
package is installed from that copy as its RUN line does (not editable), and the entrypoint runs
with what a pod of the CronJob (60-cronjob.yaml) has: the ServiceAccount's token, CA and namespace files (at
$GPUCONFORM_SERVICEACCOUNT_DIR instead of /var/run/secrets/kubernetes.io/serviceaccount),
KUBERNETES_SERVICE_HOST/PORT pointing at the cluster bed, the profile where the ConfigMap is
mounted, the reports volume, the Job's environment, and no kubeconfig anywhere. The whole cluster
layer passes with that ServiceAccount's RBAC and nothing else, and so do the node checks of the
Job's default hosts (every GPU node, through k8s-node:// probe pods) on good workers, while a
faulty one fails what its host root gets wrong: the RBAC and the admission policy are sufficient."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import incluster_harness as h
from gpuconform import profile as profile_mod
from gpuconform.report import model as results_file
from cluster_harness import BACKING, FAULTY, FAULTY_CHECK, PROFILE, backed_workers, by_check, wait_gone

WHOLE_GPU_WORKER = "gpu-worker-3"  # all-disabled: the only worker offering nvidia.com/gpu

CONTAINERFILE = h.IN_CLUSTER / "Containerfile"
#: where an accepted run is kept: one baseline per profile, by its name (ci/gpuconform-nightly.sh)
KEPT = f"baseline-{profile_mod.load(PROFILE).name}.json"


def containerfile() -> dict[str, list]:
    """The instructions of the Containerfile (continuation lines joined): {INSTRUCTION: [args...]}."""
    out: dict[str, list] = {}
    text = CONTAINERFILE.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            out.setdefault(word.upper(), []).append(rest.strip())
    return out


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> Path:
    """The image's file system under a folder: COPY as written, then the RUN line's pip install
    (the dependencies come from this venv's site-packages, which is where the same pyproject.toml
    put them; gpuconform itself comes only from the copy)."""
    root = tmp_path_factory.mktemp("image")
    spec = containerfile()
    workdir = spec["WORKDIR"][-1]
    for args in spec["COPY"]:  # COPY a dir copies its contents; into a dest ending in / by name
        *sources, dest = shlex.split(args)
        target = root / (dest if dest.startswith("/") else f"{workdir}/{dest}").lstrip("/")
        for src in sources:
            src_path = h.REPO / src.rstrip("/")
            if src_path.is_dir():
                shutil.copytree(src_path, target, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
            else:
                into = target / src_path.name if dest.endswith("/") else target
                into.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(src_path, into)
    (run,) = spec["RUN"]
    install, *cleanups = [c.split() for c in run.split("&&")]
    assert install[:2] == ["pip", "install"] and "-e" not in install and "--editable" not in install, run
    venv = root / "usr" / "local"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    deps = sysconfig.get_paths()["purelib"]
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "dependencies.pth").write_text(deps + "\n")
    target = str(root / install[2].lstrip("/"))
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", "--no-build-isolation",
                           f"--prefix={venv}", target],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    # the console script names the image's python, as pip run in the image writes it (here: this venv's)
    script = venv / "bin" / "gpuconform"
    body = script.read_text().split("\n", 1)[1]
    script.write_text(f"#!{venv / 'bin' / 'python'}\n{body}")
    for command in cleanups:  # the RUN line's removals, inside the image's root
        assert command[:2] == ["rm", "-rf"], command
        subprocess.run(["rm", "-rf", *(str(root / a.lstrip("/")) for a in command[2:])], check=True)
    # the install stands alone (away from the copied sources): package, report files, pod manifests
    check = ("import gpuconform, gpuconform.resources as r, gpuconform.plugin.reporting as k;"
             "print(gpuconform.__file__); assert 'kind: Pod' in r.manifest('cuda-vectoradd.yaml') and k.CSS.is_file();"
             "assert r.remediation_script('lib.sh') and r.example_profile_path('seed-h100.yaml').is_file()")
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", check], capture_output=True, text=True, cwd=root)
    assert proc.returncode == 0 and proc.stdout.startswith(str(site)), proc.stdout + proc.stderr
    assert not [p for p in root.rglob("test_reachable.py") if not str(p).startswith(str(site))]  # no source tree
    return root


def pod_environment(image: Path, platform, bearer: str, markers: str = "cluster") -> dict[str, str]:
    """What the container of 60-cronjob.yaml sees: the Containerfile's ENV, the Job's env, the
    kubelet's in-cluster variables and files; paths moved under ``image``. ``markers`` replaces
    the Job's GPUCONFORM_MARKERS (the bed has no Kubeflow; the node layer needs backed workers)."""
    spec = containerfile()
    moved = lambda v: str(image / v.lstrip("/")) if v.startswith("/") else v  # noqa: E731
    env = {"PATH": f"{image}/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    for line in spec["ENV"]:
        for pair in shlex.split(line):
            key, _, value = pair.partition("=")
            env[key] = moved(value)
    env.update({name: moved(value) for name, value in h.job_env().items()})
    # the ConfigMap mount (the seed profile in it) and the ServiceAccount's projected files
    profile = Path(env["GPUCONFORM_PROFILE"])
    profile.parent.mkdir(parents=True, exist_ok=True)
    profile.write_text(PROFILE.read_text())
    sa = image / "var/run/secrets/kubernetes.io/serviceaccount"
    sa.mkdir(parents=True, exist_ok=True)
    (sa / "token").write_text(bearer)
    (sa / "ca.crt").write_bytes(h.ca_file(platform.kubeconfig).read_bytes())
    (sa / "namespace").write_text(h.NAMESPACE)
    server = urlsplit(platform.server)
    env.update(GPUCONFORM_SERVICEACCOUNT_DIR=str(sa), KUBERNETES_SERVICE_HOST=server.hostname,
               KUBERNETES_SERVICE_PORT=str(server.port), HOME=env.get("HOME", str(image / "tmp")))
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    Path(env["GPUCONFORM_REPORT_DIR"]).mkdir(parents=True, exist_ok=True)
    env["GPUCONFORM_MARKERS"] = markers
    return env


def entrypoint(image: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    (command,) = containerfile()["ENTRYPOINT"]
    program, *args = json.loads(command)
    return subprocess.run([str(image / program.lstrip("/")), *args], env=env, cwd=image / containerfile()["WORKDIR"][-1].lstrip("/"),
                          capture_output=True, text=True, timeout=600)


def test_the_pod_runs_the_cluster_layer_with_the_service_account(image, platform, admin, sa_token):
    env = pod_environment(image, platform, sa_token)
    assert not any(k in env for k in ("KUBECONFIG", "GPUCONFORM_KUBECONFIG"))
    proc = entrypoint(image, env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "cluster access: in-cluster ServiceAccount" in out and "ACCEPTED" in out
    reports = Path(env["GPUCONFORM_REPORT_DIR"])
    names = sorted(p.name for p in reports.iterdir())
    assert [n for n in names if n.endswith(".html")] and [n for n in names if n.startswith("junit-")], names
    assert KEPT in names, names  # accepted: kept as the next run's baseline
    results = by_check(results_file.read((reports / KEPT).read_text()))
    bad = {k: (r["verdict"], r["message"]) for k, r in results.items()
           if r["verdict"] != "pass" and k[0] != "cluster.kyverno.namespace_excluded"}
    assert not bad, bad
    assert len(results) > 40
    assert sa_token not in "".join(p.read_text(errors="replace") for p in reports.iterdir() if p.is_file())


@pytest.fixture
def backed(platform):
    with backed_workers(platform) as core:
        yield core


def test_the_pod_runs_node_checks_of_every_gpu_node_through_kubernetes(image, platform, admin, sa_token, backed,
                                                                      tmp_path):
    """The Job's default GPUCONFORM_HOSTS, as 60-cronjob.yaml has it, with the node layer beside the
    cluster layer: the three GPU workers it selects are probed through pods with the
    ServiceAccount's token; the two good ones pass every node check, the faulty one fails only
    the check its host root gets wrong; the run is REJECTED (exit 1) and its namespaces (the
    run's, restricted, and the probe pods', privileged) are gone afterwards."""
    before = h.managed_namespaces(admin)
    env = pod_environment(image, platform, sa_token, markers="node or cluster")
    env["GPUCONFORM_REPORT_DIR"] = str(tmp_path / "reports")  # a volume of its own: no earlier baseline
    assert env["GPUCONFORM_HOSTS"].startswith("k8s-node://?selector="), env["GPUCONFORM_HOSTS"]  # the Job's own
    proc = entrypoint(image, env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-4000:]
    assert "REJECTED" in out and "Traceback" not in out, out[-4000:]
    docs = sorted(Path(env["GPUCONFORM_REPORT_DIR"]).glob("*.json"))
    doc = results_file.read(docs[-1].read_text())
    node = {}
    for r in doc["results"]:
        if r["check_id"].startswith("node."):
            node.setdefault(r["host"], {})[r["check_id"], r["param"]] = (r["verdict"], r["message"])
    assert set(node) == set(BACKING), set(node)  # every GPU node, and nothing else
    for worker, scenario in BACKING.items():
        verdicts = {k: v for k, v in node[worker].items() if v[0] not in ("pass", "skip")}
        if scenario == FAULTY:
            assert list(verdicts) == [(FAULTY_CHECK, None)] and verdicts[FAULTY_CHECK, None][0] == "fail", verdicts
        else:
            assert not verdicts, (worker, verdicts)
        assert node[worker][("node.reachable", None)][0] == "pass"
    cluster = {k: (r["verdict"], r["message"]) for k, r in by_check(doc).items()
               if k[0].startswith("cluster.") and r["verdict"] != "pass" and k[0] != "cluster.kyverno.namespace_excluded"}
    assert not cluster, cluster
    assert "k8s-node probes: 3 pods" in out, out[-3000:]
    assert not (Path(env["GPUCONFORM_REPORT_DIR"]) / KEPT).exists()  # REJECTED: no baseline
    wait_gone(lambda: sorted(h.managed_namespaces(admin) - before))


@pytest.fixture
def pod_stays_pending(admin):
    """The only whole-GPU worker cordoned: the vectoradd pod waits Pending (as in
    selftest/cluster_checks/test_waits_and_cleanup.py), so a signal lands mid-wait."""
    admin.patch(f"/api/v1/nodes/{WHOLE_GPU_WORKER}", {"spec": {"unschedulable": True}})
    yield
    admin.patch(f"/api/v1/nodes/{WHOLE_GPU_WORKER}", {"spec": {"unschedulable": None}})


def test_sigterm_to_the_pods_pid_1_ends_the_run_cleanly(image, platform, admin, sa_token, pod_stays_pending, tmp_path):
    """activeDeadlineSeconds or a deleted Job: the kubelet sends SIGTERM to the container's PID 1,
    the entrypoint script. It reaches the suite, which cleans up its run namespace and writes the
    report of what finished: exit 2, not a killed run with leftovers."""
    env = pod_environment(image, platform, sa_token)
    env.update(GPUCONFORM_REPORT_DIR=str(tmp_path / "reports"), GPUCONFORM_ARGS="-k vectoradd_whole_gpu")
    (command,) = containerfile()["ENTRYPOINT"]
    program, *args = json.loads(command)
    proc = subprocess.Popen([str(image / program.lstrip("/")), *args], env=env,
                            cwd=image / containerfile()["WORKDIR"][-1].lstrip("/"), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not (pods := admin.get_json("/api/v1/pods", {"labelSelector": "app.kubernetes.io/managed-by=gpuconform"})["items"]):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0][-3000:]
        time.sleep(0.2)
    time.sleep(0.5)  # mid-wait
    proc.send_signal(signal.SIGTERM)  # to the script only, as the kubelet signals PID 1
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2, out[-3000:]
    assert "REJECTED (interrupted)" in out
    assert list((tmp_path / "reports").glob("*.json")), out[-2000:]
    run_namespace = pods[0]["metadata"]["namespace"]
    gone = admin.get_json(f"/api/v1/namespaces/{run_namespace}", missing_ok=True)
    assert gone is None or gone["status"]["phase"] == "Terminating", gone


def test_a_refused_token_is_the_reachable_check_failing(image, platform, installed, tmp_path):
    """The in-cluster config is what the run used: a token the API server refuses fails
    cluster.api.reachable naming the in-cluster service account, and the run is REJECTED."""
    env = pod_environment(image, platform, "not-a-token")
    env["GPUCONFORM_REPORT_DIR"] = str(tmp_path / "reports")
    proc = entrypoint(image, env)
    assert proc.returncode == 1, proc.stdout[-3000:]
    docs = sorted((tmp_path / "reports").glob("*.json"))
    result = by_check(results_file.read(docs[-1].read_text()))[("cluster.api.reachable", None)]
    assert result["verdict"] == "fail" and "refused our credentials (in-cluster service account)" in result["message"]
    assert not (tmp_path / "reports" / KEPT).exists()  # a REJECTED run is no baseline
