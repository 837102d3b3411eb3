"""The one place secrets are removed from anything that reaches a report or a log."""
from __future__ import annotations

import re

MASK = "***"
_KEY = (r"[\w.-]*(?:password|passwd|secret|token|api[_-]?key|client-key-data|client-certificate-data|"
        r"private[_-]?key)[\w.-]*")

_PATTERNS = [
    # Authorization headers and bearer tokens
    (re.compile(r"(?i)\b(authorization\s*[:=]\s*)(bearer|basic)\s+[^\s\"',;]+"), r"\1\2 " + MASK),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"), "Bearer " + MASK),
    # cookies: keep names, hide values
    (re.compile(r"(?i)\b((?:set-)?cookie\s*[:=]\s*)([^\r\n]+)"),
     lambda m: m.group(1) + re.sub(r"=([^;,\s]+)", "=" + MASK, m.group(2))),
    # key=value / key: value secrets (password, token, secret, client-key-data...); a value that is
    # itself such a key ("secret: password = x") is left for the next match to mask its value
    (re.compile(rf"(?i)\b({_KEY})([\"']?\s*[:=]\s*)(?!{_KEY}[\"']?\s*[:=])"
                r"(\"[^\"]*\"|'[^']*'|[^\s,;&]+)"),
     r"\1\2" + MASK),
    # credentials inside URLs: scheme://user:password@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^:/\s@]+:)([^@\s/]+)(@)"), r"\1" + MASK + r"\3"),
    # JWTs anywhere
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"), MASK),
    # PEM private keys
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S), MASK),
]


def redact(text: str, extra_secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every known secret shape and every value in ``extra_secrets`` masked."""
    if not text:
        return text
    for secret in extra_secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, MASK)
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text
