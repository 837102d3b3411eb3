"""The CI templates (ci/gitlab/.gitlab-ci.yml, ci/github/nightly.yml) are valid for their
platform (check-jsonschema's built-in schemas, offline), and drop in: each is copied into a
folder that holds only it and a profile (gpuconform-profile.yaml), as the repository a user makes,
and its script steps, extracted from the YAML and run as the platform runs them, install the
suite from its package (the wheel built from this checkout, named by the template's
GPUCONFORM_PACKAGE variable) and do the nightly against the cluster bed with the template's own
variables: the first night finds no baseline and is ACCEPTED, so its JSON becomes the baseline
kept as an artifact; the next night fetches exactly that JSON and passes it to the suite
(--baseline); a REJECTED night keeps nothing, so the baseline stays the last accepted run; a
runner that cannot reach the API server fails the run saying so in one line.

Shortcuts, said here: the nights run the cluster layer's API checks only (GPUCONFORM_MARKERS /
GPUCONFORM_ARGS, CI variables of the templates); pip installs offline, the wheel's dependencies
found installed on PYTHONPATH (selftest/wheel.py); GitLab's image is played by this machine,
whose apt-get is a stand-in that records what the job asks of it (this machine has an ssh client
already); the venv the first night's install step made is reused by the next night (the steps
install again into it); ``uses:`` steps are the platform's own actions and are not run:
upload-artifact's effect (what it keeps, under which condition) is played by the stand-in store,
the JUnit report's by matching its glob."""
from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import incluster_harness as h
import wheel as wheel_mod
from ci_standin import Store, serve
from cluster_harness import PROFILE

GITLAB = h.REPO / "ci" / "gitlab" / ".gitlab-ci.yml"
GITHUB = h.REPO / "ci" / "github" / "nightly.yml"
CHECK_JSONSCHEMA = Path(sys.executable).with_name("check-jsonschema")
NARROW = "-k test_api"  # cluster.api.reachable, .version, cluster.nodes.gpu_workers, .ready


def validate(schema: str, path: Path) -> subprocess.CompletedProcess:
    """check-jsonschema with its built-in schema, without network where this machine allows it."""
    offline = ["unshare", "-n"]  # a network namespace of its own: no route out
    if not shutil.which("unshare") or subprocess.run([*offline, "true"], capture_output=True).returncode:
        offline = []  # cannot cut the network here: validated all the same
    return subprocess.run([*offline, str(CHECK_JSONSCHEMA), "--builtin-schema", schema, str(path)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("schema,template", [("vendor.gitlab-ci", GITLAB), ("vendor.github-workflows", GITHUB)])
def test_template_validates(schema, template, tmp_path):
    proc = validate(schema, template)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # and the schema does judge: the same template with a misspelt key is refused
    broken = tmp_path / template.name
    broken.write_text(template.read_text().replace("script:", "scirpt:", 1).replace("steps:", "stepz:", 1))
    proc = validate(schema, broken)
    assert proc.returncode == 1, proc.stdout + proc.stderr


# -- running the templates' steps ------------------------------------------------------------------
@pytest.fixture(scope="module")
def package(tmp_path_factory) -> dict[str, str]:
    """What the steps need from this machine: the wheel (GPUCONFORM_PACKAGE), the dependencies on
    PYTHONPATH, pip offline, and the apt-get stand-in first on PATH."""
    work = tmp_path_factory.mktemp("package")
    tools = work / "bin"
    tools.mkdir()
    (tools / "apt-get").write_text(f'#!/bin/sh\necho "$*" >> {work}/apt-get.log\n')
    (tools / "apt-get").chmod(0o755)
    return {"GPUCONFORM_PACKAGE": str(wheel_mod.build(work)), "PYTHONPATH": str(wheel_mod.dependencies(work / "deps")),
            "PIP_NO_INDEX": "1", "PATH": f"{tools}:{os.environ['PATH']}", "APT_LOG": str(work / "apt-get.log")}


def user_repository(root: Path, template: Path, at: str) -> Path:
    """A folder holding only ``template`` (at its place ``at``) and a profile: what a user commits."""
    (root / at).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(template, root / at)
    shutil.copy(PROFILE, root / "gpuconform-profile.yaml")
    return root


@pytest.fixture(scope="module")
def sa_kubeconfig(platform, sa_token, tmp_path_factory) -> Path:
    """The kubeconfig a CI variable holds: the suite's ServiceAccount's token, no admin."""
    return h.token_kubeconfig(tmp_path_factory.mktemp("ci") / "kubeconfig", platform.server,
                              h.ca_file(platform.kubeconfig), sa_token)


@pytest.fixture(scope="module")
def dead_kubeconfig(sa_kubeconfig, tmp_path_factory) -> Path:
    """The same kubeconfig naming an address where no API server listens: a runner that cannot reach it."""
    data = yaml.safe_load(sa_kubeconfig.read_text())
    for entry in data["clusters"]:
        entry["cluster"]["server"] = "https://127.0.0.1:9"
    path = tmp_path_factory.mktemp("ci-dead") / "kubeconfig"
    path.write_text(yaml.safe_dump(data))
    return path


def rejected_profile(repo: Path) -> Path:
    """The seed profile asking a Kubernetes release the bed does not run: cluster.api.version fails."""
    data = yaml.safe_load(PROFILE.read_text())
    data["cluster"]["server_version"] = {"min": "1.99"}
    path = repo / "rejected.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _night_start(workdir: Path) -> None:
    for folder in ("reports", "baseline"):
        shutil.rmtree(workdir / folder, ignore_errors=True)


def _run_lines(lines: list[str], env: dict, cwd: Path, shell: list[str]) -> tuple[int, str]:
    out = []
    for line in lines:
        proc = subprocess.run([*shell, line], env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
        out.append(f"$ {line}\n{proc.stdout}{proc.stderr}")
        if proc.returncode:
            return proc.returncode, "\n".join(out)
    return 0, "\n".join(out)


def _base_env(package: dict[str, str]) -> dict[str, str]:
    keep = ("LANG", "HOME", "PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
    return {**{k: os.environ[k] for k in keep if k in os.environ},
            **{k: v for k, v in package.items() if k != "APT_LOG"}}


def gitlab_night(workdir: Path, package: dict, store: Store, base: str, kubeconfig: Path, **variables) -> tuple[int, str]:
    """The job as a GitLab runner runs it: global + job variables, the predefined CI_* ones,
    File-type variables as paths; before_script then script, line by line, stopping at the
    first failure; artifacts (when: always) collected; the pipeline recorded."""
    _night_start(workdir)
    doc = yaml.safe_load((workdir / ".gitlab-ci.yml").read_text())
    job = doc["gpuconform-nightly"]
    env = {**_base_env(package), **{k: str(v) for k, v in doc["variables"].items()},
           "GPUCONFORM_PACKAGE": package["GPUCONFORM_PACKAGE"],  # the variable, set to the wheel
           "CI_PROJECT_DIR": str(workdir), "CI_API_V4_URL": f"{base}/api/v4", "CI_PROJECT_ID": "42",
           "CI_COMMIT_REF_NAME": "main", "CI_JOB_NAME": "gpuconform-nightly", "CI_JOB_TOKEN": "job-token-x",
           "CI_PIPELINE_ID": str(len(store.runs) + 1), "CI_PIPELINE_SOURCE": "schedule",
           "GPUCONFORM_KUBECONFIG": str(kubeconfig), **variables}
    code, log = _run_lines(job["before_script"] + job["script"], env, workdir, ["sh", "-c"])
    kept = {str(p.relative_to(workdir)): p.read_bytes()
            for pattern in job["artifacts"]["paths"] for p in (workdir / pattern).rglob("*") if p.is_file()}
    junit = [name for name in kept if fnmatch.fnmatch(name, job["artifacts"]["reports"]["junit"])]
    assert job["artifacts"]["when"] == "always" and (junit or code == 4), (sorted(kept), log[-3000:])
    store.add(ref="main", job="gpuconform-nightly", success=code == 0, files=kept)
    return code, log


def _expr(value: str, secrets: dict[str, str]) -> str:
    return re.sub(r"\$\{\{\s*(secrets\.(\w+)|github\.token)\s*\}\}",
                  lambda m: secrets[m.group(2)] if m.group(2) else "github-token-x", value)


def github_night(workdir: Path, package: dict, store: Store, base: str, runner_temp: Path, kubeconfig: Path,
                 **env_changes) -> tuple[int, str]:
    """The workflow's job as a runner runs it: workflow env, each step's env with its
    expressions, ``run:`` under ``bash -e`` (GitHub's default shell), ``if:`` honoured; the
    artifacts uploaded (by the stand-in) as upload-artifact would; the run recorded."""
    _night_start(workdir)
    doc = yaml.safe_load((workdir / ".github" / "workflows" / "nightly.yml").read_text())
    secrets = {"GPUCONFORM_KUBECONFIG": kubeconfig.read_text(), "GPUCONFORM_KUBEFLOW_PASSWORD": ""}
    env = {**_base_env(package), **{k: str(v) for k, v in doc["env"].items()}, "RUNNER_TEMP": str(runner_temp),
           "GPUCONFORM_PACKAGE": package["GPUCONFORM_PACKAGE"],  # the variable, set to the wheel
           "GITHUB_API_URL": base, "GITHUB_REPOSITORY": "platform/gpuconform", "GITHUB_REF_NAME": "main",
           "GITHUB_WORKFLOW_REF": "platform/gpuconform/.github/workflows/nightly.yml@refs/heads/main",
           **env_changes}
    failed, logs, artifacts = False, [], {}
    for step in doc["jobs"]["conformance"]["steps"]:
        condition = step.get("if", "success()")
        if condition == "success()" and failed:
            continue
        uses = step.get("uses", "")
        if uses.startswith("actions/upload-artifact@"):
            path = workdir / step["with"]["path"]
            files = [p for p in ([path] if path.is_file() else path.rglob("*")) if p.is_file()]
            artifacts[_expr(step["with"]["name"], secrets)] = {p.name: p.read_bytes() for p in files}
        elif uses.startswith("mikepenz/action-junit-report@"):
            logs.append(f"JUnit for the test report: {sorted(p.name for p in workdir.glob(step['with']['report_paths']))}")
        elif "run" in step:
            step_env = {**env, **{k: _expr(str(v), secrets) for k, v in (step.get("env") or {}).items()}}
            code, log = _run_lines([step["run"]], step_env, workdir, ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"])
            logs.append(log)
            if code:
                failed, result = True, code
    store.add(ref="main", job="conformance", success=not failed, artifacts=artifacts)
    return (result if failed else 0), "\n".join(logs)


def _second_night_used_the_baseline(code: int, log: str, baseline: Path, workdir: Path) -> None:
    assert f"--baseline={baseline}" in log, log[-3000:]
    assert code == 1, log[-3000:]  # judged: REJECTED by its profile, the drift read against the baseline
    doc = json.loads(max((workdir / "reports").glob("*.json"), key=lambda p: p.stat().st_mtime).read_text())
    assert doc.get("drift"), sorted(doc)  # the report says what changed since the accepted night


def _unreachable_night_says_so(code: int, log: str) -> None:
    assert code == 1, log[-3000:]
    said = [line for line in log.splitlines() if line.startswith("gpuconform-nightly: cluster.api.reachable")]
    assert len(said) == 1 and "fail: API server https://127.0.0.1:9 unreachable" in said[0], log[-3000:]


def test_gitlab_nights(package, sa_kubeconfig, dead_kubeconfig, tmp_path):
    workdir = user_repository(tmp_path / "repo", GITLAB, ".gitlab-ci.yml")
    assert yaml.safe_load(GITLAB.read_text())["gpuconform-nightly"]["image"] == "python:3.11-slim"  # no ssh in it
    store = Store()
    server, base = serve(store, "nightly.yml")
    try:
        code, log = gitlab_night(workdir, package, store, base, sa_kubeconfig, GPUCONFORM_MARKERS="cluster",
                                 GPUCONFORM_ARGS=NARROW)
        assert code == 0, log[-4000:]
        assert "fetch-baseline: no baseline: no accepted run yet" in log and "ACCEPTED" in log
        assert "install -y -qq --no-install-recommends openssh-client" in Path(package["APT_LOG"]).read_text()
        first = store.runs[-1].files["reports/baseline.json"]
        assert json.loads(first)["results"]
        path, headers = store.requests[0]
        assert path == "/api/v4/projects/42/jobs/artifacts/main/raw/reports/baseline.json"
        assert headers.get("job-token") == "job-token-x"

        code, log = gitlab_night(workdir, package, store, base, sa_kubeconfig, GPUCONFORM_MARKERS="cluster",
                                 GPUCONFORM_ARGS=NARROW, GPUCONFORM_PROFILE=str(rejected_profile(workdir)))
        fetched = workdir / "baseline" / "last-accepted.json"
        assert fetched.read_bytes() == first, log[-3000:]
        _second_night_used_the_baseline(code, log, fetched, workdir)
        assert "reports/baseline.json" not in store.runs[-1].files  # a rejected night is no baseline
        assert not store.runs[-1].success

        code, log = gitlab_night(workdir, package, store, base, dead_kubeconfig, GPUCONFORM_MARKERS="cluster",
                                 GPUCONFORM_ARGS=NARROW)
        _unreachable_night_says_so(code, log)
    finally:
        server.shutdown()
    assert "job-token-x" not in log
    assert sorted(p.name for p in workdir.iterdir() if not p.name.startswith(".")) == [
        "baseline", "gpuconform-profile.yaml", "rejected.yaml", "reports"]  # no source tree came in


def test_github_nights(package, sa_kubeconfig, dead_kubeconfig, tmp_path):
    workdir = user_repository(tmp_path / "repo", GITHUB, ".github/workflows/nightly.yml")
    store = Store()
    server, base = serve(store, "nightly.yml")
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    try:
        code, log = github_night(workdir, package, store, base, runner_temp, sa_kubeconfig,
                                 GPUCONFORM_MARKERS="cluster", GPUCONFORM_ARGS=NARROW)
        assert code == 0, log[-4000:]
        assert "fetch-baseline: no baseline: no successful run of nightly.yml on main" in log
        assert "JUnit for the test report: ['junit-gpuconform-profile-" in log
        first = store.runs[-1].artifacts["gpuconform-baseline"]["baseline.json"]
        assert json.loads(first)["results"]
        assert any(n.startswith("gpuconform-reports-") for n in store.runs[-1].artifacts)

        code, log = github_night(workdir, package, store, base, runner_temp, sa_kubeconfig, GPUCONFORM_MARKERS="cluster",
                                 GPUCONFORM_ARGS=NARROW, GPUCONFORM_PROFILE=str(rejected_profile(workdir)))
        fetched = workdir / "baseline" / "last-accepted.json"
        assert fetched.read_bytes() == first, log[-3000:]
        _second_night_used_the_baseline(code, log, fetched, workdir)
        assert "gpuconform-baseline" not in store.runs[-1].artifacts
        assert any(n.startswith("gpuconform-reports-") for n in store.runs[-1].artifacts)  # always()
        storage = [hd for p, hd in store.requests if p.startswith("/storage/")]
        assert storage and not any("authorization" in hd for hd in storage)

        code, log = github_night(workdir, package, store, base, runner_temp, dead_kubeconfig,
                                 GPUCONFORM_MARKERS="cluster", GPUCONFORM_ARGS=NARROW)
        _unreachable_night_says_so(code, log)
    finally:
        server.shutdown()
    assert sorted(p.name for p in workdir.iterdir() if not p.name.startswith(".")) == [
        "baseline", "gpuconform-profile.yaml", "rejected.yaml", "reports"]  # no source tree came in
