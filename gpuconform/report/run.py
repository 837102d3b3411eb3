"""The report of one run, on the process that writes it (the xdist controller or the only one):
records and host summaries arrive with test reports; at the end the JSON document is built,
validated against the model, written, and its sha256 handed to the HTML sign-off block."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

from gpuconform import __version__
from gpuconform.report import drift as drift_mod, fingerprint, waivers as waivers_mod
from gpuconform.layers import CHECK_LAYERS
from gpuconform.report.model import SCHEMA_ID, Document, compact, count, overall
from gpuconform.redact import redact, redact_args


class RunReport:
    def __init__(self, profile, waivers: tuple, suite_root: Path, invocation_args: tuple[str, ...],
                 selection: str | None, today: dt.date, baseline: tuple[str, dict, str] | None = None,
                 fail_on_drift: tuple[str, ...] = (), started: dt.datetime | None = None):
        """``baseline``: (the path as given, its document, its sha256), from ``drift.load_baseline``;
        ``started``: when the run started (its inputs were read), else now."""
        self.profile = profile
        self.waivers = waivers
        self.suite_root = suite_root
        self.args = invocation_args
        self.selection = selection
        self.today = today
        self.baseline = baseline
        self.fail_on_drift = fail_on_drift
        self.started = started or dt.datetime.now(dt.timezone.utc)
        self.records: list[dict] = []
        self.remediation: list[dict] = []
        self.hosts: dict[str, dict] = {}
        self.platform: dict = {}
        self.doc: dict | None = None
        self.interrupted = False
        self.json_sha256: str | None = None

    def add(self, report) -> None:
        """Take what a (possibly remote) test report carries for the report."""
        record = getattr(report, "gpuconform_record", None)
        if record:
            self.records.append(record)
        self.remediation.extend(getattr(report, "gpuconform_remediation", None) or ())
        host = getattr(report, "gpuconform_host", None)
        if host and (host["host"] not in self.hosts or self.hosts[host["host"]].get("error")):
            self.hosts[host["host"]] = host
        for key, value in (getattr(report, "gpuconform_platform", None) or {}).items():
            if isinstance(value, dict):
                self.platform.setdefault(key, {}).update(value)
            else:
                self.platform[key] = value

    def document(self) -> dict:
        records = sorted(self.records, key=lambda r: (r["layer"] or "", r["check_id"], r["param"] or "",
                                                      r["host"] or ""))
        counts, layers = count(records)
        waiver_states = waivers_mod.statuses(self.waivers, records, self.today)
        ran = {layer for layer in CHECK_LAYERS if sum(layers.get(layer, {}).values())}
        f = {"profile": self.profile.name, "profile_path": self.profile.path,
             "profile_sha256": self.profile.sha256, "suite_version": __version__,
             "git_commit": fingerprint.git_commit(self.suite_root), "run_by": redact(fingerprint.run_by()),
             "command": fingerprint.command_line(redact_args(self.args)),
             "selection": redact(self.selection) if self.selection else None,
             "started": self.started.isoformat(timespec="seconds"),
             "finished": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
             "hosts": [self.hosts[h] for h in sorted(self.hosts)], **self.platform}
        drift = None
        if self.baseline is not None:
            path, base, sha = self.baseline
            drift = drift_mod.compare(base, {"fingerprint": f, "results": records}, path, sha, self.fail_on_drift)
        doc = {"schema": SCHEMA_ID,
               "verdict": overall(records, waiver_states, ran, self.interrupted,
                                  tuple(drift["failing"]) if drift else ()).model_dump(),
               "fingerprint": f, "counts": counts, "layers": layers, "waivers": waiver_states,
               "results": records,
               "remediation": sorted(self.remediation, key=lambda r: (r["host"], r["check_id"], r["param"] or "")),
               "drift": drift}
        # validate against the documented model: a record that breaks the schema fails loudly here
        self.doc = Document.model_validate(doc).model_dump(by_alias=True, mode="json")
        return self.doc

    def write_json(self, path: Path) -> str:
        data = dumps(compact(self.document())).encode()
        path.write_bytes(data)
        self.json_sha256 = hashlib.sha256(data).hexdigest()
        return self.json_sha256


#: containers written one entry a line (the rest of each entry on its line, compact)
_SPREAD = {(), ("checks",), ("results",), ("remediation",), ("waivers",), ("fingerprint",), ("fingerprint", "hosts"),
           ("fingerprint", "cluster"), ("fingerprint", "cluster", "gpu_nodes"), ("drift",)}


def dumps(doc: dict, path: tuple = ()) -> str:
    """The JSON file's text (of ``compact``'s document): one check, result, host or node a line
    (readable with grep and diff, half the size of indented JSON)."""
    if path not in _SPREAD or not doc:
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    pad = " " * (len(path) + 1)
    if isinstance(doc, dict):
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {dumps(v, (*path, k))}" for k, v in doc.items()]
        text = "{\n" + ",\n".join(items) + "\n" + pad[:-1] + "}"
    else:
        text = "[\n" + ",\n".join(pad + dumps(v, (*path, "*")) for v in doc) + "\n" + pad[:-1] + "]"
    return text + ("\n" if not path else "")
