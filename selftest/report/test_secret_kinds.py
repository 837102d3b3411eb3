"""Every kind of secret the issue lists, planted where a real host or user puts it, is absent
from every artifact of a run: JSON, HTML, JUnit, terminal (with -l showing locals)."""
from __future__ import annotations

import re

import pytest

from report_harness import REPO, hosts_arg, run
from testbed.hosts import rootfs, scenarios

PLANTED = {
    "db_pass": "Pl4ntDbPass",
    "mysql_pwd": "Pl4ntMysqlPwd",
    "env_token": "Pl4ntGhT0ken",
    "env_secret_key": "Pl4ntAwsSecretKey",
    "url_userinfo": "Pl4ntUrlT0ken",
    "url_token_only": "Pl4ntBareUrlT0ken",
    "registry_auth": "UGw0bnRSZWdpc3RyeUF1dGg=",
    "authorization_basic": "UGw0bnRCYXNpY0hlYWRlcg==",
    "pem_block": "Pl4ntPemB0dy",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbDRudCJ9.UGw0bnRKd3RTaWc",
    "kernel_param": "Pl4ntKernelPass",
    "metadata_token": "Pl4ntMetaT0ken",
    # issue 28
    "toml_triple_double": "Pl4ntTripleDouble",
    "toml_triple_single": "Pl4ntTripleSingle",
    "toml_multi_line": "Pl4ntMultiL1ne",
    "toml_escaped_quote": "Pl4ntEscapedTail",
    "value_with_spaces": "Pl4ntSecondWord",
    "registry_token_list": "Pl4ntRegistryT0ken",
    "authorization_token_ghp": "ghp_Pl4ntGitHubT0ken0123456789abcdefABCD",
    "slack_webhook": "Pl4ntSlackWebhookPath",
    "aws_access_key": "AKIAPL4NTEXAMPLE0001",
    "pem_without_end": "Pl4ntPemCutB0dy",
    "kernel_root_pass": "Pl4ntRootPass",
    "kernel_luks_key": "Pl4ntLuksKey",
    "runner_env_dex_pw": "Pl4ntRunnerDexPw",
    "runner_env_slack_webhook": "Pl4ntRunnerWebhook",
}
#: the runner's own environment: a host tool that prints its environment must not carry it out
RUNNER_ENV = {"DEX_PW": PLANTED["runner_env_dex_pw"],
              "SLACK_WEBHOOK_URL": f"https://hooks.slack.com/services/T0RUN0001/B0RUN0002/{PLANTED['runner_env_slack_webhook']}"}
CONTAINERD_LINES = f"""
# environment of the node agent: DB_PASS={PLANTED['db_pass']} MYSQL_PWD={PLANTED['mysql_pwd']}
# GITHUB_TOKEN={PLANTED['env_token']} AWS_SECRET_ACCESS_KEY={PLANTED['env_secret_key']}
# mirror endpoint = ["https://robot:{PLANTED['url_userinfo']}@registry.example/v2"]
# pull through https://{PLANTED['url_token_only']}@cache.example/
# [plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example".auth]
#   auth = "{PLANTED['registry_auth']}"
# [plugins."io.containerd.grpc.v1.cri".registry.headers]
#   Authorization = ["Basic {PLANTED['authorization_basic']}"]
# -----BEGIN CERTIFICATE-----
# {PLANTED['pem_block']}
# -----END CERTIFICATE-----
# id token {PLANTED['jwt']}
# password = \"\"\"{PLANTED['toml_triple_double']}\"\"\"
# db_password = '''{PLANTED['toml_triple_single']}'''
# ldap_password = \"\"\"
# {PLANTED['toml_multi_line']}
# \"\"\"
# proxy_password = "esc\\"{PLANTED['toml_escaped_quote']}"
# bind_password = first {PLANTED['value_with_spaces']}
# [plugins."io.containerd.grpc.v1.cri".registry.headers]
#   X-Registry-Token = ["{PLANTED['registry_token_list']}"]
#   Authorization: token {PLANTED['authorization_token_ghp']}
# alerts to https://hooks.slack.com/services/T0PLANT01/B0PLANT02/{PLANTED['slack_webhook']}
# aws_access_key_id {PLANTED['aws_access_key']}
"""
#: a private key whose END the evidence's 40-line cut leaves out
PEM_CUT = "# -----BEGIN OPENSSH PRIVATE KEY-----\n" + f"# {PLANTED['pem_without_end']}\n" * 12 + \
    "# -----END OPENSSH PRIVATE KEY-----\n"


@pytest.fixture(scope="module")
def leaky_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("secrets")
    root = rootfs.render(scenarios.build("gpu-good"), base / "leaky")
    cfg = root / "etc/containerd/config.toml"
    head = CONTAINERD_LINES + "".join("# padding\n" for _ in range(36 - CONTAINERD_LINES.count("\n")))
    cfg.write_text(head + PEM_CUT + cfg.read_text())
    dump = root / "usr/bin/containerd"  # the host's containerd prints the environment it was given
    assert "'config dump') cat" in dump.read_text()
    dump.write_text(dump.read_text().replace("'config dump') cat", "'config dump') env | sed 's/^/# env /'; cat"))
    profile = base / "profile.yaml"
    seed = (REPO / "profiles" / "seed-h100.yaml").read_text()
    assert "rd.driver.blacklist=nouveau]" in seed
    profile.write_text(seed.replace("rd.driver.blacklist=nouveau]",
                                    f"rd.driver.blacklist=nouveau, ipa.password={PLANTED['kernel_param']}, "
                                    f"root_pass={PLANTED['kernel_root_pass']}, luks.key={PLANTED['kernel_luks_key']}]"))
    folder = base / "reports"
    r = run(folder, "-m", "node", "-l", "-k", "containerd or cmdline", *hosts_arg([root]), f"--profile={profile}",
            f"--junitxml={folder / 'junit.xml'}", "--metadata", "token", PLANTED["metadata_token"], env=RUNNER_ENV)
    assert r.doc is not None and r.html is not None, r.output()
    return r


def artifacts(r) -> dict[str, str]:
    return {"JSON": r.json.read_text(), "HTML": r.page_and_passes(), "JUnit": (r.folder / "junit.xml").read_text(),
            "terminal": r.proc.stdout + r.proc.stderr}


@pytest.mark.parametrize("kind", PLANTED)
def test_planted_secret_reaches_no_artifact(leaky_run, kind):
    leaks = [where for where, text in artifacts(leaky_run).items() if PLANTED[kind] in text]
    assert not leaks, f"{kind} leaked into {leaks}"


def test_the_secrets_were_there_to_leak(leaky_run):
    """Their masked shapes show where they were planted: evidence, test id, command line."""
    doc = leaky_run.doc
    evidence = next(x for x in doc["results"] if x["check_id"] == "node.containerd.nvidia_runtime")["evidence"]
    for shape in ("DB_PASS=***", "MYSQL_PWD=***", "GITHUB_TOKEN=***", "AWS_SECRET_ACCESS_KEY=***",
                  "https://robot:***@registry.example", "https://***@cache.example", 'auth = ***',
                  'Authorization = ["Basic ***"]', "-----BEGIN CERTIFICATE----- *** -----END CERTIFICATE-----",
                  "id token ***", 'password = ***', "db_password = ***", "ldap_password = ***",
                  "proxy_password = ***", "bind_password = ***", "X-Registry-Token = ***", "Authorization: token ***",
                  "https://hooks.slack.com/services/***", "aws_access_key_id ***",
                  "-----BEGIN OPENSSH PRIVATE KEY----- *** (cut)", "# env PATH="):
        assert shape in evidence, shape
    assert "DEX_PW" not in evidence and "SLACK_WEBHOOK_URL" not in evidence  # the probe's environment is clean
    kernel = next(x for x in doc["results"] if x["check_id"] == "node.kernel.cmdline_required"
                  and "ipa" in x["param"])
    assert kernel["param"] == "ipa.password=***" and "ipa.password=***" in kernel["nodeid"]
    assert kernel["verdict"] == "fail"
    params = {x["param"] for x in doc["results"] if x["check_id"] == "node.kernel.cmdline_required"}
    assert {"root_pass=***", "luks.key=***"} <= params, params
    assert "--metadata token '***'" in doc["fingerprint"]["command"]
    junit = (leaky_run.folder / "junit.xml").read_text()
    assert re.search(r'name="test_cmdline_has_required_param\[ipa.password=\*\*\*-chroot:', junit)
    assert "required_param" in leaky_run.proc.stdout  # -l showed the locals, masked
