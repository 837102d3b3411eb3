"""Secrets never reach a report: the single redaction point."""
import pytest

from gpuconform.redact import MASK, redact


@pytest.mark.parametrize("text, secret", [
    ("Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJl", "eyJhbGciOiJSUzI1NiJ9"),
    ("Cookie: oauth2_proxy_kubeflow=QmFzZTY0Q29va2llVmFsdWU; _xsrf=abc123", "QmFzZTY0Q29va2llVmFsdWU"),
    ("set-cookie: oauth2_proxy_kubeflow=S3cr3tV4lu3|1700000000|x; Path=/", "S3cr3tV4lu3"),
    ("login=user@example.com password=12341234", "12341234"),
    ("client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ==", "LS0tLS1CRUdJTiBSU0Eg"),
    ('{"token": "sha256~abcdefghijklmnop"}', "sha256~abcdefghijklmnop"),
    ('{"id_token": "abcdef0123456789"}', "abcdef0123456789"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "MIIEow"),
])
def test_secret_shapes_are_masked(text, secret):
    out = redact(text)
    assert secret not in out and MASK in out


def test_known_secret_values_are_masked_anywhere():
    assert redact("dex said: hunter22 is wrong", extra_secrets=("hunter22",)) == f"dex said: {MASK} is wrong"


def test_ordinary_evidence_is_untouched():
    text = "nvidia/580.95.05, 6.12.21.red80.x86_64, x86_64: installed\nBinaryName = \"/usr/bin/nvidia-container-runtime\""
    assert redact(text) == text


@pytest.mark.parametrize("text, secret", [
    ("DB_PASS=s3cr3tDb MYSQL_PWD=s3cr3tMy", "s3cr3t"),
    ("GITHUB_TOKEN=ghp_abcdef AWS_SECRET_ACCESS_KEY=wJalrXUtn", "ghp_abcdef"),
    ("endpoint = [\"https://robot:r0b0tT0ken@registry.example\"]", "r0b0tT0ken"),
    ("https://b4reT0ken@cache.example/v2", "b4reT0ken"),
    ('  auth = "dXNlcjpwYXNzd29yZA=="', "dXNlcjpwYXNzd29yZA"),
    ('{"auths": {"r.example": {"auth": "dXNlcjpwYXNz"}}}', "dXNlcjpwYXNz"),
    ('Authorization = ["Basic dXNlcjpoZWFkZXI="]', "dXNlcjpoZWFkZXI"),
    ("-----BEGIN CERTIFICATE-----\nMIIBcertbody\n-----END CERTIFICATE-----", "MIIBcertbody"),
])
def test_issue_10_shapes_are_masked(text, secret):
    assert secret not in redact(text)


def test_command_line_secret_given_as_a_separate_word():
    from gpuconform.redact import redact_args
    assert redact_args(["--metadata", "token", "t0kenV4lue", "--password", "pw", "-m", "node"]) == \
        ["--metadata", "token", MASK, "--password", MASK, "-m", "node"]


def test_facts_that_only_look_like_keys_stay():
    text = "sig_key: 7F:AA:01\nmok_signing_key=/var/lib/dkms/mok.key\nKEYMAP=us\nssh://root@gpu-1"
    assert redact(text) == text
