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


# issue 28, finding 4: every kind the prober planted on hosts, as the host wrote it
ISSUE_28_KINDS = [
    ('password = """Tr1pleD0uble"""', "Tr1pleD0uble"),
    ("password = '''Tr1pleS1ngle'''", "Tr1pleS1ngle"),
    ('password = """first line\nSec0ndL1ne"""', "Sec0ndL1ne"),
    ('password = "esc\\"Esc4pedTail"', "Esc4pedTail"),
    ("password: two W0rdsHere", "W0rdsHere"),
    ("password = two W0rdsIni", "W0rdsIni"),
    ('X-Registry-Token = ["Regi5tryT0ken"]', "Regi5tryT0ken"),
    ("Authorization: token ghp_0123456789abcdefABCDEF0123456789abcd", "ghp_0123456789abcdef"),
    ("2026-12-02T10:00:00Z pulled with ghp_0123456789abcdefABCDEF0123456789abcd", "ghp_0123456789abcdef"),
    ("notify https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/Sl4ckW3bh00kS3cret", "Sl4ckW3bh00kS3cret"),
    ("aws_access_key_id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("2026-12-02 pod log: using AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAPemCut\nline2", "PemCut"),
    ("root_pass=R00tPassParam", "R00tPassParam"),
    ("luks.key=Luk5KeyParam", "Luk5KeyParam"),
    ("DEX_PW=D3xPwValue", "D3xPwValue"),
]


@pytest.mark.parametrize("text, secret", ISSUE_28_KINDS, ids=[t[:24] for t, _ in ISSUE_28_KINDS])
def test_issue_28_kinds_are_masked(text, secret):
    out = redact(text)
    assert secret not in out and MASK in out, out


def test_toml_parsed_masks_multi_line_values_whole():
    """A TOML file the host wrote: parsed, the value of a secret-like key masked whole, wherever
    its lines are."""
    text = 'name = "x"\n[db]\npassword = """\nL1neOne\nL1neTwo\n"""\nport = 5432\n'
    out = redact(text)
    assert "L1neOne" not in out and "L1neTwo" not in out and "port = 5432" in out


def test_yaml_parsed_masks_block_scalars_whole():
    text = "db:\n  password: |\n    Bl0ckOne\n    Bl0ckTwo\n  port: 5432\n"
    out = redact(text)
    assert "Bl0ckOne" not in out and "Bl0ckTwo" not in out and "port: 5432" in out


def test_runner_environment_secrets_are_masked(monkeypatch):
    """A secret of the runner's own environment is masked wherever it shows up (a probe that saw
    it), also under a name no pattern knows."""
    import gpuconform.redact as redact_mod
    monkeypatch.setenv("DEX_PW", "Runn3rDexPw")
    monkeypatch.setenv("SLACK_WEBHOOK_URL", "https://example.invalid/Runn3rW3bhook")
    redact_mod.runner_secrets.cache_clear()
    out = redact("env: Runn3rDexPw and https://example.invalid/Runn3rW3bhook")
    redact_mod.runner_secrets.cache_clear()
    assert "Runn3rDexPw" not in out and "Runn3rW3bhook" not in out


def test_ordinary_facts_with_key_and_pass_words_stay():
    text = ("iommu.passthrough=1\nbypass_check=1\n{\"pass\": 3, \"fail\": 0}\nverdict: pass\n"
            "sig_key: 7F:AA:01\nKEYMAP=us\nkeyring: builtin\nmodule.sig_enforce=0")
    assert redact(text) == text


def test_a_json_literal_after_a_quoted_key_masks_that_value_only():
    """``key = two words`` is masked to the line's end, but not after a quoted key: one-line JSON
    (a pod spec in evidence) keeps what follows."""
    out = redact('{"automountServiceAccountToken": false, "serviceAccountName": "gpuconform"}')
    assert out == '{"automountServiceAccountToken": ***, "serviceAccountName": "gpuconform"}'
