"""Waivers: known failures a platform owner accepts for a while, with a reason and an owner.

File shape (``--waivers=PATH``)::

    waivers:
      - check: node.fabricmanager.*        # check id, glob; or id[param]
        host: "gpu-worker-[34]*"           # host/node pattern, fnmatch as in profile groups (default "*")
        reason: "NVSwitch board replaced on 2026-12-01, FM reinstalled then"
        owner: "platform-team@bank.example"
        expires: 2026-12-15                # valid through that day (UTC)

A failure matched by a valid waiver is reported WAIVED with the reason; a failure matched only by
an expired waiver stays a failure (and the expired waiver makes the run REJECTED); a waiver that
matched nothing is listed as such. Loading validates everything and raises ``WaiverError`` with
one line: file, field path, what was wrong.
"""
from __future__ import annotations

import datetime as dt
import fnmatch
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpuconform import yamlfile
from gpuconform.profile._base import Pattern


def _glob(pattern: str) -> re.Pattern:
    """``*`` and ``?`` are wildcards; everything else is literal (``[param]`` included)."""
    return re.compile(re.escape(pattern).replace(r"\*", ".*").replace(r"\?", "."))


class WaiverError(Exception):
    """A waiver file that cannot be used; str() is the one line shown to the user."""


class Waiver(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    check: str = Field(..., min_length=1, description="check id or glob (node.dkms.*), optionally id[param]")
    host: Pattern = Field("*", description="host/node name or fnmatch pattern (an unclosed '[' is refused)")
    reason: str = Field(..., min_length=3, description="why the failure is accepted")
    owner: str = Field(..., min_length=1, description="who answers for it")
    expires: dt.date = Field(..., description="last day the waiver holds (YYYY-MM-DD)")

    @field_validator("expires", mode="before")
    @classmethod
    def _date_only(cls, v):
        if isinstance(v, dt.datetime) or not isinstance(v, (dt.date, str)):
            raise ValueError("expected a date YYYY-MM-DD")
        return v

    def matches(self, check_id: str, param: str | None, host: str | None) -> bool:
        ids = [check_id] + ([f"{check_id}[{param}]"] if param is not None else [])
        return any(_glob(self.check).fullmatch(i) for i in ids) and fnmatch.fnmatchcase(host or "", self.host)

    def expired(self, today: dt.date) -> bool:
        return today > self.expires


class WaiverFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    waivers: tuple[Waiver, ...] = ()


def load(path: str | Path) -> tuple[Waiver, ...]:
    path = str(path)
    _, data = yamlfile.read_mapping(path, "waiver file", WaiverError, "a mapping with a `waivers:` list")
    try:
        return WaiverFile.model_validate(data).waivers
    except ValidationError as exc:
        raise WaiverError(yamlfile.one_line(path, exc)) from None


def today_utc() -> dt.date:
    return dt.datetime.now(dt.timezone.utc).date()


def match(waivers: tuple[Waiver, ...], check_id: str, param: str | None, host: str | None,
          today: dt.date) -> dict | None:
    """The waiver reference for a failed result: the first valid match, else the first expired one."""
    found = [(i, w) for i, w in enumerate(waivers) if w.matches(check_id, param, host)]
    if not found:
        return None
    i, w = next(((i, w) for i, w in found if not w.expired(today)), found[0])
    return {"index": i, "check": w.check, "host": w.host, "reason": w.reason, "owner": w.owner,
            "expires": w.expires.isoformat(), "status": "expired" if w.expired(today) else "valid"}


def apply(waivers: tuple[Waiver, ...], record: dict, today: dt.date) -> None:
    """Mark a failed record waived (valid waiver) or carrying its expired waiver (still a failure)."""
    if record["verdict"] != "fail" or not waivers:
        return
    ref = match(waivers, record["check_id"], record["param"], record["host"], today)
    if ref:
        record["waiver"] = ref
        record["verdict"] = "waived" if ref["status"] == "valid" else "fail"


def statuses(waivers: tuple[Waiver, ...], records: list[dict], today: dt.date) -> list[dict]:
    """Every waiver with its status and how many failures it matched."""
    used: dict[int, int] = {}
    for r in records:
        if r.get("waiver"):
            used[r["waiver"]["index"]] = used.get(r["waiver"]["index"], 0) + 1
    return [{"index": i, "check": w.check, "host": w.host, "reason": w.reason, "owner": w.owner,
             "expires": w.expires.isoformat(), "status": "expired" if w.expired(today) else "valid",
             "matched": used.get(i, 0)} for i, w in enumerate(waivers)]
