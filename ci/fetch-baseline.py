#!/usr/bin/env python3
"""fetch-baseline: the last ACCEPTED nightly run's JSON, from the CI's own artifact store.

    gpuconform fetch-baseline gitlab|github OUT.json     (this file, as shipped in the package)
    python3 ci/fetch-baseline.py gitlab|github OUT.json  (from a checkout)

A nightly job succeeds only when its run is ACCEPTED (exit 0), and only then keeps
reports/baseline.json as an artifact (ci/gpuconform-nightly.sh); so the newest successful
nightly holds the last accepted run's JSON:

* GitLab: ``GET $CI_API_V4_URL/projects/$CI_PROJECT_ID/jobs/artifacts/<ref>/raw/<path>?job=<job>``
  (one file of that job's artifacts in the ref's latest successful pipeline), authenticated
  with $GPUCONFORM_GITLAB_TOKEN (a project access token, read_api) as PRIVATE-TOKEN, else
  $CI_JOB_TOKEN as JOB-TOKEN;
* GitHub: the newest successful run of this workflow on this branch
  (``GET /repos/{repo}/actions/workflows/{file}/runs?status=success&branch=<ref>``), its artifact
  ``gpuconform-baseline`` (``GET /repos/{repo}/actions/runs/{id}/artifacts?name=...``), the
  zip behind ``archive_download_url``; authenticated with $GITHUB_TOKEN (actions: read).

The branch is the pipeline's own ($CI_COMMIT_REF_NAME, $GITHUB_REF_NAME) unless
$GPUCONFORM_BASELINE_REF names another. No accepted run yet, or the store refusing: one line saying so, no OUT written, exit 0 (the
run goes on without a baseline). Only the standard library: runs on any CI image with Python.
"""
from __future__ import annotations

import io
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
import zipfile

ARTIFACT = "gpuconform-baseline"      # GitHub artifact name (ci/github/nightly.yml)
ARTIFACT_PATH = "reports/baseline.json"  # GitLab artifact path (ci/gitlab/.gitlab-ci.yml)
TIMEOUT_S = 60
AUTH_HEADERS = ("authorization", "private-token", "job-token")


class _PresignedRedirect(urllib.request.HTTPRedirectHandler):
    """Artifact downloads redirect to object storage with a pre-signed URL: the platform token
    is not sent there (the storage would refuse a second credential, and should not see it)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            for name in [k for k in new.headers if k.lower() in AUTH_HEADERS]:
                del new.headers[name]
        return new


_OPENER = urllib.request.build_opener(_PresignedRedirect)


def get(url: str, headers: dict[str, str]) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "gpuconform-fetch-baseline", **headers})
    with _OPENER.open(request, timeout=TIMEOUT_S) as resp:
        return resp.read()


def gitlab() -> bytes:
    env = os.environ
    ref = env.get("GPUCONFORM_BASELINE_REF") or env["CI_COMMIT_REF_NAME"]
    url = (f"{env['CI_API_V4_URL']}/projects/{env['CI_PROJECT_ID']}/jobs/artifacts/"
           f"{urllib.parse.quote(ref, safe='')}/raw/{ARTIFACT_PATH}?job={urllib.parse.quote(env['CI_JOB_NAME'])}")
    token = env.get("GPUCONFORM_GITLAB_TOKEN")
    return get(url, {"PRIVATE-TOKEN": token} if token else {"JOB-TOKEN": env["CI_JOB_TOKEN"]})


def github() -> bytes:
    env = os.environ
    api, repo = env.get("GITHUB_API_URL", "https://api.github.com"), env["GITHUB_REPOSITORY"]
    headers = {"Authorization": f"Bearer {env['GITHUB_TOKEN']}", "Accept": "application/vnd.github+json",
               "X-GitHub-Api-Version": "2022-11-28"}
    # GITHUB_WORKFLOW_REF: owner/repo/.github/workflows/<file>@refs/heads/<branch>
    workflow = env["GITHUB_WORKFLOW_REF"].split("@", 1)[0].rsplit("/", 1)[1]
    ref = env.get("GPUCONFORM_BASELINE_REF") or env["GITHUB_REF_NAME"]
    runs = json.loads(get(f"{api}/repos/{repo}/actions/workflows/{workflow}/runs?" + urllib.parse.urlencode(
        {"status": "success", "branch": ref, "per_page": 1}), headers))["workflow_runs"]
    if not runs:
        raise LookupError(f"no successful run of {workflow} on {ref}")
    found = json.loads(get(f"{api}/repos/{repo}/actions/runs/{runs[0]['id']}/artifacts?name={ARTIFACT}",
                           headers))["artifacts"]
    if not found or found[0].get("expired"):
        raise LookupError(f"run {runs[0]['id']} has no (unexpired) artifact {ARTIFACT}")
    with zipfile.ZipFile(io.BytesIO(get(found[0]["archive_download_url"], headers))) as archive:
        if "baseline.json" not in archive.namelist():
            raise LookupError(f"artifact {ARTIFACT} of run {runs[0]['id']} holds no baseline.json")
        return archive.read("baseline.json")


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("gitlab", "github"):
        print("usage: gpuconform fetch-baseline gitlab|github OUT.json", file=sys.stderr)
        return 4
    try:
        data = {"gitlab": gitlab, "github": github}[argv[1]]()
        json.loads(data)  # a JSON document, not an error page
    except urllib.error.HTTPError as exc:
        why = "no accepted run yet" if exc.code == 404 else f"HTTP {exc.code} {exc.reason}"
        print(f"fetch-baseline: no baseline: {why}")
        return 0
    except KeyError as exc:
        print(f"fetch-baseline: no baseline: ${exc.args[0]} is not set")
        return 0
    except (LookupError, OSError, ValueError, zipfile.BadZipFile) as exc:
        print(f"fetch-baseline: no baseline: {exc}")
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(argv[2])), exist_ok=True)
    with open(argv[2], "wb") as out:
        out.write(data)
    print(f"fetch-baseline: the last accepted run's JSON -> {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
