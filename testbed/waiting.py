"""The one wait helper of the test bed: poll with tenacity under a named deadline."""
from __future__ import annotations

from typing import Callable, TypeVar

from tenacity import (RetryError, Retrying, retry_if_exception, retry_if_result, stop_after_delay,
                      wait_exponential)

T = TypeVar("T")


class WaitTimeout(TimeoutError):
    """``what`` did not happen within the deadline; the message carries the last state seen."""


class GiveUp(Exception):
    """Raised by a probe to stop waiting at once (e.g. the process being waited for died)."""


def wait_for(what: str, probe: Callable[[], T], timeout: float, *, interval: float = 0.5) -> T:
    """Call ``probe`` until it returns a truthy value (returned) or ``timeout`` seconds pass.

    Exceptions from ``probe`` count as "not yet" (the last one is reported), except
    :class:`GiveUp`, which ends the wait immediately.
    """
    last: list[str] = ["nothing observed"]

    def attempt() -> T:
        try:
            value = probe()
        except GiveUp:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of the probe means "not yet"
            last[0] = f"{type(exc).__name__}: {exc}"
            raise
        if not value:
            last[0] = f"probe returned {value!r}"
        return value

    retrying = Retrying(
        stop=stop_after_delay(timeout),
        wait=wait_exponential(multiplier=0.05, max=interval),
        retry=retry_if_exception(lambda e: not isinstance(e, GiveUp)) | retry_if_result(lambda v: not v),
        reraise=False,
    )
    try:
        return retrying(attempt)
    except RetryError:
        raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}; last: {last[0]}") from None
