"""The one place secrets are removed from anything that reaches a report or a log."""
from __future__ import annotations

import re

MASK = "***"
#: key names whose value is a secret, any case: db.password, client-key-data, id_token, mysql_pwd...
_KEY = (r"[\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|client-key-data|client-certificate-data|"
        r"private[_-]?key)[\w.-]*")
#: environment-style names (upper case): DB_PASS, MYSQL_PWD, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, API_KEY
_ENV_KEY = r"[A-Z][A-Z0-9_]*(?:PASS|PWD|TOKEN|SECRET|KEY)[A-Z0-9_]*"
#: registry credentials: containerd's `auth = "<base64>"`, docker config.json's "auth": "<base64>"
_AUTH_KEY = r"(?<![\w.-])(?:auth|identitytoken|identity_token)"
_VALUE = r"(\"[^\"]*\"|'[^']*'|(?![{\[])[^\s,;&]+)"

#: (pattern, replacement, words): a pattern runs only on text holding one of its words, literal
#: parts every match has (a cheap scan first: most evidence holds none). A word in lower case is
#: looked for in the case-folded text, for the (?i) patterns; any other as written.
_PATTERNS = [
    # Authorization headers and bearer tokens, also as TOML/JSON lists: Authorization = ["Basic ..."]
    (re.compile(r"(?i)\b(authorization[\"']?\s*[:=]\s*\[?\s*[\"']?)(bearer|basic)\s+[^\s\"',;\]]+"),
     r"\1\2 " + MASK, ("authorization",)),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"), "Bearer " + MASK, ("bearer",)),
    # cookies: keep names, hide values
    (re.compile(r"(?i)\b((?:set-)?cookie\s*[:=]\s*)([^\r\n]+)"),
     lambda m: m.group(1) + re.sub(r"=([^;,\s]+)", "=" + MASK, m.group(2)), ("cookie",)),
    # key=value / key: value secrets (password, token, secret, client-key-data...); a value that is
    # itself such a key ("secret: password = x") is left for the next match to mask its value
    (re.compile(rf"(?i)\b({_KEY})([\"']?\s*[:=]\s*)(?!{_KEY}[\"']?\s*[:=])" + _VALUE), r"\1\2" + MASK,
     ("pass", "pwd", "secret", "token", "api", "client-", "private")),
    (re.compile(rf"\b({_ENV_KEY})([\"']?\s*[:=]\s*)" + _VALUE), r"\1\2" + MASK,
     ("PASS", "PWD", "TOKEN", "SECRET", "KEY")),
    (re.compile(rf"(?i)({_AUTH_KEY})([\"']?\s*[:=]\s*)" + _VALUE), r"\1\2" + MASK, ("auth", "identity")),
    # credentials inside URLs: scheme://user:password@host (the user stays), https://token@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^:/\s@\"'<>]+:)([^@\s/\"'<>]+)(@)"), r"\1" + MASK + r"\3", ("@",)),
    (re.compile(r"(?i)\b(https?://)[^:/\s@\"'<>]+@"), r"\1" + MASK + "@", ("@",)),
    # JWTs anywhere
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"), MASK, ("eyJ",)),
    # PEM blocks: private keys, and certificates too (they name hosts and people)
    (re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----.*?-----END \1-----", re.S), r"-----BEGIN \1----- " + MASK + r" -----END \1-----",
     ("-----BEGIN ",)),
]


def redact(text: str, extra_secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every known secret shape and every value in ``extra_secrets`` masked."""
    if not text:
        return text
    for secret in extra_secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, MASK)
    folded = _folded(text)
    for pattern, repl, words in _PATTERNS:
        if any(w in (folded if w.islower() else text) for w in words):
            masked = pattern.sub(repl, text)
            if masked != text:
                text, folded = masked, _folded(masked)
    return text


def _folded(text: str) -> str:
    """``text`` as a (?i) pattern sees it: case-folded, and the dotless i, which re's IGNORECASE
    takes for an i, as an i."""
    return text.casefold().replace("\u0131", "i")


def redact_args(args: list[str] | tuple[str, ...]) -> list[str]:
    """A command line with secrets masked, also those given as a separate word after their name
    (``--metadata token X``, ``--password X``)."""
    out = []
    for i, arg in enumerate(args):
        name = arg.lstrip("-")
        before = args[i - 1].lstrip("-") if i else ""
        if i and "=" not in args[i - 1] and (re.fullmatch(f"(?i){_KEY}", before) or re.fullmatch(_ENV_KEY, before)):
            out.append(MASK)
        else:
            out.append(redact(arg) if name else arg)
    return out
