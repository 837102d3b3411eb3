"""The one place secrets are removed from anything that reaches a report or a log.

Three passes: patterns for the shapes secrets take in any text (``key = value`` in TOML, INI,
YAML, env files and shell, headers, URLs, token families, PEM blocks whole or cut short); then
the text parsed as what it may be (TOML or YAML, after the evidence's ``$ command`` line), every
string under a secret-like key masked whole, multi-line values line by line; last the values of
the runner's own secret-like environment variables, wherever they show up."""
from __future__ import annotations

import functools
import os
import re
import tomllib

from gpuconform import yamlparse

MASK = "***"
#: key names whose value is a secret, any case: db.password, client-key-data, id_token, mysql_pwd,
#: root_pass and DEX_PW (a ``pass``/``pw`` part, not passthrough), luks.key (a dotted ``key``
#: part, not sig_key or mok_signing_key, which name fingerprints and paths)
_KEY = (r"(?:[\w.-]*(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|client-key-data|"
        r"client-certificate-data|private[_-]?key)[\w.-]*"
        r"|[\w.-]*[a-z0-9][_.-](?:pass|pw)(?![a-z0-9])[\w.-]*|[\w.-]*[a-z0-9]\.key(?![a-z0-9])[\w.-]*)")
#: environment-style names (upper case): DB_PASS, MYSQL_PWD, DEX_PW, GITHUB_TOKEN,
#: AWS_SECRET_ACCESS_KEY, API_KEY, SLACK_WEBHOOK_URL
_ENV_KEY = r"[A-Z][A-Z0-9_]*(?:PASS|PW(?![A-Z])|PWD|TOKEN|SECRET|KEY|WEBHOOK|CREDENTIAL)[A-Z0-9_]*"
#: registry credentials: containerd's `auth = "<base64>"`, docker config.json's "auth": "<base64>"
_AUTH_KEY = r"(?<![\w.-])(?:auth|identitytoken|identity_token)"
#: between a key and its value: ``=``, ``:``, ``" =``, on one line
_SEP = r"((?P<quoted>[\"'])?[ \t]*[:=])"
#: a value: TOML's multi-line strings (also cut short by the evidence's line limit), quoted
#: strings with their escapes, a list; after a separator and a space, the rest of the line (INI,
#: YAML, TOML: ``password = two words``), not after a quoted key (JSON: ``"token": false, ...``);
#: else one word (env files, shell, URL queries, JSON literals)
_VALUE = (r"(?P<value>[ \t]*(?:\"\"\"[\s\S]*?(?:\"\"\"|\Z)|'''[\s\S]*?(?:'''|\Z)|\"(?:[^\"\\\r\n]|\\.)*\"?|'[^'\r\n]*'?"
          r"|\[[^\]\r\n]*\]?)|(?(quoted)(?!)|[ \t]+(?![{\[|>])[^\r\n]*[^\s,;])|[ \t]*(?![{\[|>\s])[^\s,;&]+)")


#: literal parts of every _KEY (see _PATTERNS' words)
_KEY_WORDS = ("pass", "pwd", "pw", "secret", "token", "api", "client-", "private", ".key")


def _key_value(key: str, flags: str = "") -> re.Pattern:
    """``<key><sep><value>`` with the value masked; a value that is itself such a key ("secret:
    password = x") is left for the next match to mask its value."""
    return re.compile(rf"{flags}\b({key}){_SEP}(?![ \t]*{key}[\"']?[ \t]*[:=])" + _VALUE)


#: a value already masked, with the closing brackets a one-word value runs into (``"token": ***}``)
_ALREADY_MASKED = re.compile(r"[ \t]*" + re.escape(MASK) + r"[}\])\"']*")


def _masked_value(m: re.Match) -> str:
    value = m.group("value")
    if _ALREADY_MASKED.fullmatch(value):  # redacting twice changes nothing more
        return m.group(0)
    return m.group(1) + m.group(2) + value[:len(value) - len(value.lstrip(" \t"))] + MASK


def _pem(m: re.Match) -> str:
    kind = m.group(1)
    return f"-----BEGIN {kind}----- {MASK}" + (f" -----END {kind}-----" if m.group(2) else " (cut)")


#: (pattern, replacement, words): a pattern runs only on text holding one of its words, literal
#: parts every match has (a cheap scan first: most evidence holds none). A word in lower case is
#: looked for in the case-folded text, for the (?i) patterns; any other as written.
_PATTERNS = [
    # Authorization headers whatever the scheme (Bearer, Basic, token ghp_...), also as TOML/JSON
    # lists: Authorization = ["Basic ..."]; the scheme stays
    (re.compile(r"(?i)\b(authorization[\"']?[ \t]*[:=][ \t]*\[?[ \t]*[\"']?)(?>([a-z][\w.-]*[ \t]+)?)"
                r"(?!\*\*\*|(?:bearer|basic|token|digest|negotiate)\b)[^\s\"',;\[\]]+"), r"\1\2" + MASK, ("authorization",)),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"), "Bearer " + MASK, ("bearer",)),
    # cookies: keep names, hide values
    (re.compile(r"(?i)\b((?:set-)?cookie\s*[:=]\s*)([^\r\n]+)"),
     lambda m: m.group(1) + re.sub(r"=([^;,\s]+)", "=" + MASK, m.group(2)), ("cookie",)),
    # key=value / key: value secrets (password, token, secret, client-key-data, root_pass, luks.key...)
    (_key_value(_KEY, "(?i)"), _masked_value, _KEY_WORDS),
    (_key_value(_ENV_KEY), _masked_value, ("PASS", "PW", "TOKEN", "SECRET", "KEY", "WEBHOOK", "CREDENTIAL")),
    (re.compile(rf"(?i)({_AUTH_KEY}){_SEP}" + _VALUE), _masked_value, ("auth", "identity")),
    # credentials inside URLs: scheme://user:password@host (the user stays), https://token@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^:/\s@\"'<>]+:)([^@\s/\"'<>]+)(@)"), r"\1" + MASK + r"\3", ("@",)),
    (re.compile(r"(?i)\b(https?://)[^:/\s@\"'<>]+@"), r"\1" + MASK + "@", ("@",)),
    # token families, anywhere (a pod log, a shell history): GitHub, Slack, AWS access key ids
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), MASK,
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    (re.compile(r"(?i)\b(hooks\.slack\.com/(?:services|workflows|triggers)/)[^\s\"'<>]+"), r"\1" + MASK,
     ("hooks.slack.com",)),
    (re.compile(r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}"), MASK, ("xox",)),
    (re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"), MASK, ("AKIA", "ASIA", "ABIA", "ACCA")),
    # JWTs anywhere
    (re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"), MASK, ("eyJ",)),
    # PEM blocks: private keys, and certificates too (they name hosts and people); a block the
    # evidence's line limit cut before its END is masked to the end of the text
    (re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(?:.*?(-----END \1-----)|.*)", re.S), _pem, ("-----BEGIN ",)),
]

#: every pattern's words in one scan (lower-case ones in the case-folded text): most texts hold
#: none, and are let through after two searches instead of one per word
_ANY_LOWER_WORD = re.compile("|".join(sorted({re.escape(w) for *_, ws in _PATTERNS for w in ws if w.islower()})))
_ANY_CASED_WORD = re.compile("|".join(sorted({re.escape(w) for *_, ws in _PATTERNS for w in ws if not w.islower()})))

#: texts longer than this are not parsed (patterns only): evidence is cut far below it
_PARSE_MAX = 64 << 10
#: a secret-like key with its separator: only a text holding one is worth parsing
_SECRET_KEY_AT = re.compile(rf"(?i)\b(?:{_KEY}|{_ENV_KEY})[\"']?[ \t]*[:=]")
_EVIDENCE_HEAD = re.compile(r"\A\$ [^\n]*\n")
_EVIDENCE_TAIL = re.compile(r"\n\.\.\. \(\d+ more lines\)\Z")


def redact(text: str, extra_secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every known secret shape and every value in ``extra_secrets`` masked."""
    if not text:
        return text
    original = text
    for secret in extra_secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, MASK)
    folded = _folded(text)
    if _ANY_LOWER_WORD.search(folded) or _ANY_CASED_WORD.search(text):
        for pattern, repl, words in _PATTERNS:
            if any(w in (folded if w.islower() else text) for w in words):
                masked = pattern.sub(repl, text)
                if masked != text:
                    text, folded = masked, _folded(masked)
    for secret in (*_parsed_secrets(original), *runner_secrets()):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def _folded(text: str) -> str:
    """``text`` as a (?i) pattern sees it: case-folded, and the dotless i, which re's IGNORECASE
    takes for an i, as an i."""
    return text.casefold().replace("\u0131", "i")


def secret_name(name: str) -> bool:
    """Whether a key or variable name holds a secret (``password``, ``DEX_PW``, ``luks.key``)."""
    return bool(re.fullmatch(f"(?i){_KEY}", name) or re.fullmatch(_ENV_KEY, name))


def _parsed_secrets(text: str) -> list[str]:
    """The strings under secret-like keys of ``text`` read as TOML or YAML (the evidence's
    ``$ command`` line and ``... (N more lines)`` set aside), each line of a multi-line value
    apart: how a block scalar or a multi-line string shows in the text."""
    if "\n" not in text or len(text) > _PARSE_MAX or not any(w in _folded(text) for w in _KEY_WORDS) \
            or not _SECRET_KEY_AT.search(text):
        return []
    body = _EVIDENCE_TAIL.sub("", _EVIDENCE_HEAD.sub("", text))
    try:
        data = tomllib.loads(body)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError):
        data = yamlparse.parse_text(body)
    found: list[str] = []
    _collect(data, False, found, 0)
    return sorted({line for value in found for line in (x.strip() for x in value.splitlines()) if len(line) >= 4},
                  key=len, reverse=True)


def _collect(data, under_secret: bool, found: list[str], depth: int) -> None:
    if depth > 64:
        return
    if isinstance(data, dict):
        for key, value in data.items():
            _collect(value, under_secret or (isinstance(key, str) and secret_name(key)), found, depth + 1)
    elif isinstance(data, list):
        for value in data:
            _collect(value, under_secret, found, depth + 1)
    elif under_secret and isinstance(data, str):
        found.append(data)


#: names that look secret-like and are not: the working directory
_NOT_SECRET_ENV = ("PWD", "OLDPWD")


@functools.lru_cache(maxsize=1)
def runner_secrets() -> tuple[str, ...]:
    """Values of this process's secret-like environment variables (DEX_PW, SLACK_WEBHOOK_URL,
    GITHUB_TOKEN...): a probe or a tool that saw them must not carry them into a report."""
    values = {v for k, v in os.environ.items()
              if len(v) >= 8 and k not in _NOT_SECRET_ENV and re.fullmatch(_ENV_KEY, k.upper())}
    return tuple(sorted(values, key=len, reverse=True))


def redact_args(args: list[str] | tuple[str, ...]) -> list[str]:
    """A command line with secrets masked, also those given as a separate word after their name
    (``--metadata token X``, ``--password X``)."""
    out = []
    for i, arg in enumerate(args):
        name = arg.lstrip("-")
        before = args[i - 1].lstrip("-") if i else ""
        if i and "=" not in args[i - 1] and secret_name(before):
            out.append(MASK)
        else:
            out.append(redact(arg) if name else arg)
    return out
