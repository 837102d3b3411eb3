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
