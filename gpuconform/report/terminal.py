"""The terminal's share of the report: what ``--remediate`` did or would do. (Control sequences
are stripped by :mod:`gpuconform.safetext`, below every layer.)"""
from __future__ import annotations


def remediation_counts(rs: list[dict]) -> str:
    """``--remediate`` outcomes counted by state, in the order a reader acts on them."""
    order = ("fix failed", "reboot required", "fix applied", "fixed", "planned")
    counts = {s: sum(r["state"] == s for r in rs) for s in order}
    return ", ".join(f"{n} {s}" for s, n in counts.items() if n)


def remediation_lines(doc: dict, plan_lines: int = 6) -> list[str]:
    """What ``--remediate`` did (apply) or would do (plan), per host and check: the terminal's
    share of the report's remediation table."""
    rs = doc.get("remediation") or []
    if not rs:
        return []
    mode = rs[0]["mode"]
    head = (f"gpuconform: remediation plan (--remediate=plan, nothing changed): {len(rs)} fix(es)" if mode == "plan"
            else f"gpuconform: remediation (--remediate={mode}): {remediation_counts(rs)}")
    out = [head]
    for r in sorted(rs, key=lambda r: (r["host"], r["check_id"], r.get("param") or "")):
        check = r["check_id"] + (f"[{r['param']}]" if r.get("param") else "")
        if mode == "plan":
            out.append(f"  {r['host']}  {check}  {r['script']}:")
            lines = [line for line in (r.get("output") or "").splitlines() if line.strip()]
            out += [f"      {line}" for line in lines[:plan_lines]]
            if len(lines) > plan_lines:
                out.append(f"      … {len(lines) - plan_lines} more line(s) in the report")
        else:
            out.append(f"  {r['host']}  {check}: {r['state']} — {r['reason']}")
    return out
