"""What every profile section shares: strict frozen models and the validators of a few value kinds."""
from __future__ import annotations

import os
import urllib.parse
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

#: a CA bundle or password file the profile names: far below this
MAX_FILE_BYTES = 4 << 20


class Strict(BaseModel):
    """A profile section: unknown keys are mistakes, values do not change after load, numbers are
    finite (every number field has its bounds too: a count of 10**9 GPUs is a typo, not a plan)."""
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _fnmatch_pattern(pattern: str) -> str:
    """fnmatch takes an unclosed '[' (``gpu-[mig``) for a literal character: always a typo here."""
    if not pattern:
        raise ValueError("an empty pattern matches nothing")
    depth = 0
    for ch in pattern:
        if ch == "[":
            if depth:
                raise ValueError(f"{pattern!r}: '[' inside '[...]' (fnmatch pattern)")
            depth = 1
        elif ch == "]":
            depth = 0
    if depth:
        raise ValueError(f"{pattern!r}: '[' without its ']' (fnmatch pattern)")
    return pattern


def _readable_file(path: str | None) -> str | None:
    """A file the suite will read later: named now if it is missing or not a regular file."""
    if path is not None and not os.path.isfile(path):
        raise ValueError(f"{path}: " + ("a directory, not a file" if os.path.isdir(path) else
                                        "no such file" if not os.path.exists(path) else "not a regular file"))
    if path is not None and os.path.getsize(path) > MAX_FILE_BYTES:
        raise ValueError(f"{path}: {os.path.getsize(path)} bytes, more than {MAX_FILE_BYTES >> 20} MiB")
    return path


def _https_url(url: str | None) -> str | None:
    """https://<host>[:port][/]: parsed as the HTTP client will parse it."""
    if url is None:
        return None
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not a URL ({exc})") from None
    if parts.scheme != "https" or not parts.hostname or parts.path not in ("", "/") or parts.query \
            or parts.fragment or parts.username or parts.password:
        raise ValueError("https://<host>[:port]/ (no path, query or credentials)")
    if port is not None and not 0 < port <= 65535:
        raise ValueError(f"port {port} is not in 1-65535")
    return url


Pattern = Annotated[str, AfterValidator(_fnmatch_pattern)]
FilePath = Annotated[str | None, AfterValidator(_readable_file)]
HttpsUrl = Annotated[str | None, AfterValidator(_https_url)]
