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


def _every_pattern(text: str) -> str:
    """Redaction without the word scan: each pattern run on every text."""
    from gpuconform.redact import _PATTERNS
    for pattern, repl, _words in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def test_the_word_scan_never_skips_a_pattern_that_would_mask():
    """Each pattern runs only on text holding one of its words: over the shapes above, their
    case and Unicode variants (re's IGNORECASE takes ſ for s, K for k, ı for i) and mixes
    with ordinary evidence, the result is the same as running every pattern on every text."""
    import itertools
    import random
    shapes = ["Authorization: Bearer abcdefgh12345678", "AUTHORIZATION = [\"Basic dXNlcjpw\"]", "bearer ABCDEFGHIJK",
              "Set-Cookie: a=b; c=d", "ſet-cookie: x=yyyy", "password=hunter22", "PASSWD: x1y2z3", "ſecret=abc",
              "api_key=k3y", "ApI-KeY: k3y", "client-key-data: AAAA", "private_key='pk'", "id_token: tok",
              "DB_PASS=s3", "AWS_SECRET_ACCESS_KEY=wJ", "GITHUB_TOKEN: ghp", "auth = \"dXNl\"", "ıdentitytoken: x",
              "AUTH: y", "https://user:pw@host/x", "HTTPS://tok@host", "git+ssh://me:pw@h", "eyJabcde.fghij12.klmno34",
              "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "api_\u212aey=v1", "to\u212aen: v2",
              "authorızation: basic dXNlcjpw", "prıvate_key: pk"]
    plain = ["nvidia/580.95.05: installed", "sig_key: 7F:AA:01", "KEYMAP=us", "ssh://root@gpu-1", "PoolSize = 4",
             "kernel.bpf_jit_harden = 1", "mok_signing_key=/var/lib/dkms/mok.key", ""]
    rng = random.Random(14)
    texts = shapes + plain + [" ".join(p) for p in itertools.product(shapes[:6], plain[:4])]
    texts += ["\n".join(rng.sample(shapes + plain, 5)) for _ in range(300)]
    for text in texts:
        assert redact(text) == _every_pattern(text), text
